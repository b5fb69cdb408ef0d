"""The defragmentation planner (gate TASDefragmentation): scenarios and properties.

Hosts hold 4 pods (cpu 4000m, each pod 1000m); blocks b0, b1 of racks of hosts.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tas.admission.defrag import Candidate, Limits, Plan, plan
from tas.solver import (
    DomainAssignment,
    FlavorSpec,
    Node,
    PodSetRequest,
    SolverOptions,
    TopologyAssignment,
    TopologyRequest,
    TopologySnapshot,
)

BLOCK, RACK, HOST = "block", "rack", "kubernetes.io/hostname"
LEVELS = (BLOCK, RACK, HOST)
CPU = 1000  # one pod


def cluster(blocks: int = 2, racks: int = 1, hosts: int = 4, cpu: int = 4) -> TopologySnapshot:
    nodes = [
        Node(
            f"b{b}-r{r}-h{h}",
            {BLOCK: f"b{b}", RACK: f"b{b}-r{r}", HOST: f"b{b}-r{r}-h{h}"},
            {"cpu": cpu * CPU, "pods": 110_000},
        )
        for b in range(blocks)
        for r in range(racks)
        for h in range(hosts)
    ]
    snapshot = TopologySnapshot(LEVELS, nodes, FlavorSpec(topology_name="t"), SolverOptions())
    snapshot.build()
    return snapshot


def podset(count: int, required: str | None = BLOCK, name: str = "main") -> PodSetRequest:
    topology = TopologyRequest(required=required) if required else TopologyRequest()
    return PodSetRequest(name, count, {"cpu": CPU}, topology)


def run(snapshot: TopologySnapshot, key: str, hosts: Mapping[str, int], **kw) -> Candidate:
    """A running workload with `hosts[name]` pods on each host, charged to the snapshot."""
    ps = podset(sum(hosts.values()), kw.pop("required", BLOCK))
    assignment = TopologyAssignment(
        (HOST,),
        tuple(DomainAssignment((h,), n) for h, n in sorted(hosts.items())),
    )
    snapshot.add_usage(assignment, ps.requests)
    return Candidate(key, (ps,), {ps.name: assignment}, **kw)


def hosts_of(assignment: TopologyAssignment) -> set[str]:
    return {d.values[-1] for d in assignment.domains}


def block_of(assignment: TopologyAssignment) -> set[str]:
    return {d.values[-1].split("-")[0] for d in assignment.domains}


def test_one_small_workload_moved_opens_a_block() -> None:
    snapshot = cluster()
    a = run(snapshot, "a", {"b0-r0-h0": 2})
    b = run(snapshot, "b", {"b1-r0-h0": 2})
    found = plan(snapshot, [podset(16)], [a, b])
    assert isinstance(found, Plan)
    assert len(found.moved) == 1
    (moved,) = found.moved
    mover = a if moved == "a" else b
    assert block_of(found.gang["main"]) == block_of(mover.assignments["main"])
    # the moved workload lands off the gang's hosts
    assert not hosts_of(found.moves[moved]["main"]) & hosts_of(found.gang["main"])


@pytest.mark.parametrize(
    ("placed", "gang", "movable", "moved_count"),
    [
        pytest.param({"a": {"b0-r0-h0": 2}, "b": {"b1-r0-h0": 2}}, 16, "ab", 1, id="one-of-two"),
        pytest.param(
            {
                "a": {"b0-r0-h0": 2},
                "b": {"b0-r0-h1": 2},
                "c": {"b1-r0-h0": 2},
                "d": {"b1-r0-h1": 2},
            },
            16,
            "abcd",
            2,
            id="four-scattered-two-move",
        ),
        pytest.param({"a": {"b0-r0-h0": 2}, "b": {"b1-r0-h0": 2}}, 16, "a", 1, id="only-a"),
        pytest.param({"a": {"b0-r0-h0": 2}, "b": {"b1-r0-h0": 2}}, 16, "", 0, id="none-movable"),
        pytest.param(
            {
                "a": {"b0-r0-h0": 4, "b0-r0-h1": 4, "b0-r0-h2": 4},
                "b": {"b1-r0-h0": 4, "b1-r0-h1": 4, "b1-r0-h2": 4},
            },
            16,
            "ab",
            0,
            id="nowhere-to-go",
        ),
    ],
)
def test_scenarios(
    placed: dict[str, dict[str, int]], gang: int, movable: str, moved_count: int
) -> None:
    snapshot = cluster()
    candidates = {key: run(snapshot, key, hosts) for key, hosts in placed.items()}
    before = snapshot.remaining()
    found = plan(snapshot, [podset(gang)], [candidates[k] for k in movable])
    assert snapshot.remaining() == before  # the simulation is undone
    if not moved_count:
        assert isinstance(found, str)
        return
    assert isinstance(found, Plan)
    assert len(found.moved) == moved_count
    assert set(found.moved) <= set(movable)


def test_leaving_workloads_cost_nothing_and_take_no_budget() -> None:
    snapshot = cluster()
    a = run(snapshot, "a", {"b0-r0-h0": 3}, queue="q")
    b = run(snapshot, "b", {"b1-r0-h0": 1}, queue="q", leaving=True)
    found = plan(snapshot, [podset(16)], [a, b], budget={"q": 0})
    assert isinstance(found, Plan) and found.moved == ("b",)


def test_budget_spent_finds_nothing() -> None:
    snapshot = cluster()
    a = run(snapshot, "a", {"b0-r0-h0": 2}, queue="q")
    b = run(snapshot, "b", {"b1-r0-h0": 2}, queue="q")
    assert isinstance(plan(snapshot, [podset(16)], [a, b], budget={"q": 0}), str)


def test_cheapest_first_among_sets_of_one() -> None:
    snapshot = cluster()
    a = run(snapshot, "a", {"b0-r0-h0": 3})
    b = run(snapshot, "b", {"b1-r0-h0": 1})
    found = plan(snapshot, [podset(16)], [a, b])
    assert isinstance(found, Plan) and found.moved == ("b",)


def test_a_gang_without_a_required_level_is_not_planned_for() -> None:
    snapshot = cluster()
    a = run(snapshot, "a", {"b0-r0-h0": 2})
    assert "requires no topology level" in plan(snapshot, [podset(16, None)], [a])


def test_the_search_stops_at_its_time_budget() -> None:
    snapshot = cluster()
    a = run(snapshot, "a", {"b0-r0-h0": 2})
    ticks = iter(range(100))
    found = plan(snapshot, [podset(16)], [a], limits=Limits(seconds=0.5), clock=lambda: next(ticks))
    assert isinstance(found, str) and "bounds" in found


# ---- properties ------------------------------------------------------------------------------


@st.composite
def worlds(draw: st.DrawFn):
    """2 blocks x 2 racks x 2 hosts of 4 pods; 3 to 10 small workloads (1-3 pods on one host,
    required rack or block), scattered, some movable; a gang of 5-16 pods required in a block
    or a rack."""
    snapshot = cluster(blocks=2, racks=2, hosts=2)
    free = {f"b{b}-r{r}-h{x}": 4 for b in range(2) for r in range(2) for x in range(2)}
    running: list[tuple[Candidate, bool]] = []
    for i in range(draw(st.integers(3, 10))):
        host = draw(st.sampled_from(sorted(free)))
        if not free[host]:
            continue
        count = draw(st.integers(1, min(3, free[host])))
        free[host] -= count
        required = draw(st.sampled_from([RACK, BLOCK]))
        candidate = run(snapshot, f"w{i}", {host: count}, required=required)
        running.append((candidate, draw(st.booleans())))
    gang = podset(draw(st.integers(5, 16)), draw(st.sampled_from([RACK, BLOCK])))
    return snapshot, running, gang


def fits_after_moving(snapshot, gang, subset: Sequence[Candidate]) -> bool:
    """Oracle, by the planner on exactly this set (size cap = its size, all one domain or not)."""
    found = plan(snapshot, [gang], list(subset), limits=Limits(max_moves=len(subset), seconds=60))
    return isinstance(found, Plan) and len(found.moved) == len(subset)


def over_committed(snapshot: TopologySnapshot) -> bool:
    return any(v < 0 for room in snapshot.remaining().values() for v in room.values())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_a_plan_is_sound_minimal_and_moves_only_movable_workloads(world) -> None:
    snapshot, running, gang = world
    movable = [c for c, ok in running if ok]
    if snapshot.find_assignments([gang]).admitted:
        return  # nothing to plan for
    before = snapshot.remaining()
    found = plan(snapshot, [gang], movable, limits=Limits(seconds=60))
    assert snapshot.remaining() == before
    if not isinstance(found, Plan):
        return
    by_key = {c.key: c for c in movable}
    assert set(found.moved) <= set(by_key)  # never a workload that did not opt in
    # apply the plan: no node over-committed, the required levels honoured
    for key in found.moved:
        ps = by_key[key].pod_sets[0]
        snapshot.add_usage(by_key[key].assignments["main"], ps.requests, -1)
    snapshot.add_usage(found.gang["main"], gang.requests)
    for key in found.moved:
        ps = by_key[key].pod_sets[0]
        snapshot.add_usage(found.moves[key]["main"], ps.requests)
        assert spans(found.moves[key]["main"], ps.topology.required) == 1
    assert not over_committed(snapshot)
    assert spans(found.gang["main"], gang.topology.required) == 1
    assert sum(d.count for d in found.gang["main"].domains) == gang.count
    # minimal: no proper subset works
    for key in found.moved:
        ps = by_key[key].pod_sets[0]
        snapshot.add_usage(found.moves[key]["main"], ps.requests, -1)
        snapshot.add_usage(by_key[key].assignments["main"], ps.requests)
    snapshot.add_usage(found.gang["main"], gang.requests, -1)
    assert snapshot.remaining() == before
    moved = [by_key[k] for k in found.moved]
    for size in range(1, len(moved)):
        for subset in itertools.combinations(moved, size):
            assert not fits_after_moving(snapshot, gang, subset)


def spans(assignment: TopologyAssignment, level: str | None) -> int:
    depth = LEVELS.index(level)
    return len({_path(d.values[-1])[: depth + 1] for d in assignment.domains})


def _path(host: str) -> tuple[str, ...]:
    b, r, _ = host.split("-")
    return (b, f"{b}-{r}", host)
