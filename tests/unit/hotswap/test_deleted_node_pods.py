"""Pods bound to a deleted node: failed as disrupted and removed at once, as the pod garbage
collector would after its quarantine, once the API server (not the cache) says the node is
gone; only pods an owner replaces; never when the gate is off."""

from __future__ import annotations

import asyncio

from tas.cache import projections as proj
from tas.hotswap.controller import NodeHealthController
from tas.kube import KubeError
from tests.unit.admission.fixtures import node
from tests.unit.hotswap.harness import Cluster, pod_set

JOB_UID = "job-uid"


class RecordingKube:
    """Answers reads of nodes from `nodes`; records the writes."""

    def __init__(
        self,
        nodes: set[str] = frozenset(),
        missing_pods: set[str] = frozenset(),
        replaced_pods: set[str] = frozenset(),
        refuse_reads: bool = False,
    ):
        self.nodes = set(nodes)
        self.missing_pods = set(missing_pods)  # pods whose status patch answers 404
        self.replaced_pods = set(replaced_pods)  # another pod of the name: 422 on the UID
        self.refuse_reads = refuse_reads  # e.g. no `get` on nodes in a hand-made ClusterRole
        self.calls: list[tuple] = []

    async def get(self, path):
        self.calls.append(("get", path))
        if self.refuse_reads:
            raise KubeError(403, "nodes is forbidden")
        return {"metadata": {}} if path.rsplit("/", 1)[-1] in self.nodes else None

    async def patch(self, path, body, content_type=None):
        name = path.split("/")[-2]
        if name in self.missing_pods:
            raise KubeError(404, "not found")
        if name in self.replaced_pods:
            raise KubeError(422, 'metadata.uid: Invalid value: "uid-a": field is immutable')
        status, uid = body["status"], body.get("metadata", {}).get("uid")
        self.calls.append(("patch", path, status["phase"], status["conditions"][0]["type"], uid))
        return {}

    async def delete(self, path, *, grace_seconds=None, uid=None):
        self.calls.append(("delete", path, grace_seconds, uid))
        return True

    async def event(self, ref, type_, reason, message):
        self.calls.append(("event", ref.name, reason))

    def writes(self) -> list[tuple]:
        return [c for c in self.calls if c[0] != "get"]


def pod_of(call: tuple) -> str:
    """The pod a recorded write is about."""
    return call[1] if call[0] == "event" else call[1].split("/pods/")[1].split("/")[0]


def pod(name: str, node_name: str | None, *, phase="Running", owner=JOB_UID, **more):
    return proj.pod_from_object(raw(name, node_name, phase=phase, owner=owner, **more))


def raw(
    name: str,
    node_name: str | None,
    *,
    phase="Running",
    owner=JOB_UID,
    deleting=False,
    workload="w",
):
    meta: dict = {
        "name": name,
        "namespace": "ns",
        "uid": f"uid-{name}",
        "annotations": {"kueue.x-k8s.io/workload": workload},
        "labels": {"kueue.x-k8s.io/podset": "main"},
    }
    if owner:
        meta["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": owner, "controller": True}
        ]
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def cluster_with(pods) -> Cluster:
    cluster = Cluster([node(f"h{i}", "b1", "r1", cpu="4") for i in (1, 2, 3)])
    cluster.admitted("w", [pod_set("main", {"h1": 2, "h2": 2})])
    for p in pods:
        cluster.state.upsert_pod(p)
    return cluster


def sync(cluster: Cluster, kube: RecordingKube, name: str, *, gate: bool = True) -> None:
    controller = NodeHealthController(
        cluster.state, kube, cluster, remove_pods_on_deleted_nodes=gate
    )
    asyncio.run(controller.sync(name))


def delete_h1(cluster: Cluster) -> None:
    cluster.state.delete_node("h1")
    cluster.nodes.pop("h1")


def test_running_pods_on_a_deleted_node_are_failed_then_removed_with_their_uid():
    cluster = cluster_with([pod("a", "h1"), pod("b", "h1"), pod("c", "h2")])
    delete_h1(cluster)
    kube = RecordingKube(nodes={"h2", "h3"})
    sync(cluster, kube, "h1")
    assert ("get", "/api/v1/nodes/h1") in kube.calls
    pods = "/api/v1/namespaces/ns/pods"
    for name in ("a", "b"):  # each in this order; c, on a node still there, untouched
        assert [c for c in kube.writes() if pod_of(c) == name] == [
            ("patch", f"{pods}/{name}/status", "Failed", "DisruptionTarget", f"uid-{name}"),
            ("delete", f"{pods}/{name}", 0, f"uid-{name}"),
            ("event", name, "NodeDeleted"),
        ]
    assert len(kube.writes()) == 6
    assert "h1" in cluster.workload("w").unhealthy_nodes  # and the replacement is sought


def test_nothing_is_removed_while_the_api_server_still_has_the_node():
    """The cache may be behind (the node deleted and made again): the read decides."""
    cluster = cluster_with([pod("a", "h1")])
    delete_h1(cluster)
    kube = RecordingKube(nodes={"h1"})
    sync(cluster, kube, "h1")
    assert not [c for c in kube.writes() if c[0] in ("patch", "delete")]


def test_a_pending_pod_is_only_failed_as_stranded_and_the_node_read_once():
    cluster = cluster_with([pod("waits", "h1", phase="Pending"), pod("runs", "h1")])
    cluster.admitted("w2", [pod_set("main", {"h1": 1, "h3": 1})])
    cluster.state.upsert_pod(pod("other", "h1", workload="w2"))
    delete_h1(cluster)
    kube = RecordingKube()
    sync(cluster, kube, "h1")
    deleted = sorted(pod_of(c) for c in kube.calls if c[0] == "delete")
    assert deleted == ["other", "runs"]  # both workloads' running pods; the pending one stays
    assert [c for c in kube.calls if c[0] == "get"] == [("get", "/api/v1/nodes/h1")]


def test_a_stranded_pending_pod_is_failed_by_its_uid_and_announced_only_when_failed():
    cluster = cluster_with(
        [pod("waits", "h1", phase="Pending"), pod("again", "h1", phase="Pending")]
    )
    delete_h1(cluster)
    kube = RecordingKube(replaced_pods={"again"})  # re-made under its name since the cache saw it
    sync(cluster, kube, "h1")
    patches = [(pod_of(c), *c[2:]) for c in kube.calls if c[0] == "patch"]
    assert patches == [("waits", "Failed", "TerminatedByKueue", "uid-waits")]
    assert [pod_of(c) for c in kube.calls if c[0] == "event"] == ["waits"]


def test_a_single_pods_workload_keeps_its_pod():
    cluster = Cluster([node(f"h{i}", "b1", "r1", cpu="4") for i in (1, 2, 3)])
    owner = {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "p-uid", "controller": True}
    cluster.admitted("w", [pod_set("main", {"h1": 1})], owners=[owner])
    cluster.state.upsert_pod(pod("p", "h1", owner="rs-uid"))  # a Deployment's pod
    delete_h1(cluster)
    kube = RecordingKube()
    sync(cluster, kube, "h1")
    assert kube.calls == []


def test_a_new_pod_of_the_same_name_is_not_touched():
    cluster = cluster_with([pod("a", "h1"), pod("b", "h1")])
    delete_h1(cluster)
    kube = RecordingKube(replaced_pods={"a"})
    sync(cluster, kube, "h1")
    assert sorted(pod_of(c) for c in kube.calls if c[0] in ("delete", "event")) == ["b", "b"]


def test_a_refused_read_leaves_the_pods_to_the_collector_and_hot_swap_goes_on():
    cluster = cluster_with([pod("a", "h1")])
    delete_h1(cluster)
    kube = RecordingKube(refuse_reads=True)
    sync(cluster, kube, "h1")  # no exception: the worker is not stopped
    assert not [c for c in kube.calls if c[0] in ("patch", "delete")]
    assert "h1" in cluster.workload("w").unhealthy_nodes


def test_pods_no_owner_replaces_and_pods_already_deleting_are_left_alone():
    cluster = cluster_with([pod("lone", "h1", owner=None), pod("going", "h1", deleting=True)])
    delete_h1(cluster)
    kube = RecordingKube()
    sync(cluster, kube, "h1")
    assert kube.calls == []  # not even the read: nothing to remove


def test_a_pod_gone_before_its_status_write_is_not_deleted():
    cluster = cluster_with([pod("a", "h1"), pod("b", "h1")])
    delete_h1(cluster)
    kube = RecordingKube(missing_pods={"a"})
    sync(cluster, kube, "h1")
    assert [c[:2] for c in kube.writes() if c[0] == "delete"] == [
        ("delete", "/api/v1/namespaces/ns/pods/b")
    ]


def test_a_not_ready_node_keeps_its_pods():
    cluster = cluster_with([pod("a", "h1")])
    cluster.set_ready("h1", False)
    kube = RecordingKube(nodes={"h1", "h2", "h3"})
    sync(cluster, kube, "h1")
    assert not [c for c in kube.writes() if c[0] == "delete"]


def test_with_the_gate_off_the_pod_garbage_collector_is_left_to_do_it():
    cluster = cluster_with([pod("a", "h1")])
    delete_h1(cluster)
    kube = RecordingKube()
    sync(cluster, kube, "h1", gate=False)
    assert kube.calls == []
