"""The operator and the offline commands pin an admitted workload's pods to the same NUMA zones.

The operator's cache (ClusterState.numa_plans, which the ungater writes on the pods) and
TopologySnapshot.numa_zones (what `tas solve` and `tas simulate` report) must agree for any
zones and any admitted pods: a leader/workers group listed in either order, and workloads whose
names sort otherwise than they were admitted.
"""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tas.cache import projections as proj
from tas.cache.state import Charge
from tas.solver import Node, PodSetPlacement, TopologySnapshot, WorkloadPlacement, numa
from tas.solver.types import HOSTNAME_LEVEL, NodeNuma
from tests.unit.admission.fixtures import RACK, cluster_queue, make_state, node, workload
from tests.unit.cache.test_numa_zones import admit, nrt

HOST_NAME = "h0"


def pod_set(name: str, count: int, cpus: list[int], group: str | None) -> dict:
    request = {"required": RACK, **({"podSetGroupName": group} if group else {})}
    containers = [
        {"name": f"c{i}", "resources": {"limits": {"cpu": str(cpu), "memory": "1Gi"}}}
        for i, cpu in enumerate(cpus)
    ]
    return {
        "name": name,
        "count": count,
        "template": {"spec": {"containers": containers}},
        "topologyRequest": request,
    }


@st.composite
def admitted_pods(draw: st.DrawFn) -> tuple[dict, list[int], str]:
    """A workload of one pod set, or of a leader and its workers in either order; the zones'
    CPUs; the kubelet's scope."""
    containers = st.lists(st.integers(1, 4), min_size=1, max_size=2)
    if draw(st.booleans()):
        podsets = [pod_set("main", draw(st.integers(1, 6)), draw(containers), None)]
    else:
        leader = pod_set("leader", 1, draw(containers), "g")
        workers = pod_set("workers", draw(st.integers(1, 6)), draw(containers), "g")
        podsets = [leader, workers] if draw(st.booleans()) else [workers, leader]
    obj = workload("w", pods=1)
    obj["spec"]["podSets"] = podsets
    zones = draw(st.lists(st.integers(1, 12), min_size=1, max_size=4))
    return obj, zones, draw(st.sampled_from(["container", "pod"]))


def offline_zones(zones: NodeNuma, info: proj.WorkloadInfo, charge: Charge):
    """What `tas solve`/`tas simulate` pin the workload's pods to on the host, and the zones
    left after them (scenario.hold takes them so)."""
    snapshot = TopologySnapshot(
        [HOSTNAME_LEVEL],
        [Node(HOST_NAME, {HOSTNAME_LEVEL: HOST_NAME}, {"cpu": 10**9}, numa=zones)],
    )
    snapshot.build()  # as find_assignments would have
    placement = WorkloadPlacement(
        podsets=tuple(PodSetPlacement(ps.name, ps.count, ps.assignment) for ps in charge.pod_sets)
    )
    shapes = {ps.name: ps.numa for ps in info.pod_sets}
    pinned = {}
    for placed in snapshot.numa_zones(info.pod_sets, placement).podsets:
        if HOST_NAME in placed.numa_zones:
            pods = placed.numa_zones[HOST_NAME]
            pinned[(info.name, placed.name)] = list(pods)
            zones = numa.taken(zones, shapes[placed.name], pods)
    return pinned, zones


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(admitted_pods(), st.lists(admitted_pods(), max_size=1), st.booleans())
def test_the_operator_and_the_offline_commands_pin_pods_to_the_same_zones(
    example, others, later_name_first
) -> None:
    """One workload, or two admitted one after the other (the later one's name sorting first
    or not): the operator packs the pods not pinned yet in admission order, as the offline
    commands take the zones."""
    obj, zone_cpus, scope = example
    objs = [obj, *(other for other, _, _ in others)]
    names = ["b", "a"] if later_name_first else ["a", "b"]
    for workload_obj, name in zip(objs, names, strict=False):
        workload_obj["metadata"].update(name=name, uid=f"uid-{name}")
    report = nrt(HOST_NAME, *zone_cpus, scope=scope)
    state = make_state([node(HOST_NAME, "b1", "r1", cpu=str(sum(zone_cpus)))])
    state.upsert_cluster_queue(proj.cluster_queue_from_object(cluster_queue(cpu="1000")))
    state.upsert_numa_report(HOST_NAME, proj.numa_from_object(report))
    zones = proj.numa_from_object(report)
    offline: dict[tuple[str, str], list[tuple[str, ...]]] = {}
    for workload_obj in objs:
        info = admit(state, copy.deepcopy(workload_obj))
        assume(not isinstance(info, str))  # refused: nothing to pin
        pinned, zones = offline_zones(zones, info, state._charges[info.key])
        offline.update(pinned)

    operator = {(key[1], name): pods for (key, name), pods in state.numa_plans(HOST_NAME).items()}

    assert operator == offline
    assert operator, "an admitted pod set on a NUMA node has zones planned"
