"""Every `tas contest` planner (the growth-aware default and the plain baselines) against our
checker: each answer obeys every constraint; and on growing inputs the growth planner places
at least twice what plain best fit does."""

from __future__ import annotations

import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tas.offline.contest import adapter, checker, generator
from tas.offline.contest.names import BASELINES, DEFAULT_PLANNER, GROWTH, PLANNERS
from tests.unit.offline.contest.test_checker import EXAMPLE_INPUT as EXAMPLE

GREEDY = [p for p in PLANNERS if p != "groups"]


def serve(text: str, planner: str) -> str:
    out = io.StringIO()
    adapter.run(io.StringIO(text), out, planner=planner)
    return out.getvalue()


def score(text: str, planner: str) -> int:
    result = checker.check(text, serve(text, planner))
    assert result.ok, (planner, result.error)
    return result.score


def test_the_growth_planner_is_the_default() -> None:
    assert DEFAULT_PLANNER == GROWTH and set(BASELINES) <= set(PLANNERS)


@pytest.mark.parametrize("planner", GREEDY)
@pytest.mark.parametrize(
    ("shape", "seed"), [(s, n) for s in generator.SHAPES if s != "large" for n in range(2)]
)
def test_every_answer_passes_the_checker(planner: str, shape: str, seed: int) -> None:
    score(generator.generate(seed, shape), planner)


@pytest.mark.parametrize("planner", GREEDY)
def test_the_statements_example(planner: str) -> None:
    # The example's pool is too small for the last request whatever the planner.
    output = serve(EXAMPLE, planner)
    result = checker.check(EXAMPLE, output)
    assert result.ok and result.score == 19, result


def test_growth_doubles_best_fit_on_growing_inputs() -> None:
    texts = [generator.generate(seed, "growing") for seed in range(1, 7)]
    best_fit = sum(score(text, "best-fit") for text in texts)
    growth = sum(score(text, GROWTH) for text in texts)
    assert growth >= 2 * best_fit, (growth, best_fit)


def test_first_fit_takes_the_first_server_and_best_fit_the_fullest() -> None:
    # One network domain, 1 pod, 1 rack of 4 servers; VMs of a quarter node, 1-NUMA.
    head = "1 4 1 4 2\n8 8\n1\n1 2 2\n"
    # Group 1 (no constraints) puts 1 VM on the first server; group 2 then asks for 1 more.
    body = "1\n1 0 0\n2\n1 1 1\n1\n1\n2 4 0\n2\n2 1 2\n2 3\n4\n"
    # (group 2 has server anti-affinity: its 2 VMs go on 2 servers)
    text = head + body
    first = serve(text, "first-fit").splitlines()
    best = serve(text, "best-fit").splitlines()
    assert first[1].split()[:4] == ["1", "1", "1", "1"]  # the first server again
    assert best[1].split()[:4] == ["1", "1", "1", "1"]  # the fullest: the one in use
    assert first[2].split()[:4] != first[1].split()[:4]  # anti-affinity


def test_spread_and_growth_open_the_emptiest_network_domain() -> None:
    # Two network domains; group 1 (no constraints) fills half of domain 1's room, then a
    # network-domain group opens: best fit packs it beside, spread and growth go to domain 2.
    head = "2 4 1 4 2\n8 8\n1\n2 8 8\n"
    body = "1\n1 0 0\n2\n1 1 1\n1\n1\n2 3 0\n2\n4 1 2\n2 3 4 5\n4\n"
    text = head + body
    domains = {p: {line.split()[0] for line in serve(text, p).splitlines()[1:]} for p in GREEDY}
    assert domains["best-fit"] == {"1"} and domains["first-fit"] == {"1"}
    assert domains["spread"] == {"2"} and domains[GROWTH] == {"2"}


@st.composite
def requests(draw: st.DrawFn) -> str:
    """A small random input: any group types, creation sizes, VM types and deletions."""
    n, p, r, s = draw(st.tuples(*(st.integers(1, 3) for _ in range(3)), st.integers(1, 4)))
    cpu, mem = draw(st.integers(2, 12)), draw(st.integers(2, 12))
    types = [
        (2, cpu, mem),
        *draw(
            st.lists(
                st.tuples(st.integers(1, 2), st.integers(1, cpu), st.integers(1, mem)),
                min_size=1,
                max_size=3,
            )
        ),
    ]
    lines = [f"{n} {p} {r} {s} 2", f"{cpu} {mem}", str(len(types))]
    lines += [" ".join(map(str, t)) for t in types]
    live: dict[int, list[int]] = {}
    kinds: dict[int, int] = {}
    next_vm = 1
    for _ in range(draw(st.integers(1, 25))):
        action = draw(st.sampled_from(["group", "create", "create", "delete"]))
        if action == "group" or not kinds:
            kind = draw(st.integers(0, 9))
            kinds[len(kinds) + 1] = kind
            parts = draw(st.integers(1, 7)) if kind == 6 else 0
            lines += ["1", f"{len(kinds)} {kind} {parts}"]
        elif action == "create":
            group = draw(st.sampled_from(sorted(kinds)))
            kind = kinds[group]
            if kind in (2, 9):
                count, vm_type = r * s * draw(st.integers(1, 2 if kind == 9 else 1)), 1
            else:
                count, vm_type = draw(st.integers(1, 6)), draw(st.integers(1, len(types)))
            ids = list(range(next_vm, next_vm + count))
            next_vm += count
            live.setdefault(group, []).extend(ids)
            lines += ["2", f"{count} {vm_type} {group}", " ".join(map(str, ids))]
        elif any(live.values()):
            group = draw(st.sampled_from(sorted(g for g, v in live.items() if v)))
            gone = draw(st.lists(st.sampled_from(live[group]), min_size=1, unique=True))
            live[group] = [v for v in live[group] if v not in gone]
            lines += ["3", f"{len(gone)} " + " ".join(map(str, gone))]
    return "\n".join([*lines, "4"]) + "\n"


@pytest.mark.parametrize("planner", GREEDY)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=requests())
def test_no_server_over_committed_and_every_rule_kept(planner: str, text: str) -> None:
    """Whatever the input (within the protocol; some requests may be impossible), every answer
    up to the first -1 passes the checker: capacity, NUMA, affinity, anti-affinity,
    partitions, whole pods."""
    result = checker.check(text, serve(text, planner))
    assert result.ok, result.error
