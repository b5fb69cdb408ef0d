"""An AppWrapper's components and their pod sets, as the AppWrapper controller (v1.2.0, the
version Kueue v0.17.0 builds against; pkg/utils) reads them. Pure.

A component's pod sets are, in this order of preference: those the controller recorded in
`status.componentStatus` (once it has one per component), those declared in the component's
`podSets`, or those inferred from the wrapped kind. A pod set names a path in the component
(`template.spec.template`, `template.spec.replicatedJobs[0].template.spec.template`), its
`replicas` (1), and annotations naming the label that ranks its pods.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

POD_INDEX_LABEL_ANNOTATION = "workload.codeflare.dev.appwrapper/tas-pod-index-label"
SUB_GROUP_INDEX_LABEL_ANNOTATION = "workload.codeflare.dev.appwrapper/tas-sub-group-index-label"
SUB_GROUP_COUNT_ANNOTATION = "workload.codeflare.dev.appwrapper/tas-sub-group-count"

JOB_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
JOBSET_JOB_INDEX = "jobset.sigs.k8s.io/job-index"
KUBEFLOW_REPLICA_INDEX = "training.kubeflow.org/replica-index"

_STEP = re.compile(r"\.([^.\[]+)|\[(-?\d+)\]")


class PathError(ValueError):
    """A pod set path that does not lead to a value of the kind wanted."""


@dataclass(frozen=True)
class ComponentPodSet:
    component: int  # index in spec.components
    path: str
    replicas: int = 1
    annotations: Mapping[str, str] = field(default_factory=dict)


def value_at(component: Mapping, path: str) -> object:
    """The value at `path` ("template" then `.field` and `[index]` steps) in a component."""
    if not path.startswith("template"):
        raise PathError(f"{path!r}: the first element of the path must be 'template'")
    cursor: object = component.get("template")
    rest = path[len("template") :]
    while rest:
        step = _STEP.match(rest)
        if step is None:
            raise PathError(f"{path!r}: invalid path element {rest!r}")
        key, index = step.groups()
        if key is not None:
            if not isinstance(cursor, Mapping) or key not in cursor:
                raise PathError(f"{path!r}: missing field {key!r}")
            cursor = cursor[key]
        else:
            position = int(index)
            if not isinstance(cursor, list) or not 0 <= position < len(cursor):
                raise PathError(f"{path!r}: index {position} out of bounds")
            cursor = cursor[position]
        rest = rest[step.end() :]
    return cursor


def pod_template(component: Mapping, path: str) -> dict:
    """The pod template at `path`: its labels, annotations and spec (a Pod's, too)."""
    found = value_at(component, path)
    if not isinstance(found, Mapping) or not isinstance(found.get("spec"), Mapping):
        raise PathError(f"{path!r}: does not contain a pod spec")
    meta = found.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    out_meta = {k: dict(meta[k]) for k in ("labels", "annotations") if meta.get(k)}
    return {"metadata": out_meta, "spec": dict(found["spec"])}


def _int_at(component: Mapping, path: str) -> int | None:
    try:
        value = value_at(component, path)
    except PathError:
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _has(component: Mapping, path: str) -> bool:
    try:
        value_at(component, path)
    except PathError:
        return False
    return True


def infer(component: Mapping, index: int) -> list[ComponentPodSet]:
    """The pod sets of a known wrapped kind (AppWrapper's InferPodSets)."""
    template = component.get("template") or {}
    kind = (template.get("apiVersion"), template.get("kind"))
    if kind == ("batch/v1", "Job"):
        return [_job(component, index, "template.spec", "template.spec.template")]
    if kind == ("jobset.x-k8s.io/v1alpha2", "JobSet"):
        return _jobset(component, index)
    if kind == ("kubeflow.org/v1", "PyTorchJob"):
        return _pytorchjob(component, index)
    if kind == ("ray.io/v1", "RayCluster"):
        return _ray(component, index, "template.spec.")
    if kind == ("ray.io/v1", "RayJob"):
        return _ray(component, index, "template.spec.rayClusterSpec.")
    if kind == ("v1", "Pod"):
        return [ComponentPodSet(index, "template")]
    if kind in (("apps/v1", "Deployment"), ("apps/v1", "StatefulSet")):
        if not _has(component, "template.spec.template"):
            return []
        replicas = _int_at(component, "template.spec.replicas")
        return [
            ComponentPodSet(index, "template.spec.template", 1 if replicas is None else replicas)
        ]
    return []


def _job(component: Mapping, index: int, spec: str, path: str) -> ComponentPodSet:
    parallelism = _int_at(component, f"{spec}.parallelism")
    count = 1 if parallelism is None else parallelism
    completions = _int_at(component, f"{spec}.completions")
    if completions is not None and completions < count:
        count = completions
    return ComponentPodSet(index, path, count, {POD_INDEX_LABEL_ANNOTATION: JOB_COMPLETION_INDEX})


def _jobset(component: Mapping, index: int) -> list[ComponentPodSet]:
    out = []
    rjobs = (component.get("template") or {}).get("spec", {}).get("replicatedJobs") or []
    for i in range(len(rjobs) if isinstance(rjobs, list) else 0):
        prefix = f"template.spec.replicatedJobs[{i}]"
        if not _has(component, f"{prefix}.template"):
            continue
        job = _job(component, index, f"{prefix}.template.spec", f"{prefix}.template.spec.template")
        replicas = _int_at(component, f"{prefix}.replicas")
        replicas = 1 if replicas is None else replicas
        annotations = {
            POD_INDEX_LABEL_ANNOTATION: JOB_COMPLETION_INDEX,
            SUB_GROUP_INDEX_LABEL_ANNOTATION: JOBSET_JOB_INDEX,
            SUB_GROUP_COUNT_ANNOTATION: str(replicas),
        }
        out.append(ComponentPodSet(index, job.path, replicas * job.replicas, annotations))
    return out


def _pytorchjob(component: Mapping, index: int) -> list[ComponentPodSet]:
    out = []
    for replica_type in ("Master", "Worker"):
        prefix = f"template.spec.pytorchReplicaSpecs.{replica_type}"
        if _has(component, f"{prefix}.template"):
            replicas = _int_at(component, f"{prefix}.replicas")
            out.append(
                ComponentPodSet(
                    index,
                    f"{prefix}.template",
                    1 if replicas is None else replicas,
                    {POD_INDEX_LABEL_ANNOTATION: KUBEFLOW_REPLICA_INDEX},
                )
            )
    return out


def _ray(component: Mapping, index: int, cluster: str) -> list[ComponentPodSet]:
    out = [ComponentPodSet(index, f"{cluster}headGroupSpec.template", 1)]
    try:
        workers = value_at(component, f"{cluster}workerGroupSpecs")
    except PathError:
        workers = []
    for i in range(len(workers) if isinstance(workers, list) else 0):
        prefix = f"{cluster}workerGroupSpecs[{i}]"
        if _has(component, f"{prefix}.template"):
            replicas = _int_at(component, f"{prefix}.replicas")
            out.append(
                ComponentPodSet(index, f"{prefix}.template", 1 if replicas is None else replicas)
            )
    return out


def _declared(index: int, pod_sets: list) -> list[ComponentPodSet]:
    return [
        ComponentPodSet(
            index,
            ps.get("path") or "",
            1 if ps.get("replicas") is None else int(ps["replicas"]),
            dict(ps.get("annotations") or {}),
        )
        for ps in pod_sets
    ]


def component_pod_sets(appwrapper: Mapping) -> list[ComponentPodSet]:
    """Every component's pod sets, in component order (AppWrapper's GetComponentPodSpecs)."""
    components = list((appwrapper.get("spec") or {}).get("components") or [])
    statuses = list((appwrapper.get("status") or {}).get("componentStatus") or [])
    out: list[ComponentPodSet] = []
    for index, component in enumerate(components):
        if len(statuses) == len(components):
            out.extend(_declared(index, statuses[index].get("podSets") or []))
        elif component.get("podSets"):
            out.extend(_declared(index, component["podSets"]))
        else:
            out.extend(infer(component, index))
    return out
