"""The offline commands keep their contract on any input: `tas solve`, `tas simulate`, `tas
contest` and `tas top` (on what a server sends) either answer (exit 0) or print exactly one
line on stderr and exit non-zero, never a traceback, and within bounded memory and time.

The fuzzing takes a small valid input and puts hostile values anywhere in it: integers far
beyond 64 bits (written as YAML hex, as a 4,000-digit one fits on one line), negatives and
zeros, infinities, long strings, wrong types, and hostile keys. It runs in this process with
tracemalloc watching the peak; the inputs the audit found run in a child process under a memory
limit, so that the old behaviour (3.7 GB) fails the test instead of the test run.
"""

from __future__ import annotations

import io
import json
import math
import resource
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tas.offline import scenario
from tas.offline.contest import adapter
from tas.offline.simulate import run as simulate
from tas.view import codec, top
from tas.view import model as view_model

PEAK_BYTES = 256 << 20  # far above what a valid input this small needs
SECONDS = 10.0  # per run; they take milliseconds
HUGE = 16**4000 - 1  # 4,000 hex digits: more than Python prints as decimal (4,300 digits)


# ---- inputs ------------------------------------------------------------------------------------


def valid_scenario() -> dict:
    hostname = "kubernetes.io/hostname"
    return {
        "topology": {"levels": [{"nodeLabel": "rack"}, {"nodeLabel": hostname}]},
        "nodes": [
            {
                "name": f"n{i}",
                "labels": {"rack": f"r{i // 2}", hostname: f"n{i}"},
                "allocatable": {"cpu": "4", "memory": "8Gi"},
            }
            for i in range(4)
        ],
        "workloads": [
            {
                "name": "w1",
                "priority": 1,
                "podSets": [
                    {
                        "name": "main",
                        "count": 2,
                        "requests": {"cpu": "1"},
                        "annotations": {"kueue.x-k8s.io/podset-required-topology": "rack"},
                    }
                ],
            }
        ],
    }


def valid_trace() -> dict:
    trace = valid_scenario()
    trace["workloads"][0] |= {"arrival": 1.5, "duration": 10}
    second = json.loads(json.dumps(trace["workloads"][0])) | {"name": "w2", "arrival": 3}
    trace["workloads"].append(second)
    return trace


CONTEST = "1 4 1 4 2\n8 16\n2\n1 2 4\n2 8 16\n1 1 0 0\n2 2 1 1\n1 2\n3 1\n1\n4\n"

EDGE_INTS = (0, -1, 2**31, 2**63, 2**64, -(2**63) - 1, HUGE, -HUGE)
# By index: Hypothesis describes a strategy with repr(), which a 4,000-digit integer breaks.
hostile_ints = st.one_of(
    st.integers(0, len(EDGE_INTS) - 1).map(EDGE_INTS.__getitem__),
    st.integers(),
)
hostile_scalars = st.one_of(
    hostile_ints,
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(["x" * 5000, "-1", "1e400", "0x" + "f" * 4000, "", "Infinity"]),
    st.booleans(),
    st.none(),
)
hostile_values = st.recursive(
    hostile_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.one_of(st.text(max_size=10), hostile_ints), inner, max_size=3),
    ),
    max_leaves=6,
)


def places(value: Any, path: tuple = ()) -> list[tuple]:
    """Every path into a document (its mappings' keys and its lists' indices)."""
    out = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            out += places(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += places(item, (*path, index))
    return out


def put(document: Any, path: tuple, value: Any, as_key: bool) -> Any:
    if not path:
        return value
    parent = document
    for key in path[:-1]:
        parent = parent[key]
    if as_key and isinstance(parent, dict):
        parent[value if isinstance(value, Hashable) else "key"] = "x"
    else:
        parent[path[-1]] = value
    return document


@st.composite
def hostile_documents(draw, base) -> Any:
    document = base()
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(places(document)))
        document = put(document, path, draw(hostile_values), draw(st.booleans()))
    return document


def emit(value: Any) -> str:
    """YAML flow text, as a user could write it: huge integers in hex, explicit keys (a plain
    key longer than 1,024 characters is not YAML)."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int):
        return ("-" if value < 0 else "") + hex(abs(value)) if abs(value) > 2**64 else str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        return (".inf" if value > 0 else "-.inf") if math.isinf(value) else f"{value:.17e}"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(emit(item) for item in value) + "]"
    return "{" + ", ".join(f"? {emit(k)} : {emit(v)}" for k, v in value.items()) + "}"


# ---- the contract ------------------------------------------------------------------------------


def within_bounds(call) -> tuple[int, str, str]:
    """Run `call(stdout, stderr)`; its exit code and output, its time and memory checked."""
    stdout, stderr = io.StringIO(), io.StringIO()
    tracemalloc.start()
    started = time.perf_counter()
    try:
        code = call(stdout, stderr)
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert elapsed < SECONDS, f"took {elapsed:.1f}s"
    assert peak < PEAK_BYTES, f"peaked at {peak >> 20} MiB"
    return code, stdout.getvalue(), stderr.getvalue()


def one_line_or_answer(code: int, out: str, err: str, *, silent_on_error: bool = True) -> None:
    if code == 0:
        return
    assert code > 0
    assert err.endswith("\n") and err.count("\n") == 1, err[:2000]
    assert "Traceback" not in err
    if silent_on_error:
        assert out == "", "a refused input prints nothing on stdout"


FUZZ = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@FUZZ
@given(document=hostile_documents(valid_scenario))
def test_tas_solve_keeps_its_contract_on_hostile_scenarios(tmp_path_factory, document) -> None:
    path = tmp_path_factory.mktemp("solve") / "scenario.yaml"
    path.write_text(emit(document))
    code, out, err = within_bounds(lambda o, e: scenario.main(str(path), o, e))
    one_line_or_answer(code, out, err)


@FUZZ
@given(document=hostile_documents(valid_trace))
def test_tas_simulate_keeps_its_contract_on_hostile_traces(tmp_path_factory, document) -> None:
    path = tmp_path_factory.mktemp("simulate") / "trace.yaml"
    path.write_text(emit(document))
    code, out, err = within_bounds(lambda o, e: simulate.main(str(path), o, e))
    one_line_or_answer(code, out, err)


def valid_model() -> dict:
    """A small /model.json: a rack of two hosts, one admitted and one pending workload."""
    rack = "rack"
    alloc = {"cpu": 4000, "memory": 8 << 30, "pods": 110_000}
    use = view_model.Use("ns/w1", {"cpu": 2000}, 2)
    hosts = (
        view_model.HostView("n0", alloc, (use,), alloc, (view_model.CORDONED,)),
        view_model.HostView("n1", alloc, (), alloc),
    )
    domain = view_model.DomainView(rack, "r0", alloc, alloc, hosts=hosts)
    workloads = (
        view_model.WorkloadView("ns/w1", "q", "cq", 2, True, hosts=("n0",)),
        view_model.WorkloadView("ns/w2", "q", "cq", 9, False, reason="no room", needs="9 pods"),
    )
    view = view_model.ClusterView(
        (view_model.FlavorView("f", "t", (rack, "kubernetes.io/hostname"), (domain,)),),
        workloads,
        replacements=(view_model.ReplacementView("ns/w1", "n9", "n0", 1.0e9),),
        at=1.7e9,
        extras={"source": "test"},
    )
    return codec.to_data(view)


def emit_json(value: Any) -> bytes:
    """JSON as a server could send it, integers of any size included (as digits)."""
    if isinstance(value, bool) or value is None or isinstance(value, str | float):
        return json.dumps(value).encode()
    if isinstance(value, int):
        return str(value).encode() if abs(value) < 10**4000 else b"9" * 5000
    if isinstance(value, list):
        return b"[" + b", ".join(emit_json(item) for item in value) + b"]"
    members = [
        emit_json(key if isinstance(key, str) else emit_json(key).decode())
        + b": "
        + emit_json(item)
        for key, item in value.items()
    ]
    return b"{" + b", ".join(members) + b"}"


@FUZZ
@given(document=hostile_documents(valid_model))
def test_tas_top_keeps_its_contract_on_hostile_models(document) -> None:
    body = emit_json(document)
    code, out, err = within_bounds(
        lambda o, e: top.main(o, e, url="http://test", once=True, fetch=lambda _: body)
    )
    one_line_or_answer(code, out, err)


@st.composite
def well_typed_hostile_models(draw) -> Any:
    """Every number and string of a valid model may be swapped for a hostile one of the same
    type, so that the model decodes and the drawing meets the values."""
    by_type = {
        int: hostile_ints,
        float: st.floats(allow_nan=True, allow_infinity=True),
        str: st.text(max_size=20) | st.sampled_from(["x" * 5000, "[bold]", "\x1b[2J", "\n"]),
    }

    def swap(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: swap(item) for key, item in value.items()}
        if isinstance(value, list):
            return [swap(item) for item in value]
        strategy = by_type.get(type(value))
        return draw(strategy) if strategy is not None and draw(st.booleans()) else value

    return swap(valid_model())


@FUZZ
@given(document=well_typed_hostile_models())
def test_tas_top_draws_any_well_typed_model(document) -> None:
    body = emit_json(document)
    code, out, err = within_bounds(
        lambda o, e: top.main(o, e, url="http://test", once=True, fetch=lambda _: body)
    )
    one_line_or_answer(code, out, err)
    assert code == 0 or "not JSON" in err  # digits past Python's limit
    assert "\x1b" not in out and "\x1b" not in err  # no escape sequence reaches the terminal


@FUZZ
@given(
    document=hostile_documents(valid_trace),
    at=st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([0.0, 1.5, 3.0]),
)
def test_tas_top_keeps_its_contract_on_hostile_traces(tmp_path_factory, document, at) -> None:
    path = tmp_path_factory.mktemp("top") / "trace.yaml"
    path.write_text(emit(document))
    code, out, err = within_bounds(lambda o, e: top.main(o, e, trace=str(path), at=at))
    one_line_or_answer(code, out, err)


@FUZZ
@given(body=st.binary(max_size=200) | st.sampled_from([b"[" * 50_000, b'{"flavors": ' * 3000]))
def test_tas_top_keeps_its_contract_on_bytes_that_are_not_a_model(body: bytes) -> None:
    code, out, err = within_bounds(
        lambda o, e: top.main(o, e, url="http://test", once=True, fetch=lambda _: body)
    )
    one_line_or_answer(code, out, err)


hostile_tokens = st.one_of(
    hostile_ints.map(lambda i: str(i) if abs(i) < 2**64 else hex(i)),
    st.sampled_from(["", "x", "1.5", "0x10", "9" * 5000, "-", "+3"]),
)


@st.composite
def hostile_contest_inputs(draw) -> str:
    tokens = [line.split() for line in CONTEST.splitlines()]
    for _ in range(draw(st.integers(1, 4))):
        line = draw(st.integers(0, len(tokens) - 1))
        if tokens[line]:
            tokens[line][draw(st.integers(0, len(tokens[line]) - 1))] = draw(hostile_tokens)
    return "\n".join(" ".join(line) for line in tokens) + "\n"


@FUZZ
@given(text=hostile_contest_inputs())
def test_tas_contest_keeps_its_contract_on_hostile_input(text: str) -> None:
    """Placements already answered stay on stdout: the protocol is interactive."""
    code, out, err = within_bounds(lambda o, e: adapter.main(io.StringIO(text), o, e))
    one_line_or_answer(code, out, err, silent_on_error=False)


# ---- what the audit found, in a child process under a memory limit ------------------------------

HEX = "0x" + "f" * 4000
REPORTED = {
    "solve-quantity": (
        "solve",
        "topology: {levels: [{nodeLabel: kubernetes.io/hostname}]}\n"
        "nodes: [{name: n1, labels: {kubernetes.io/hostname: n1}, allocatable: {cpu: '4'}}]\n"
        f"workloads: [{{name: w, podSets: [{{name: m, count: {HEX}, requests: {{cpu: '1'}}}}]}}]\n",
        "workloads[0].podSets[0].count",
    ),
    "solve-label-key": (
        "solve",
        "topology: {levels: [{nodeLabel: kubernetes.io/hostname}]}\n"
        "nodes:\n- name: n1\n  labels:\n    kubernetes.io/hostname: n1\n"
        f"    ? {HEX}\n    : x\n  allocatable: {{cpu: '4'}}\n"
        "workloads: [{name: w, podSets: [{name: m, count: 1, requests: {cpu: '1'}}]}]\n",
        "nodes[0].labels",
    ),
    "simulate-arrival": (
        "simulate",
        "topology: {levels: [{nodeLabel: kubernetes.io/hostname}]}\n"
        "nodes: [{name: n1, labels: {kubernetes.io/hostname: n1}, allocatable: {cpu: '4'}}]\n"
        f"workloads: [{{name: w, arrival: 0x{'f' * 300}, "
        "podSets: [{name: m, count: 1, requests: {cpu: '1'}}]}]\n",
        "workloads[0].arrival",
    ),
    "contest-pool": ("contest", "10000 10000 10000 10000 2\n8 16\n1\n1 1 1\n4\n", "N must be"),
    "contest-cpu": ("contest", f"1 4 1 4 2\n{2**64} 16\n1\n1 1 1\n4\n", "out of range"),
    "contest-zero-cpu-type": (
        "contest",
        "1 4 1 4 2\n8 16\n1\n1 0 1\n1 1 0 0\n2 1 1 1\n1\n4\n",
        "VM type 1: CPU",
    ),
}
MEMORY_LIMIT = 1 << 30


def limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT * 2, MEMORY_LIMIT * 2))


@pytest.mark.parametrize("case", sorted(REPORTED))
def test_the_reported_inputs_get_one_line_naming_the_problem(tmp_path: Path, case: str) -> None:
    command, text, named = REPORTED[case]
    args = [sys.executable, "-m", "tas.cli", command]
    stdin = text
    if command != "contest":
        (tmp_path / "input.yaml").write_text(text)
        args.append(str(tmp_path / "input.yaml"))
        stdin = ""
    result = subprocess.run(
        args,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=limit_memory,
    )
    assert result.returncode != 0
    assert result.stderr.count("\n") == 1, result.stderr[-3000:]
    assert named in result.stderr
    assert "Warning" not in result.stderr and result.stdout == ""
