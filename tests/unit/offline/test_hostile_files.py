"""Hostile scenario files: `tas solve` answers each with one line on stderr, nothing on stdout
and a non-zero exit (or a normal answer), never a traceback, a hang or a flood of output."""

import io
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tas.offline import scenario

VALID = """
topology:
  levels: [{nodeLabel: kubernetes.io/hostname}]
nodes:
  - name: x1
    labels: {kubernetes.io/hostname: x1}
    allocatable: {cpu: "4"}
workloads:
  - name: w
    podSets: [{name: main, count: 2, requests: {cpu: "1"}}]
"""

BOMB = "\n".join(
    ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [
        f"{c}: &{c} [{','.join(['*' + p] * 9)}]"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    ]
    + ["topology: *i"]
)


def solve_text(tmp_path: Path, text: str) -> tuple[int, str, str]:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    out, err = io.StringIO(), io.StringIO()
    code = scenario.main(str(path), out, err)
    return code, out.getvalue(), err.getvalue()


def assert_contract(code: int, out: str, err: str) -> None:
    if code == 0:
        json.loads(out)
        assert err == ""
    else:
        assert out == "" and err.endswith("\n") and err.count("\n") == 1, err[:300]
        assert len(err) <= scenario.MAX_MESSAGE + 100
        assert "Traceback" not in err


@pytest.mark.parametrize(
    "text",
    [
        "[" * 50_000 + "]" * 50_000,  # deep JSON
        "a: " + "[" * 50_000 + "]" * 50_000,  # deep YAML flow
        "".join("  " * i + "- \n" for i in range(3_000)),  # deep YAML block
        BOMB,  # a billion laughs
        "topology: {levels: [{nodeLabel: h}]}\nnodes: [{name: x, labels: {h: 2024-13-45}}]",
        "topology: {levels: [{nodeLabel: h}]}\nnodes: [{name: x, labels: {h: "
        + "9" * 5_000
        + "}}]",
        "topology: {levels: [{nodeLabel: h}]}\nnodes: [{name: " + "x" * 400_000 + "}]",
        "x: !!python/object:os.system ls",
        "\x00\x01",
    ],
    ids=[
        "deep-json",
        "deep-yaml-flow",
        "deep-yaml-block",
        "alias-bomb",
        "bad-date",
        "huge-int",
        "huge-name",
        "python-tag",
        "binary",
    ],
)
def test_hostile_documents_are_refused_cleanly(tmp_path: Path, text: str) -> None:
    code, out, err = solve_text(tmp_path, text)
    assert code != 0
    assert_contract(code, out, err)


def test_a_date_like_label_value_is_a_string(tmp_path: Path) -> None:
    text = VALID.replace(
        "kubernetes.io/hostname: x1}", "kubernetes.io/hostname: x1, rack: 2024-01-02}"
    )
    code, out, _ = solve_text(tmp_path, text)
    assert code == 0 and json.loads(out)["workloads"][0]["admitted"]


def test_exbi_quantities_are_taken(tmp_path: Path) -> None:
    code, _, err = solve_text(tmp_path, VALID.replace('cpu: "4"', "cpu: 1Ei"))
    assert code == 0, err


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.integers(0, len(VALID) - 1),
    st.text(min_size=1, max_size=8),
    st.sampled_from(["insert", "replace", "cut"]),
)
def test_mutated_scenarios_keep_the_contract(tmp_path: Path, at: int, piece: str, how: str) -> None:
    if how == "insert":
        text = VALID[:at] + piece + VALID[at:]
    elif how == "replace":
        text = VALID[:at] + piece + VALID[at + len(piece) :]
    else:
        text = VALID[:at]
    assert_contract(*solve_text(tmp_path, text))
