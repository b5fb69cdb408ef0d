"""The NUMA zone annotation counts only on pods our ungater pinned (gate TASNUMAZones).

Anyone may write `kueue.x-k8s.io/numa-zone` on a pod. The cache charges a zone for a pod only
when the pod is ours by our records (a charge of an admitted Workload covers it: its owner is
the Workload's, and the assignment has its slot on that node) and bound there. A pod of an
admitted Workload that the ungater pinned and that is still on its way keeps its zone through
its Workload; any other annotated pod, bound or not, counts for nothing in the zones (a bound
one counts in its node's totals, like every pod).
"""

from __future__ import annotations

import pytest

from tas.cache import projections as proj
from tests.unit.admission.fixtures import HOST
from tests.unit.cache.test_numa_zones import (
    ZONE,
    admit,
    guaranteed_workload,
    numa_state,
    pinned_pod,
    zone_free,
)


def annotated_pod(
    name: str,
    zone: str,
    *,
    namespace: str = "other",
    node_name: str | None = None,
    selector_host: str | None = "h0",
    workload_name: str | None = None,
    owner_uid: str | None = None,
) -> proj.PodInfo:
    """A Guaranteed pod of 3 CPUs that names a zone, written by whoever made the pod."""
    annotations = {ZONE: zone}
    if workload_name:
        annotations["kueue.x-k8s.io/workload"] = workload_name
    meta: dict = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{name}",
        "labels": {"kueue.x-k8s.io/podset": "main"},
        "annotations": annotations,
    }
    if owner_uid:
        meta["ownerReferences"] = [
            {"kind": "Job", "name": "x", "uid": owner_uid, "controller": True}
        ]
    spec: dict = {
        "containers": [{"name": "c", "resources": {"limits": {"cpu": "3", "memory": "1Gi"}}}]
    }
    if selector_host:
        spec["nodeSelector"] = {HOST: selector_host}
    if node_name:
        spec["nodeName"] = node_name
    phase = "Running" if node_name else "Pending"
    return proj.pod_from_object({"metadata": meta, "spec": spec, "status": {"phase": phase}})


def test_pending_pods_of_another_namespace_naming_zones_take_nothing() -> None:
    """The issue's case: four Pending pods elsewhere, pinned only by a hostname nodeSelector,
    name both zones of the node; a Guaranteed workload that fits still fits."""
    state = numa_state(hosts=1)
    for i in range(4):
        state.upsert_pod(annotated_pod(f"squat-{i}", f"node-{i % 2}"))
    assert zone_free(state, "h0") == [4000, 4000]
    info = admit(state, guaranteed_workload("a", pods=2, required=HOST))
    assert not isinstance(info, str), info


@pytest.mark.parametrize(
    "pod",
    [
        pytest.param(annotated_pod("bound", "node-1", node_name="h0"), id="bound elsewhere"),
        pytest.param(
            annotated_pod("claims-a", "node-1", namespace="ns", node_name="h0", workload_name="a"),
            id="claims our workload without its owner",
        ),
        pytest.param(
            annotated_pod(
                "claims-a", "node-1", namespace="ns", node_name="h0",
                workload_name="a", owner_uid="job-someone-else",
            ),
            id="claims our workload with another owner",
        ),
    ],
)  # fmt: skip
def test_a_zone_annotation_on_a_pod_that_is_not_ours_is_not_charged(pod) -> None:
    state = numa_state(hosts=1)
    info = admit(state, guaranteed_workload("a", pods=1, required=HOST))
    assert not isinstance(info, str), info
    before = zone_free(state, "h0")
    state.upsert_pod(pod)
    assert zone_free(state, "h0") == before


def test_our_pod_on_its_way_keeps_the_zone_it_was_given() -> None:
    """Ungated onto h0 with the zone node-1, not bound yet: its workload keeps node-1 for it
    (the plan alone would have packed it into node-0), and nothing is left to plan."""
    state = numa_state(hosts=1)
    info = admit(state, guaranteed_workload("a", pods=1, required=HOST))
    assert not isinstance(info, str), info
    assert zone_free(state, "h0") == [1000, 4000]
    on_its_way = pinned_pod("a-0", "a", "h0", "node-1", phase="Pending")
    on_its_way = proj.PodInfo(**{**on_its_way.__dict__, "node_name": None})
    state.upsert_pod(on_its_way)
    assert zone_free(state, "h0") == [4000, 1000]
    assert state.numa_plans("h0") == {}

    # Bound: now charged as pinned, in the same zone.
    state.upsert_pod(pinned_pod("a-0", "a", "h0", "node-1", phase="Pending"))
    assert zone_free(state, "h0") == [4000, 1000]
    assert state.numa.zoned == {"h0": {("ns", "a-0")}}


def test_a_pod_beyond_its_workloads_slots_is_not_charged_a_zone() -> None:
    """The Job made a second pod the assignment has no slot for: only the covered one pins."""
    state = numa_state(hosts=1)
    info = admit(state, guaranteed_workload("a", pods=1, required=HOST))
    assert not isinstance(info, str), info
    state.upsert_pod(pinned_pod("a-0", "a", "h0", "node-0"))
    state.upsert_pod(pinned_pod("a-1", "a", "h0", "node-1"))
    assert state.numa.zoned == {"h0": {("ns", "a-0")}}
    assert zone_free(state, "h0") == [1000, 4000]


def test_a_pod_whose_workload_no_longer_holds_quota_is_no_longer_charged_a_zone() -> None:
    state = numa_state(hosts=1)
    info = admit(state, guaranteed_workload("a", pods=1, required=HOST))
    assert not isinstance(info, str), info
    state.upsert_pod(pinned_pod("a-0", "a", "h0", "node-1"))
    state.delete_workload("ns", "a")  # its charge goes: the pod is no longer ours to pin
    assert state.numa.zoned == {}
    assert zone_free(state, "h0") == [4000, 4000]
