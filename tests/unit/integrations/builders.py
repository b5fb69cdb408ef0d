"""Small builders for the integrations' objects, in the style of Kueue's testing wrappers."""

from __future__ import annotations

import copy

from tas.api.topologyassignment import v1beta1_to_v1beta2
from tas.cache import projections as proj
from tas.cache.state import ClusterState
from tas.kube import KubeError
from tas.solver.types import SolverOptions

QUEUE = "kueue.x-k8s.io/queue-name"
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
SLICE_TOPOLOGY = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
GROUP = "kueue.x-k8s.io/podset-group-name"
RACK = "cloud.com/rack"
BLOCK = "cloud.com/block"


def container(cpu: str = "1") -> dict:
    return {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}


def replicated_job(
    name: str,
    replicas: int = 1,
    parallelism: int = 1,
    completions: int | None = None,
    **annotations,
) -> dict:
    spec = {
        "parallelism": parallelism,
        "completions": parallelism if completions is None else completions,
        "template": {
            "metadata": {"annotations": dict(annotations)},
            "spec": {"containers": [container()], "restartPolicy": "Never"},
        },
    }
    return {"name": name, "replicas": replicas, "template": {"spec": spec}}


def jobset(*replicated_jobs: dict, name: str = "js", suspend: bool = True) -> dict:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": "js-uid",
            "resourceVersion": "5",
            "labels": {QUEUE: "q"},
        },
        "spec": {"suspend": suspend, "replicatedJobs": [copy.deepcopy(r) for r in replicated_jobs]},
    }


def admitted(
    workload: dict, assignments: dict[str, list[tuple[str, int]]], flavor: str = "tas"
) -> proj.WorkloadInfo:
    """The workload admitted: pod set -> [(host, count)] on hostname-level assignments."""
    pod_sets = []
    for ps in workload["spec"]["podSets"]:
        entry = {"name": ps["name"], "flavors": {"cpu": flavor}, "count": ps["count"]}
        if ps["name"] in assignments:
            entry["topologyAssignment"] = v1beta1_to_v1beta2(
                {
                    "levels": ["kubernetes.io/hostname"],
                    "domains": [{"values": [h], "count": c} for h, c in assignments[ps["name"]]],
                }
            )
        pod_sets.append(entry)
    obj = copy.deepcopy(workload)
    obj["metadata"].setdefault("resourceVersion", "1")
    obj["status"] = {
        "admission": {"clusterQueue": "cq", "podSetAssignments": pod_sets},
        "conditions": [
            {"type": "QuotaReserved", "status": "True"},
            {"type": "Admitted", "status": "True"},
        ],
    }
    return proj.workload_from_object(obj)


FLAVORS = {
    "tas": proj.flavor_from_object(
        {
            "metadata": {"name": "tas"},
            "spec": {
                "nodeLabels": {"pool": "tas"},
                "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
            },
        }
    ),
    "other": proj.flavor_from_object(
        {"metadata": {"name": "other"}, "spec": {"nodeLabels": {"pool": "other"}}}
    ),
}


def pod(
    name: str,
    *,
    group: str | None = None,
    total: int | None = None,
    cpu: str = "1",
    phase: str = "Pending",
    gated: bool = True,
    created: str = "2026-01-01T00:00:00Z",
    uid: str | None = None,
    deleting: bool = False,
    finalizer: bool = True,
    labels: dict | None = None,
    annotations: dict | None = None,
    node: str | None = None,
) -> dict:
    meta = {
        "name": name,
        "namespace": "ns",
        "uid": uid or f"uid-{name}",
        "resourceVersion": "3",
        "creationTimestamp": created,
        "labels": {QUEUE: "q", "kueue.x-k8s.io/managed": "true", **(labels or {})},
        "annotations": dict(annotations or {}),
    }
    if finalizer:
        meta["finalizers"] = ["kueue.x-k8s.io/managed"]
    if group:
        meta["labels"]["kueue.x-k8s.io/pod-group-name"] = group
    if total is not None:
        meta["annotations"]["kueue.x-k8s.io/pod-group-total-count"] = str(total)
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:01:00Z"
    spec: dict = {"containers": [container(cpu)]}
    if gated:
        spec["schedulingGates"] = [
            {"name": "kueue.x-k8s.io/admission"},
            {"name": "kueue.x-k8s.io/topology"},
        ]
    if node:
        spec["nodeName"] = node
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


class RecordingKube:
    """The API calls a controller makes, answered at once (`refuse`: creates answered so)."""

    def __init__(self, refuse: KubeError | None = None) -> None:
        self.created: list[dict] = []
        self.events: list[tuple[str, str, str]] = []  # (object name, reason, message)
        self.patches: list[tuple[str, dict]] = []
        self.deleted: list[str] = []
        self.refuse = refuse

    async def create(self, path, body):
        if self.refuse is not None:
            raise self.refuse
        self.created.append(body)
        return body

    async def event(self, ref, type_, reason, message):
        self.events.append((ref.name, reason, message))

    async def patch(self, path, body, content_type=None):
        self.patches.append((path, body))
        return {}

    async def delete(self, path):
        self.deleted.append(path)


def state() -> ClusterState:
    out = ClusterState(SolverOptions())
    out.upsert_namespace("ns", {"kubernetes.io/metadata.name": "ns"})
    return out


def leaderworkerset(replicas=2, size=3, **extra) -> dict:
    template = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
    return {
        "metadata": {"name": "lws", "namespace": "ns", "uid": "lws-uid", "labels": {QUEUE: "q"}},
        "spec": {
            "replicas": replicas,
            "leaderWorkerTemplate": {"size": size, "workerTemplate": template, **extra},
        },
    }


def leader_and_workers(
    *, size=3, replicas=2, leader=True, leader_annotations=None, worker_annotations=None
) -> dict:
    """A LeaderWorkerSet with a leader template (unless `leader` is False) and a worker one."""
    templates = {
        "size": size,
        "workerTemplate": {
            "metadata": {"annotations": dict(worker_annotations or {})},
            "spec": {"containers": [container("200m")]},
        },
    }
    if leader:
        templates["leaderTemplate"] = {
            "metadata": {"annotations": dict(leader_annotations or {})},
            "spec": {"containers": [container("100m")]},
        }
    return {
        "metadata": {"name": "nginx", "namespace": "ns", "uid": "lws-uid", "labels": {QUEUE: "q"}},
        "spec": {"replicas": replicas, "leaderWorkerTemplate": templates},
    }
