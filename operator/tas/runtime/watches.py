"""What each watched change does: update the cache, then wake whoever may decide differently.

One async function per kind, called by that kind's reflector on the event loop. None of them
awaits between reading and changing the cache, and none runs in a thread (a test checks both).
A DELETED event may carry only metadata (an object that vanished during an outage), so the
deletions read what they need from the cache's own projections.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from tas.admission.loop import AdmissionLoop
from tas.api.constants import HOSTNAME_LABEL, MANAGED_LABEL, QUEUE_NAME_LABEL, TAS_GROUP
from tas.api.frameworks import LEADERWORKERSET, NODE_RESOURCE_TOPOLOGY, Framework, Resource
from tas.cache import projections as proj
from tas.cache import wire
from tas.cache.state import ClusterState
from tas.features import Gate
from tas.integrations.leaderworkerset.controller import LeaderWorkerSetController, waiting_pod
from tas.integrations.pod.controller import PodController, work_key
from tas.integrations.registry import GENERIC_JOBS, Children, GenericJobKind, ObjectRef
from tas.jobframework.namespaces import ManagedNamespaces
from tas.jobframework.owners import ManagedOwners
from tas.jobframework.reconciler import JobReconciler
from tas.kube import Kube, Ref, kueue_path
from tas.kube.client import NODES, Decode
from tas.runtime.serial import SerialWorker
from tas.ungater.worker import Ungater

log = logging.getLogger(__name__)

Obj = Mapping[str, Any]


class GenericJobContext(Protocol):
    """One GenericJob kind as the runtime runs it (runtime.GenericJobRuntime)."""

    @property
    def reconciler(self) -> JobReconciler: ...

    @property
    def worker(self) -> SerialWorker: ...

    @property
    def kind(self) -> GenericJobKind: ...

    @property
    def looked_up(self) -> dict[ObjectRef, Obj]: ...


class WatchContext(Protocol):
    """What a watch handler reads and wakes; `runtime.Runtime` is it (and a test's fake can be:
    the handlers know nothing of how the runtime is assembled)."""

    state: ClusterState
    admission: AdmissionLoop
    kube: Kube
    managed: ManagedNamespaces
    active: bool
    owners: ManagedOwners
    pod_groups: PodController
    leaderworkersets: LeaderWorkerSetController
    ungater: Ungater
    children: dict[tuple[str, str, str], str]
    numa_problems: dict[str, str]
    pod_worker: SerialWorker
    lws_worker: SerialWorker
    ungate_worker: SerialWorker

    @property
    def generic_jobs(self) -> Mapping[str, GenericJobContext]: ...

    def owner_changed(self, workload: Any) -> None: ...

    def check_node(self, name: str | None) -> None: ...

    async def sync_unqueued(self) -> None: ...


async def on_namespace(rt: WatchContext, kind: str, obj: Obj) -> None:
    name = obj["metadata"]["name"]
    was_managed = name in rt.managed
    if kind == "DELETED":
        rt.state.delete_namespace(name)
    else:
        rt.state.upsert_namespace(name, dict(obj["metadata"].get("labels") or {}))
    if rt.active and kind != "DELETED" and (name in rt.managed) != was_managed:
        resync_namespace(rt, name)
    rt.admission.wake()


def resync_namespace(rt: WatchContext, namespace: str) -> None:
    """The namespace became ours (new, or relabelled into managedJobsNamespaceSelector) or
    stopped being: its queued objects are looked at again. Before activation everything is
    looked at anyway."""
    for generic in rt.generic_jobs.values():
        for key in [k for k in generic.reconciler.objects if k[0] == namespace]:
            generic.worker.submit(key)
    for key, pod in list(rt.pod_groups.pods.items()):
        if key[0] == namespace:
            if (wk := work_key(pod)) is not None:
                rt.pod_worker.submit(wk)
            if waiting_pod(pod):
                rt.lws_worker.submit(("pod", *key))
    for key in [k for k in rt.leaderworkersets.objects if k[0] == namespace]:
        rt.lws_worker.submit(("lws", *key))


async def on_node(rt: WatchContext, kind: str, obj: Obj) -> None:
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
            if workload and workload.evicted:
                # its pods terminating here may stop holding the quota (node gone or not ready)
                rt.owner_changed(workload)
        rt.admission.wake()


async def on_pod(rt: WatchContext, kind: str, obj: Obj) -> None:
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
        if workload and workload.evicted:
            rt.owner_changed(workload)  # waiting for its pods to go
        rt.check_node(pod.node_name or pod.node_selector.get(HOSTNAME_LABEL))
    rt.admission.wake()


async def on_topology(rt: WatchContext, kind: str, obj: Obj) -> None:
    name = obj["metadata"]["name"]
    if kind == "DELETED":
        rt.state.delete_topology(name)
    else:
        levels = (obj.get("spec") or {}).get("levels") or []
        rt.state.upsert_topology(name, [level["nodeLabel"] for level in levels])
    rt.admission.wake()


async def on_flavor(rt: WatchContext, kind: str, obj: Obj) -> None:
    if kind == "DELETED":
        rt.state.delete_flavor(obj["metadata"]["name"])
    else:
        rt.state.upsert_flavor(proj.flavor_from_object(obj))
    rt.admission.wake()


async def on_cluster_queue(rt: WatchContext, kind: str, obj: Obj) -> None:
    if kind == "DELETED":
        changed = rt.state.delete_cluster_queue(obj["metadata"]["name"])
    else:
        changed = rt.state.upsert_cluster_queue(proj.cluster_queue_from_object(obj))
    if changed:  # our own status writes come back as events that change nothing
        rt.admission.wake()


async def on_cohort(rt: WatchContext, kind: str, obj: Obj) -> None:
    if kind == "DELETED":
        changed = rt.state.delete_cohort(obj["metadata"]["name"])
    else:
        changed = rt.state.upsert_cohort(proj.cohort_from_object(obj))
    if changed:  # our own status writes come back as events that change nothing
        rt.admission.wake()


async def on_placement_group(rt: WatchContext, kind: str, obj: Obj) -> None:
    namespace, name = proj.key_of(obj)
    if kind == "DELETED":
        rt.state.delete_placement_group(namespace, name)
    else:
        rt.state.upsert_placement_group(proj.placement_group_from_object(obj))
    rt.admission.wake()


async def on_local_queue(rt: WatchContext, kind: str, obj: Obj) -> None:
    namespace, name = proj.key_of(obj)
    if kind == "DELETED":
        changed = rt.state.delete_local_queue(namespace, name)
        rt.admission.fair.local_queue_deleted((namespace, name))
    else:
        reordered = rt.admission.fair.local_queue((namespace, name), obj)
        changed = rt.state.upsert_local_queue(
            namespace,
            name,
            (obj.get("spec") or {}).get("clusterQueue") or "",
            proj.local_queue_movable(obj),
        )
        changed = changed or reordered
    if changed:  # our own status writes come back as events that change nothing
        rt.admission.wake()


async def on_workload(rt: WatchContext, kind: str, obj: Obj) -> None:
    key = proj.key_of(obj)
    if kind == "DELETED":
        workload = rt.state.workloads.get(key)
        rt.state.delete_workload(*key)
    else:
        workload = proj.workload_from_object(obj)
        if workload.admission_error:
            log.warning("workload %s/%s: %s", *workload.key, workload.admission_error)
        rt.state.upsert_workload(workload)
        if workload.admitted:
            rt.ungate_worker.submit(workload.key)
    if workload:
        rt.leaderworkersets.workload_changed(workload)
        rt.owner_changed(workload)
    rt.admission.wake()


def on_generic_job(name: str) -> WatchHandler:
    """The handler of a GenericJob kind's watch: an object controlled by a kind admitted as a
    whole (a TrainJob's JobSet) is admitted with it, never queued on its own."""

    async def handle(rt: WatchContext, kind: str, obj: Obj) -> None:
        generic = rt.generic_jobs[name]
        if kind == "DELETED":
            generic.reconciler.forget(*proj.key_of(obj))
        elif rt.owners.controller(obj) is None:
            generic.worker.submit(generic.reconciler.upsert(obj))

    handle.__name__ = handle.__qualname__ = f"on_{name}"
    return handle


def on_children(watch: str, children: Children) -> WatchHandler:
    """The handler of a watch of a queued kind's children (a JobSet's Jobs): which managed
    object controls each, so that its pods are that object's Workload's (capacity)."""

    async def handle(rt: WatchContext, kind: str, obj: Obj) -> None:
        key = (watch, *proj.key_of(obj))
        uid = obj["metadata"].get("uid")
        if kind == "DELETED":
            uid = rt.children.pop(key, uid)
            if uid:
                rt.state.link_owner(uid, None)
        elif uid:
            rt.children[key] = uid
            parent = rt.owners.controller(obj) or children.owners.controller(obj)
            rt.state.link_owner(uid, parent)
        rt.admission.wake()

    handle.__name__ = handle.__qualname__ = f"on_{watch.replace('-', '_')}"
    return handle


async def on_managed_pod(rt: WatchContext, kind: str, obj: Obj) -> None:
    """A pod of the pod integration (finished ones too: a group counts its succeeded pods)."""
    key = proj.key_of(obj)
    if kind == "DELETED":
        keys = rt.pod_groups.forget(*key)
        rt.leaderworkersets.pod_changed(key, None)
    else:
        keys = rt.pod_groups.upsert(obj)
        if rt.leaderworkersets.pod_changed(key, rt.pod_groups.pods[key]):
            rt.lws_worker.submit(("pod", *key))
    for work in keys:
        rt.pod_worker.submit(work)


async def on_leaderworkerset(rt: WatchContext, kind: str, obj: Obj) -> None:
    if kind == "DELETED":
        rt.leaderworkersets.forget(*proj.key_of(obj))
        return
    for key in rt.leaderworkersets.upsert(obj):
        rt.lws_worker.submit(key)


async def on_node_resource_topology(rt: WatchContext, kind: str, obj: Obj) -> None:
    """A node's NUMA zones. One that cannot be read, or that goes away, leaves the node
    counted by its totals, with a Warning event (once per cause)."""
    name = obj["metadata"]["name"]
    zones, problem = None, None
    if kind == "DELETED":
        if name in rt.state.numa.reports:
            problem = "its NodeResourceTopology was deleted"
    else:
        try:
            zones = proj.numa_from_object(obj)
        except proj.NumaReportError as exc:
            problem = f"NodeResourceTopology {name}: {exc}"
    if rt.state.upsert_numa_report(name, zones):
        rt.admission.wake()
    if problem is None:
        rt.numa_problems.pop(name, None)
    elif rt.numa_problems.get(name) != problem:
        rt.numa_problems[name] = problem
        ref = Ref("v1", "Node", "default", name, "")
        if kind != "DELETED":
            meta = obj["metadata"]
            ref = Ref(
                NODE_RESOURCE_TOPOLOGY.api_version,
                NODE_RESOURCE_TOPOLOGY.kind,
                "default",
                name,
                meta.get("uid", ""),
            )
        await rt.kube.event(
            ref,
            "Warning",
            "NUMAZonesIgnored",
            f"node {name} is counted by its totals, not by NUMA zones: {problem}",
        )


async def on_workload_priority_class(rt: WatchContext, kind: str, obj: Obj) -> None:
    value = obj.get("value")
    rt.state.upsert_workload_priority_class(
        obj["metadata"]["name"], None if kind == "DELETED" or value is None else int(value)
    )
    await rt.sync_unqueued()  # objects that named a missing class get their Workload now


async def on_priority_class(rt: WatchContext, kind: str, obj: Obj) -> None:
    rt.state.upsert_pod_priority_class(
        obj["metadata"]["name"],
        None if kind == "DELETED" else proj.pod_priority_class_from_object(obj),
    )
    await rt.sync_unqueued()


async def on_limit_range(rt: WatchContext, kind: str, obj: Obj) -> None:
    """A namespace's LimitRange: what its new pods get. Pending Workloads built before are
    built again (Kueue adjusts its pending workloads' requests)."""
    key = proj.key_of(obj)
    defaults = None
    if kind != "DELETED":
        try:
            defaults = proj.limit_range_from_object(obj)
        except ValueError as exc:
            log.warning("LimitRange %s/%s not read: %s", *key, exc)
    if rt.state.upsert_limit_range(key, defaults):
        resubmit_pending(rt, key[0])


async def on_runtime_class(rt: WatchContext, kind: str, obj: Obj) -> None:
    """A RuntimeClass: the overhead its pods get. Pending Workloads are built again."""
    name = obj["metadata"]["name"]
    overhead = None
    if kind != "DELETED":
        try:
            overhead = proj.runtime_class_overhead(obj)
        except ValueError as exc:
            log.warning("RuntimeClass %s not read: %s", name, exc)
    if rt.state.upsert_runtime_class(name, overhead):
        resubmit_pending(rt, None)


def resubmit_pending(rt: WatchContext, namespace: str | None) -> None:
    """Queued Jobs and JobSets (of `namespace`, or all) whose Workload holds no quota are
    looked at again: a Workload that no longer asks for what their pods will is re-created."""
    for generic in rt.generic_jobs.values():
        for key, obj in list(generic.reconciler.objects.items()):
            if namespace is not None and key[0] != namespace:
                continue
            workload = generic.reconciler.workload_of(obj)
            if workload is not None and not workload.has_quota:
                generic.worker.submit(key)


def on_looked_up(name: str, resource: Resource) -> WatchHandler:
    """The handler of a watch of what a GenericJob kind's pod sets are built from (a
    TrainJob's runtimes): cached for its reconciler and webhook; its objects that name the one
    that appeared, changed or went are synced again (a sync with nothing to do writes
    nothing; before activation every object is synced anyway)."""

    async def handle(rt: WatchContext, kind: str, obj: Obj) -> None:
        generic = rt.generic_jobs[name]
        meta = obj["metadata"]
        ref = (resource, meta.get("namespace") if resource.namespaced else None, meta["name"])
        if kind == "DELETED":
            generic.looked_up.pop(ref, None)
        else:
            generic.looked_up[ref] = {"spec": obj.get("spec") or {}}  # all the job reads
        lookup = generic.kind.lookup
        if not rt.active or lookup is None:
            return
        for key, queued in list(generic.reconciler.objects.items()):
            if lookup.named_by(queued) == ref:
                generic.worker.submit(key)

    handle.__name__ = handle.__qualname__ = f"on_{resource.plural}"
    return handle


WatchHandler = Callable[[WatchContext, str, Obj], Awaitable[None]]


@dataclass(frozen=True)
class Watch:
    path: str  # the API path of the collection
    params: Mapping[str, str]
    handler: WatchHandler
    framework: str | None = None  # only when this integration is enabled (None: always)
    # Listed only while every one of these CRDs is established (see runtime.py): the one that
    # serves the resource, and for a kind's children or lookups the kind's own.
    crds: tuple[str, ...] = ()
    gate: Gate | None = None  # only when this feature gate is on (None: always)
    drawn: bool = False  # the topology view reads it: `tas view --kubeconfig` lists these
    # A list page's schema, naming only what the handler reads (None: the whole object).
    decode_list: Decode | None = None


# kind -> what to list and watch. Server-side selectors cut volume without losing usage: a
# Succeeded or Failed pod holds nothing on its node (and leaves the watch as DELETED), and only
# Jobs with a queue-name label are ours.
WATCHES: dict[str, Watch] = {
    "namespaces": Watch("/api/v1/namespaces", {}, on_namespace, drawn=True),
    "nodes": Watch(NODES, {}, on_node, drawn=True, decode_list=wire.decode_node_list),
    "pods": Watch(
        "/api/v1/pods",
        {"fieldSelector": "status.phase!=Succeeded,status.phase!=Failed"},
        on_pod,
        drawn=True,
        decode_list=wire.decode_pod_list,
    ),
    "topologies": Watch(kueue_path("topologies"), {}, on_topology, drawn=True),
    "resourceflavors": Watch(kueue_path("resourceflavors"), {}, on_flavor, drawn=True),
    "clusterqueues": Watch(kueue_path("clusterqueues"), {}, on_cluster_queue, drawn=True),
    "localqueues": Watch(kueue_path("localqueues"), {}, on_local_queue, drawn=True),
    "cohorts": Watch(kueue_path("cohorts"), {}, on_cohort, drawn=True),
    "workloads": Watch(kueue_path("workloads"), {}, on_workload, drawn=True),
    "workloadpriorityclasses": Watch(
        kueue_path("workloadpriorityclasses"), {}, on_workload_priority_class
    ),
    "priorityclasses": Watch("/apis/scheduling.k8s.io/v1/priorityclasses", {}, on_priority_class),
    # What the API server adds to pods at creation, folded into the Workloads we build.
    "limitranges": Watch("/api/v1/limitranges", {}, on_limit_range),
    "runtimeclasses": Watch("/apis/node.k8s.io/v1/runtimeclasses", {}, on_runtime_class),
    # Managed pods, finished ones included (a pod group counts its succeeded pods).
    "managed-pods": Watch(
        "/api/v1/pods", {"labelSelector": f"{MANAGED_LABEL}=true"}, on_managed_pod, Framework.POD
    ),
    "leaderworkersets": Watch(
        LEADERWORKERSET.collection(),
        {"labelSelector": QUEUE_NAME_LABEL},
        on_leaderworkerset,
        Framework.LEADERWORKERSET,
        crds=(LEADERWORKERSET.crd_name,),
    ),
    "noderesourcetopologies": Watch(
        NODE_RESOURCE_TOPOLOGY.collection(),
        {},
        on_node_resource_topology,
        crds=(NODE_RESOURCE_TOPOLOGY.crd_name,),
        gate=Gate.TAS_NUMA_ZONES,
    ),
    "placementgroups": Watch(
        f"/apis/{TAS_GROUP}/v1alpha1/placementgroups",
        {},
        on_placement_group,
        gate=Gate.TAS_PLACEMENT_GROUPS,
        drawn=True,
    ),
}


def generic_job_watches(kind: GenericJobKind) -> dict[str, Watch]:
    """A GenericJob kind's watches: its queued objects (only those with a queue-name label
    are ours), and the children its controller makes, for their pods' capacity, and what its
    pod sets are built from. Those two only while the kind itself is served: without its CRD
    none of its objects can exist, and a watch of Jobs for it would be wasted."""
    resource = kind.resource
    own = crds_of(resource)
    queued = {"labelSelector": QUEUE_NAME_LABEL}
    out = {
        kind.name: Watch(
            resource.collection(), queued, on_generic_job(kind.name), kind.framework, crds=own
        )
    }
    for children in kind.children:
        name = kind.children_watch(children)
        params = {"labelSelector": children.selector}
        out[name] = Watch(
            children.resource.collection(),
            params,
            on_children(name, children),
            kind.framework,
            crds=own + crds_of(children.resource),
        )
    for looked_up in kind.lookup.resources if kind.lookup else ():
        out[looked_up.plural] = Watch(
            looked_up.collection(),
            {},
            on_looked_up(kind.name, looked_up),
            kind.framework,
            crds=own + crds_of(looked_up),
        )
    return out


def crds_of(resource: Resource) -> tuple[str, ...]:
    return (resource.crd_name,) if resource.crd else ()


WATCHES.update(watch for kind in GENERIC_JOBS for watch in generic_job_watches(kind).items())
