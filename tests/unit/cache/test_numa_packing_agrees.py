"""The operator and the offline commands pin an admitted workload's pods to the same NUMA zones.

The operator's cache (ClusterState.numa_plans, which the ungater writes on the pods) and
TopologySnapshot.numa_zones (what `tas solve` and `tas simulate` report) must agree for any
zones and any admitted pods, a leader/workers group listed in either order included.
"""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tas.cache import projections as proj
from tas.solver import Node, PodSetPlacement, TopologySnapshot, WorkloadPlacement
from tas.solver.types import HOSTNAME_LEVEL
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


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(admitted_pods())
def test_the_operator_and_the_offline_commands_pin_pods_to_the_same_zones(example) -> None:
    obj, zone_cpus, scope = example
    report = nrt(HOST_NAME, *zone_cpus, scope=scope)
    state = make_state([node(HOST_NAME, "b1", "r1", cpu=str(sum(zone_cpus)))])
    state.upsert_cluster_queue(proj.cluster_queue_from_object(cluster_queue(cpu="1000")))
    state.upsert_numa_report(HOST_NAME, proj.numa_from_object(report))
    info = admit(state, copy.deepcopy(obj))
    assume(not isinstance(info, str))  # refused: nothing to pin
    charge = state._charges[info.key]

    operator = {name: zones for (_, name), zones in state.numa_plans(HOST_NAME).items()}

    snapshot = TopologySnapshot(
        [HOSTNAME_LEVEL],
        [
            Node(
                name=HOST_NAME,
                labels={HOSTNAME_LEVEL: HOST_NAME},
                allocatable={"cpu": 1000 * sum(zone_cpus)},
                numa=proj.numa_from_object(report),
            )
        ],
    )
    snapshot.build()  # as find_assignments would have
    placement = WorkloadPlacement(
        podsets=tuple(PodSetPlacement(ps.name, ps.count, ps.assignment) for ps in charge.pod_sets)
    )
    offline = {
        name: list(by_host[HOST_NAME])
        for name, by_host in (
            (p.name, p.numa_zones) for p in snapshot.numa_zones(info.pod_sets, placement).podsets
        )
        if HOST_NAME in by_host
    }
    assert operator == offline
    assert operator, "an admitted pod set on a NUMA node has zones planned"
