"""The hardened YAML (and JSON) loader of `tas solve` and `tas simulate`: what a hostile file
holds (a huge file, deep nesting, alias bombs, integers of thousands of digits) is refused as
malformed, naming where, like any other mistake; and a scenario's plain YAML is read straight
from the parser's events, ten times faster than PyYAML's own loader."""

from __future__ import annotations

import json
from typing import Any

import yaml

from tas.offline.fields import ScenarioError, join_path, key_path

MAX_BYTES = 256 * 2**20  # far above a 20,480-node scenario (about 10 MB)
MAX_ELEMENTS = 5_000_000  # values in the document once aliases are expanded
MAX_DEPTH = 64  # a scenario nests about 8 deep
# Kubernetes' integers and quantities are 64-bit; Python's are not, and cannot even be printed
# past 4,300 digits (a 4,000-digit YAML hex integer is one line of text).
MAX_INTEGER = 2**63 - 1


# libyaml's parser when PyYAML was built with it. It refuses nesting deeper than 1,000 levels
# by itself.
_SafeLoader = getattr(yaml, "CSafeLoader", None) if yaml.__with_libyaml__ else None


class _Loader(_SafeLoader or yaml.SafeLoader):  # type: ignore[misc]
    """YAML's safe loader without its timestamp type: a label value like 2024-13-45 is a
    string here (Kubernetes reads it as one), not an invalid date."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def read_text(path: str) -> str:
    """The file's text, refused past MAX_BYTES as it is read (one read of MAX_BYTES would
    allocate them all, whatever the file's size)."""
    chunks, size = [], 0
    try:
        with open(path, encoding="utf-8") as file:
            while chunk := file.read(1 << 20):
                size += len(chunk)
                if size > MAX_BYTES:
                    raise ScenarioError("(document)", f"larger than {MAX_BYTES // 2**20} MiB")
                chunks.append(chunk)
    except (OSError, UnicodeDecodeError) as error:
        raise ScenarioError(path, f"cannot read: {error}") from None
    return "".join(chunks)


def load_document(text: str) -> Any:
    """JSON when it parses as JSON, else YAML (a superset for everything a scenario holds).
    Hostile documents (deep nesting, alias bombs, numbers of thousands of digits) are refused
    as malformed, like any other."""
    try:
        document = json.loads(text)
    except ValueError:
        document = _load_yaml(text)
    except RecursionError:
        raise ScenarioError("(document)", f"nested deeper than {MAX_DEPTH} levels") from None
    _check_size(document)
    return document


def _load_yaml(text: str) -> Any:
    try:
        try:
            return _load_plain_yaml(text)
        except _NotPlain:
            return yaml.load(text, Loader=_Loader)  # a SafeLoader
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        position = f" at line {where.line + 1}, column {where.column + 1}" if where else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise ScenarioError("(document)", f"not valid YAML or JSON{position}: {problem}") from None
    except RecursionError:
        raise ScenarioError("(document)", f"nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as error:  # e.g. an integer of more digits than Python converts
        raise ScenarioError("(document)", f"not a valid value: {error}") from None


class _NotPlain(Exception):
    """The document uses what only the full loader handles (or refuses with its message)."""


_PLAIN_TAGS = {f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null")}
_NO_KEY = object()  # no mapping key read yet
_UNSEEN = object()


def _load_plain_yaml(text: str) -> Any:
    """The safe loader's document, built straight from the parser's events.

    PyYAML's loader first builds a node object per value, then the value from the node: at
    20,480 nodes that is 5 s, the parsing itself 0.4 s. This handles what scenarios hold
    (mappings, sequences, untagged scalars, anchors and aliases) with the loader's own rules
    for scalars, and gives up (`_NotPlain`) on anything else: explicit tags, merge keys,
    several documents, mappings as keys, duplicate or undefined anchors. The full loader then
    reads the text again and answers as it always does.
    """
    loader = _Loader("")
    values: dict[str, Any] = {}  # plain scalar text -> its value (int, bool, str, ...)
    anchors: dict[str, Any] = {}
    open_: list[list[Any]] = []  # [container, pending mapping key]: the containers being built
    document = None
    documents = 0
    for event in yaml.parse(text, Loader=_Loader):
        if type(event) is yaml.ScalarEvent:
            if event.tag is not None:
                raise _NotPlain
            value: Any = event.value
            if event.implicit[0]:  # plain, not quoted: resolved as the loader would
                value = values.get(event.value, _UNSEEN)
                if value is _UNSEEN:
                    value = values[event.value] = _plain_scalar(loader, event.value)
        elif type(event) is yaml.MappingStartEvent or type(event) is yaml.SequenceStartEvent:
            if event.tag is not None:
                raise _NotPlain
            value = {} if type(event) is yaml.MappingStartEvent else []
        elif type(event) is yaml.MappingEndEvent or type(event) is yaml.SequenceEndEvent:
            open_.pop()
            continue
        elif type(event) is yaml.AliasEvent:
            if event.anchor not in anchors:
                raise _NotPlain
            value = anchors[event.anchor]
        else:
            documents += type(event) is yaml.DocumentStartEvent
            if documents > 1:
                raise _NotPlain
            continue
        if type(event) is not yaml.AliasEvent and event.anchor is not None:
            if event.anchor in anchors:
                raise _NotPlain
            anchors[event.anchor] = value
        if not open_:
            document = value
        elif type(open_[-1][0]) is list:
            open_[-1][0].append(value)
        elif open_[-1][1] is _NO_KEY:
            if isinstance(value, dict | list):
                raise _NotPlain  # an unhashable key
            open_[-1][1] = value
        else:
            open_[-1][0][open_[-1][1]] = value
            open_[-1][1] = _NO_KEY
        if type(event) is yaml.MappingStartEvent or type(event) is yaml.SequenceStartEvent:
            open_.append([value, _NO_KEY])
    return document


def _plain_scalar(loader: _Loader, text: str) -> Any:
    tag = loader.resolve(yaml.ScalarNode, text, (True, False))
    if tag not in _PLAIN_TAGS:
        raise _NotPlain  # a merge key (<<) or a value key (=)
    try:
        return loader.yaml_constructors[tag](loader, yaml.ScalarNode(tag, text))
    except ValueError:
        # an integer too long to convert: the full loader reports it, or an error before it
        raise _NotPlain from None


def _check_size(document: Any) -> None:
    """Walk the document once within a budget: aliases may make a small file enormous. An
    integer beyond 64 bits, as a value or a key, is refused here, naming where it is, so that
    nothing after this ever holds one."""
    budget = MAX_ELEMENTS
    stack: list[tuple[Any, int, tuple]] = [(document, 0, ())]
    while stack:
        value, depth, where = stack.pop()
        if depth > MAX_DEPTH:
            raise ScenarioError("(document)", f"nested deeper than {MAX_DEPTH} levels")
        budget -= 1
        if budget < 0:
            raise ScenarioError(
                "(document)", f"more than {MAX_ELEMENTS} values (after expanding aliases)"
            )
        if _huge(value):
            raise ScenarioError(_path(where), f"integer out of range: {_magnitude(value)}")
        if isinstance(value, dict):
            for key, item in value.items():
                if _huge(key):
                    raise ScenarioError(_path(where), f"key out of range: {_magnitude(key)}")
                stack.append((item, depth + 1, (where, key)))
        elif isinstance(value, list):
            stack.extend((item, depth + 1, (where, index)) for index, item in enumerate(value))


def _huge(value: Any) -> bool:
    return type(value) is int and not -MAX_INTEGER - 1 <= value <= MAX_INTEGER


def _magnitude(value: int) -> str:
    return f"an integer of {value.bit_length()} bits (at most 64)"


def _path(where: tuple) -> str:
    """`(((), "nodes"), 0)` -> `nodes[0]`: the chain of keys the walk kept, as a field path."""
    keys = []
    while where:
        where, key = where
        keys.append(key)
    path = ""
    for key in reversed(keys):
        if isinstance(key, int):
            path += f"[{key}]"
        elif isinstance(key, str) and key.replace("_", "").isalnum():
            path = join_path(path, key)
        else:
            path = key_path(path, str(key))
    return path or "(document)"
