"""The vectorized path (numpy counts, level choice and descent) and the plain path (Python over
every Domain, `TopologySnapshot(..., reference=True)`) give identical results: assignments,
failure messages with their exclusion counts, and replacements, over random topologies (with or
without a hostname level), taints, node selectors, tolerations, leader groups, slices in one or
two layers, both profiles, sequences of admissions and departures, and the gates
TASNodeFeasibilityForAllLevels (nodes as leaves below any lowest level) and
TASRespectNodeAffinityPreferred (preferred node affinity, which sends both to the plain path).
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tas.solver import (
    HOSTNAME_LEVEL,
    PODS,
    DomainAssignment,
    Node,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodSetRequest,
    PreferredSchedulingTerm,
    SliceLayer,
    SolverOptions,
    Taint,
    Toleration,
    TopologyAssignment,
    TopologyRequest,
    TopologySnapshot,
    vectorized,
)
from tests.unit.solver_properties.test_invariants import leader_and_workers, podsets

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TAINT = Taint("maintenance", "NoSchedule")
AFFINITIES = [
    (),
    (),
    (NodeSelectorTerm((NodeSelectorRequirement("pool", "In", ("a",)),)),),
    (NodeSelectorTerm((NodeSelectorRequirement("pool", "NotIn", ("a",)),)),),
    (NodeSelectorTerm((NodeSelectorRequirement("example.com/level-0", "In", ("d0-0",)),)),),
]


PREFERENCES = [
    (),
    (PreferredSchedulingTerm(10, AFFINITIES[2][0]),),
    (PreferredSchedulingTerm(5, AFFINITIES[3][0]), PreferredSchedulingTerm(50, AFFINITIES[4][0])),
]


@st.composite
def topologies(draw: st.DrawFn) -> tuple[tuple[str, ...], list[Node]]:
    """1-3 levels above the leaves; the leaves are hosts, or (without a hostname level) the
    lowest domains, which then sum the capacity of several nodes."""
    depth = draw(st.integers(1, 3))
    upper = tuple(f"example.com/level-{index}" for index in range(depth))
    with_hosts = draw(st.booleans())
    levels = (*upper, HOSTNAME_LEVEL) if with_hosts else upper
    paths: list[tuple[str, ...]] = [()]
    for index in range(depth):
        fanout = draw(st.integers(1, 4))
        paths = [(*path, f"d{index}-{i}") for path in paths for i in range(fanout)]
    nodes = []
    for path in paths:
        for _ in range(draw(st.integers(1, 4))):
            name = f"n{len(nodes)}"
            cpu = draw(st.sampled_from([0, 1000, 2000, 4000, 8000]))
            pods = draw(st.integers(0, 12)) * 1000
            nodes.append(
                Node(
                    name=name,
                    labels={
                        **dict(zip(upper, path, strict=True)),
                        HOSTNAME_LEVEL: name,
                    }
                    # mostly in a pool, now and then without the label
                    | ({"pool": draw(st.sampled_from("ab"))} if draw(st.integers(0, 5)) else {}),
                    allocatable={"cpu": cpu, "memory": draw(st.sampled_from([0, 16, 64])) * 1000}
                    | ({PODS: pods} if draw(st.booleans()) else {}),
                    # now and then more than the node has (pods that were there first)
                    usage={
                        "cpu": draw(st.integers(0, cpu // 500 + 2)) * 500,
                        "memory": draw(st.sampled_from([0, 0, 32])) * 1000,
                    },
                    taints=(TAINT,) if draw(st.integers(0, 5)) == 0 else (),
                    ready=draw(st.integers(0, 9)) > 0,
                )
            )
    return levels, nodes


@st.composite
def workload(draw: st.DrawFn, levels: tuple[str, ...]) -> list[PodSetRequest]:
    if draw(st.integers(0, 4)) == 0:
        podsets_of_workload = draw(leader_and_workers(levels))
        if draw(st.integers(0, 3)) == 0:
            # a leader no node can take (8 cpus at most): the failure still names the best
            podsets_of_workload = [
                replace(ps, requests={"cpu": 9000}) if ps.name == "leader" else ps
                for ps in podsets_of_workload
            ]
    else:
        podsets_of_workload = [
            draw(podsets(levels, f"ps{i}")) for i in range(draw(st.integers(1, 2)))
        ]
    if draw(st.integers(0, 9)) == 0:
        # Kueue's webhook refuses required + unconstrained; the solver takes it (as Kueue's
        # scheduler would): LeastFreeCapacity with a required level
        first = podsets_of_workload[0]
        if first.topology.required:
            topology = replace(first.topology, unconstrained=True)
            podsets_of_workload = [replace(first, topology=topology), *podsets_of_workload[1:]]
    return [
        replace(
            podset,
            node_selector={"pool": draw(st.sampled_from("ab"))} if draw(st.booleans()) else {},
            tolerations=(Toleration("maintenance", "Exists"),) if draw(st.booleans()) else (),
            required_affinity=draw(st.sampled_from(AFFINITIES)),
            preferred_affinity=draw(st.sampled_from(PREFERENCES)),
        )
        for podset in podsets_of_workload
    ]


@st.composite
def runs(draw: st.DrawFn):
    levels, nodes = draw(topologies())
    options = SolverOptions(
        profile_mixed=draw(st.booleans()),
        balanced_placement=draw(st.booleans()),
        node_feasibility_all_levels=draw(st.booleans()),
        respect_node_affinity_preferred=draw(st.booleans()),
    )
    workloads = draw(st.lists(workload(levels), min_size=1, max_size=8))
    # after each workload: keep it running, or let it leave again (a departure)
    departures = draw(st.lists(st.booleans(), min_size=len(workloads), max_size=len(workloads)))
    return levels, nodes, options, workloads, departures


def replay(levels, nodes, options, workloads, departures, reference: bool) -> list:
    """Every placement, and a replacement for the first node of each admitted pod set."""
    snapshot = TopologySnapshot(levels, nodes, options=options, reference=reference)
    answers: list = []
    for podsets_of_workload, leaves in zip(workloads, departures, strict=True):
        placement = snapshot.find_assignments(podsets_of_workload)
        answers.append(placement)
        if not placement.admitted:
            continue
        requests = {ps.name: ps for ps in podsets_of_workload}
        for placed in placement.podsets:
            snapshot.add_usage(placed.assignment, requests[placed.name].requests)
        for placed in placement.podsets:
            domains = placed.assignment.domains
            if levels[-1] == HOSTNAME_LEVEL and domains:
                failed = domains[0].values[-1]
                answers.append(
                    snapshot.find_replacement(requests[placed.name], placed.assignment, failed)
                )
        if leaves:
            for placed in placement.podsets:
                snapshot.add_usage(placed.assignment, requests[placed.name].requests, sign=-1)
    return answers


@PROPERTY
@given(runs())
def test_vectorized_and_plain_paths_give_identical_results(run) -> None:
    assert replay(*run, reference=False) == replay(*run, reference=True)


def test_the_vectorized_path_is_the_one_taken(monkeypatch) -> None:
    """Without this the property above would also hold with both snapshots on the plain path."""
    calls: list[bool] = []
    original = vectorized.find_level_with_fit_domains

    def spy(*args, **kwargs):
        calls.append(True)
        return original(*args, **kwargs)

    monkeypatch.setattr(vectorized, "find_level_with_fit_domains", spy)
    nodes = [Node(f"x{i}", {HOSTNAME_LEVEL: f"x{i}"}, {"cpu": 4000}) for i in range(3)]
    request = [PodSetRequest("main", 5, {"cpu": 1000})]
    fast = TopologySnapshot((HOSTNAME_LEVEL,), nodes).find_assignments(request)
    assert calls == [True]
    plain = TopologySnapshot((HOSTNAME_LEVEL,), nodes, reference=True).find_assignments(request)
    assert calls == [True]
    assert fast == plain and fast.admitted


def test_quantities_past_int64_are_placed_exactly_on_the_plain_path() -> None:
    """An exbibyte of memory in milli-units does not fit int64: the snapshot keeps Python ints."""
    exbi = 2**60 * 1000
    nodes = [
        Node("x1", {HOSTNAME_LEVEL: "x1"}, {"memory": 3 * exbi}),
        Node("x2", {HOSTNAME_LEVEL: "x2"}, {"memory": 2 * exbi}),
    ]
    snapshot = TopologySnapshot((HOSTNAME_LEVEL,), nodes)
    big = PodSetRequest("main", 4, {"memory": exbi})
    placed = snapshot.find_assignments([big])
    # LeastFreeCapacity: x2 (room for 2) first, then x1
    assert [(d.values, d.count) for d in placed.podsets[0].assignment.domains] == [
        (("x1",), 2),
        (("x2",), 2),
    ]
    snapshot.add_usage(placed.podsets[0].assignment, {"memory": exbi})
    assert snapshot.find_assignments([replace(big, count=2)]).failure == (
        'topology "kubernetes.io/hostname" allows to fit only 1 out of 2 pod(s). '
        'Total nodes: 2; excluded: resource "memory": 1'
    )


def test_the_leader_goes_where_the_total_can_absorb_its_penalty() -> None:
    """Kueue's prioritizeLeaderDomain, when spreading over top-level domains: block a holds 10
    workers but only 9 beside the leader (its pods run out); block b holds 3 either way. For
    13 workers the leader must go to b, whose penalty (0) the total of 13 absorbs."""
    block = "example.com/block"
    hosts = [("a1", "a", 10), ("b1", "b", 110)]
    nodes = [
        Node(
            name,
            {block: b, HOSTNAME_LEVEL: name},
            {"cpu": 5000 if b == "a" else 1500, "memory": 1000, PODS: pods * 1000},
        )
        for name, b, pods in hosts
    ]
    group = TopologyRequest(preferred=block, group_name="g")
    request = [
        PodSetRequest("leader", 1, {"memory": 1000}, group),
        PodSetRequest("workers", 13, {"cpu": 500}, group),
    ]
    for reference in (False, True):
        placement = TopologySnapshot(
            (block, HOSTNAME_LEVEL), nodes, reference=reference
        ).find_assignments(request)
        assert placement.failure is None, reference
        leader, workers = placement.podsets
        assert [(d.values, d.count) for d in leader.assignment.domains] == [(("b1",), 1)]
        assert [(d.values, d.count) for d in workers.assignment.domains] == [
            (("a1",), 10),
            (("b1",), 3),
        ]


def test_a_multi_layer_refusal_reports_the_first_of_the_tied_best_domains() -> None:
    """Blocks b1 and b2 each hold one rack slice of 4, but b1 has three host slices of 2 and
    b2 two: the message reports b1, the first by values among the blocks with the most slices."""
    block, rack = "example.com/block", "example.com/rack"
    hosts = [("b1", "h1"), ("b1", "h2"), ("b1", "h3"), ("b2", "h4"), ("b2", "h5")]
    nodes = [
        Node(host, {block: b, rack: "r1", HOSTNAME_LEVEL: host}, {"cpu": 2000}) for b, host in hosts
    ]
    layers = (SliceLayer(rack, 4), SliceLayer(HOSTNAME_LEVEL, 2))
    request = [
        PodSetRequest(
            "main", 16, {"cpu": 1000}, TopologyRequest(required=block, slice_layers=layers)
        )
    ]
    for reference in (False, True):
        snapshot = TopologySnapshot((block, rack, HOSTNAME_LEVEL), nodes, reference=reference)
        assert snapshot.find_assignments(request).failure == (
            f'topology "{block}" doesn\'t allow to fit; 1/4 slice(s) fit on level {rack}; '
            f"3/8 slice(s) fit on level {HOSTNAME_LEVEL}"
        ), reference


def test_usage_past_int64_keeps_the_snapshot_exact() -> None:
    """Recording usage can take a leaf's remaining capacity past int64 (here far below zero):
    the snapshot switches to Python integers, and giving the usage back restores it exactly."""
    nodes = [Node(f"x{i}", {HOSTNAME_LEVEL: f"x{i}"}, {"cpu": 4000}) for i in range(2)]
    snapshot = TopologySnapshot((HOSTNAME_LEVEL,), nodes)
    one = PodSetRequest("main", 3, {"cpu": 1000})
    before = snapshot.find_assignments([one])
    huge = TopologyAssignment((HOSTNAME_LEVEL,), (DomainAssignment(("x0",), 4),))
    snapshot.add_usage(huge, {"cpu": 2**62})
    assert snapshot.find_assignments([one]).podsets[0].assignment.domains == (
        DomainAssignment(("x1",), 3),
    )
    snapshot.add_usage(huge, {"cpu": 2**62}, sign=-1)
    assert snapshot.find_assignments([one]) == before
