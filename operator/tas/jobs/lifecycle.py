"""What a Job needs next, given its Workload: pure decisions, no I/O.

- no Workload yet            -> create it (the Job is held suspended by the webhook)
- Workload admitted, Job suspended -> start: gate, labels, flavor nodeSelector/tolerations, unsuspend
- Workload not admitted, Job running -> stop: suspend and restore the template
- Job finished               -> Workload Finished
- suspended Job resized      -> the Workload is re-created with the new count
- Workload evicted           -> quota released once its pods stop holding capacity
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tas.api.constants import (
    PODSET_LABEL,
    PODSET_UNCONSTRAINED_TOPOLOGY,
    TOPOLOGY_SCHEDULING_GATE,
    WORKLOAD_ANNOTATION,
)
from tas.cache.projections import FlavorInfo, PodInfo, WorkloadInfo
from tas.jobs.workload import POD_SET_NAME, pod_count
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


def needs_new_workload(job: Mapping, workload: WorkloadInfo) -> bool:
    """A suspended Job whose parallelism no longer matches its pending Workload."""
    if workload.has_quota or workload.finished:
        return False
    pod_set = next((p for p in workload.pod_sets if p.name == POD_SET_NAME), None)
    return pod_set is None or pod_set.count != pod_count(job)


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
