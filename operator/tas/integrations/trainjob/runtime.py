"""The JobSet a TrainJob becomes, as Kubeflow Trainer v2 (v2.2.0, the version Kueue v0.17.0
builds against) builds it and Kueue's trainjob_controller.go reads it. Pure.

1. The runtime's `spec.template.spec.replicatedJobs`, each merged (strategic merge) with the
   TrainJob's `spec.runtimePatches` for it, in order.
2. Pods per replicatedJob: its parallelism (1); for the trainer step (the replicatedJob
   labelled `trainer.kubeflow.org/trainjob-ancestor-step: trainer`) `mlPolicy.numNodes` (1)
   when the runtime has an ML policy; then `spec.trainer.numNodes` if set, on the trainer step,
   or for an MPI policy on the replicatedJob `node` (one less when the launcher runs as a
   node). Parallelism and completions both become that count.
3. The initializer and trainer steps run one Job (`replicas: 1`); the trainer's container
   `node` takes the TrainJob's image, command, args, env and resourcesPerNode; a coscheduling
   pod-group policy labels every pod template with the TrainJob's name.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass

from tas.api.frameworks import Resource
from tas.jobframework.interface import ReferenceMissing

GROUP = "trainer.kubeflow.org"
CLUSTER_TRAINING_RUNTIME = Resource(
    GROUP,
    "v1alpha1",
    "clustertrainingruntimes",
    "ClusterTrainingRuntime",
    crd=True,
    namespaced=False,
)
TRAINING_RUNTIME = Resource(GROUP, "v1alpha1", "trainingruntimes", "TrainingRuntime", crd=True)

ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
TRAINER = "trainer"
INITIALIZERS = ("dataset-initializer", "model-initializer")
NODE = "node"  # the trainer's container, and MPI's worker replicatedJob
STORAGE_URI_ENV = "STORAGE_URI"
KUEUE_MANAGER = "kueue.x-k8s.io/manager"  # the runtime patch Kueue (and we) write
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"  # coscheduling's

# Strategic merge keys of the list fields a runtime patch may carry; other lists are replaced.
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "volumes": "name",
    "imagePullSecrets": "name",
    "schedulingGates": "name",
    "env": "name",
    "volumeMounts": "mountPath",
}


class RuntimeNotFound(ReferenceMissing):
    """The runtime a TrainJob names is not there (yet): its Workload cannot be built."""


@dataclass(frozen=True)
class RuntimeRef:
    resource: Resource
    namespace: str | None  # None for a ClusterTrainingRuntime
    name: str

    def path(self) -> str:
        if self.namespace is None:
            return f"{self.resource.collection()}/{self.name}"
        return self.resource.path(self.namespace, self.name)

    def __str__(self) -> str:
        return f"{self.resource.kind} {self.name!r}"


def runtime_ref(trainjob: Mapping) -> RuntimeRef:
    """The runtime `spec.runtimeRef` names (kind ClusterTrainingRuntime by default)."""
    ref = (trainjob.get("spec") or {}).get("runtimeRef") or {}
    if ref.get("kind") == TRAINING_RUNTIME.kind:
        namespace = (trainjob.get("metadata") or {}).get("namespace") or ""
        return RuntimeRef(TRAINING_RUNTIME, namespace, ref.get("name") or "")
    return RuntimeRef(CLUSTER_TRAINING_RUNTIME, None, ref.get("name") or "")


def strategic_merge(target: object, patch: object, field: str = "") -> object:
    """`patch` merged into `target` as Kubernetes' strategic merge does for the fields of a
    runtime patch: maps by key (null deletes), MERGE_KEYS lists by their key, others replaced."""
    if isinstance(patch, Mapping) and isinstance(target, Mapping):
        out = dict(target)
        for key, value in patch.items():
            if value is None:
                out.pop(key, None)
            else:
                out[key] = strategic_merge(out.get(key), value, key)
        return out
    if isinstance(patch, list) and isinstance(target, list) and field in MERGE_KEYS:
        key = MERGE_KEYS[field]
        merged = list(target)
        for item in patch:
            at = next((i for i, t in enumerate(merged) if t.get(key) == item.get(key)), None)
            if at is None:
                merged.append(copy.deepcopy(item))
            else:
                merged[at] = strategic_merge(merged[at], item)
        return merged
    return copy.deepcopy(patch)


def patched_replicated_jobs(
    trainjob: Mapping, runtime: Mapping, *, as_written: bool = False
) -> list[dict]:
    """The runtime's replicatedJobs with every runtime patch merged into its Job template
    (`as_written`: all but Kueue's, whose start additions are not the user's)."""
    template_spec = ((runtime.get("spec") or {}).get("template") or {}).get("spec") or {}
    rjobs = copy.deepcopy(list(template_spec.get("replicatedJobs") or []))
    for patch in (trainjob.get("spec") or {}).get("runtimePatches") or []:
        if as_written and (patch or {}).get("manager") == KUEUE_MANAGER:
            continue
        runtime_spec = (patch or {}).get("trainingRuntimeSpec") or {}
        spec = (runtime_spec.get("template") or {}).get("spec") or {}
        for rj_patch in spec.get("replicatedJobs") or []:
            if not rj_patch.get("template"):
                continue
            for rj in rjobs:
                if rj.get("name") == rj_patch.get("name"):
                    rj["template"] = strategic_merge(rj.get("template") or {}, rj_patch["template"])
    return rjobs


def ancestor(replicated_job: Mapping) -> str | None:
    labels = ((replicated_job.get("template") or {}).get("metadata") or {}).get("labels") or {}
    return labels.get(ANCESTOR_LABEL)


def job_spec(replicated_job: Mapping) -> dict:
    return (replicated_job.get("template") or {}).get("spec") or {}


def pod_counts(rjobs: list[dict], ml_policy: Mapping | None, trainjob: Mapping) -> list[int]:
    """Pods per replicatedJob, as the runtime info and its ML policy plugins count them."""
    counts = []
    for rj in rjobs:
        parallelism = job_spec(rj).get("parallelism")
        count = 1 if parallelism is None else int(parallelism)
        if ancestor(rj) == TRAINER and ml_policy is not None:
            count = int(ml_policy.get("numNodes") or 1)
        counts.append(count)
    num_nodes = ((trainjob.get("spec") or {}).get("trainer") or {}).get("numNodes")
    if num_nodes is not None:
        mpi = (ml_policy or {}).get("mpi")
        if mpi is not None:  # MPI counts the replicatedJob `node`, less the launcher's node
            target = next((i for i, rj in enumerate(rjobs) if rj.get("name") == NODE), None)
            nodes = max(int(num_nodes) - 1, 1) if mpi.get("runLauncherAsNode") else int(num_nodes)
        else:
            target = next((i for i, rj in enumerate(rjobs) if ancestor(rj) == TRAINER), None)
            nodes = int(num_nodes)
        if target is not None:
            counts[target] = nodes
    return [max(c, 1) for c in counts]


def child_replicated_jobs(
    trainjob: Mapping, runtime: Mapping, *, as_written: bool = False
) -> list[dict]:
    """The replicatedJobs of the JobSet the Trainer makes of `trainjob` with `runtime`
    (`as_written`: without what Kueue's runtime patch adds at start)."""
    runtime_spec = runtime.get("spec") or {}
    rjobs = patched_replicated_jobs(trainjob, runtime, as_written=as_written)
    counts = pod_counts(rjobs, runtime_spec.get("mlPolicy"), trainjob)
    mpi = ((runtime_spec.get("mlPolicy") or {}).get("mpi")) or {}
    coscheduling = ((runtime_spec.get("podGroupPolicy") or {}).get("coscheduling")) is not None
    spec = trainjob.get("spec") or {}
    for rj, count in zip(rjobs, counts, strict=True):
        job = rj.setdefault("template", {}).setdefault("spec", {})
        job["parallelism"] = job["completions"] = count
        pod_template = job.setdefault("template", {})
        step = ancestor(rj)
        if step in INITIALIZERS:
            rj["replicas"] = 1
            _initializer(pod_template, step, (spec.get("initializer") or {}))
        if step == TRAINER:
            rj["replicas"] = 1
            _trainer_command(pod_template, spec.get("trainer") or {})
        if step == TRAINER or (mpi.get("runLauncherAsNode") and rj.get("name") == NODE):
            _trainer_resources(pod_template, spec.get("trainer") or {})
        if coscheduling:
            labels = pod_template.setdefault("metadata", {}).setdefault("labels", {})
            labels[POD_GROUP_LABEL] = (trainjob.get("metadata") or {}).get("name") or ""
    return rjobs


def _containers(pod_template: dict, name: str) -> list[dict]:
    containers = (pod_template.get("spec") or {}).get("containers") or []
    return [c for c in containers if c.get("name") == name]


def _upsert_env(container: dict, env: list) -> None:
    if env:
        container["env"] = strategic_merge(container.get("env") or [], list(env), "env")


def _initializer(pod_template: dict, step: str, initializer: Mapping) -> None:
    source = initializer.get("dataset" if step == INITIALIZERS[0] else "model")
    if not source:
        return
    for container in _containers(pod_template, step):
        if source.get("storageUri") is not None:
            _upsert_env(container, [{"name": STORAGE_URI_ENV, "value": source["storageUri"]}])
        _upsert_env(container, source.get("env") or [])
        if source.get("secretRef"):
            secret = {"secretRef": {"name": source["secretRef"].get("name")}}
            container["envFrom"] = [*(container.get("envFrom") or []), secret]


def _trainer_command(pod_template: dict, trainer: Mapping) -> None:
    for container in _containers(pod_template, NODE):
        for field in ("image", "command", "args"):
            if trainer.get(field) is not None:
                container[field] = copy.deepcopy(trainer[field])


def _trainer_resources(pod_template: dict, trainer: Mapping) -> None:
    if not trainer:
        return
    for container in _containers(pod_template, NODE):
        resources = trainer.get("resourcesPerNode") or {}
        if resources.get("limits") is not None or resources.get("requests") is not None:
            container["resources"] = {
                k: copy.deepcopy(resources[k])
                for k in ("limits", "requests")
                if resources.get(k) is not None
            }
        _upsert_env(container, trainer.get("env") or [])
