"""NUMA zones below the host (solver/numa.py and the snapshot's use of it).

Scenarios first (the issue's cases, worked by hand), then properties over random clusters:
no zone over its free capacity, counts that add up, the gate-off identity, and the array path
equal to the plain one.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tas.solver import numa
from tas.solver.snapshot import TopologySnapshot
from tas.solver.types import (
    CONTAINER_SCOPE,
    HOSTNAME_LEVEL,
    POD_SCOPE,
    Node,
    NodeNuma,
    NumaShape,
    NumaZone,
    PodSetRequest,
    TopologyRequest,
    WorkloadPlacement,
)

RACK = "example.com/rack"
LEVELS = (RACK, HOSTNAME_LEVEL)
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def zones(*cpus: int, scope: str = CONTAINER_SCOPE, gpus: tuple[int, ...] = ()) -> NodeNuma:
    out = []
    for index, cpu in enumerate(cpus):
        free = {"cpu": cpu * 1000}
        if gpus:
            free["example.com/gpu"] = gpus[index] * 1000
        out.append(NumaZone(f"node-{index}", free))
    return NodeNuma(scope=scope, zones=tuple(out))


def node(name: str, rack: str, cpu: int, numa_zones: NodeNuma | None) -> Node:
    return Node(
        name=name,
        labels={RACK: rack, HOSTNAME_LEVEL: name},
        allocatable={"cpu": cpu * 1000, "memory": 64_000_000},
        numa=numa_zones,
    )


def guaranteed(*cpus: int) -> NumaShape:
    return NumaShape(tuple({"cpu": c * 1000, "memory": 1_000_000} for c in cpus))


def podset(count: int, cpu: int, shape: NumaShape | None, **topology) -> PodSetRequest:
    return PodSetRequest(
        name="main",
        count=count,
        requests={"cpu": cpu * 1000, "memory": 1_000_000},
        topology=TopologyRequest(**topology),
        numa=shape,
    )


def place(snapshot: TopologySnapshot, podsets: list[PodSetRequest]) -> WorkloadPlacement:
    """Placement, then the zones its pods take (as `tas solve` asks for both)."""
    return snapshot.numa_zones(podsets, snapshot.find_assignments(podsets))


def per_host(placement: WorkloadPlacement, name: str = "main") -> dict[str, int]:
    [placed] = [p for p in placement.podsets if p.name == name]
    return {d.values[-1]: d.count for d in placement.podsets[0].assignment.domains} | {
        d.values[-1]: d.count for d in placed.assignment.domains
    }


# -- the cases ----------------------------------------------------------------------------


@pytest.mark.parametrize("reference", [False, True])
def test_eight_pods_of_three_cpus_take_one_zone_each(reference: bool) -> None:
    """Nodes with 32 CPUs by totals but 2 zones x 4 CPUs: node totals would put all 8 pods on
    two nodes; the zones hold one 3-CPU pod each, so 4 nodes take 2 pods, one per zone."""
    nodes = [node(f"h{i}", "r1", 32, zones(4, 4)) for i in range(6)]
    snapshot = TopologySnapshot(LEVELS, nodes, reference=reference)
    placement = place(snapshot, [podset(8, 3, guaranteed(3), required=RACK)])
    assert placement.admitted, placement.failure
    assert sorted(per_host(placement).values()) == [2, 2, 2, 2]
    plans = placement.podsets[0].numa_zones
    assert set(plans) == set(per_host(placement))
    for pods in plans.values():
        assert sorted(pods) == [("node-0",), ("node-1",)]


@pytest.mark.parametrize("reference", [False, True])
def test_gang_that_fits_by_totals_but_not_by_zones_is_refused_with_the_zone_reason(
    reference: bool,
) -> None:
    # 2 hosts x 8 CPUs by totals hold 4 pods of 3 CPUs between them (2 + 2), but their zones
    # (4 + 4, and 4 + 2) hold only 3: the required rack cannot take the gang of 4.
    nodes = [node("h0", "r1", 8, zones(4, 4)), node("h1", "r1", 8, zones(4, 2))]
    snapshot = TopologySnapshot(LEVELS, nodes, reference=reference)
    without_zones = TopologySnapshot(LEVELS, [replace(n, numa=None) for n in nodes])
    request = podset(4, 3, guaranteed(3), required=RACK)
    assert without_zones.find_assignments([request]).admitted
    placement = snapshot.find_assignments([request])
    assert not placement.admitted
    assert placement.failure == (
        'topology "example.com/rack" allows to fit only 3 out of 4 pod(s): NUMA zones '
        "(single-numa-node) fit fewer pods than node totals on 1 node(s)"
    )


def test_pods_that_are_not_guaranteed_keep_node_totals() -> None:
    nodes = [node("h0", "r1", 8, zones(4, 4))]
    snapshot = TopologySnapshot(LEVELS, nodes)
    placement = place(snapshot, [podset(2, 3, None, required=RACK)])
    assert placement.admitted  # 6 of 8 CPUs by totals; zones are not consulted
    assert placement.podsets[0].numa_zones == {}


def test_zone_usage_from_an_earlier_pod_set_of_the_same_workload_counts() -> None:
    nodes = [node("h0", "r1", 32, zones(4, 4))]
    snapshot = TopologySnapshot(LEVELS, nodes)
    first = replace(podset(1, 3, guaranteed(3), required=RACK), name="first")
    second = replace(podset(2, 3, guaranteed(3), required=RACK), name="second")
    placement = snapshot.find_assignments([first, second])
    assert not placement.admitted  # 3 pods of 3 CPUs, 2 zones of 4
    ok = place(snapshot, [first, replace(second, count=1)])
    assert ok.admitted
    assert ok.podsets[0].numa_zones == {"h0": (("node-0",),)}
    assert ok.podsets[1].numa_zones == {"h0": (("node-1",),)}


# -- scopes: the KEP's filter per container or per pod ----------------------------------------------


def test_container_scope_aligns_each_container_alone() -> None:
    # Two containers of 2 CPUs, zones of 3 + 3: each container finds a zone (one in each), the
    # second pod's first container does not.
    node_numa = zones(3, 3, scope=CONTAINER_SCOPE)
    assert numa.count(node_numa, guaranteed(2, 2), limit=10) == 1
    assert numa.plan(node_numa, guaranteed(2, 2), 1) == [("node-0", "node-1")]


def test_pod_scope_aligns_the_sum_of_the_containers() -> None:
    # The same pod needs 4 CPUs in one zone under pod scope: zones of 3 hold none.
    assert numa.count(zones(3, 3, scope=POD_SCOPE), guaranteed(2, 2), limit=10) == 0
    assert numa.count(zones(4, 4, scope=POD_SCOPE), guaranteed(2, 2), limit=10) == 2


def test_memory_and_hugepages_flow_and_unreported_resources_are_not_aligned() -> None:
    node_numa = NodeNuma(
        CONTAINER_SCOPE,
        (NumaZone("node-0", {"cpu": 4000, "memory": 1}), NumaZone("node-1", {"cpu": 4000})),
    )
    shape = NumaShape(
        ({"cpu": 2000, "memory": 10**12, "hugepages-2Mi": 10**9, "ephemeral-storage": 5},)
    )
    assert numa.units(node_numa, shape) == [{"cpu": 2000}]
    assert numa.count(node_numa, shape, limit=10) == 4


def test_a_device_reported_by_some_zones_only_fits_there() -> None:
    node_numa = zones(8, 8, gpus=(0, 2))
    shape = NumaShape(({"cpu": 1000, "example.com/gpu": 1000},))
    assert numa.count(node_numa, shape, limit=10) == 2
    assert numa.plan(node_numa, shape, 2) == [("node-1",), ("node-1",)]


def test_the_count_never_passes_the_limit_from_node_totals() -> None:
    assert numa.count(zones(64, 64), guaranteed(1), limit=5) == 5
    assert numa.count(zones(64, 64), guaranteed(1, 1), limit=5) == 5
    assert numa.count(zones(64, 64), guaranteed(1), limit=0) == 0


def test_place_leaves_the_zones_untouched_when_a_pod_does_not_fit() -> None:
    frees = [{"cpu": 3000}, {"cpu": 1000}]
    assert numa.place(frees, [{"cpu": 2000}, {"cpu": 2000}]) is None
    assert frees == [{"cpu": 3000}, {"cpu": 1000}]


# -- properties --------------------------------------------------------------------------------------


@st.composite
def numa_clusters(draw: st.DrawFn) -> list[Node]:
    nodes = []
    for index in range(draw(st.integers(1, 8))):
        cpu = draw(st.sampled_from([2, 4, 8, 16, 32]))
        numa_zones = None
        if draw(st.integers(0, 3)):
            count = draw(st.integers(1, 4))
            scope = draw(st.sampled_from([CONTAINER_SCOPE, POD_SCOPE]))
            numa_zones = NodeNuma(
                scope,
                tuple(
                    NumaZone(
                        f"node-{z}",
                        {"cpu": draw(st.integers(0, 8)) * 1000}
                        | (
                            {"example.com/gpu": draw(st.integers(0, 2)) * 1000}
                            if draw(st.booleans())
                            else {}
                        ),
                    )
                    for z in range(count)
                ),
            )
        nodes.append(node(f"h{index}", f"r{index % 2}", cpu, numa_zones))
    return nodes


@st.composite
def numa_podsets(draw: st.DrawFn, name: str) -> PodSetRequest:
    containers = tuple(
        {"cpu": draw(st.integers(1, 3)) * 1000}
        | ({"example.com/gpu": 1000} if draw(st.integers(0, 4)) == 0 else {})
        for _ in range(draw(st.integers(1, 2)))
    )
    shape = NumaShape(containers)
    mode = draw(st.sampled_from(["required", "preferred", "unconstrained"]))
    level = draw(st.sampled_from(LEVELS))
    topology = TopologyRequest(
        required=level if mode == "required" else None,
        preferred=level if mode == "preferred" else None,
        unconstrained=mode == "unconstrained",
    )
    return PodSetRequest(
        name=name,
        count=draw(st.integers(1, 10)),
        requests=shape.total(),
        topology=topology,
        numa=shape if draw(st.integers(0, 5)) else None,
    )


@st.composite
def numa_workloads(draw: st.DrawFn, size: int) -> list[PodSetRequest]:
    """One or two pod sets; sometimes a leader and workers sharing one domain."""
    if draw(st.integers(0, 3)) == 0:
        level = draw(st.sampled_from(LEVELS))
        topology = TopologyRequest(required=level, group_name="g")
        workers = replace(draw(numa_podsets("workers")), topology=topology)
        leader = replace(draw(numa_podsets("leader")), count=1, topology=topology)
        return [leader, workers] if draw(st.booleans()) else [workers, leader]
    return [draw(numa_podsets(f"ps{i}")) for i in range(size)]


def take_zones(nodes: dict[str, Node], podset: PodSetRequest, plans) -> None:
    """What the cache does after an admission: the zones the plans name lose the units."""
    for host, pods in plans.items():
        current = nodes[host].numa
        assert current is not None
        frees = {zone.name: dict(zone.free) for zone in current.zones}
        pod_units = numa.units(current, podset.numa)
        for pod in pods:
            assert len(pod) == len(pod_units)
            for zone_name, unit in zip(pod, pod_units, strict=True):
                assert bool(zone_name) == bool(unit)
                for resource, value in unit.items():
                    frees[zone_name][resource] -= value
        nodes[host] = replace(
            nodes[host],
            numa=NodeNuma(
                current.scope, tuple(NumaZone(z.name, frees[z.name]) for z in current.zones)
            ),
        )


@PROPERTY
@given(numa_clusters(), st.lists(st.integers(1, 2), min_size=1, max_size=4), st.data())
def test_no_zone_is_ever_over_its_free_capacity_and_counts_add_up(cluster, sizes, data) -> None:
    nodes = {n.name: n for n in cluster}
    snapshot = TopologySnapshot(LEVELS, cluster)
    for size in sizes:
        podsets = data.draw(numa_workloads(size))
        placement = place(snapshot, podsets)
        if not placement.admitted:
            continue
        for request, placed in zip(podsets, placement.podsets, strict=True):
            hosts = {d.values[-1]: d.count for d in placed.assignment.domains}
            assert sum(hosts.values()) == request.count
            if request.numa is None:
                assert placed.numa_zones == {}
                continue
            # every pod on a NUMA node has a zone plan; no plan elsewhere
            numa_hosts = {h for h in hosts if nodes[h].numa is not None}
            assert set(placed.numa_zones) == numa_hosts
            for host in numa_hosts:
                assert len(placed.numa_zones[host]) == hosts[host]
            take_zones(nodes, request, placed.numa_zones)
            snapshot.add_usage(placed.assignment, request.requests)
        for host in {d.values[-1] for p in placement.podsets for d in p.assignment.domains}:
            snapshot.upsert_node(nodes[host])
        for n in nodes.values():
            for zone in n.numa.zones if n.numa else ():
                original = next(z for z in cluster if z.name == n.name).numa
                for resource, value in zone.free.items():
                    start = next(z for z in original.zones if z.name == zone.name).free[resource]
                    # never below zero unless it already was
                    assert value >= min(0, start), (n.name, zone)


@PROPERTY
@given(numa_clusters(), st.lists(st.integers(1, 2), min_size=1, max_size=3), st.data())
def test_without_zones_or_without_shapes_the_result_is_todays(cluster, sizes, data) -> None:
    """The gate off (no NUMA on nodes) or no Guaranteed pods (no shapes): identical results."""
    plain_nodes = [replace(n, numa=None) for n in cluster]
    today = TopologySnapshot(LEVELS, plain_nodes)
    no_zones = TopologySnapshot(LEVELS, plain_nodes)
    no_shapes = TopologySnapshot(LEVELS, cluster)
    for size in sizes:
        podsets = [data.draw(numa_podsets(f"ps{i}")) for i in range(size)]
        plain_podsets = [replace(p, numa=None) for p in podsets]
        expected = today.find_assignments(plain_podsets)
        assert no_zones.find_assignments(podsets) == expected
        assert no_shapes.find_assignments(plain_podsets) == expected
        if expected.admitted:
            for snap in (today, no_zones, no_shapes):
                for request, placed in zip(plain_podsets, expected.podsets, strict=True):
                    snap.add_usage(placed.assignment, request.requests)


@PROPERTY
@given(numa_clusters(), st.lists(st.integers(1, 2), min_size=1, max_size=3), st.data())
def test_arrays_and_plain_path_agree_with_zones(cluster, sizes, data) -> None:
    fast = TopologySnapshot(LEVELS, cluster)
    reference = TopologySnapshot(LEVELS, cluster, reference=True)
    for size in sizes:
        podsets = data.draw(numa_workloads(size))
        expected = place(reference, podsets)
        assert place(fast, podsets) == expected
        if expected.admitted:  # the next workloads meet the zones these took, on both
            for snap in (fast, reference):
                nodes = {n.name: n for n in cluster}
                for request, placed in zip(podsets, expected.podsets, strict=True):
                    snap.add_usage(placed.assignment, request.requests)
                    if request.numa is not None:
                        take_zones(nodes, request, placed.numa_zones)
                for host in {d.values[-1] for p in expected.podsets for d in p.assignment.domains}:
                    snap.upsert_node(nodes[host])
            cluster = list(nodes.values())


@PROPERTY
@given(numa_clusters(), st.data())
def test_a_single_pod_the_kep_filter_refuses_is_never_placed_on_that_node(cluster, data) -> None:
    """Seed 002's filter, run per container (or per pod) on one node: when it says no zone can
    align the pod, we put no pod there either."""
    request = replace(data.draw(numa_podsets("ps0")), count=1)
    request = replace(request, topology=TopologyRequest(required=HOSTNAME_LEVEL))
    if request.numa is None:
        request = replace(request, numa=NumaShape((request.requests,)))
    placement = TopologySnapshot(LEVELS, cluster).find_assignments([request])
    if not placement.admitted:
        return
    [host] = [d.values[-1] for d in placement.podsets[0].assignment.domains]
    node_numa = next(n.numa for n in cluster if n.name == host)
    if node_numa is None:
        return
    reported = node_numa.reported
    units = (
        list(request.numa.containers)
        if node_numa.scope == CONTAINER_SCOPE
        else [request.numa.total()]
    )
    for unit in units:  # the KEP: some zone holds each unit (resources no zone reports pass)
        assert any(
            all(
                zone.free.get(name, 0) >= value
                for name, value in unit.items()
                if value and name in reported
            )
            for zone in node_numa.zones
        )


def test_zone_counts_follow_node_updates_in_place() -> None:
    nodes = [node("h0", "r1", 32, zones(4, 4)), node("h1", "r1", 32, zones(4, 4))]
    snapshot = TopologySnapshot(LEVELS, nodes)
    request = podset(4, 3, guaranteed(3), required=RACK)
    assert snapshot.find_assignments([request]).admitted
    snapshot.upsert_node(replace(nodes[1], numa=zones(4, 2)))
    assert not snapshot.find_assignments([request]).admitted
    snapshot.upsert_node(replace(nodes[1], numa=None))  # the object is gone: totals again
    placement = snapshot.find_assignments([request])
    assert placement.admitted
    assert defaultdict(int, per_host(placement))["h1"] >= 2


@pytest.mark.parametrize("reference", [False, True])
def test_among_equal_nodes_the_one_needing_fewest_zones_is_chosen(reference: bool) -> None:
    """LeastNUMANodes for the gang, after Kueue's keys: both nodes hold the 4 pods, h0 in two
    zones, h1 in one; Kueue's tie-break alone (by name) would take h0."""
    nodes = [node("h0", "r1", 32, zones(2, 2)), node("h1", "r1", 32, zones(4, 0))]
    snapshot = TopologySnapshot(LEVELS, nodes, reference=reference)
    placement = place(snapshot, [podset(4, 1, guaranteed(1), required=HOSTNAME_LEVEL)])
    assert per_host(placement) == {"h1": 4}
    assert placement.podsets[0].numa_zones == {"h1": (("node-0",),) * 4}
    without = TopologySnapshot(LEVELS, [replace(n, numa=None) for n in nodes], reference=reference)
    assert per_host(place(without, [podset(4, 1, guaranteed(1), required=HOSTNAME_LEVEL)])) == {
        "h0": 4
    }


def test_zones_needed_takes_the_roomiest_zones_first() -> None:
    assert numa.zones_needed(zones(1, 4, 2), guaranteed(1), 4) == 1
    assert numa.zones_needed(zones(1, 4, 2), guaranteed(1), 5) == 2
    assert numa.zones_needed(zones(1, 4, 2), guaranteed(1), 0) == 0
    assert numa.zones_needed(zones(4, 4), guaranteed(1, 1), 2) == 1  # first fit, one zone


# -- the pure functions, one by one (mutation testing found these untested) -------------------------


def test_a_resource_one_zone_lacks_fits_only_the_zones_that_report_it() -> None:
    node_numa = NodeNuma(
        CONTAINER_SCOPE,
        (
            NumaZone("node-0", {"cpu": 8000}),
            NumaZone("node-1", {"cpu": 8000, "example.com/gpu": 2000}),
        ),
    )
    shape = NumaShape(({"cpu": 1000, "example.com/gpu": 1000},))
    assert numa.count(node_numa, shape, limit=10) == 2
    assert numa.plan(node_numa, shape, 2) == [("node-1",), ("node-1",)]
    assert numa.place([dict(z.free) for z in node_numa.zones], [{"example.com/gpu": 1}]) == [1]
    two = NumaShape(({"cpu": 1000, "example.com/gpu": 1000}, {"cpu": 1000}))
    assert numa.count(node_numa, two, limit=10) == 2


def test_hugepages_and_memory_flow_even_where_zones_report_them() -> None:
    node_numa = NodeNuma(
        POD_SCOPE,
        (NumaZone("node-0", {"cpu": 4000, "memory": 1000, "hugepages-1Gi": 0}),),
    )
    shape = NumaShape(({"cpu": 1000, "memory": 10**9, "hugepages-1Gi": 10**9},))
    assert numa.units(node_numa, shape) == [{"cpu": 1000}]
    assert numa.count(node_numa, shape, limit=10) == 4
    assert numa.flows("hugepages-2Mi") and numa.flows("memory") and not numa.flows("cpu")


def test_earlier_pods_that_no_longer_fit_leave_no_room() -> None:
    node_numa = zones(4, 4)
    assert numa.count(node_numa, guaranteed(1), limit=5, before=[guaranteed(8)]) == 0
    assert numa.plan(node_numa, guaranteed(1), 1, before=[guaranteed(8)]) is None
    assert numa.zones_needed(node_numa, guaranteed(1), 1, before=[guaranteed(8)]) == 0
    assert numa.count(node_numa, guaranteed(1), limit=5, before=[guaranteed(3)]) == 5
    assert numa.plan(node_numa, guaranteed(3), 1, before=[guaranteed(3)]) == [("node-1",)]


def test_a_container_no_zone_aligns_takes_no_zone() -> None:
    node_numa = zones(4, 4)  # reports cpu only
    shape = NumaShape(({"cpu": 1000}, {"example.com/nic": 1000}), ("app", "net"))
    assert numa.units(node_numa, shape) == [{"cpu": 1000}, {}]
    assert numa.plan(node_numa, shape, 5) == [("node-0", "")] * 4 + [("node-1", "")]
    several = NumaShape(({"cpu": 3000}, {"example.com/nic": 1000}, {"cpu": 3000}))
    assert numa.plan(node_numa, several, 1) == [("node-0", "", "node-1")]
    assert numa.place([{"cpu": 4000}], [{}, {"cpu": 1000}]) == [-1, 0]


def test_taken_takes_and_gives_back_what_the_plan_names() -> None:
    node_numa = zones(4, 4)
    shape = NumaShape(({"cpu": 1000}, {"cpu": 2000}), ("a", "b"))
    after = numa.taken(node_numa, shape, [("node-0", "node-1"), ("node-0", "node-0")])
    assert [dict(z.free) for z in after.zones] == [{"cpu": 0}, {"cpu": 2000}]
    assert after.scope == node_numa.scope
    back = numa.taken(after, shape, [("node-0", "node-1"), ("node-0", "node-0")], sign=-1)
    assert back == node_numa
    assert numa.taken(node_numa, shape, [("node-9", "")]) == node_numa  # unknown zone: nothing


def test_fill_zones_fills_in_zone_order_and_refuses_what_does_not_fit() -> None:
    node_numa = zones(4, 4, 4)
    assert numa.fill_zones(node_numa, [1, 0, 3], 3) == [("node-0",), ("node-2",), ("node-2",)]
    assert numa.fill_zones(node_numa, [1, 0, 3], 5) is None
    assert numa.fill_zones(node_numa, [2, 2, 2], 0) == []
    assert numa.fill_zones(node_numa, [2, 2, 2], 1, position=1, width=2) == [("", "node-0")]


def test_zones_needed_edges() -> None:
    assert numa.zones_needed(zones(4, 4), guaranteed(1), 1) == 1
    assert numa.zones_needed(zones(5, 5, 5), guaranteed(2), 5) == 3  # whole pods per zone
    assert numa.zones_needed(zones(1, 0, 0), guaranteed(1), 2) == 3  # not held: every zone
    assert numa.zones_needed(zones(4, 4), NumaShape(({"example.com/nic": 1000},)), 2) == 0
    # an earlier pod decides where a pod of two containers goes (first fit, container scope)
    assert numa.zones_needed(zones(4, 4), guaranteed(2, 2), 1) == 1
    assert numa.zones_needed(zones(4, 4), guaranteed(2, 2), 1, before=[guaranteed(2)]) == 2
    lacking = NodeNuma(
        CONTAINER_SCOPE,
        (NumaZone("node-0", {"cpu": 8000}), NumaZone("node-1", {"cpu": 8000, "x/gpu": 2000})),
    )
    gpu = NumaShape(({"cpu": 1000, "x/gpu": 1000},))
    assert numa.zones_needed(lacking, gpu, 2) == 1


def test_requests_of_one_milli_unit_and_of_zero() -> None:
    tiny = NumaShape(({"cpu": 1000, "x/dev": 1},))
    node_numa = NodeNuma(
        POD_SCOPE,
        (NumaZone("node-0", {"cpu": 4000}), NumaZone("node-1", {"cpu": 4000, "x/dev": 2})),
    )
    assert numa.units(node_numa, tiny) == [{"cpu": 1000, "x/dev": 1}]
    assert numa.count(node_numa, tiny, limit=10) == 2  # node-0 has no x/dev at all
    assert numa.plan(node_numa, tiny, 2) == [("node-1",), ("node-1",)]
    assert numa.zones_needed(node_numa, tiny, 2) == 1
    zero = NumaShape(({"cpu": 1000, "x/dev": 0},))
    assert numa.units(node_numa, zero) == [{"cpu": 1000}]
    assert numa.count(node_numa, zero, limit=10) == 8


def test_taken_with_repeated_pods_unknown_zones_and_pod_scope() -> None:
    node_numa = zones(4, 4)
    one = NumaShape(({"cpu": 1000},), ("c",))
    after = numa.taken(node_numa, one, [("node-1",), ("node-1",), ("node-1",)])
    assert [z.free["cpu"] for z in after.zones] == [4000, 1000]
    two = NumaShape(({"cpu": 1000}, {"cpu": 1000}), ("a", "b"))
    after = numa.taken(node_numa, two, [("node-9", "node-0")])  # the known zone still counts
    assert [z.free["cpu"] for z in after.zones] == [3000, 4000]
    pod_scope = NodeNuma(POD_SCOPE, node_numa.zones)
    after = numa.taken(pod_scope, two, [("node-1", "node-1")])  # one unit: the pod's sum
    assert [z.free["cpu"] for z in after.zones] == [4000, 2000]
    lacking = NodeNuma(CONTAINER_SCOPE, (NumaZone("node-0", {"cpu": 4000}),))
    after = numa.taken(lacking, NumaShape(({"cpu": 1000},)), [("node-0",)])
    assert dict(after.zones[0].free) == {"cpu": 3000}
    both = NodeNuma(
        CONTAINER_SCOPE,
        (NumaZone("node-0", {"cpu": 4000}), NumaZone("node-1", {"cpu": 4000, "x/gpu": 1000})),
    )
    after = numa.taken(both, NumaShape(({"cpu": 1000, "x/gpu": 1000},)), [("node-0",)])
    assert dict(after.zones[0].free) == {"cpu": 3000, "x/gpu": -1000}  # as the pin says
