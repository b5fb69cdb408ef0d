"""The ungater against the cache: pods are never sent to a node the cache sees not ready, even
before hot swap's unhealthyNodes comes back through the watch; pods pinned to a domain the
assignment lost are failed so that their owner makes new ones."""

from __future__ import annotations

import asyncio
import copy
import logging

import pytest

from tas.api.topologyassignment import v1beta1_to_v1beta2
from tas.cache import projections as proj
from tas.kube import KubeError
from tests.unit.admission.fixtures import make_state, node, workload

HOST = "kubernetes.io/hostname"


class FakeKube:
    def __init__(self) -> None:
        self.patches: list[tuple[str, dict]] = []
        self.deleted: list[str] = []
        self.deleted_uids: list[str | None] = []

    async def patch(self, path, body, content_type=None):
        if self.status_refusal is not None and path.endswith("/status"):
            raise self.status_refusal
        self.patches.append((path, body))
        return {}

    status_refusal: KubeError | None = None

    async def delete(self, path, *, uid=None):
        self.deleted.append(path)
        self.deleted_uids.append(uid)
        return self.delete_answer

    delete_answer = True  # False: gone already, or another pod of the name (409 on the UID)


def admitted(name: str, hosts: dict[str, int]) -> dict:
    obj = workload(name, pods=sum(hosts.values()))
    obj["metadata"]["resourceVersion"] = "10"
    obj["status"] = {
        "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": ""},
            {"type": "Admitted", "status": "True", "reason": "Admitted", "message": ""},
        ],
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [
                {
                    "name": "main",
                    "flavors": {"cpu": "tas"},
                    "count": sum(hosts.values()),
                    "topologyAssignment": v1beta1_to_v1beta2(
                        {
                            "levels": [HOST],
                            "domains": [{"values": [h], "count": c} for h, c in hosts.items()],
                        }
                    ),
                }
            ],
        },
    }
    return obj


def job_pod(
    name: str, index: int, *, gated=True, selector=None, phase="Pending", node_name=None
) -> dict:
    spec = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
        "nodeSelector": {HOST: selector} if selector else {},
    }
    if node_name:
        spec["nodeName"] = node_name
    if gated:
        spec["schedulingGates"] = [{"name": "kueue.x-k8s.io/topology"}]
    return {
        "metadata": {
            "name": f"{name}-{index}",
            "namespace": "ns",
            "uid": f"{name}-{index}",
            "annotations": {"kueue.x-k8s.io/workload": name},
            "labels": {
                "kueue.x-k8s.io/podset": "main",
                "batch.kubernetes.io/job-completion-index": str(index),
            },
        },
        "spec": spec,
        "status": {"phase": phase},
    }


def run(state, key, kube=None):
    from tas.ungater.worker import Ungater

    kube = kube or FakeKube()
    asyncio.run(Ungater(state, kube).sync(key))
    return kube.patches


def test_no_pod_goes_to_a_node_the_cache_sees_not_ready():
    nodes = [node("x1", "b1", "r1"), node("x2", "b1", "r1")]
    state = make_state(nodes)
    state.upsert_workload(proj.workload_from_object(admitted("w", {"x1": 1, "x2": 1})))
    for i in range(2):
        state.upsert_pod(proj.pod_from_object(job_pod("w", i)))
    down = copy.deepcopy(nodes[1])
    down["status"]["conditions"][0]["status"] = "False"  # not ready; unhealthyNodes not seen yet
    state.upsert_node(proj.node_from_object(down))
    patches = run(state, ("ns", "w"))
    assert [(p, b["spec"]["nodeSelector"]) for p, b in patches] == [
        ("/api/v1/namespaces/ns/pods/w-0", {HOST: "x1"})
    ]


def test_a_pod_pinned_to_a_replaced_node_is_failed_for_a_new_one():
    state = make_state([node("x1", "b1", "r1"), node("x2", "b1", "r1")])
    state.upsert_workload(proj.workload_from_object(admitted("w", {"x1": 1, "x2": 1})))
    state.upsert_pod(proj.pod_from_object(job_pod("w", 0, gated=False, selector="x1")))
    state.upsert_pod(proj.pod_from_object(job_pod("w", 1, gated=False, selector="x9")))
    patches = run(state, ("ns", "w"))
    assert [p for p, _ in patches] == ["/api/v1/namespaces/ns/pods/w-1/status"]
    [(_, body)] = patches
    assert body["status"]["phase"] == "Failed"
    assert body["status"]["conditions"][0]["type"] == "TerminatedByKueue"


def test_a_pod_bound_outside_the_assignment_before_it_runs_is_deleted():
    """Ungated onto x9 as hot swap replaced x9, and bound there when x9 came back: its node's
    kubelet owns its phase (kwok wrote Running over our Failed in the chaos run), so the pod
    is deleted, with the reason recorded first; a running pod outside is left alone."""
    state = make_state([node("x1", "b1", "r1"), node("x2", "b1", "r1"), node("x9", "b2", "r9")])
    state.upsert_workload(proj.workload_from_object(admitted("w", {"x1": 1, "x2": 1})))
    bound = job_pod("w", 0, gated=False, selector="x9", node_name="x9")
    running = job_pod("w", 1, gated=False, selector="x9", node_name="x9", phase="Running")
    for pod in (bound, running):
        state.upsert_pod(proj.pod_from_object(pod))
    kube = FakeKube()
    patches = run(state, ("ns", "w"), kube)
    assert kube.deleted == ["/api/v1/namespaces/ns/pods/w-0"]
    assert kube.deleted_uids == [
        bound["metadata"]["uid"]
    ]  # a pod made again under its name is not deleted
    [(path, body)] = [(p, b) for p, b in patches if p.endswith("/status")]
    assert path == "/api/v1/namespaces/ns/pods/w-0/status"
    assert body["metadata"] == {"uid": bound["metadata"]["uid"]}
    assert "phase" not in body["status"]
    assert body["status"]["conditions"][0]["type"] == "TerminatedByKueue"


def stray_bound_pod_state():
    state = make_state([node("x1", "b1", "r1"), node("x2", "b1", "r1"), node("x9", "b2", "r9")])
    state.upsert_workload(proj.workload_from_object(admitted("w", {"x1": 1, "x2": 1})))
    state.upsert_pod(
        proj.pod_from_object(job_pod("w", 0, gated=False, selector="x9", node_name="x9"))
    )
    return state


def test_a_stray_pod_made_again_under_its_name_is_neither_marked_nor_deleted(caplog):
    kube = FakeKube()
    kube.status_refusal = KubeError(422, 'Pod "w-0" is invalid: metadata.uid: field is immutable')
    with caplog.at_level(logging.INFO, logger="tas.ungater.worker"):
        run(stray_bound_pod_state(), ("ns", "w"), kube)
    assert kube.deleted == []
    assert "pinned outside" not in caplog.text


def test_another_invalid_status_is_raised_not_taken_for_a_new_pod():
    kube = FakeKube()
    kube.status_refusal = KubeError(422, 'Pod "w-0" is invalid: status.conditions: too many')
    with pytest.raises(KubeError):
        run(stray_bound_pod_state(), ("ns", "w"), kube)


def test_a_stray_pod_gone_before_its_delete_is_not_logged_as_deleted(caplog):
    kube = FakeKube()
    kube.delete_answer = False
    with caplog.at_level(logging.INFO, logger="tas.ungater.worker"):
        run(stray_bound_pod_state(), ("ns", "w"), kube)
    assert kube.deleted == ["/api/v1/namespaces/ns/pods/w-0"]
    assert "pinned outside" not in caplog.text


def guaranteed(obj: dict) -> dict:
    """A pod (or a Workload's template) whose container is Guaranteed with 3 whole CPUs."""
    spec = (
        obj["spec"]
        if "containers" in obj["spec"]
        else obj["spec"]["podSets"][0]["template"]["spec"]
    )
    spec["containers"][0]["resources"] = {"limits": {"cpu": "3", "memory": "1Gi"}}
    return obj


def nrt(name: str) -> dict:
    zones = [
        {"name": f"node-{i}", "type": "Node", "resources": [{"name": "cpu", "available": "4"}]}
        for i in range(2)
    ]
    attributes = [{"name": "topologyManagerPolicy", "value": "single-numa-node"}]
    return {"metadata": {"name": name}, "attributes": attributes, "zones": zones}


def test_pods_on_a_node_counted_by_zones_carry_their_zone():
    """TASNUMAZones: each pod gets the zone the cache counted it in, one per zone; a pod whose
    patch the watch has not shown yet keeps its zone, so the next pod gets the other."""
    state = make_state([node("x1", "b1", "r1", cpu="32")])
    state.upsert_numa_report("x1", proj.numa_from_object(nrt("x1")))
    state.upsert_workload(proj.workload_from_object(guaranteed(admitted("w", {"x1": 2}))))
    state.upsert_pod(proj.pod_from_object(guaranteed(job_pod("w", 0))))
    from tas.ungater.worker import Ungater

    kube = FakeKube()
    ungater = Ungater(state, kube)
    asyncio.run(ungater.sync(("ns", "w")))
    [(_, first)] = kube.patches
    assert first["metadata"]["annotations"] == {"kueue.x-k8s.io/numa-zone": "node-0"}
    state.upsert_pod(proj.pod_from_object(guaranteed(job_pod("w", 1))))
    asyncio.run(ungater.sync(("ns", "w")))  # w-0's patch not seen back yet
    [_, (_, second)] = kube.patches
    assert second["metadata"]["annotations"] == {"kueue.x-k8s.io/numa-zone": "node-1"}


def test_without_zones_the_patch_is_todays():
    state = make_state([node("x1", "b1", "r1", cpu="32")])
    state.upsert_workload(proj.workload_from_object(guaranteed(admitted("w", {"x1": 1}))))
    state.upsert_pod(proj.pod_from_object(guaranteed(job_pod("w", 0))))
    [(_, body)] = run(state, ("ns", "w"))
    assert "metadata" not in body
