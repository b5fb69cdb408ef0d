"""What each watched change does: update the cache, then wake whoever may decide differently.

One async function per kind, called by that kind's reflector on the event loop. None of them
awaits between reading and changing the cache, and none runs in a thread (a test checks both).
A DELETED event may carry only metadata (an object that vanished during an outage), so the
deletions read what they need from the cache's own projections.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from tas.api.constants import HOSTNAME_LABEL
from tas.cache import projections as proj

if TYPE_CHECKING:
    from tas.handlers.runtime import Runtime

Obj = Mapping[str, Any]


async def on_namespace(rt: Runtime, kind: str, obj: Obj) -> None:
    name = obj["metadata"]["name"]
    if kind == "DELETED":
        rt.state.delete_namespace(name)
    else:
        rt.state.upsert_namespace(name, dict(obj["metadata"].get("labels") or {}))
    rt.admission.wake()


async def on_node(rt: Runtime, kind: str, obj: Obj) -> None:
    name = obj["metadata"]["name"]
    if kind == "DELETED":
        changed = rt.state.delete_node(name)
    else:
        changed = rt.state.upsert_node(proj.node_from_object(obj))
    if changed:  # heartbeats change nothing placement reads
        rt.check_node(name)
        for key in rt.state.workloads_on_node(name):
            workload = rt.state.workloads.get(key)
            if workload and workload.admitted:
                rt.ungate_worker.submit(key)  # pods held back from a node not ready may go now
            if workload and workload.evicted and workload.owner_job:
                # its pods terminating here may stop holding the quota (node gone or not ready)
                rt.job_worker.submit((workload.namespace, workload.owner_job))
        rt.admission.wake()


async def on_pod(rt: Runtime, kind: str, obj: Obj) -> None:
    key = proj.key_of(obj)
    if kind == "DELETED":
        pod = rt.state.pods.get(key)
        if pod is None:
            return
        rt.state.delete_pod(*key)
        rt.ungater.forget_pod(pod.uid)
    else:
        pod = proj.pod_from_object(obj)
        if rt.state.pods.get(key) == pod:
            return  # nothing admission, ungating or hot swap reads has changed
        rt.state.upsert_pod(pod)
    if pod.workload:
        rt.ungate_worker.submit((pod.namespace, pod.workload))
        workload = rt.state.workloads.get((pod.namespace, pod.workload))
        if workload and workload.evicted and workload.owner_job:
            rt.job_worker.submit((pod.namespace, workload.owner_job))  # waiting for pods to go
        rt.check_node(pod.node_name or pod.node_selector.get(HOSTNAME_LABEL))
    rt.admission.wake()


async def on_topology(rt: Runtime, kind: str, obj: Obj) -> None:
    name = obj["metadata"]["name"]
    if kind == "DELETED":
        rt.state.delete_topology(name)
    else:
        levels = (obj.get("spec") or {}).get("levels") or []
        rt.state.upsert_topology(name, [level["nodeLabel"] for level in levels])
    rt.admission.wake()


async def on_flavor(rt: Runtime, kind: str, obj: Obj) -> None:
    if kind == "DELETED":
        rt.state.delete_flavor(obj["metadata"]["name"])
    else:
        rt.state.upsert_flavor(proj.flavor_from_object(obj))
    rt.admission.wake()


async def on_cluster_queue(rt: Runtime, kind: str, obj: Obj) -> None:
    if kind == "DELETED":
        rt.state.delete_cluster_queue(obj["metadata"]["name"])
    else:
        rt.state.upsert_cluster_queue(proj.cluster_queue_from_object(obj))
    rt.admission.wake()


async def on_local_queue(rt: Runtime, kind: str, obj: Obj) -> None:
    namespace, name = proj.key_of(obj)
    if kind == "DELETED":
        rt.state.delete_local_queue(namespace, name)
    else:
        rt.state.upsert_local_queue(
            namespace, name, (obj.get("spec") or {}).get("clusterQueue") or ""
        )
    rt.admission.wake()


async def on_workload(rt: Runtime, kind: str, obj: Obj) -> None:
    key = proj.key_of(obj)
    if kind == "DELETED":
        workload = rt.state.workloads.get(key)
        rt.state.delete_workload(*key)
    else:
        workload = proj.workload_from_object(obj)
        rt.state.upsert_workload(workload)
        if workload.admitted:
            rt.ungate_worker.submit(workload.key)
    if workload and workload.owner_job:
        rt.job_worker.submit((workload.namespace, workload.owner_job))
    rt.admission.wake()


async def on_job(rt: Runtime, kind: str, obj: Obj) -> None:
    if kind == "DELETED":
        rt.jobs.forget(*proj.key_of(obj))
        return
    rt.job_worker.submit(rt.jobs.upsert(obj))


WatchHandler = Callable[["Runtime", str, Obj], Awaitable[None]]

# kind -> (API path of the collection, query parameters, handler). Server-side selectors cut
# volume without losing usage: a Succeeded or Failed pod holds nothing on its node (and leaves
# the watch as DELETED), and only Jobs with a queue-name label are ours.
WATCHES: dict[str, tuple[str, dict[str, str], WatchHandler]] = {
    "namespaces": ("/api/v1/namespaces", {}, on_namespace),
    "nodes": ("/api/v1/nodes", {}, on_node),
    "pods": (
        "/api/v1/pods",
        {"fieldSelector": "status.phase!=Succeeded,status.phase!=Failed"},
        on_pod,
    ),
    "topologies": ("/apis/kueue.x-k8s.io/v1beta1/topologies", {}, on_topology),
    "resourceflavors": ("/apis/kueue.x-k8s.io/v1beta1/resourceflavors", {}, on_flavor),
    "clusterqueues": ("/apis/kueue.x-k8s.io/v1beta1/clusterqueues", {}, on_cluster_queue),
    "localqueues": ("/apis/kueue.x-k8s.io/v1beta1/localqueues", {}, on_local_queue),
    "workloads": ("/apis/kueue.x-k8s.io/v1beta1/workloads", {}, on_workload),
    "jobs": ("/apis/batch/v1/jobs", {"labelSelector": "kueue.x-k8s.io/queue-name"}, on_job),
}
