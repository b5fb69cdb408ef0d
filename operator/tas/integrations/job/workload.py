"""A batch/v1 Job's Workload: one pod set "main" of `parallelism` pods, owned by the Job."""

from __future__ import annotations

from collections.abc import Mapping

from tas.api.constants import JOB_COMPLETION_INDEX_LABEL
from tas.jobframework import workload as framework
from tas.jobframework.workload import JOB_UID_LABEL, queue_name

__all__ = ["JOB_UID_LABEL", "POD_SET_NAME", "build_workload", "pod_count", "pod_sets", "queue_name"]

POD_SET_NAME = "main"


def pod_count(job: Mapping) -> int:
    """Pods the Job runs at once: parallelism (default 1), never more than completions."""
    spec = job.get("spec", {})
    parallelism = spec.get("parallelism")
    count = 1 if parallelism is None else int(parallelism)
    if spec.get("completions") is not None:
        count = min(count, int(spec["completions"]))
    return count


def pod_sets(
    job: Mapping,
    *,
    multi_layer_enabled: bool = True,
    partial_slices_enabled: bool = False,
    grouped_slicing_enabled: bool = False,
) -> list[dict]:
    """The Workload's podSets; raises TopologyRequestError for invalid topology annotations."""
    template = (job.get("spec") or {}).get("template") or {}
    return [
        framework.pod_set(
            POD_SET_NAME,
            pod_count(job),
            template,
            pod_index_label=JOB_COMPLETION_INDEX_LABEL,
            multi_layer_enabled=multi_layer_enabled,
            partial_slices_enabled=partial_slices_enabled,
            grouped_slicing_enabled=grouped_slicing_enabled,
        )
    ]


def build_workload(
    job: Mapping,
    *,
    multi_layer_enabled: bool = True,
    partial_slices_enabled: bool = False,
    grouped_slicing_enabled: bool = False,
) -> dict:
    from tas.integrations.job.controller import JOB

    return framework.build_workload(
        JOB,
        job,
        multi_layer_enabled=multi_layer_enabled,
        partial_slices_enabled=partial_slices_enabled,
        grouped_slicing_enabled=grouped_slicing_enabled,
    )
