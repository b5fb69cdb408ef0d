"""A Workload for an owner object, and the decisions every integration shares. Pure.

The Workload is Kueue's: named after the owner (`<kind>-<name>-<hash>`), owned by it, with the
owner's queue and one pod set per pod template. A pod set's topology request is parsed from the
template's annotations with Kueue's rules, and carries the integration's rank order.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping

from tas import features
from tas.api import topologyrequest
from tas.api.annotations import TopologyRequestError, parse_topology_request
from tas.api.constants import (
    JOB_UID_LABEL,
    KUEUE_API_VERSION,
    MOVABLE,
    MOVABLE_AFTER,
    PLACEMENT_GROUP,
    QUEUE_NAME_LABEL,
)
from tas.api.frameworks import Resource
from tas.api.placementgroups import PlacementGroupError, parse_annotations
from tas.api.relaxation import parse_relaxation
from tas.cache.projections import (
    PodDefaults,
    PodInfo,
    PodPriorityClass,
    WorkloadInfo,
    workload_from_object,
)
from tas.jobframework.interface import JobWithPriorityClass, ReferenceMissing
from tas.jobframework.names import workload_name
from tas.jobframework.priority import Priority
from tas.jobframework.priority import resolve as resolve_priority
from tas.jobframework.resources import with_pod_defaults
from tas.solver.types import Node

# (WorkloadPriorityClass values, PriorityClasses) by name, as the cache holds them
PriorityClasses = tuple[Mapping[str, int], Mapping[str, PodPriorityClass]]


def queue_name(obj: Mapping) -> str | None:
    return ((obj.get("metadata") or {}).get("labels") or {}).get(QUEUE_NAME_LABEL)


def pods_at_once(job_spec: Mapping) -> int:
    """A batch/v1 JobSpec's pods at once (a Job's, a JobSet's replicatedJob's): parallelism
    (default 1), never more than completions."""
    parallelism = job_spec.get("parallelism")
    count = 1 if parallelism is None else int(parallelism)
    if job_spec.get("completions") is not None:
        count = min(count, int(job_spec["completions"]))
    return count


def pod_set(
    name: str,
    count: int,
    template: Mapping,
    *,
    pod_index_label: str | None = None,
    sub_group: tuple[str, int] | None = None,
) -> dict:
    """One Workload pod set of a pod template; raises TopologyRequestError."""
    template = copy.deepcopy(dict(template))
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    request = parse_topology_request(
        annotations,
        count,
        pod_index_label=pod_index_label,
        sub_group=sub_group,
    )
    check_placement_group(annotations)
    parse_relaxation(annotations)  # ours: refused as a topology annotation is, gate on or off
    out = {"name": name, "count": count, "template": template}
    api_request = topologyrequest.to_api(request)
    if api_request:
        out["topologyRequest"] = api_request
    return out


def check_placement_group(annotations: Mapping[str, str]) -> None:
    """Our placement-group annotations (gate TASPlacementGroups), refused as a topology
    annotation is (TopologyRequestError naming it), gate on or off: turning the gate on then
    strands no admitted object."""
    try:
        parse_annotations(annotations)
    except PlacementGroupError as exc:
        raise TopologyRequestError(
            exc.annotation or PLACEMENT_GROUP, exc.value, exc.problem
        ) from None


def owner_reference(resource: Resource, meta: Mapping, *, controller: bool = True) -> dict:
    ref = {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "name": meta["name"],
        "uid": meta["uid"],
    }
    if controller:
        ref.update(controller=True, blockOwnerDeletion=True)
    return ref


def new_workload(
    name: str,
    namespace: str,
    queue: str,
    pod_sets: list[dict],
    owners: list[dict],
    *,
    priority: int | Priority = 0,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict:
    meta: dict = {"name": name, "namespace": namespace, "ownerReferences": owners}
    if labels:
        meta["labels"] = dict(labels)
    if annotations:
        meta["annotations"] = dict(annotations)
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "Workload",
        "metadata": meta,
        "spec": {"queueName": queue, **_priority(priority).to_spec(), "podSets": pod_sets},
    }


def _priority(priority: int | Priority) -> Priority:
    return priority if isinstance(priority, Priority) else Priority(int(priority))


def build_workload(
    job,
    obj: Mapping,
    *,
    classes: PriorityClasses | None = None,
    defaults: PodDefaults | None = None,
) -> dict:
    """The Workload of a GenericJob object, owned by it (Kueue's ConstructWorkload). With the
    cluster's priority classes its priority is resolved as Kueue does (raises
    PriorityClassMissing); without them it is the templates' own `priority`. With the
    namespace's `defaults`, its templates ask for what the API server will give the pods."""
    meta = obj["metadata"]
    resource: Resource = job.resource
    pod_sets = job.pod_sets(
        obj,
    )
    pod_sets = with_pod_defaults(pod_sets, defaults)
    named = job.priority_class(obj) if isinstance(job, JobWithPriorityClass) else None
    priority = workload_priority(meta, pod_sets, job.priority(obj), classes, named)
    return new_workload(
        workload_name(resource.kind, resource.group, meta["name"], meta.get("uid") or ""),
        meta.get("namespace") or "",
        queue_name(obj) or "",
        pod_sets,
        [owner_reference(resource, meta)],
        priority=priority,
        labels={JOB_UID_LABEL: meta["uid"]} if meta.get("uid") else None,
        annotations=_movable_annotations(meta),
    )


def _movable_annotations(meta: Mapping) -> dict[str, str] | None:
    """Gate TASDefragmentation: the object's tas-operator.io/movable annotations go on its
    Workload, where admission reads them."""
    if not features.enabled(features.Gate.TAS_DEFRAGMENTATION):
        return None
    given = meta.get("annotations") or {}
    return {k: given[k] for k in (MOVABLE, MOVABLE_AFTER) if k in given} or None


def workload_priority(
    meta: Mapping,
    pod_sets: list[dict],
    fallback: int,
    classes: PriorityClasses | None,
    named: tuple[str, str] | None = None,
) -> int | Priority:
    """The priority a new Workload takes: resolved from the cluster's classes as Kueue does
    (raises PriorityClassMissing), or without them the templates' own `fallback`. `named`: the
    PriorityClass the object names itself, and its field."""
    if classes is None:
        return fallback
    templates = (ps["template"] for ps in pod_sets)
    return resolve_priority(meta.get("labels") or {}, templates, *classes, named=named)


def template_priority(template: Mapping) -> int:
    return int(((template or {}).get("spec") or {}).get("priority") or 0)


def needs_new_workload(
    job,
    obj: Mapping,
    workload: WorkloadInfo,
    *,
    defaults: PodDefaults | None = None,
) -> bool:
    """A suspended object whose pod sets no longer match its pending Workload: resized, or a
    template edited (requests, topology annotations, nodeSelector, tolerations). Kueue then
    deletes the Workload and creates a new one; so do we. Compared through the same
    projection on both sides, so API defaulting and quantity spelling do not count as edits.
    A LimitRange or RuntimeClass changed since (`defaults`) changes what the pods will ask for:
    the new Workload asks for that, as Kueue adjusts its pending workloads' requests.
    """
    if workload.has_quota or workload.finished:
        return False
    if job.restore_patch(obj, workload) is not None:
        return False  # our own additions are still in the templates
    try:
        wanted = workload_from_object(
            build_workload(
                job,
                obj,
                defaults=defaults,
            )
        )
    except (TopologyRequestError, ReferenceMissing, KeyError, TypeError, ValueError):
        return True  # an edit made it invalid (or its runtime went): the creation reports why
    return wanted.pod_sets != workload.pod_sets


def pods_hold_capacity(pods: Iterable[PodInfo], nodes: Mapping[str, Node]) -> bool:
    """An evicted workload's pods still hold capacity: running, starting, or terminating on a
    live node.

    Kueue releases quota when the owner reports no active pods, which stops counting pods as
    soon as they terminate; their node is not free until they are gone, so we wait for them. A
    pod terminating on a node that is gone or not ready is let go: it may stay terminating for
    good, and that node admits nothing meanwhile.
    """
    for pod in pods:
        if pod.terminal:
            continue
        if not pod.deleting:
            return True
        node = nodes.get(pod.node_name or "")
        if node is not None and node.ready:
            return True
    return False
