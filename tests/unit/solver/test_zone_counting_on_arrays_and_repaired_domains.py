"""Edges of TopologySnapshot outside placement groups: NUMA zone counting on the array path
(TASNUMAZones) and merging the domains of a repaired assignment (node hot swap).

Mutation testing found these untested; each case is worked by hand.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import pytest

from tas.solver import PodSetRequest, SliceLayer, TopologyRequest, TopologySnapshot
from tas.solver.types import (
    CONTAINER_SCOPE,
    HOSTNAME_LEVEL,
    Node,
    NodeNuma,
    NumaShape,
    NumaZone,
    WorkloadPlacement,
)
from tests.unit.solver.solver_test_helpers import (
    BLOCK,
    ONE_LEVEL,
    RACK,
    THREE_LEVELS,
    assignment,
    node,
)

LEVELS = (RACK, HOSTNAME_LEVEL)
GPU = "example.com/gpu"
DEV = "example.com/dev"
BANDWIDTH = "example.com/bandwidth"
UNIT = 1000  # one unit of a resource, in milli-units


def numa_node(
    name: str, allocatable: Mapping[str, int], *zone_free: Mapping[str, int] | None
) -> Node:
    """A host of rack r1; `zone_free`: its zones' free capacity in order (none: no zones)."""
    numa = None
    if zone_free and zone_free[0] is not None:
        zones = tuple(NumaZone(f"node-{i}", dict(free)) for i, free in enumerate(zone_free))
        numa = NodeNuma(CONTAINER_SCOPE, zones)
    return Node(
        name=name,
        labels={RACK: "r1", HOSTNAME_LEVEL: name},
        allocatable=dict(allocatable),
        numa=numa,
    )


def on_one_host(count: int, requests: Mapping[str, int]) -> PodSetRequest:
    """`count` Guaranteed pods of one container, all on one host."""
    return PodSetRequest(
        name="main",
        count=count,
        requests=dict(requests),
        topology=TopologyRequest(required=HOSTNAME_LEVEL),
        numa=NumaShape((dict(requests),)),
    )


def rack_host(rack: str, name: str, cpu: str, *, ready: bool = True) -> Node:
    labels = {BLOCK: "b1", RACK: rack, HOSTNAME_LEVEL: name}
    return node(f"b1-{rack}-{name}", labels, {"cpu": cpu, "pods": "10"}, ready=ready)


def hosts_of(placement: WorkloadPlacement) -> dict[str, int]:
    return {d.values[-1]: d.count for d in placement.podsets[0].assignment.domains}


# -- NUMA zones on the array path -------------------------------------------------------------------


@pytest.mark.parametrize("reference", [False, True])
def test_a_host_with_fewer_zones_than_another_has_no_extra_zone(reference: bool) -> None:
    """h0 has one zone, h1 two: the arrays give h0 a second zone slot, which must hold
    nothing. Neither host has a free device in any zone, so a pod of one milli-unit of it
    fits nowhere."""
    nodes = [
        numa_node("h0", {"cpu": 4 * UNIT, DEV: 2 * UNIT}, {DEV: 0}),
        numa_node("h1", {"cpu": 4 * UNIT, DEV: 2 * UNIT}, {DEV: 0}, {DEV: 0}),
    ]
    snapshot = TopologySnapshot(LEVELS, nodes, reference=reference)
    request = on_one_host(1, {DEV: 1})
    placement = snapshot.find_assignments([request])
    assert not placement.admitted
    assert "NUMA zones" in (placement.failure or "")


def test_a_zone_update_in_place_leaves_no_room_in_the_missing_zone_slot() -> None:
    """The same through an update of h0's zones in place (the arrays are kept, one column
    refilled): once its only zone has no device left, h0 takes no pod."""
    nodes = [
        numa_node("h0", {"cpu": 4 * UNIT, DEV: 2 * UNIT}, {DEV: 1}),
        numa_node("h1", {"cpu": 4 * UNIT, DEV: 2 * UNIT}, {DEV: 0}, {DEV: 0}),
    ]
    snapshot = TopologySnapshot(LEVELS, nodes)
    request = on_one_host(1, {DEV: 1})
    assert hosts_of(snapshot.find_assignments([request])) == {"h0": 1}
    snapshot.upsert_node(
        replace(nodes[0], numa=NodeNuma(CONTAINER_SCOPE, (NumaZone("node-0", {DEV: 0}),)))
    )
    assert not snapshot.find_assignments([request]).admitted


@pytest.mark.parametrize("reference", [False, True])
def test_every_aligned_resource_of_the_pod_limits_what_a_zone_holds(reference: bool) -> None:
    """Pods of 1 CPU and 1 GPU in one zone; each zone has 2 CPUs and 8 GPUs, so it holds 2
    (the CPUs limit, not the GPUs): the host's two zones hold 4 pods although its totals
    (32 CPUs, 16 GPUs) hold 16."""
    zone = {"cpu": 2 * UNIT, GPU: 8 * UNIT}
    nodes = [numa_node("h0", {"cpu": 32 * UNIT, GPU: 16 * UNIT}, zone, zone)]
    snapshot = TopologySnapshot(LEVELS, nodes, reference=reference)
    requests = {"cpu": UNIT, GPU: UNIT}
    four = snapshot.find_assignments([on_one_host(4, requests)])
    assert hosts_of(four) == {"h0": 4}
    assert snapshot.numa_zones([on_one_host(4, requests)], four).podsets[0].numa_zones == {
        "h0": (("node-0",), ("node-0",), ("node-1",), ("node-1",))
    }
    five = snapshot.find_assignments([on_one_host(5, requests)])
    assert not five.admitted
    assert five.failure == (
        'topology "kubernetes.io/hostname" allows to fit only 4 out of 5 pod(s): NUMA zones '
        "(single-numa-node) fit fewer pods than node totals on 1 node(s)"
    )


@pytest.mark.parametrize("reference", [False, True])
def test_a_single_pod_prefers_a_host_without_zones_to_one_whose_zone_it_takes(
    reference: bool,
) -> None:
    """LeastNUMANodes after Kueue's keys: both hosts hold exactly the one pod, h0 in one of
    its zones, h1 (no zones reported) in none; the zone count breaks the tie before the name
    would (h0)."""
    nodes = [
        numa_node("h0", {"cpu": UNIT}, {"cpu": UNIT}, {"cpu": UNIT}),
        numa_node("h1", {"cpu": UNIT}, None),
    ]
    snapshot = TopologySnapshot(LEVELS, nodes, reference=reference)
    assert hosts_of(snapshot.find_assignments([on_one_host(1, {"cpu": UNIT})])) == {"h1": 1}


@pytest.mark.parametrize("reference", [False, True])
def test_zones_with_more_room_than_the_arrays_hold_still_count_as_zones_needed(
    reference: bool,
) -> None:
    """Every host's zones report the bandwidth (so every NUMA host aligns it): h1's zones hold
    2G units each, beyond what the arrays store, yet its 4 pods still take one zone, as h0's
    do. Both hosts' CPUs hold 4 pods; the tie (4 pods, 1 zone each) goes to the name: h0."""
    nodes = [
        numa_node(
            "h0", {"cpu": 4 * UNIT, BANDWIDTH: 4 * UNIT}, {BANDWIDTH: 4 * UNIT}, {BANDWIDTH: 0}
        ),
        numa_node(
            "h1",
            {"cpu": 4 * UNIT, BANDWIDTH: 4 * 10**9 * UNIT},
            {BANDWIDTH: 2 * 10**9 * UNIT},
            {BANDWIDTH: 2 * 10**9 * UNIT},
        ),
    ]
    snapshot = TopologySnapshot(LEVELS, nodes, reference=reference)
    request = replace(on_one_host(4, {BANDWIDTH: UNIT}), requests={"cpu": UNIT, BANDWIDTH: UNIT})
    placement = snapshot.find_assignments([request])
    assert hosts_of(placement) == {"h0": 4}
    assert snapshot.numa_zones([request], placement).podsets[0].numa_zones == {
        "h0": (("node-0",),) * 4
    }


@pytest.mark.parametrize("reference", [False, True])
def test_a_guaranteed_leader_of_best_effort_workers_is_counted_by_zones(reference: bool) -> None:
    """Only the leader has a NUMA shape: it needs 3 CPUs in one zone, which h0's zones (2 + 2)
    lack although its totals (32) hold it; the group goes to h1 (zones 4 + 4), the leader in
    its first zone, the workers on node totals."""
    nodes = [
        numa_node("h0", {"cpu": 32 * UNIT}, {"cpu": 2 * UNIT}, {"cpu": 2 * UNIT}),
        numa_node("h1", {"cpu": 32 * UNIT}, {"cpu": 4 * UNIT}, {"cpu": 4 * UNIT}),
    ]
    snapshot = TopologySnapshot(LEVELS, nodes, reference=reference)
    topology = TopologyRequest(required=HOSTNAME_LEVEL, group_name="g")
    leader = PodSetRequest(
        "leader", 1, {"cpu": 3 * UNIT}, topology, numa=NumaShape(({"cpu": 3 * UNIT},))
    )
    workers = PodSetRequest("workers", 2, {"cpu": UNIT}, topology)
    placement = snapshot.numa_zones([leader, workers], snapshot.find_assignments([leader, workers]))
    assert [{d.values[-1]: d.count for d in p.assignment.domains} for p in placement.podsets] == [
        {"h1": 1},
        {"h1": 2},
    ]
    assert placement.podsets[0].numa_zones == {"h1": (("node-0",),)}
    assert placement.podsets[1].numa_zones == {}


# -- slice layers ------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [3, 0, -2])
def test_an_inner_slice_layer_must_evenly_divide_the_outer_one(size: int) -> None:
    nodes = [rack_host("r1", f"x{i}", "8") for i in range(2)]
    snapshot = TopologySnapshot(THREE_LEVELS, nodes)
    layers = (SliceLayer(RACK, 4), SliceLayer(HOSTNAME_LEVEL, size))
    request = PodSetRequest(
        "main", 8, {"cpu": 1000}, TopologyRequest(required=BLOCK, slice_layers=layers)
    )
    placement = snapshot.find_assignments([request])
    assert placement.failure == (
        f"additional slice layer size {size} must evenly divide parent layer size 4"
    )
    ok = replace(
        request,
        topology=replace(request.topology, slice_layers=(layers[0], SliceLayer(HOSTNAME_LEVEL, 2))),
    )
    assert snapshot.find_assignments([ok]).admitted


# -- merging the repaired assignment (find_replacement) --------------------------------------------


def hosts(*pairs: tuple[str, int]):
    return assignment(ONE_LEVEL, [((h,), c) for h, c in pairs])


def test_a_replacement_on_a_surviving_host_adds_to_its_count() -> None:
    """x1 keeps 2 pods and, the snapshot holding none of the workload's usage (as in Kueue's
    harness), takes the pod lost with x2 too: one domain of 3, not two of x1."""
    nodes = [rack_host("r1", "x1", "4"), rack_host("r1", "x2", "4", ready=False)]
    snapshot = TopologySnapshot(THREE_LEVELS, nodes)
    request = PodSetRequest("main", 3, {"cpu": 1000}, TopologyRequest(required=RACK))
    result = snapshot.find_replacement(request, hosts(("x1", 2), ("x2", 1)), "x2")
    assert result.failure is None
    assert result.added == hosts(("x1", 1))
    assert result.assignment == hosts(("x1", 3))


def test_a_replacement_added_after_other_surviving_hosts_adds_to_its_own_host() -> None:
    nodes = [
        rack_host("r1", "x1", "1"),
        rack_host("r1", "x2", "4"),
        rack_host("r1", "x3", "4", ready=False),
    ]
    snapshot = TopologySnapshot(THREE_LEVELS, nodes)
    snapshot.add_usage(hosts(("x1", 1)), {"cpu": 1000})  # x1 is full, x2 has room
    request = PodSetRequest("main", 4, {"cpu": 1000}, TopologyRequest(required=RACK))
    result = snapshot.find_replacement(request, hosts(("x1", 1), ("x2", 2), ("x3", 1)), "x3")
    assert result.added == hosts(("x2", 1))
    assert result.assignment == hosts(("x1", 1), ("x2", 3))


def test_the_repaired_assignment_lists_hosts_in_topology_order_not_by_name() -> None:
    """Only the hostname is reported, but domains stay in the order of the leaves' full
    paths (block, rack, host), as Kueue sorts them: z1 (rack r1) before a1 (rack r2)."""
    nodes = [
        rack_host("r1", "z1", "1"),
        rack_host("r2", "a1", "2"),
        rack_host("r2", "a2", "2", ready=False),
    ]
    snapshot = TopologySnapshot(THREE_LEVELS, nodes)
    snapshot.add_usage(hosts(("z1", 1)), {"cpu": 1000})  # the caller keeps z1's pod: z1 is full
    request = PodSetRequest("main", 2, {"cpu": 1000}, TopologyRequest(required=BLOCK))
    result = snapshot.find_replacement(request, hosts(("z1", 1), ("a2", 1)), "a2")
    assert result.added == hosts(("a1", 1))
    assert result.assignment == hosts(("z1", 1), ("a1", 1))


# -- capacity rows added after the arrays exist ------------------------------------------------------


@pytest.mark.parametrize("reference", [False, True])
def test_a_resource_a_node_gains_in_place_keeps_the_counts_exact(reference: bool) -> None:
    """h0's device plugin registers a NIC after the first placement (same labels: the node is
    updated in place and the capacity arrays gain a row). Counts stay exact integers: each
    host's 2**53 + 3 milli-units of memory hold one pod of 2**52 + 2, not two (2**53 + 4 is
    needed; in floating point the free memory would round up to exactly that)."""
    memory, request = 2**53 + 3, 2**52 + 2
    nodes = [
        Node(f"h{i}", {RACK: "r1", HOSTNAME_LEVEL: f"h{i}"}, {"cpu": 8 * UNIT, "memory": memory})
        for i in range(2)
    ]
    snapshot = TopologySnapshot(LEVELS, nodes, reference=reference)
    two = PodSetRequest(
        "main", 2, {"cpu": UNIT, "memory": request}, TopologyRequest(required=HOSTNAME_LEVEL)
    )
    failure = 'topology "kubernetes.io/hostname" allows to fit only 1 out of 2 pod(s)'
    assert snapshot.find_assignments([two]).failure == failure
    snapshot.upsert_node(
        replace(nodes[0], allocatable={**nodes[0].allocatable, "example.com/nic": UNIT})
    )
    assert snapshot.find_assignments([two]).failure == failure
    one = snapshot.find_assignments([replace(two, count=1)])
    assert hosts_of(one) == {"h0": 1}
    nic = PodSetRequest(
        "nic", 1, {"cpu": UNIT, "example.com/nic": UNIT}, TopologyRequest(required=HOSTNAME_LEVEL)
    )
    assert hosts_of(snapshot.find_assignments([nic])) == {"h0": 1}


def test_usage_of_a_resource_the_node_no_longer_reports_leaves_none_of_it() -> None:
    """A workload took h0's GPU, then h0's device plugin went away (the node is updated in
    place, without the GPU). The admitted usage still counts: h0 has -1 GPU (no GPU pod
    fits) and 3 of its 4 CPUs."""
    labels = {RACK: "r1", HOSTNAME_LEVEL: "h0"}
    with_gpu = Node("h0", labels, {"cpu": 4 * UNIT, GPU: UNIT})
    snapshot = TopologySnapshot(LEVELS, [with_gpu])
    gpu_pod = PodSetRequest(
        "gpu", 1, {"cpu": UNIT, GPU: UNIT}, TopologyRequest(required=HOSTNAME_LEVEL)
    )
    admitted = snapshot.find_assignments([gpu_pod])
    snapshot.add_usage(admitted.podsets[0].assignment, gpu_pod.requests)
    snapshot.upsert_node(replace(with_gpu, allocatable={"cpu": 4 * UNIT}))
    cpu_pods = PodSetRequest("cpu", 3, {"cpu": UNIT}, TopologyRequest(required=HOSTNAME_LEVEL))
    assert hosts_of(snapshot.find_assignments([cpu_pods])) == {"h0": 3}
    assert not snapshot.find_assignments([replace(cpu_pods, count=4)]).admitted
    assert not snapshot.find_assignments([gpu_pod]).admitted
    snapshot.remove_node("h0")  # rebuilt from scratch: the same
    snapshot.upsert_node(replace(with_gpu, allocatable={"cpu": 4 * UNIT}))
    assert hosts_of(snapshot.find_assignments([cpu_pods])) == {"h0": 3}
    assert not snapshot.find_assignments([replace(cpu_pods, count=4)]).admitted
