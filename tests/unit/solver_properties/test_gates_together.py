"""TASPartialSlices and TASGroupedPodSetSlicing together with TASNodeFeasibilityForAllLevels and
TASRespectNodeAffinityPreferred (and every other solver gate), drawn at random over random
topologies with or without a hostname level, taints, node pools, not-ready nodes and preferred
node affinity, and workloads whose counts often leave a partial last slice:

- the vectorized path gives exactly the plain path's answers (replacements included);
- every pod gets a domain, and every slice, the partial one included, lies in one domain of its
  slice level, read in the order the ungater hands out pods;
- no node is over-committed and none it may not run on gets a pod (hostname leaves); below a
  lowest level other than the hostname, no domain gets more than its remaining capacity holds,
  nor (with TASNodeFeasibilityForAllLevels) more than the nodes it may run on hold, one by one.

Then hand-traced cases where the gates meet: a partial slice placed by per-node feasibility, and
by the preferred affinity order.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, replace

import pytest
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
    WorkloadPlacement,
    feasibility,
)
from tas.solver.filters import (
    first_untolerated_taint,
    matches_node_selector,
    matches_required_affinity,
)
from tests.unit.solver_properties.test_invariants import leader_and_workers
from tests.unit.solver_properties.test_invariants import podsets as any_podset
from tests.unit.solver_properties.test_partial_slices import sliced_workload
from tests.unit.solver_properties.test_vectorized_matches_plain import (
    AFFINITIES,
    PREFERENCES,
    replay,
    topologies,
)

PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DEFAULT_PODS = 110_000
ONE_POD = 1000


@st.composite
def every_gate(draw: st.DrawFn) -> SolverOptions:
    """Every solver gate at random; the three that meet here mostly on."""
    return SolverOptions(
        profile_mixed=draw(st.booleans()),
        balanced_placement=draw(st.booleans()),
        placement_groups=draw(st.booleans()),
        fragmentation_aware=draw(st.booleans()),
        respect_node_affinity_preferred=draw(st.integers(0, 3)) > 0,
        node_feasibility_all_levels=draw(st.integers(0, 3)) > 0,
        partial_slices=draw(st.integers(0, 3)) > 0,
        grouped_pod_set_slicing=draw(st.booleans()),
    )


@st.composite
def constrained(draw: st.DrawFn, podsets: list[PodSetRequest]) -> list[PodSetRequest]:
    """The workload's pods carry node selectors, tolerations and required and preferred node
    affinity: the same in all its pod sets, as a leader is placed on the nodes its workers may
    run on (Kueue before TASLeaderPodSetFeasibility)."""
    constraints = {
        "node_selector": {"pool": "a"} if draw(st.integers(0, 3)) == 0 else {},
        "tolerations": (Toleration("maintenance", "Exists"),) if draw(st.integers(0, 3)) else (),
        "required_affinity": draw(st.sampled_from(AFFINITIES)),
        "preferred_affinity": draw(st.sampled_from(PREFERENCES)),
    }
    return [replace(podset, **constraints) for podset in podsets]


@st.composite
def workloads(draw: st.DrawFn, levels: tuple[str, ...]) -> list[PodSetRequest]:
    """Mostly sliced pod sets, alone or as a leader's workers, whose counts often leave a
    partial slice; else pod sets of every kind, or a leader and workers without slices."""
    kind = draw(st.integers(0, 3))
    if kind <= 1:
        podsets = draw(sliced_workload(levels))
    elif kind == 2:
        podsets = draw(leader_and_workers(levels))
    else:
        podsets = [draw(any_podset(levels, f"ps{i}")) for i in range(draw(st.integers(1, 2)))]
    return draw(constrained(podsets))


@dataclass(frozen=True)
class Run:
    levels: tuple[str, ...]
    nodes: list[Node]
    options: SolverOptions
    workloads: list[list[PodSetRequest]]
    departures: list[bool]


@st.composite
def runs(draw: st.DrawFn) -> Run:
    levels, nodes = draw(topologies())
    drawn = draw(st.lists(workloads(levels), min_size=1, max_size=6))
    departures = draw(st.lists(st.booleans(), min_size=len(drawn), max_size=len(drawn)))
    return Run(levels, nodes, draw(every_gate()), drawn, departures)


@PROPERTY
@given(runs())
def test_vectorized_and_plain_paths_agree_with_every_gate(run: Run) -> None:
    # TASProfileFragmentationAware picks its domain on the vectorized arrays only: the plain
    # path leaves the choice to BestFit (snapshot._profile_domain)
    options = replace(run.options, fragmentation_aware=False)
    args = (run.levels, run.nodes, options, run.workloads, run.departures)
    assert replay(*args, reference=False) == replay(*args, reference=True)


# ---------------------------------------------------------------------------------------------
# The oracle: recomputed from the input nodes and the published assignments alone.


def counted(node: Node) -> bool:
    return node.ready and not node.unschedulable


def may_run_on(podset: PodSetRequest, node: Node) -> bool:
    return (
        first_untolerated_taint(node.taints, podset.tolerations) is None
        and matches_node_selector(node.labels, podset.node_selector)
        and matches_required_affinity(node.labels, podset.required_affinity)
    )


def free(node: Node) -> dict[str, int]:
    """What the node has left outside topology-aware admission (may be below zero)."""
    allocatable = {PODS: DEFAULT_PODS, **node.allocatable}
    return {name: value - node.usage.get(name, 0) for name, value in allocatable.items()}


def holds(capacity: Mapping[str, int], per_pod: Mapping[str, int]) -> int:
    return max(0, min(capacity.get(name, 0) // value for name, value in per_pod.items() if value))


def per_pod(podset: PodSetRequest) -> dict[str, int]:
    return {**podset.requests, PODS: podset.requests.get(PODS, 0) + ONE_POD}


class Oracle:
    """Where every assigned domain is: the node (hostname leaves) or the lowest-level domain."""

    def __init__(self, levels: tuple[str, ...], nodes: list[Node], options: SolverOptions):
        self.levels = levels
        self.nodes = [node for node in nodes if counted(node)]
        self.by_host = {node.labels[HOSTNAME_LEVEL]: node for node in self.nodes}
        self.hostname_lowest = levels[-1] == HOSTNAME_LEVEL
        self.per_node = self.hostname_lowest or options.node_feasibility_all_levels

    def path(self, values: tuple[str, ...]) -> tuple[str, ...]:
        if self.hostname_lowest:
            node = self.by_host[values[0]]
            return tuple(node.labels[level] for level in self.levels)
        return values

    def nodes_in(self, values: tuple[str, ...]) -> list[Node]:
        if self.hostname_lowest:
            return [self.by_host[values[0]]]
        return [n for n in self.nodes if tuple(n.labels[lv] for lv in self.levels) == values]

    def check_slices(self, podset: PodSetRequest, assignment: TopologyAssignment) -> None:
        """All pods placed; each slice of the first layer (the last may be partial) in one
        domain of its level, in rank order."""
        ranks = [self.path(d.values) for d in assignment.domains for _ in range(d.count)]
        assert len(ranks) == podset.count
        for layer in podset.topology.slice_layers[:1]:
            depth = self.levels.index(layer.level) + 1
            for start in range(0, len(ranks), layer.size):
                chunk = ranks[start : start + layer.size]
                assert len({path[:depth] for path in chunk}) == 1, (layer, start, ranks)

    def check_capacity(
        self, podset: PodSetRequest, assignment: TopologyAssignment, used: dict
    ) -> None:
        """Adds the pod set's usage to `used` (per assigned domain) and checks it still fits."""
        for domain in assignment.domains:
            nodes = self.nodes_in(domain.values)
            assert nodes, domain.values
            if self.per_node:
                feasible = sum(
                    holds(free(node), per_pod(podset)) for node in nodes if may_run_on(podset, node)
                )
                assert domain.count <= feasible, (podset.name, domain)
            remaining: dict[str, int] = defaultdict(int)
            for node in nodes:
                for name, value in free(node).items():
                    remaining[name] += value
            for name, value in per_pod(podset).items():
                used[domain.values][name] += value * domain.count
                if used[domain.values][name]:
                    assert used[domain.values][name] <= remaining[name], (domain, name)


def admit_all(run: Run) -> list[tuple[list[PodSetRequest], WorkloadPlacement]]:
    snapshot = TopologySnapshot(run.levels, run.nodes, options=run.options)
    results = []
    for podsets in run.workloads:
        placement = snapshot.find_assignments(podsets)
        results.append((podsets, placement))
        if placement.admitted:
            requests = {ps.name: ps.requests for ps in podsets}
            for placed in placement.podsets:
                snapshot.add_usage(placed.assignment, requests[placed.name])
    return results


@PROPERTY
@given(runs())
def test_slices_whole_and_partial_fit_where_they_are_put(run: Run) -> None:
    oracle = Oracle(run.levels, run.nodes, run.options)
    used: dict[tuple[str, ...], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for podsets, placement in admit_all(run):
        if not placement.admitted:
            assert placement.failure
            continue
        by_name = {ps.name: ps for ps in podsets}
        for placed in placement.podsets:
            podset = by_name[placed.name]
            oracle.check_slices(podset, placed.assignment)
            oracle.check_capacity(podset, placed.assignment, used)


# ---------------------------------------------------------------------------------------------
# Hand-traced cases where the gates meet.

BLOCK, RACK = "example.com/block", "example.com/rack"
TAINT = Taint("maintenance", "NoSchedule")
POOL_A = NodeSelectorTerm((NodeSelectorRequirement("pool", "In", ("a",)),))
PREFER_POOL_A = (PreferredSchedulingTerm(10, POOL_A),)


def rack_node(name: str, rack: str, cpu: int, tainted: bool = False) -> Node:
    return Node(name, {BLOCK: "b1", RACK: rack}, {"cpu": cpu}, taints=(TAINT,) if tainted else ())


def host(name: str, rack: str, cpu: int, pool: str) -> Node:
    return Node(name, {RACK: rack, HOSTNAME_LEVEL: name, "pool": pool}, {"cpu": cpu})


def sliced(count: int, topology: TopologyRequest, preferred=()) -> list[PodSetRequest]:
    return [PodSetRequest("main", count, {"cpu": 1000}, topology, preferred_affinity=preferred)]


# 11 pods in slices of 4 on a rack: 2 whole slices and a partial one of 3, all in block b1.
# r1 sums 4 cpus, but 2 of them are on a tainted node; r2 holds 8 pods, r3 4.
FEASIBILITY_NODES = [
    rack_node("n1", "r1", 2000),
    rack_node("n2", "r1", 2000, tainted=True),
    rack_node("n3", "r2", 8000),
    rack_node("n4", "r3", 4000),
]
IN_BLOCK = TopologyRequest(required=BLOCK, slice_layers=(SliceLayer(RACK, 4),))

# r1: two pool-a hosts of 2 pods (score 20); r2: two pool-b hosts of 4 (score 0).
AFFINITY_NODES = [
    host("h1", "r1", 2000, "a"),
    host("h2", "r1", 2000, "a"),
    host("h3", "r2", 4000, "b"),
    host("h4", "r2", 4000, "b"),
]
# r1 (score 20) holds 4 pods; r2 (score 10) 5; r3 (score 0) 8.
REQUIRED_AFFINITY_NODES = [
    host("h1", "r1", 2000, "a"),
    host("h2", "r1", 2000, "a"),
    host("h3", "r2", 3000, "a"),
    host("h4", "r2", 2000, "b"),
    host("h5", "r3", 4000, "b"),
    host("h6", "r3", 4000, "b"),
]
BY_RACK = (RACK, HOSTNAME_LEVEL)

CASES = [
    pytest.param(
        (BLOCK, RACK),
        FEASIBILITY_NODES,
        sliced(11, IN_BLOCK),
        SolverOptions(partial_slices=True),
        [(("b1", "r2"), 8), (("b1", "r1"), 3)],
        id="feasibility-off-partial-slice-on-summed-rack",
    ),
    pytest.param(
        # r1's 2 feasible pods cannot hold the 3: the partial slice goes to r3, the first rack
        # by values that holds it beside its whole slices (r2 took both whole ones)
        (BLOCK, RACK),
        FEASIBILITY_NODES,
        sliced(11, IN_BLOCK),
        SolverOptions(partial_slices=True, node_feasibility_all_levels=True),
        [(("b1", "r2"), 8), (("b1", "r3"), 3)],
        id="feasibility-on-partial-slice-moves-off-the-tainted-node",
    ),
    pytest.param(
        # without r3 no rack holds the partial slice: block b1 holds 2 of the 3 slices
        (BLOCK, RACK),
        FEASIBILITY_NODES[:3],
        sliced(11, IN_BLOCK),
        SolverOptions(partial_slices=True, node_feasibility_all_levels=True),
        'topology "example.com/block" allows to fit only 2 out of 3 slice(s). Total nodes: 3; '
        'excluded: taint "maintenance:NoSchedule": 1',
        id="feasibility-on-no-rack-holds-the-partial-slice",
    ),
    pytest.param(
        # BestFit: r2 holds the whole slice and the partial one of 2
        BY_RACK,
        AFFINITY_NODES,
        sliced(
            6, TopologyRequest(preferred=RACK, slice_layers=(SliceLayer(RACK, 4),)), PREFER_POOL_A
        ),
        SolverOptions(partial_slices=True),
        [(("h3",), 4), (("h4",), 2)],
        id="affinity-off-one-rack",
    ),
    pytest.param(
        # r1 first: it takes the whole slice, too full for the partial one, which goes to the
        # next rack that holds it (published last)
        BY_RACK,
        AFFINITY_NODES,
        sliced(
            6, TopologyRequest(preferred=RACK, slice_layers=(SliceLayer(RACK, 4),)), PREFER_POOL_A
        ),
        SolverOptions(partial_slices=True, respect_node_affinity_preferred=True),
        [(("h1",), 2), (("h2",), 2), (("h3",), 2)],
        id="affinity-on-preferred-rack-first-partial-slice-beside",
    ),
    pytest.param(
        # required rack: r1 (first by score) holds 4 of 6; past it, r2 holds the whole slice
        # but not the partial one beside it, so r3 is the one
        BY_RACK,
        REQUIRED_AFFINITY_NODES,
        sliced(
            6, TopologyRequest(required=RACK, slice_layers=(SliceLayer(RACK, 4),)), PREFER_POOL_A
        ),
        SolverOptions(partial_slices=True, respect_node_affinity_preferred=True),
        [(("h5",), 4), (("h6",), 2)],
        id="affinity-on-required-scan-needs-room-for-the-partial-slice",
    ),
]


@pytest.mark.parametrize(("levels", "nodes", "podsets", "options", "expected"), CASES)
@pytest.mark.parametrize("reference", [False, True], ids=["vectorized", "plain"])
def test_partial_slices_where_the_gates_meet(
    levels, nodes, podsets, options, expected, reference
) -> None:
    snapshot = TopologySnapshot(levels, nodes, options=options, reference=reference)
    placement = snapshot.find_assignments(podsets)
    if isinstance(expected, str):
        assert placement.failure == expected
        return
    assert placement.failure is None
    [placed] = placement.podsets
    assert [(d.values, d.count) for d in placed.assignment.domains] == expected


def test_the_vectorized_path_cuts_the_counts_before_the_partial_slice(monkeypatch) -> None:
    """The first hand-traced case with the gate on goes through the usage-domain bounds with a
    partial slice on the vectorized path (else the property above could hold on the plain path
    alone)."""
    calls: list[tuple[bool, int]] = []
    original = feasibility.roll_up

    def spy(tree, leaf_pods, params, bounds, *rest):
        calls.append((bounds is not None, params.tail_size))
        return original(tree, leaf_pods, params, bounds, *rest)

    monkeypatch.setattr(feasibility, "roll_up", spy)
    options = SolverOptions(partial_slices=True, node_feasibility_all_levels=True)
    snapshot = TopologySnapshot((BLOCK, RACK), FEASIBILITY_NODES, options=options)
    placement = snapshot.find_assignments(sliced(11, IN_BLOCK))
    assert calls == [(True, 3)]
    assert [d.count for d in placement.podsets[0].assignment.domains] == [8, 3]


@pytest.mark.parametrize("reference", [False, True], ids=["vectorized", "plain"])
def test_usage_admitted_into_a_rack_leaves_it_no_room_for_the_partial_slice(reference) -> None:
    """With TASNodeFeasibilityForAllLevels admitted usage is charged to the rack, not a node:
    r1's node holds 4 pods, but 2 were admitted into r1, so r1 holds 2 and not the partial
    slice of 3 though it comes first (fewest pods) among the racks left; r3 holds it."""
    nodes = [rack_node("n1", "r1", 4000), rack_node("n3", "r2", 8000), rack_node("n4", "r3", 3000)]
    options = SolverOptions(partial_slices=True, node_feasibility_all_levels=True)
    snapshot = TopologySnapshot((BLOCK, RACK), nodes, options=options, reference=reference)
    earlier = TopologyAssignment((BLOCK, RACK), (DomainAssignment(("b1", "r1"), 2),))
    snapshot.add_usage(earlier, {"cpu": 1000})
    [placed] = snapshot.find_assignments(sliced(11, IN_BLOCK)).podsets
    assert [(d.values, d.count) for d in placed.assignment.domains] == [
        (("b1", "r2"), 8),
        (("b1", "r3"), 3),
    ]
