"""batch/v1 Job as a GenericJob (jobframework/interface.py), as Kueue's
pkg/controller/jobs/job/job_controller.go: pure decisions, no I/O; jobframework's JobReconciler
drives it (runtime/runtime.py makes one for JOB).

A Job has one pod template, the pod set "main" of `parallelism` pods (never more than
`completions`), its pods ranked by their completion index. It is held suspended until admitted;
a suspended Job keeps its startTime, and with it an immutable template, until Kueue (or we)
clear it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tas.api.constants import DEFAULT_PODSET_NAME, JOB_COMPLETION_INDEX_LABEL
from tas.api.frameworks import JOB as JOB_RESOURCE
from tas.cache.projections import FlavorInfo, PodInfo, WorkloadInfo
from tas.jobframework import podset
from tas.jobframework import workload as framework
from tas.jobframework.interface import Finished, guarded
from tas.jobframework.podset import toleration_to_api
from tas.solver.types import Node

__all__ = ["JOB", "Finished", "toleration_to_api"]

POD_SET_NAME = DEFAULT_PODSET_NAME


def pod_count(job: Mapping) -> int:
    """Pods the Job runs at once: parallelism (default 1), never more than completions."""
    return framework.pods_at_once(job.get("spec") or {})


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


def _template(job: Mapping) -> Mapping:
    return (job.get("spec") or {}).get("template") or {}


def _pod_set(workload: WorkloadInfo):
    return next((p for p in workload.pod_sets if p.name == POD_SET_NAME), None)


def start_patch(job: Mapping, workload: WorkloadInfo, flavors: Mapping[str, FlavorInfo]) -> dict:
    """The Job merge patch that starts an admitted workload's pods, gated to the topology."""
    admission = next((a for a in workload.admissions if a.name == POD_SET_NAME), None)
    flavor = flavors.get(admission.flavor or "") if admission else None
    template = podset.start_template(
        _template(job), POD_SET_NAME, _pod_set(workload), admission, flavor, workload.name
    )
    return guarded(job, {"spec": {"suspend": False, "template": template}})


def stop_patch(job: Mapping) -> dict:
    """Suspend: the Job controller removes the active pods. The template cannot change until
    the Job's startTime is cleared (see needs_start_time_reset); the next start rewrites it."""
    return guarded(job, {"spec": {"suspend": True}})


def needs_start_time_reset(job: Mapping) -> bool:
    """A suspended Job keeps its startTime, and with it an immutable template; Kueue clears it."""
    return suspended(job) and bool((job.get("status") or {}).get("startTime"))


def restore_patch(job: Mapping, workload: WorkloadInfo) -> dict | None:
    """Undo what `start_patch` put in the template of a stopped Job (Kueue restores it too),
    so that the template shows only what the user wrote and its edits can be told apart.
    Only once the template may change again: suspended, and its startTime cleared."""
    if not suspended(job) or needs_start_time_reset(job):
        return None
    patch = podset.restore_template(_template(job), _pod_set(workload))
    return None if patch is None else guarded(job, {"spec": {"template": patch}})


def needs_new_workload(
    job: Mapping,
    workload: WorkloadInfo,
) -> bool:
    return framework.needs_new_workload(
        JOB,
        job,
        workload,
    )


def pods_hold_capacity(pods: Iterable[PodInfo], nodes: Mapping[str, Node]) -> bool:
    return framework.pods_hold_capacity(pods, nodes)


class _Job:
    """batch/v1 Job, the GenericJob."""

    resource = JOB_RESOURCE

    def pod_sets(
        self,
        obj: Mapping,
    ) -> list[dict]:
        """The one pod set; raises TopologyRequestError for invalid topology annotations."""
        return [
            framework.pod_set(
                POD_SET_NAME,
                pod_count(obj),
                _template(obj),
                pod_index_label=JOB_COMPLETION_INDEX_LABEL,
            )
        ]

    def priority(self, obj: Mapping) -> int:
        return framework.template_priority(_template(obj))

    suspended = staticmethod(suspended)
    finished = staticmethod(finished)
    start_patch = staticmethod(start_patch)
    stop_patch = staticmethod(stop_patch)
    restore_patch = staticmethod(restore_patch)
    needs_start_time_reset = staticmethod(needs_start_time_reset)


JOB = _Job()


def build_workload(
    job: Mapping,
) -> dict:
    """The Job's Workload (its priority the template's own: see jobframework.build_workload)."""
    return framework.build_workload(
        JOB,
        job,
    )
