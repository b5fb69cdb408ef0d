"""Properties of TASNodeFeasibilityForAllLevels, over random racks of random nodes (taints,
labels, capacities, usage outside topology-aware admission) and workloads admitted one after
another, whose usage each rack then carries.

The oracle is computed from the input nodes and the admitted assignments alone: a rack holds,
for a pod set, the pods each node it may run on holds (one node at a time), but no more than its
own remaining capacity holds (all its counted nodes' free capacity, less the usage admitted
into it).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tas.solver import (
    PODS,
    Node,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodSetRequest,
    SolverOptions,
    Taint,
    Toleration,
    TopologyRequest,
    TopologySnapshot,
)
from tas.solver.filters import (
    first_untolerated_taint,
    matches_node_selector,
    matches_required_affinity,
)

PROPERTY = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
BLOCK, RACK = "example.com/block", "example.com/rack"
LEVELS = (BLOCK, RACK)
TAINT = Taint("maintenance", "NoSchedule")
DEFAULT_PODS = 110_000
Rack = tuple[str, str]


@st.composite
def racks_of_nodes(draw: st.DrawFn) -> list[Node]:
    nodes = []
    for block in range(draw(st.integers(1, 2))):
        for rack in range(draw(st.integers(1, 2))):
            for _ in range(draw(st.integers(1, 4))):
                cpu = draw(st.sampled_from([0, 1000, 2000, 2000, 4000, 4000]))
                nodes.append(
                    Node(
                        name=f"n{len(nodes)}",
                        labels={BLOCK: f"b{block}", RACK: f"r{rack}"}
                        | ({"pool": draw(st.sampled_from("ab"))} if draw(st.booleans()) else {}),
                        allocatable={"cpu": cpu}
                        | ({PODS: draw(st.integers(0, 4)) * 1000} if draw(st.booleans()) else {}),
                        usage={"cpu": draw(st.integers(0, cpu // 1000)) * 1000},
                        taints=(TAINT,) if draw(st.integers(0, 3)) == 0 else (),
                        ready=draw(st.integers(0, 7)) > 0,
                    )
                )
    return nodes


@st.composite
def workloads(draw: st.DrawFn) -> PodSetRequest:
    mode = draw(st.sampled_from(["required", "preferred", "unconstrained"]))
    level = draw(st.sampled_from(LEVELS))
    return PodSetRequest(
        "main",
        draw(st.integers(1, 6)),
        {"cpu": draw(st.sampled_from([500, 1000, 1500, 3000]))},
        TopologyRequest(
            required=level if mode == "required" else None,
            preferred=level if mode == "preferred" else None,
            unconstrained=mode == "unconstrained",
        ),
        node_selector={"pool": "a"} if draw(st.integers(0, 3)) == 0 else {},
        tolerations=(Toleration("maintenance", "Exists"),) if draw(st.booleans()) else (),
        required_affinity=(
            (NodeSelectorTerm((NodeSelectorRequirement("pool", "NotIn", ("b",)),)),)
            if draw(st.integers(0, 3)) == 0
            else ()
        ),
    )


def rack_of(node: Node) -> Rack:
    return node.labels[BLOCK], node.labels[RACK]


def may_run_on(podset: PodSetRequest, node: Node) -> bool:
    return (
        first_untolerated_taint(node.taints, podset.tolerations) is None
        and matches_node_selector(node.labels, podset.node_selector)
        and matches_required_affinity(node.labels, podset.required_affinity)
    )


def free(node: Node) -> dict[str, int]:
    allocatable = {PODS: DEFAULT_PODS, **node.allocatable}
    return {name: value - node.usage.get(name, 0) for name, value in allocatable.items()}


def holds(capacity: Mapping[str, int], per_pod: Mapping[str, int]) -> int:
    return max(0, min(capacity.get(name, 0) // value for name, value in per_pod.items()))


def rack_capacity(
    nodes: list[Node],
    podset: PodSetRequest,
    used: Mapping[Rack, Mapping[str, int]],
    per_node: bool = True,
) -> dict[Rack, int]:
    """The oracle: what every rack holds of the pod set; without `per_node` (the gate off),
    what its summed free capacity holds, whatever its nodes' taints and labels."""
    per_pod = {**podset.requests, PODS: 1000}
    by_node: dict[Rack, int] = defaultdict(int)
    remaining: dict[Rack, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for node in nodes:
        if not node.ready:
            continue
        rack = rack_of(node)
        for name, value in free(node).items():
            remaining[rack][name] += value
        if may_run_on(podset, node):
            by_node[rack] += holds(free(node), per_pod)
    for rack, usage in used.items():
        for name, value in usage.items():
            remaining[rack][name] -= value
    if not per_node:
        return {rack: holds(remaining[rack], per_pod) for rack in remaining}
    return {rack: min(by_node[rack], holds(remaining[rack], per_pod)) for rack in remaining}


def fits(podset: PodSetRequest, capacity: Mapping[Rack, int]) -> bool:
    """Kueue's answer, without slices or a leader: a required domain holding every pod, else
    (preferred climbs to the top, unconstrained spreads) all racks together."""
    if podset.topology.required == RACK:
        return max(capacity.values(), default=0) >= podset.count
    if podset.topology.required == BLOCK:
        blocks: dict[str, int] = defaultdict(int)
        for (block, _), count in capacity.items():
            blocks[block] += count
        return max(blocks.values(), default=0) >= podset.count
    return sum(capacity.values()) >= podset.count


def replay(nodes: list[Node], podsets: list[PodSetRequest], gate: bool, reference: bool):
    """Each pod set placed after the ones before it, with the oracle's capacity at that point."""
    options = SolverOptions(node_feasibility_all_levels=gate)
    snapshot = TopologySnapshot(LEVELS, nodes, options=options, reference=reference)
    used: dict[Rack, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for podset in podsets:
        capacity = rack_capacity(nodes, podset, used, per_node=gate)
        placement = snapshot.find_assignments([podset])
        yield podset, capacity, placement
        if placement.admitted:
            assignment = placement.podsets[0].assignment
            snapshot.add_usage(assignment, podset.requests)
            for domain in assignment.domains:
                for name, value in {**podset.requests, PODS: 1000}.items():
                    used[domain.values][name] += value * domain.count


def check(podset: PodSetRequest, capacity: dict[Rack, int], placement) -> None:
    assert placement.admitted == fits(podset, capacity), placement.failure
    if not placement.admitted:
        return
    assignment = placement.podsets[0].assignment
    assert assignment.levels == LEVELS
    values = [d.values for d in assignment.domains]
    assert values == sorted(set(values))
    assert sum(d.count for d in assignment.domains) == podset.count
    for domain in assignment.domains:
        assert 0 < domain.count <= capacity[domain.values]
    if podset.topology.required:
        depth = LEVELS.index(podset.topology.required) + 1
        assert len({d.values[:depth] for d in assignment.domains}) == 1


SEQUENCES = st.lists(workloads(), min_size=2, max_size=6)


@PROPERTY
@given(racks_of_nodes(), SEQUENCES, st.booleans())
def test_racks_hold_what_their_feasible_nodes_hold(nodes, podsets, reference) -> None:
    """No pod in a rack beyond what the nodes it may run on hold, one by one, nor beyond what
    the rack has left after the workloads before; admitted exactly when Kueue's rule says it
    fits, and then every pod counted once, in the required domain."""
    for step in replay(nodes, podsets, gate=True, reference=reference):
        check(*step)


@PROPERTY
@given(racks_of_nodes(), SEQUENCES)
def test_without_the_gate_racks_hold_their_summed_capacity(nodes, podsets) -> None:
    """Kueue v0.17: taints and labels are not looked at, a rack holds what its summed free
    capacity holds."""
    for step in replay(nodes, podsets, gate=False, reference=False):
        check(*step)
