"""Node hot swap (find_replacement), ported from Kueue's tas_cache_test.go at ff69552e:
TestFindTopologyAssignmentsMultiLayerReplacement (all six cases) and the "node replaced for
Job-owned workload" case of TestFindTopologyAssignments. As in Kueue's harness, the snapshot
holds no usage of the workload being repaired; the failed node is NotReady (so absent)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from tas.solver import (
    FlavorSpec,
    Node,
    PodSetRequest,
    SliceLayer,
    TopologyAssignment,
    TopologyRequest,
    TopologySnapshot,
)
from tests.unit.solver.solver_test_helpers import (
    BLOCK,
    HOST,
    ONE_LEVEL,
    RACK,
    THREE_LEVELS,
    assignment,
    node,
)

SWITCH = "cloud.com/topology-switch"


def host(block: str, rack: str, name: str, cpu: str, *, ready: bool = True, **extra) -> Node:
    labels = {BLOCK: block, RACK: rack, HOST: name, **extra}
    return node(f"{block}-{rack}-{name}", labels, {"cpu": cpu, "pods": "10"}, ready=ready)


@dataclass(frozen=True)
class ReplacementCase:
    name: str
    nodes: tuple[Node, ...]
    existing: TopologyAssignment
    failed_node: str
    topology: TopologyRequest
    count: int
    levels: tuple[str, ...] = THREE_LEVELS
    prior_usage: tuple[tuple[str, int], ...] = ()  # (host, one-cpu pods) of other workloads
    want: TopologyAssignment | None = None
    reason: str | None = None
    requests: dict = field(default_factory=lambda: {"cpu": 1000})


def hosts(*pairs: tuple[str, int]) -> TopologyAssignment:
    return assignment(ONE_LEVEL, [((h,), c) for h, c in pairs])


CASES = [
    ReplacementCase(
        "replacement does not cross a string-prefix sibling domain",
        nodes=(
            host("b1", "rack-a", "x1", "1", ready=False),
            host("b1", "rack-a", "x2", "1"),
            host("b1", "rack-ab", "x3", "1"),
        ),
        existing=hosts(("x1", 1), ("x2", 1)),
        failed_node="x1",
        topology=TopologyRequest(required=RACK),
        count=2,
        prior_usage=(("x2", 1),),
        reason='topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 2; '
        'excluded: resource "cpu": 1, topologyDomain: 1',
    ),
    ReplacementCase(
        "replace unhealthy node in incomplete rack slice",
        nodes=(
            host("b1", "r1", "x1", "1"),
            host("b1", "r1", "x2", "1"),
            host("b1", "r2", "x3", "1", ready=False),
            host("b1", "r2", "x4", "1"),
            host("b1", "r2", "x5", "2"),
        ),
        existing=hosts(("x1", 1), ("x2", 1), ("x3", 1), ("x4", 1)),
        failed_node="x3",
        topology=TopologyRequest(required=BLOCK, slice_layers=(SliceLayer(RACK, 2),)),
        count=4,
        want=hosts(("x1", 1), ("x2", 1), ("x4", 2)),
    ),
    ReplacementCase(
        "replacement fails when no capacity in incomplete slice domain",
        nodes=(
            host("b1", "r1", "x1", "1"),
            host("b1", "r1", "x2", "1"),
            host("b1", "r2", "x3", "1", ready=False),
            host("b1", "r2", "x4", "500m"),
        ),
        existing=hosts(("x1", 1), ("x2", 1), ("x3", 1), ("x4", 1)),
        failed_node="x3",
        topology=TopologyRequest(required=BLOCK, slice_layers=(SliceLayer(RACK, 2),)),
        count=4,
        reason='topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 3; '
        'excluded: resource "cpu": 1, topologyDomain: 2',
    ),
    ReplacementCase(
        "3-layer: innermost broken domain confines replacement to correct switch",
        levels=(BLOCK, RACK, SWITCH, HOST),
        nodes=(
            host("b1", "r1", "x1", "4", **{SWITCH: "s1"}),
            host("b1", "r1", "x2", "4", **{SWITCH: "s1"}),
            host("b1", "r1", "x3", "4", ready=False, **{SWITCH: "s2"}),
            host("b1", "r1", "x4", "8", **{SWITCH: "s2"}),
            host("b1", "r2", "x5", "4", **{SWITCH: "s3"}),
            host("b1", "r2", "x6", "4", **{SWITCH: "s3"}),
            host("b1", "r2", "x7", "4", **{SWITCH: "s4"}),
            host("b1", "r2", "x8", "4", **{SWITCH: "s4"}),
        ),
        existing=hosts(*((f"x{i}", 2) for i in range(1, 9))),
        failed_node="x3",
        topology=TopologyRequest(
            required=BLOCK,
            slice_layers=(SliceLayer(RACK, 8), SliceLayer(SWITCH, 4), SliceLayer(HOST, 2)),
        ),
        count=16,
        want=hosts(("x1", 2), ("x2", 2), ("x4", 4), ("x5", 2), ("x6", 2), ("x7", 2), ("x8", 2)),
    ),
    ReplacementCase(
        "2-layer: sliceSize=2 prevents scattered single-pod placement across hosts",
        nodes=(
            host("b1", "r1", "x1", "2"),
            host("b1", "r1", "x2", "2"),
            host("b1", "r2", "x3", "2", ready=False),
            host("b1", "r2", "x4", "1"),
            host("b1", "r2", "x5", "1"),
        ),
        existing=hosts(("x1", 2), ("x2", 2), ("x3", 2), ("x4", 2)),
        failed_node="x3",
        topology=TopologyRequest(
            required=BLOCK, slice_layers=(SliceLayer(RACK, 4), SliceLayer(HOST, 2))
        ),
        count=8,
        reason='topology "default" doesn\'t allow to fit any of 1 slice(s). Total nodes: 4; '
        "excluded: topologyDomain: 2",
    ),
    ReplacementCase(
        "sibling-flavor aggregatedDomainUsages on replacement candidate blocks the replacement",
        nodes=(
            host("b1", "r1", "x1", "1"),
            host("b1", "r1", "x2", "1"),
            host("b1", "r2", "x3", "1", ready=False),
            host("b1", "r2", "x4", "1"),
        ),
        existing=hosts(("x1", 1), ("x2", 1), ("x3", 1), ("x4", 1)),
        failed_node="x3",
        topology=TopologyRequest(required=BLOCK, slice_layers=(SliceLayer(RACK, 2),)),
        count=4,
        prior_usage=(("x4", 1),),
        reason='topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 3; '
        'excluded: resource "cpu": 1, topologyDomain: 2',
    ),
    ReplacementCase(
        "node replaced for Job-owned workload",
        levels=ONE_LEVEL,
        nodes=(
            node("x1", {HOST: "x1"}, {"cpu": "1", "pods": "10"}, ready=False),
            node("x2", {HOST: "x2"}, {"cpu": "1", "pods": "10"}),
        ),
        existing=hosts(("x1", 1)),
        failed_node="x1",
        topology=TopologyRequest(required=HOST),
        count=1,
        want=hosts(("x2", 1)),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_find_replacement(case: ReplacementCase) -> None:
    snapshot = TopologySnapshot(case.levels, case.nodes, FlavorSpec(topology_name="default"))
    for name, pods in case.prior_usage:
        snapshot.add_usage(hosts((name, pods)), {"cpu": 1000})
    podset = PodSetRequest("main", case.count, case.requests, case.topology)

    result = snapshot.find_replacement(podset, case.existing, case.failed_node)

    if case.reason is not None:
        assert result.failure == case.reason
        return
    assert result.failure is None
    assert result.assignment == case.want


def test_replacement_reports_the_added_domains_separately():
    nodes = [host("b1", "r1", "x1", "2"), host("b1", "r1", "x2", "2", ready=False)]
    nodes.append(host("b1", "r1", "x3", "2"))
    snapshot = TopologySnapshot(THREE_LEVELS, nodes)
    existing = hosts(("x1", 2), ("x2", 2))
    # the caller keeps the workload's surviving pods in the snapshot, so x1 is full
    snapshot.add_usage(hosts(("x1", 2)), {"cpu": 1000})
    result = snapshot.find_replacement(
        PodSetRequest("main", 4, {"cpu": 1000}, TopologyRequest(required=RACK)), existing, "x2"
    )
    assert result.added == hosts(("x3", 2))
    assert result.assignment == hosts(("x1", 2), ("x3", 2))


def test_replacement_with_a_stale_surviving_domain_fails():
    snapshot = TopologySnapshot(THREE_LEVELS, [host("b1", "r1", "x1", "2")])
    result = snapshot.find_replacement(
        PodSetRequest("main", 2, {"cpu": 1000}, TopologyRequest(required=RACK)),
        hosts(("x1", 1), ("gone", 1)),
        "x1",
    )
    assert result.failure == (
        "Cannot replace the node, because the existing topologyAssignment is invalid, "
        "as it contains the stale domain gone"
    )


def test_a_failed_node_the_assignment_does_not_use_gets_no_replacement():
    snapshot = TopologySnapshot(THREE_LEVELS, [host("b1", "r1", "x1", "2")])
    for name in ("x9", "x1"):  # x1 is in the topology, not in the assignment
        result = snapshot.find_replacement(
            PodSetRequest("main", 1, {"cpu": 1000}, TopologyRequest(required=RACK)),
            hosts(("x1", 1)) if name == "x9" else assignment(ONE_LEVEL, []),
            name,
        )
        assert result.failure == f"cannot find replacement assignment for unhealthy node: {name}"
        assert not result.replaced


def test_a_slice_only_request_replaces_within_the_broken_slice():
    """No required or preferred level: requiredReplacementDomain falls back to the slice
    layer the missing pods break. Rack slices of 4: r0's is whole (4 pods); r1 keeps 1 pod
    and lost 3 with x2, so r1 is the rack whose pods and the missing ones make whole slices
    again, and the replacement stays there although the tightest free host is in r3."""
    nodes = [
        host("b1", "r0", "x4", "2"),
        host("b1", "r0", "x5", "2"),
        host("b1", "r1", "x1", "1"),
        host("b1", "r1", "x2", "3", ready=False),
        host("b1", "r1", "x3", "4"),
        host("b1", "r3", "x6", "3"),
    ]
    surviving = hosts(("x1", 1), ("x4", 2), ("x5", 2))
    existing = hosts(("x1", 1), ("x2", 3), ("x4", 2), ("x5", 2))
    request = PodSetRequest(
        "main", 8, {"cpu": 1000}, TopologyRequest(slice_layers=(SliceLayer(RACK, 4),))
    )
    for reference in (False, True):
        snapshot = TopologySnapshot(THREE_LEVELS, nodes, reference=reference)
        snapshot.add_usage(surviving, {"cpu": 1000})
        result = snapshot.find_replacement(request, existing, "x2")
        assert result.added == hosts(("x3", 3)), reference


def test_a_one_level_topology_replaces_anywhere():
    nodes = [node(name, {HOST: name}, {"cpu": "2"}) for name in ("x1", "x3")]
    nodes.append(node("x2", {HOST: "x2"}, {"cpu": "2"}, ready=False))
    snapshot = TopologySnapshot(ONE_LEVEL, nodes)
    result = snapshot.find_replacement(
        PodSetRequest("main", 2, {"cpu": 1000}, TopologyRequest()), hosts(("x2", 2)), "x2"
    )
    assert result.failure is None and result.added is not None
    assert sum(d.count for d in result.added.domains) == 2
