"""What a Job needs next, given its Workload: pure decisions, no I/O.

- no Workload yet            -> create it (the Job is held suspended by the webhook)
- Workload admitted, Job suspended -> start: gate, labels, flavor nodeSelector/tolerations, unsuspend
- Workload not admitted, Job running -> stop: suspend and restore the template
- Job finished               -> Workload Finished
- stopped Job                -> its template restored to what the user wrote
- suspended Job edited/resized -> the Workload is re-created from the Job
- Workload evicted           -> quota released once its pods stop holding capacity
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tas.api.annotations import TopologyRequestError
from tas.api.constants import (
    PODSET_LABEL,
    PODSET_UNCONSTRAINED_TOPOLOGY,
    TOPOLOGY_SCHEDULING_GATE,
    WORKLOAD_ANNOTATION,
)
from tas.cache.projections import (
    FlavorInfo,
    PodInfo,
    WorkloadInfo,
    toleration_from_object,
    workload_from_object,
)
from tas.jobs.workload import POD_SET_NAME, build_workload
from tas.solver.types import Node, Toleration


@dataclass(frozen=True)
class Finished:
    succeeded: bool
    message: str


def finished(job: Mapping) -> Finished | None:
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("status") != "True":
            continue
        if cond.get("type") == "Complete":
            return Finished(True, "Job finished successfully")
        if cond.get("type") == "Failed":
            return Finished(False, cond.get("message") or cond.get("reason") or "Job failed")
    return None


def suspended(job: Mapping) -> bool:
    return bool((job.get("spec") or {}).get("suspend"))


def toleration_to_api(t: Toleration) -> dict:
    out: dict = {"operator": t.operator}
    for name, value in (("key", t.key), ("value", t.value), ("effect", t.effect)):
        if value:
            out[name] = value
    if t.toleration_seconds is not None:
        out["tolerationSeconds"] = t.toleration_seconds
    return out


def start_patch(job: Mapping, workload: WorkloadInfo, flavors: Mapping[str, FlavorInfo]) -> dict:
    """The Job merge patch that starts an admitted workload's pods, gated to the topology.

    nodeSelector and tolerations are rebuilt from the Workload's pod set (the template as the
    user wrote it) plus the admitted flavor's, so a Job admitted again after an eviction
    carries nothing of its previous admission.
    """
    current = (job.get("spec") or {}).get("template") or {}
    current_spec = current.get("spec") or {}
    pod_set = next((p for p in workload.pod_sets if p.name == POD_SET_NAME), None)
    admission = next((a for a in workload.admissions if a.name == POD_SET_NAME), None)
    flavor = flavors.get(admission.flavor or "") if admission else None

    node_selector = dict(pod_set.node_selector if pod_set else {})
    tolerations = [toleration_to_api(t) for t in (pod_set.tolerations if pod_set else ())]
    if flavor is not None:
        node_selector.update(flavor.node_labels)
        tolerations += [
            t for t in map(toleration_to_api, flavor.tolerations) if t not in tolerations
        ]
    # A merge patch merges maps: keys to drop must be set to null.
    selector_patch: dict = {
        k: None for k in current_spec.get("nodeSelector") or {} if k not in node_selector
    }
    selector_patch.update(node_selector)

    gates = [
        g
        for g in current_spec.get("schedulingGates") or []
        if g.get("name") != TOPOLOGY_SCHEDULING_GATE
    ]
    annotations = {WORKLOAD_ANNOTATION: workload.name}
    if admission and admission.assignment is not None:
        gates.append({"name": TOPOLOGY_SCHEDULING_GATE})
        if pod_set is not None and pod_set.topology.implied:
            annotations[PODSET_UNCONSTRAINED_TOPOLOGY] = "true"  # as Kueue marks implied requests
    spec = {
        "nodeSelector": selector_patch or None,
        "tolerations": tolerations or None,
        "schedulingGates": gates or None,
    }
    return {
        "metadata": {"resourceVersion": job["metadata"]["resourceVersion"]},
        "spec": {
            "suspend": False,
            "template": {
                "metadata": {"labels": {PODSET_LABEL: POD_SET_NAME}, "annotations": annotations},
                "spec": spec,
            },
        },
    }


def stop_patch(job: Mapping) -> dict:
    """Suspend: the Job controller removes the active pods. The template cannot change until
    the Job's startTime is cleared (see needs_start_time_reset); the next start rewrites it."""
    return {
        "metadata": {"resourceVersion": job["metadata"]["resourceVersion"]},
        "spec": {"suspend": True},
    }


def needs_start_time_reset(job: Mapping) -> bool:
    """A suspended Job keeps its startTime, and with it an immutable template; Kueue clears it."""
    return suspended(job) and bool((job.get("status") or {}).get("startTime"))


def restore_patch(job: Mapping, workload: WorkloadInfo) -> dict | None:
    """Undo what `start_patch` put in the template of a stopped Job (Kueue restores it too),
    so that the template shows only what the user wrote and its edits can be told apart.

    Only once the template may change again: suspended, and its startTime cleared. None when
    there is nothing to undo.
    """
    if not suspended(job) or needs_start_time_reset(job):
        return None
    template = (job.get("spec") or {}).get("template") or {}
    meta, spec = template.get("metadata") or {}, template.get("spec") or {}
    pod_set = next((p for p in workload.pod_sets if p.name == POD_SET_NAME), None)
    gates = spec.get("schedulingGates") or []
    marked = (
        WORKLOAD_ANNOTATION in (meta.get("annotations") or {})
        or PODSET_LABEL in (meta.get("labels") or {})
        or any(g.get("name") == TOPOLOGY_SCHEDULING_GATE for g in gates)
    )
    if pod_set is None or not marked:
        return None  # never started, or restored already: what is there now is the user's
    ours_annotations = [WORKLOAD_ANNOTATION]
    if pod_set.topology.implied:
        ours_annotations.append(PODSET_UNCONSTRAINED_TOPOLOGY)
    patch_meta: dict = {}
    annotations = {k: None for k in ours_annotations if k in (meta.get("annotations") or {})}
    if annotations:
        patch_meta["annotations"] = annotations
    if PODSET_LABEL in (meta.get("labels") or {}):
        patch_meta["labels"] = {PODSET_LABEL: None}

    patch_spec: dict = {}
    selector = dict(spec.get("nodeSelector") or {})
    if selector != dict(pod_set.node_selector):
        patch_spec["nodeSelector"] = {k: None for k in selector if k not in pod_set.node_selector}
        patch_spec["nodeSelector"].update(pod_set.node_selector)
    tolerations = [toleration_to_api(t) for t in pod_set.tolerations]
    if [
        toleration_to_api(t) for t in map(toleration_from_object, spec.get("tolerations") or [])
    ] != (tolerations):
        patch_spec["tolerations"] = tolerations or None
    kept = [g for g in gates if g.get("name") != TOPOLOGY_SCHEDULING_GATE]
    if kept != gates:
        patch_spec["schedulingGates"] = kept or None

    if not patch_meta and not patch_spec:
        return None
    template_patch: dict = {}
    if patch_meta:
        template_patch["metadata"] = patch_meta
    if patch_spec:
        template_patch["spec"] = patch_spec
    return {
        "metadata": {"resourceVersion": job["metadata"]["resourceVersion"]},
        "spec": {"template": template_patch},
    }


def needs_new_workload(job: Mapping, workload: WorkloadInfo, *, multi_layer_enabled=True) -> bool:
    """A suspended Job whose pod sets no longer match its pending Workload: resized, or its
    template edited (requests, topology annotations, nodeSelector, tolerations). Kueue then
    deletes the Workload and creates a new one; so do we. Compared through the same
    projection on both sides, so API defaulting and quantity spelling do not count as edits.
    """
    if workload.has_quota or workload.finished:
        return False
    if restore_patch(job, workload) is not None:
        return False  # our own additions are still in the template
    try:
        wanted = workload_from_object(build_workload(job, multi_layer_enabled=multi_layer_enabled))
    except (TopologyRequestError, KeyError, TypeError, ValueError):
        return True  # an edit made it invalid: the new Workload's creation reports why
    return wanted.pod_sets != workload.pod_sets


def pods_hold_capacity(pods: Iterable[PodInfo], nodes: Mapping[str, Node]) -> bool:
    """An evicted workload's pods still hold capacity: running, starting, or terminating on a
    live node.

    Kueue releases quota at the Job's `status.active == 0`, which stops counting pods as soon
    as they terminate; their node is not free until they are gone, so we wait for them. A pod
    terminating on a node that is gone or not ready is let go: it may stay terminating for good,
    and that node admits nothing meanwhile.
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
