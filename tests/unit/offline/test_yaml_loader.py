"""`tas solve` builds YAML documents straight from the parser's events: the same document, or
the same refusal, as PyYAML's safe loader (without timestamps) gives for the same text."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tas.offline import yaml_loader

PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Scalars whose YAML text looks like another type, plain or quoted once dumped.
TRICKY = [
    "1",
    "0x1F",
    "1_000",
    "1.5",
    ".inf",
    "-.Inf",
    "yes",
    "No",
    "on",
    "~",
    "null",
    "",
    "2024-01-02",
    "2024-13-45",
    "1e3",
    "0o17",
    "012",
    "+1",
    "-",
    ":",
    "a: b",
    "#x",
    "é",
]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False),
    st.sampled_from(TRICKY),
    st.text(max_size=8),
)
keys = st.one_of(st.text(max_size=6), st.sampled_from(TRICKY), st.integers(-5, 5), st.booleans())
documents = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=30,
)


def full_loader(text: str) -> Any:
    return yaml.load(text, Loader=yaml_loader._Loader)  # a SafeLoader


def outcome(load, text: str) -> tuple[str, str]:
    try:
        return "value", repr(load(text))
    except Exception as error:  # the same exception, with the same message, is the point
        return type(error).__name__, str(error)


@PROPERTY
@given(documents, st.booleans(), st.booleans())
def test_documents_come_out_as_the_safe_loader_reads_them(
    document: Any, flow: bool, shared: bool
) -> None:
    if shared:
        document = {"first": document, "again": document}  # dumped as an anchor and an alias
    text = yaml.safe_dump(document, default_flow_style=flow)
    # on the events path, not a fallback
    assert repr(yaml_loader._load_plain_yaml(text)) == repr(full_loader(text))


@PROPERTY
@given(
    documents,
    st.integers(0, 400),
    st.text(alphabet="{}[]&*!:-?,'\"|>#%@ \n\t<=.0a", min_size=1, max_size=6),
)
def test_mangled_text_gets_the_same_answer_or_the_same_refusal(
    document: Any, at: int, piece: str
) -> None:
    text = yaml.safe_dump({"a": document, "b": [document]})
    text = text[:at] + piece + text[at:]
    assert outcome(yaml_loader._load_yaml, text) == outcome(full_loader_only, text)


def full_loader_only(text: str) -> Any:
    """yaml_loader._load_yaml as it was: the full loader, with the same error reporting."""
    with mock.patch.object(yaml_loader, "_load_plain_yaml", side_effect=yaml_loader._NotPlain):
        return yaml_loader._load_yaml(text)


@pytest.mark.parametrize(
    "text",
    [
        "a: !!str 1\n",  # an explicit tag
        "base: &b {x: 1}\nderived:\n  <<: *b\n  y: 2\n",  # a merge key
        "a: &x 1\nb: &x 2\n",  # a duplicate anchor: refused
        "a: *nowhere\n",  # an undefined alias: refused
        "---\n---\na: 1\n",  # two documents: refused
        "? [1, 2]\n: x\n",  # a sequence as a key: refused
        "x: !!python/object:os.system ls\n",  # refused
        "n: " + "9" * 5000 + "\n",  # too many digits: refused
    ],
)
def test_the_full_loader_answers_what_the_events_path_leaves(text: str) -> None:
    with pytest.raises(yaml_loader._NotPlain):
        yaml_loader._load_plain_yaml(text)
    assert outcome(yaml_loader._load_yaml, text) == outcome(full_loader_only, text)


def test_an_alias_to_its_own_container_is_read_on_the_events_path() -> None:
    document = yaml_loader._load_plain_yaml("a: &r [1, *r]\n")
    assert document["a"][1] is document["a"]
