"""TrainJob as a GenericJob (jobframework/interface.py), as Kueue's trainjob_controller.go.

- One pod set per replicatedJob of the JobSet the TrainJob becomes (runtime.py), named after
  it, of `replicas x parallelism` pods, ranked as a JobSet's pods are: by the Job's index
  (`jobset.sigs.k8s.io/job-index`) and the completion index. The pod sets need the TrainJob's
  runtime: the GenericJob is built with a lookup (`runtimes`), which the caller keeps filled
  from the cluster's ClusterTrainingRuntimes and TrainingRuntimes.
- Held suspended until admitted. Started as Kueue starts it, in two writes (the Trainer's
  webhook accepts a changed runtime patch only while the TrainJob is suspended): first Kueue's
  runtime patch (manager `kueue.x-k8s.io/manager`) gets a replicatedJob patch per pod set (pod
  set label, Workload annotation, node selector, tolerations, topology gate), then the
  TrainJob is unsuspended. Restored by emptying that patch's replicatedJobs.
- Finished at its Complete or Failed condition.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from tas.api.annotations import TopologyRequestError
from tas.api.constants import JOB_COMPLETION_INDEX_LABEL, JOBSET_JOB_INDEX_LABEL
from tas.api.frameworks import TRAINJOB, Resource
from tas.cache.projections import FlavorInfo, WorkloadInfo
from tas.integrations.trainjob.runtime import (
    CLUSTER_TRAINING_RUNTIME,
    KUEUE_MANAGER,
    TRAINING_RUNTIME,
    RuntimeNotFound,
    RuntimeRef,
    child_replicated_jobs,
    runtime_ref,
)
from tas.jobframework import named_templates
from tas.jobframework import workload as framework
from tas.jobframework.interface import Finished, finished_at_condition, guarded

# The runtime a TrainJob names, as the cluster holds it, or None.
RuntimeLookup = Callable[[RuntimeRef], Mapping | None]


def where(name: str, ref: RuntimeRef) -> str:
    return (
        f"job[{name}] (the pod template of {ref}'s replicatedJob {name!r}, "
        "as spec.runtimePatches patch it)"
    )


def pod_sets_of(trainjob: Mapping, runtime: Mapping) -> list[dict]:
    """The Workload's pod sets of `trainjob` run by `runtime`, from its templates as the user
    wrote them (without Kueue's start additions, as a JobSet's are restored before they are
    read); a TopologyRequestError names the replicatedJob."""
    ref = runtime_ref(trainjob)
    out = []
    for rj in child_replicated_jobs(trainjob, runtime, as_written=True):
        name = rj.get("name") or ""
        replicas = 1 if rj.get("replicas") is None else int(rj["replicas"])
        job_spec = rj["template"]["spec"]
        try:
            out.append(
                framework.pod_set(
                    name,
                    replicas * framework.pods_at_once(job_spec),
                    job_spec.get("template") or {},
                    pod_index_label=JOB_COMPLETION_INDEX_LABEL,
                    sub_group=(JOBSET_JOB_INDEX_LABEL, replicas),
                )
            )
        except TopologyRequestError as exc:
            raise exc.at(where(name, ref)) from None
    return out


def runtime_patches(obj: Mapping) -> list[dict]:
    return list((obj.get("spec") or {}).get("runtimePatches") or [])


def kueue_patch(obj: Mapping) -> dict | None:
    return next((p for p in runtime_patches(obj) if p.get("manager") == KUEUE_MANAGER), None)


def kueue_replicated_jobs(obj: Mapping) -> list:
    patch = kueue_patch(obj) or {}
    template = ((patch.get("trainingRuntimeSpec") or {}).get("template")) or {}
    return list((template.get("spec") or {}).get("replicatedJobs") or [])


def with_kueue_replicated_jobs(obj: Mapping, replicated_jobs: list) -> list[dict]:
    """The TrainJob's runtime patches, Kueue's (added if missing) with these replicatedJobs."""
    out, found = [], False
    for patch in runtime_patches(obj):
        if patch.get("manager") == KUEUE_MANAGER:
            found = True
            patch = _set_replicated_jobs(patch, replicated_jobs)
        out.append(patch)
    if not found:
        out.append(_set_replicated_jobs({"manager": KUEUE_MANAGER}, replicated_jobs))
    return out


def _set_replicated_jobs(patch: Mapping, replicated_jobs: list) -> dict:
    runtime_spec = dict(patch.get("trainingRuntimeSpec") or {})
    template = dict(runtime_spec.get("template") or {})
    spec = dict(template.get("spec") or {})
    spec.pop("replicatedJobs", None)
    if replicated_jobs:
        spec["replicatedJobs"] = replicated_jobs
    template["spec"] = spec
    runtime_spec["template"] = template
    return {**patch, "trainingRuntimeSpec": runtime_spec}


def replicated_job_patch(name: str, template_patch: Mapping) -> dict:
    """A pod set's start as a replicatedJob patch: what start_template adds, without the
    nulls of a merge patch (a strategic merge of maps keeps the runtime's own keys)."""
    meta = template_patch.get("metadata") or {}
    spec = {k: v for k, v in (template_patch.get("spec") or {}).items() if v is not None}
    pod_template: dict = {"metadata": dict(meta)}
    if spec.get("nodeSelector"):
        spec["nodeSelector"] = {k: v for k, v in spec["nodeSelector"].items() if v is not None}
    if spec:
        pod_template["spec"] = spec
    return {"name": name, "template": {"spec": {"template": pod_template}}}


class TrainJob:
    resource = TRAINJOB

    def __init__(self, runtimes: RuntimeLookup) -> None:
        self.runtimes = runtimes

    def runtime(self, obj: Mapping) -> Mapping:
        ref = runtime_ref(obj)
        runtime = self.runtimes(ref)
        if runtime is None:
            raise RuntimeNotFound(f"spec.runtimeRef: {ref} not found")
        return runtime

    def pod_sets(self, obj: Mapping) -> list[dict]:
        return pod_sets_of(obj, self.runtime(obj))

    def priority(self, obj: Mapping) -> int:
        return max(
            (framework.template_priority(ps["template"]) for ps in self.pod_sets(obj)),
            default=0,
        )

    def suspended(self, obj: Mapping) -> bool:
        return bool((obj.get("spec") or {}).get("suspend"))

    def finished(self, obj: Mapping) -> Finished | None:
        return finished_at_condition(
            obj, "Complete", succeeded="TrainJob completed", failed="failed"
        )

    def start_patch(
        self, obj: Mapping, workload: WorkloadInfo, flavors: Mapping[str, FlavorInfo]
    ) -> dict:
        """Kueue's runtime patch first; once the TrainJob carries it, unsuspend."""
        wanted = self.started_replicated_jobs(workload, flavors)
        if kueue_replicated_jobs(obj) != wanted:
            return guarded(
                obj, {"spec": {"runtimePatches": with_kueue_replicated_jobs(obj, wanted)}}
            )
        return guarded(obj, {"spec": {"suspend": False}})

    def started_replicated_jobs(
        self, workload: WorkloadInfo, flavors: Mapping[str, FlavorInfo]
    ) -> list[dict]:
        return [
            replicated_job_patch(
                pod_set.name, named_templates.start_patch({}, pod_set.name, workload, flavors)
            )
            for pod_set in workload.pod_sets
        ]

    def stop_patch(self, obj: Mapping) -> dict:
        return guarded(obj, {"spec": {"suspend": True}})

    def restore_patch(self, obj: Mapping, workload: WorkloadInfo) -> dict | None:
        if not self.suspended(obj) or not kueue_replicated_jobs(obj):
            return None
        return guarded(obj, {"spec": {"runtimePatches": with_kueue_replicated_jobs(obj, [])}})

    def needs_start_time_reset(self, obj: Mapping) -> bool:
        return False  # the Trainer rebuilds its JobSet from the patches while suspended


# The runtimes' kinds, watched and cached by the runtime for the TrainJob reading them.
RUNTIMES = (CLUSTER_TRAINING_RUNTIME, TRAINING_RUNTIME)
RuntimeKey = tuple[Resource, str | None, str]  # the registry's ObjectRef


def runtime_key(ref: RuntimeRef) -> RuntimeKey:
    return (ref.resource, ref.namespace, ref.name)


def named_runtime(trainjob: Mapping) -> RuntimeKey:
    """The runtime a TrainJob names, as the runtime's cache keys it."""
    return runtime_key(runtime_ref(trainjob))


def reading(cache: Callable[[RuntimeKey], Mapping | None]) -> TrainJob:
    """The TrainJob kind reading its runtimes from `cache`."""
    return TrainJob(lambda ref: cache(runtime_key(ref)))


# The registry's row: it finds no runtime until the runtime binds it to its cache (`reading`).
TRAIN_JOB = TrainJob(lambda ref: None)


def controlled_by_trainjob(obj: Mapping) -> str | None:
    """The uid of the TrainJob controlling `obj` (its JobSet), if one does: that JobSet is
    admitted with its TrainJob, not on its own."""
    return next(
        (
            o.get("uid")
            for o in (obj.get("metadata") or {}).get("ownerReferences") or []
            if o.get("controller")
            and o.get("kind") == TRAINJOB.kind
            and (o.get("apiVersion") or "").startswith(TRAINJOB.group + "/")
        ),
        None,
    )
