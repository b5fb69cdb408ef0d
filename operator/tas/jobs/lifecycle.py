"""What a Job needs next, given its Workload: pure decisions, no I/O.

- no Workload yet            -> create it (the Job is held suspended by the webhook)
- Workload admitted, Job suspended -> start: gate, labels, flavor nodeSelector/tolerations, unsuspend
- Workload not admitted, Job running -> stop: suspend and restore the template
- Job finished               -> Workload Finished
- suspended Job resized      -> the Workload is re-created with the new count
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass

from tas.api.constants import (
    PODSET_LABEL,
    PODSET_UNCONSTRAINED_TOPOLOGY,
    TOPOLOGY_SCHEDULING_GATE,
    WORKLOAD_ANNOTATION,
)
from tas.cache.projections import FlavorInfo, WorkloadInfo
from tas.jobs.workload import POD_SET_NAME, pod_count
from tas.solver.types import Toleration


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
    """The Job merge patch that starts an admitted workload's pods, gated to the topology."""
    template = copy.deepcopy((job.get("spec") or {}).get("template") or {})
    meta = template.setdefault("metadata", {})
    spec = template.setdefault("spec", {})
    admission = next((a for a in workload.admissions if a.name == POD_SET_NAME), None)
    meta.setdefault("labels", {})[PODSET_LABEL] = POD_SET_NAME
    annotations = meta.setdefault("annotations", {})
    annotations[WORKLOAD_ANNOTATION] = workload.name
    if admission and admission.flavor and admission.flavor in flavors:
        flavor = flavors[admission.flavor]
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **flavor.node_labels}
        tolerations = list(spec.get("tolerations") or [])
        for t in flavor.tolerations:
            api = toleration_to_api(t)
            if api not in tolerations:
                tolerations.append(api)
        if tolerations:
            spec["tolerations"] = tolerations
    if admission and admission.assignment is not None:
        gates = list(spec.get("schedulingGates") or [])
        if not any(g.get("name") == TOPOLOGY_SCHEDULING_GATE for g in gates):
            gates.append({"name": TOPOLOGY_SCHEDULING_GATE})
        spec["schedulingGates"] = gates
        pod_set = next((p for p in workload.pod_sets if p.name == POD_SET_NAME), None)
        if pod_set is not None and pod_set.topology.implied:
            annotations[PODSET_UNCONSTRAINED_TOPOLOGY] = "true"  # as Kueue marks implied requests
    return {
        "metadata": {"resourceVersion": job["metadata"]["resourceVersion"]},
        "spec": {"suspend": False, "template": {"metadata": meta, "spec": spec}},
    }


def stop_patch(job: Mapping, original_template: Mapping) -> dict:
    """Suspend and put back the template the Workload was made from (what start added goes)."""
    current = (job.get("spec") or {}).get("template") or {}
    spec = dict(current.get("spec") or {})
    original_spec = original_template.get("spec") or {}
    for field in ("nodeSelector", "tolerations", "schedulingGates"):
        spec[field] = original_spec.get(field)  # None deletes it in a merge patch
    meta = original_template.get("metadata") or {}
    current_meta = current.get("metadata") or {}
    labels = {
        k: None for k in current_meta.get("labels") or {} if k not in (meta.get("labels") or {})
    }
    annotations = {
        k: None
        for k in current_meta.get("annotations") or {}
        if k not in (meta.get("annotations") or {})
    }
    return {
        "metadata": {"resourceVersion": job["metadata"]["resourceVersion"]},
        "spec": {
            "suspend": True,
            "template": {"metadata": {"labels": labels, "annotations": annotations}, "spec": spec},
        },
    }


def needs_new_workload(job: Mapping, workload: WorkloadInfo) -> bool:
    """A suspended Job whose parallelism no longer matches its pending Workload."""
    if workload.has_quota or workload.finished:
        return False
    pod_set = next((p for p in workload.pod_sets if p.name == POD_SET_NAME), None)
    return pod_set is None or pod_set.count != pod_count(job)
