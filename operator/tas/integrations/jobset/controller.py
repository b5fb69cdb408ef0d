"""JobSet as a GenericJob (jobframework/interface.py), as Kueue's pkg/controller/jobs/jobset.

- One pod set per replicatedJob, named after it, of `replicas x parallelism` pods (parallelism
  capped by completions). Its topology request is parsed from the replicatedJob's pod template
  annotations, and ranks a pod by its Job's index (`jobset.sigs.k8s.io/job-index`) and its
  completion index, so that Job i fills ranks [i * parallelism, (i + 1) * parallelism).
- Held suspended until admitted; started by rewriting every replicatedJob's pod template (the
  JobSet controller copies labels, annotations, nodeSelector, tolerations and scheduling gates
  into its Jobs when it resumes them) and unsuspending. JobSet accepts these template changes
  while the JobSet is, or is being, suspended.
- Finished at its Completed or Failed condition.
"""

from __future__ import annotations

from collections.abc import Mapping

from tas.api.annotations import TopologyRequestError, validate_pod_set_groups
from tas.api.constants import JOB_COMPLETION_INDEX_LABEL, JOBSET_JOB_INDEX_LABEL
from tas.api.frameworks import JOBSET
from tas.cache.projections import FlavorInfo, WorkloadInfo, workload_from_object
from tas.jobframework import named_templates, podset
from tas.jobframework import workload as framework
from tas.jobframework.interface import Finished, finished_at_condition, guarded

REPLICATED_JOBS = "spec.replicatedJobs"


def replicated_jobs(obj: Mapping) -> list[dict]:
    return list((obj.get("spec") or {}).get("replicatedJobs") or [])


def pod_template(replicated_job: Mapping) -> dict:
    return ((replicated_job.get("template") or {}).get("spec") or {}).get("template") or {}


def pods_per_job(replicated_job: Mapping) -> int:
    return framework.pods_at_once((replicated_job.get("template") or {}).get("spec") or {})


def replicas(replicated_job: Mapping) -> int:
    value = replicated_job.get("replicas")
    return 1 if value is None else int(value)


def template_path(index: int) -> str:
    return f"{REPLICATED_JOBS}[{index}].template.spec.template.metadata.annotations"


def where(index: int, replicated_job: Mapping) -> str:
    return f"{template_path(index)} (replicatedJob {replicated_job.get('name', '?')!r})"


class _JobSet:
    resource = JOBSET

    def pod_sets(
        self,
        obj: Mapping,
    ) -> list[dict]:
        """One pod set per replicatedJob; a TopologyRequestError names the replicatedJob."""
        out = []
        rjobs = replicated_jobs(obj)
        for index, rj in enumerate(rjobs):
            count = replicas(rj) * pods_per_job(rj)
            try:
                out.append(
                    framework.pod_set(
                        rj["name"],
                        count,
                        pod_template(rj),
                        pod_index_label=JOB_COMPLETION_INDEX_LABEL,
                        sub_group=(JOBSET_JOB_INDEX_LABEL, replicas(rj)),
                    )
                )
            except TopologyRequestError as exc:
                raise exc.at(where(index, rj)) from None
        try:  # podset-group-name across the replicatedJobs
            validate_pod_set_groups(
                workload_from_object(
                    {"metadata": {"name": "x"}, "spec": {"podSets": out}}
                ).pod_sets,
            )
        except TopologyRequestError as exc:
            index = exc.podset_index or 0
            raise exc.at(where(index, rjobs[index])) from None
        return out

    def priority(self, obj: Mapping) -> int:
        return max(
            (framework.template_priority(pod_template(rj)) for rj in replicated_jobs(obj)),
            default=0,
        )

    def suspended(self, obj: Mapping) -> bool:
        return bool((obj.get("spec") or {}).get("suspend"))

    def finished(self, obj: Mapping) -> Finished | None:
        return finished_at_condition(
            obj, "Completed", succeeded="JobSet finished successfully", failed="JobSet failed"
        )

    def start_patch(
        self, obj: Mapping, workload: WorkloadInfo, flavors: Mapping[str, FlavorInfo]
    ) -> dict:
        out = []
        for rj in replicated_jobs(obj):
            patch = named_templates.start_patch(
                pod_template(rj), rj.get("name", ""), workload, flavors
            )
            out.append(_with_template(rj, podset.merge_patch(pod_template(rj), patch)))
        # A merge patch replaces a list whole: every replicatedJob goes, as read, templates new.
        return guarded(obj, {"spec": {"suspend": False, "replicatedJobs": out}})

    def stop_patch(self, obj: Mapping) -> dict:
        return guarded(obj, {"spec": {"suspend": True}})

    def restore_patch(self, obj: Mapping, workload: WorkloadInfo) -> dict | None:
        if not self.suspended(obj):
            return None
        pod_sets = {p.name: p for p in workload.pod_sets}
        out, changed = [], False
        for rj in replicated_jobs(obj):
            patch = podset.restore_template(pod_template(rj), pod_sets.get(rj.get("name", "")))
            if patch is not None:
                changed = True
                rj = _with_template(rj, podset.merge_patch(pod_template(rj), patch))
            out.append(rj)
        return guarded(obj, {"spec": {"replicatedJobs": out}}) if changed else None

    def needs_start_time_reset(self, obj: Mapping) -> bool:
        return False  # the JobSet controller resets its Jobs' startTime when it resumes them


def _with_template(replicated_job: Mapping, template: Mapping) -> dict:
    rj = dict(replicated_job)
    job_template = dict(rj.get("template") or {})
    job_spec = dict(job_template.get("spec") or {})
    job_spec["template"] = dict(template)
    job_template["spec"] = job_spec
    rj["template"] = job_template
    return rj


JOB_SET = _JobSet()
