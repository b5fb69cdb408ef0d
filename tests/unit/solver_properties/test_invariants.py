"""Properties every placement must have, over random topologies and random requests.

The topologies have 1-3 levels above `kubernetes.io/hostname`, random allocatable and random
usage outside topology-aware admission. Requests are required / preferred / unconstrained /
implied, with or without slices (one or two layers, now and then with a pod count that is not a
whole number of slices). Each check recomputes what it needs from the assignments and the input
nodes alone, never from the solver's own bookkeeping.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tas.solver.snapshot import TopologySnapshot
from tas.solver.types import (
    HOSTNAME_LEVEL,
    PODS,
    Node,
    PodSetRequest,
    SliceLayer,
    SolverOptions,
    TopologyRequest,
    WorkloadPlacement,
)

PROPERTY = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
RESOURCES = ("cpu", "memory")
DEFAULT_PODS = 110_000


@dataclass(frozen=True)
class Cluster:
    levels: tuple[str, ...]  # highest first, hostname last
    nodes: tuple[Node, ...]

    @property
    def by_name(self) -> dict[str, Node]:
        return {node.name: node for node in self.nodes}


@st.composite
def clusters(draw: st.DrawFn) -> Cluster:
    depth = draw(st.integers(1, 3))
    upper = tuple(f"example.com/level-{index}" for index in range(depth))
    fanouts = [draw(st.integers(1, 3)) for _ in upper]
    hosts_per_leaf_domain = draw(st.integers(1, 4))

    paths: list[tuple[str, ...]] = [()]
    for index, fanout in enumerate(fanouts):
        # Values repeat under different parents (rack "r0" in every block), as in real clusters.
        paths = [(*path, f"d{index}-{i}") for path in paths for i in range(fanout)]

    nodes = []
    for path in paths:
        for _ in range(hosts_per_leaf_domain):
            name = f"n{len(nodes)}"
            cpu = draw(st.sampled_from([0, 1000, 2000, 4000, 8000]))
            memory = draw(st.sampled_from([0, 4, 16, 64])) * 1000
            pods = draw(st.integers(0, 12)) * 1000
            usage = {
                "cpu": draw(st.integers(0, cpu // 500)) * 500,
                "memory": draw(st.integers(0, memory // 4000)) * 4000,
                PODS: draw(st.integers(0, pods // 1000)) * 1000,
            }
            labels = dict(zip(upper, path, strict=True)) | {HOSTNAME_LEVEL: name}
            nodes.append(
                Node(
                    name=name,
                    labels=labels,
                    allocatable={"cpu": cpu, "memory": memory, PODS: pods},
                    usage=usage,
                    ready=draw(st.booleans()) or draw(st.booleans()),  # mostly ready
                    unschedulable=draw(st.integers(0, 9)) == 0,
                )
            )
    return Cluster(levels=(*upper, HOSTNAME_LEVEL), nodes=tuple(nodes))


@st.composite
def podsets(draw: st.DrawFn, levels: Sequence[str], name: str) -> PodSetRequest:
    mode = draw(st.sampled_from(["required", "preferred", "unconstrained", "implied"]))
    mode_index = draw(st.integers(0, len(levels) - 1))
    layers: tuple[SliceLayer, ...] = ()
    count = draw(st.integers(1, 12))
    if draw(st.booleans()):
        # Slices: outermost at or below the requested level, inner layers strictly deeper.
        lowest_allowed = mode_index if mode in ("required", "preferred") else 0
        outer_level = draw(st.integers(lowest_allowed, len(levels) - 1))
        inner_size = draw(st.integers(1, 3))
        outer_size = inner_size * draw(st.integers(1, 3))
        layers = (SliceLayer(levels[outer_level], outer_size),)
        if outer_level < len(levels) - 1 and draw(st.booleans()):
            inner_level = draw(st.integers(outer_level + 1, len(levels) - 1))
            layers += (SliceLayer(levels[inner_level], inner_size),)
        # Mostly whole slices; sometimes a remainder, which Kueue leaves without a domain.
        count = outer_size * draw(st.integers(1, 4)) + draw(st.sampled_from([0, 0, 0, 1]))
    topology = TopologyRequest(
        required=levels[mode_index] if mode == "required" else None,
        preferred=levels[mode_index] if mode == "preferred" else None,
        unconstrained=mode == "unconstrained",
        slice_layers=layers,
    )
    requests = {
        "cpu": draw(st.sampled_from([0, 250, 500, 1000, 2000])),
        "memory": draw(st.sampled_from([0, 1000, 4000])),
    }
    return PodSetRequest(name=name, count=count, requests=requests, topology=topology)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[Cluster, SolverOptions, list[list[PodSetRequest]]]:
    cluster = draw(clusters())
    options = SolverOptions(
        profile_mixed=draw(st.booleans()), balanced_placement=draw(st.booleans())
    )
    workloads = []
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.integers(0, 3)) == 0:
            workloads.append(draw(leader_and_workers(cluster.levels)))
        else:
            size = draw(st.integers(1, 2))
            workloads.append([draw(podsets(cluster.levels, f"ps{i}")) for i in range(size)])
    return cluster, options, workloads


@st.composite
def leader_and_workers(draw: st.DrawFn, levels: Sequence[str]) -> list[PodSetRequest]:
    """A podset-group-name pair: one leader, workers, both required (or preferred) at one level."""
    level = draw(st.sampled_from(levels))
    mode = draw(st.sampled_from(["required", "preferred"]))
    topology = TopologyRequest(
        required=level if mode == "required" else None,
        preferred=level if mode == "preferred" else None,
        group_name="group",
    )
    leader_cpu = draw(st.sampled_from([0, 500, 2000]))
    workers = PodSetRequest("workers", draw(st.integers(1, 10)), {"cpu": 500}, topology)
    leader = PodSetRequest("leader", 1, {"cpu": leader_cpu}, topology)
    return [leader, workers] if draw(st.booleans()) else [workers, leader]


def placed_pods(podset: PodSetRequest) -> int:
    """All pods get a domain, except a remainder that does not make a whole (outermost) slice."""
    layers = podset.topology.slice_layers
    return podset.count - podset.count % layers[0].size if layers else podset.count


def path_of(node: Node, levels: Sequence[str]) -> tuple[str, ...]:
    return tuple(node.labels[level] for level in levels)


def counts_of(node: Node) -> bool:
    return node.ready and not node.unschedulable


def place_all(
    cluster: Cluster, options: SolverOptions, workloads: list[list[PodSetRequest]]
) -> list[WorkloadPlacement]:
    snapshot = TopologySnapshot(cluster.levels, cluster.nodes, options=options)
    results = []
    for podsets_of_workload in workloads:
        placement = snapshot.find_assignments(podsets_of_workload)
        results.append(placement)
        if placement.admitted:
            requests = {ps.name: ps.requests for ps in podsets_of_workload}
            for placed in placement.podsets:
                snapshot.add_usage(placed.assignment, requests[placed.name])
    return results


def pods_per_host(placement: WorkloadPlacement, name: str) -> dict[str, int]:
    [placed] = [p for p in placement.podsets if p.name == name]
    assert placed.assignment.levels == (HOSTNAME_LEVEL,)
    counts: dict[str, int] = defaultdict(int)
    for domain in placed.assignment.domains:
        assert len(domain.values) == 1
        counts[domain.values[0]] += domain.count
    return counts


@PROPERTY
@given(scenarios())
def test_no_node_goes_over_its_allocatable(scenario) -> None:
    cluster, options, workloads = scenario
    used = {node.name: dict(node.usage) for node in cluster.nodes}
    for podsets_of_workload, placement in zip(
        workloads, place_all(cluster, options, workloads), strict=True
    ):
        if not placement.admitted:
            continue
        for podset in podsets_of_workload:
            for host, count in pods_per_host(placement, podset.name).items():
                per_pod = {**podset.requests, PODS: 1000}
                for resource, amount in per_pod.items():
                    used[host][resource] = used[host].get(resource, 0) + amount * count
    for node in cluster.nodes:
        allocatable = {PODS: DEFAULT_PODS, **node.allocatable}
        for resource in (*RESOURCES, PODS):
            assert used[node.name].get(resource, 0) <= allocatable.get(resource, 0), (
                node.name,
                resource,
            )


@PROPERTY
@given(scenarios())
def test_placements_are_whole_well_formed_and_on_eligible_nodes(scenario) -> None:
    cluster, options, workloads = scenario
    nodes = cluster.by_name
    for podsets_of_workload, placement in zip(
        workloads, place_all(cluster, options, workloads), strict=True
    ):
        if not placement.admitted:
            assert placement.failure
            assert placement.podsets == ()
            continue
        assert [p.name for p in placement.podsets] == [ps.name for ps in podsets_of_workload]
        for podset, placed in zip(podsets_of_workload, placement.podsets, strict=True):
            assert placed.count == podset.count
            domains = placed.assignment.domains
            assert sum(domain.count for domain in domains) == placed_pods(podset)
            assert all(domain.count > 0 for domain in domains)
            # Kueue's order: by the full path of each host, even though only the hostname shows.
            paths = [path_of(nodes[d.values[0]], cluster.levels) for d in domains]
            assert paths == sorted(paths)
            for domain in domains:
                assert counts_of(nodes[domain.values[0]])


@PROPERTY
@given(scenarios())
def test_required_level_and_slices_are_respected(scenario) -> None:
    cluster, options, workloads = scenario
    nodes = cluster.by_name
    levels = cluster.levels

    def domain_of(host: str, level: str) -> tuple[str, ...]:
        # The domain of `level` that holds `host`: its path from the top down to that level.
        return tuple(nodes[host].labels[key] for key in levels[: levels.index(level) + 1])

    for podsets_of_workload, placement in zip(
        workloads, place_all(cluster, options, workloads), strict=True
    ):
        if not placement.admitted:
            continue
        group_hosts: set[str] = set()
        for podset in podsets_of_workload:
            hosts = pods_per_host(placement, podset.name)
            request = podset.topology
            if request.required is not None:
                assert len({domain_of(host, request.required) for host in hosts}) == 1
                if request.group_name is not None:
                    group_hosts.update(hosts)
            for layer in request.slice_layers:
                per_domain: dict[tuple[str, ...], int] = defaultdict(int)
                for host, count in hosts.items():
                    per_domain[domain_of(host, layer.level)] += count
                assert all(count % layer.size == 0 for count in per_domain.values()), (
                    layer,
                    dict(per_domain),
                )
        # A leader and its workers share one domain of the required level.
        if group_hosts:
            [required] = {ps.topology.required for ps in podsets_of_workload}
            assert len({domain_of(host, required) for host in group_hosts}) == 1


@PROPERTY
@given(scenarios())
def test_same_input_same_output_and_finding_does_not_mutate(scenario) -> None:
    cluster, options, workloads = scenario
    assert place_all(cluster, options, workloads) == place_all(cluster, options, workloads)

    snapshot = TopologySnapshot(cluster.levels, cluster.nodes, options=options)
    first = [snapshot.find_assignments(podsets_of_workload) for podsets_of_workload in workloads]
    again = [snapshot.find_assignments(podsets_of_workload) for podsets_of_workload in workloads]
    assert first == again


@PROPERTY
@given(cluster=clusters(), cpu=st.sampled_from([0, 500, 1000, 3000]))
def test_one_pod_is_admitted_exactly_when_some_node_has_room(cluster: Cluster, cpu: int) -> None:
    podset = PodSetRequest(name="one", count=1, requests={"cpu": cpu})
    placement = TopologySnapshot(cluster.levels, cluster.nodes).find_assignments([podset])

    def has_room(node: Node) -> bool:
        free_cpu = node.allocatable.get("cpu", 0) - node.usage.get("cpu", 0)
        free_pods = node.allocatable.get(PODS, DEFAULT_PODS) - node.usage.get(PODS, 0)
        return counts_of(node) and free_cpu >= cpu and free_pods >= 1000

    assert placement.admitted == any(has_room(node) for node in cluster.nodes)


@PROPERTY
@given(scenarios())
def test_departures_give_the_capacity_back(scenario) -> None:
    cluster, options, workloads = scenario
    snapshot = TopologySnapshot(cluster.levels, cluster.nodes, options=options)
    before = [snapshot.find_assignments(podsets_of_workload) for podsets_of_workload in workloads]
    for podsets_of_workload in workloads:
        placement = snapshot.find_assignments(podsets_of_workload)
        if placement.admitted:
            requests = {ps.name: ps.requests for ps in podsets_of_workload}
            for placed in placement.podsets:
                snapshot.add_usage(placed.assignment, requests[placed.name])
                snapshot.add_usage(placed.assignment, requests[placed.name], sign=-1)
    after = [snapshot.find_assignments(podsets_of_workload) for podsets_of_workload in workloads]
    assert before == after
