"""Properties of placements with TASPartialSlices (and TASGroupedPodSetSlicing) on, over random
topologies and pod counts that often leave a partial last slice:

- every slice, the partial one included, lies in one domain of the slice level, read in the
  order the ungater hands out pods (the published order);
- every pod gets a domain, and no node is over-committed;
- the vectorized path gives exactly the plain path's answers (replacements included);
- a count that is a whole number of slices is placed as with the gate off.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tas.solver import vectorized
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
from tests.unit.solver_properties.test_invariants import (
    DEFAULT_PODS,
    RESOURCES,
    Cluster,
    clusters,
)
from tests.unit.solver_properties.test_vectorized_matches_plain import replay, topologies

PROPERTY = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def sliced_podset(draw: st.DrawFn, levels: Sequence[str], name: str) -> PodSetRequest:
    """One slice layer at or below the requested level; any count of at least one slice."""
    mode = draw(st.sampled_from(["required", "preferred", "unconstrained", "slice-only"]))
    mode_index = draw(st.integers(0, len(levels) - 1))
    low = mode_index if mode in ("required", "preferred") else 0
    size = draw(st.integers(2, 4))
    count = draw(st.integers(size, 4 * size + size - 1))
    topology = TopologyRequest(
        required=levels[mode_index] if mode == "required" else None,
        preferred=levels[mode_index] if mode == "preferred" else None,
        unconstrained=mode == "unconstrained",
        slice_layers=(SliceLayer(levels[draw(st.integers(low, len(levels) - 1))], size),),
    )
    cpu = draw(st.sampled_from([250, 500, 1000, 2000]))
    return PodSetRequest(name, count, {"cpu": cpu}, topology)


@st.composite
def sliced_workload(draw: st.DrawFn, levels: Sequence[str]) -> list[PodSetRequest]:
    """A sliced pod set alone, or as the workers of a leader (a grouped pod set)."""
    workers = draw(sliced_podset(levels, "workers"))
    if draw(st.booleans()) or not (workers.topology.required or workers.topology.preferred):
        return [workers]
    topology = replace(workers.topology, unconstrained=False, group_name="group")
    leader = PodSetRequest(
        "leader",
        1,
        {"cpu": draw(st.sampled_from([0, 500, 2000]))},
        replace(topology, slice_layers=()),
    )
    return [leader, replace(workers, topology=topology)]


def options_of(draw: st.DrawFn) -> SolverOptions:
    return SolverOptions(
        profile_mixed=draw(st.booleans()),
        balanced_placement=draw(st.booleans()),
        partial_slices=True,
        grouped_pod_set_slicing=True,
    )


@st.composite
def cluster_runs(draw: st.DrawFn) -> tuple[Cluster, SolverOptions, list[list[PodSetRequest]]]:
    cluster = draw(clusters())
    workloads = draw(st.lists(sliced_workload(cluster.levels), min_size=1, max_size=4))
    return cluster, options_of(draw), workloads


def place_all(cluster: Cluster, options: SolverOptions, workloads) -> list[WorkloadPlacement]:
    snapshot = TopologySnapshot(cluster.levels, cluster.nodes, options=options)
    results = []
    for podsets in workloads:
        placement = snapshot.find_assignments(podsets)
        results.append(placement)
        if placement.admitted:
            requests = {ps.name: ps.requests for ps in podsets}
            for placed in placement.podsets:
                snapshot.add_usage(placed.assignment, requests[placed.name])
    return results


def hosts_in_rank_order(placement: WorkloadPlacement, name: str) -> list[str]:
    """The host of every pod, in the order the ungater hands out ranks: the published one."""
    [placed] = [p for p in placement.podsets if p.name == name]
    assert placed.assignment.levels == (HOSTNAME_LEVEL,)
    return [d.values[0] for d in placed.assignment.domains for _ in range(d.count)]


@PROPERTY
@given(cluster_runs())
def test_every_slice_and_the_partial_one_lie_in_one_domain(run) -> None:
    cluster, options, workloads = run
    nodes = cluster.by_name
    admitted = 0
    for podsets, placement in zip(workloads, place_all(cluster, options, workloads), strict=True):
        if not placement.admitted:
            continue
        admitted += 1
        for podset in podsets:
            ranks = hosts_in_rank_order(placement, podset.name)
            assert len(ranks) == podset.count
            for layer in podset.topology.slice_layers:
                depth = cluster.levels.index(layer.level) + 1

                def domain_of(host: str, depth: int = depth) -> tuple[str, ...]:
                    return tuple(nodes[host].labels[key] for key in cluster.levels[:depth])

                for start in range(0, len(ranks), layer.size):
                    chunk = ranks[start : start + layer.size]
                    assert len({domain_of(h) for h in chunk}) == 1, (layer, start, ranks)


@PROPERTY
@given(cluster_runs())
def test_no_node_is_over_committed(run) -> None:
    cluster, options, workloads = run
    used = {node.name: dict(node.usage) for node in cluster.nodes}
    for podsets, placement in zip(workloads, place_all(cluster, options, workloads), strict=True):
        if not placement.admitted:
            continue
        for podset in podsets:
            per_pod = {**podset.requests, PODS: 1000}
            for host in hosts_in_rank_order(placement, podset.name):
                for resource, amount in per_pod.items():
                    used[host][resource] = used[host].get(resource, 0) + amount
    for node in cluster.nodes:
        allocatable = {PODS: DEFAULT_PODS, **node.allocatable}
        for resource in (*RESOURCES, PODS):
            assert used[node.name].get(resource, 0) <= allocatable.get(resource, 0)


@PROPERTY
@given(cluster_runs())
def test_whole_slices_place_as_with_the_gate_off(run) -> None:
    cluster, options, workloads = run
    whole = [
        [
            replace(ps, count=ps.count - ps.count % ps.topology.slice_layers[0].size)
            if ps.topology.slice_layers
            else ps
            for ps in podsets
        ]
        for podsets in workloads
    ]
    off = replace(options, partial_slices=False)
    assert place_all(cluster, options, whole) == place_all(cluster, off, whole)


@st.composite
def replay_runs(draw: st.DrawFn):
    levels, nodes = draw(topologies())
    workloads = draw(st.lists(sliced_workload(levels), min_size=1, max_size=6))
    departures = draw(st.lists(st.booleans(), min_size=len(workloads), max_size=len(workloads)))
    return levels, nodes, options_of(draw), workloads, departures


@PROPERTY
@given(replay_runs())
def test_vectorized_and_plain_paths_agree_with_partial_slices(run) -> None:
    assert replay(*run, reference=False) == replay(*run, reference=True)


def test_the_vectorized_path_rolls_up_the_tails(monkeypatch) -> None:
    """Without this the property above would also hold with both snapshots on the plain path."""
    calls: list[bool] = []
    original = vectorized._roll_up_tails

    def spy(*args, **kwargs):
        calls.append(True)
        return original(*args, **kwargs)

    monkeypatch.setattr(vectorized, "_roll_up_tails", spy)
    nodes = [
        Node(f"x{i}", {"rack": f"r{i // 2}", HOSTNAME_LEVEL: f"x{i}"}, {"cpu": 4000})
        for i in range(4)
    ]
    request = [
        PodSetRequest(
            "main", 7, {"cpu": 1000}, TopologyRequest(slice_layers=(SliceLayer("rack", 4),))
        )
    ]
    options = SolverOptions(partial_slices=True)
    levels = ("rack", HOSTNAME_LEVEL)
    fast = TopologySnapshot(levels, nodes, options=options).find_assignments(request)
    assert calls == [True]
    plain = TopologySnapshot(levels, nodes, options=options, reference=True)
    assert plain.find_assignments(request) == fast and fast.admitted
    assert calls == [True]
