"""A RayClusterSpec as Kueue v0.17 reads it (pkg/controller/jobs/raycluster/common.go), pure.

- Pod sets: "head" (1 pod, the headGroupSpec's template), then one per worker group, named
  after its `groupName`, of `replicas` pods (1 when unset) times `numOfHosts` (when above 1).
  Kueue reads neither minReplicas nor maxReplicas: KubeRay clamps `replicas` between them, so
  the two agree when minReplicas <= replicas <= maxReplicas. Ray pods carry no rank: Kueue gives
  their topology requests no pod index label, so they are placed unordered.
- Start and restore: every template readied for its admitted pod set, and undone once stopped.
- Refusals (Kueue's ValidateCreate), each naming its field: in-tree autoscaling (Kueue allows it
  only for elastic jobs, which we do not implement), more than 7 worker groups (a Workload has
  at most 8 pod sets), a worker group named "head".

Every function takes the spec and the field path it is at ("spec" for a RayCluster,
"spec.rayClusterSpec" for a RayJob or RayService), so that messages name the user's field.
"""

from __future__ import annotations

from collections.abc import Mapping

from tas.cache.projections import FlavorInfo, WorkloadInfo
from tas.jobframework import named_templates
from tas.jobframework.named_templates import NamedTemplate
from tas.jobframework.podset import merge_patch
from tas.jobframework.workload import template_priority

HEAD = "head"
MAX_WORKER_GROUPS = 7  # a Workload's 8 pod sets, less the head's

# Kueue's messages, verbatim
AUTOSCALING_NEEDS_SLICING = (
    "a kueue managed job should only use autoscaling when workload slicing is enabled"
)
AUTOSCALING_NEEDS_ELASTIC = (
    "a kueue managed job can use autoscaling only when the ElasticJobsViaWorkloadSlices feature"
    " gate is on and the job is an elastic job"
)


def head_template(spec: Mapping) -> dict:
    return dict((spec.get("headGroupSpec") or {}).get("template") or {})


def worker_groups(spec: Mapping) -> list[dict]:
    return list(spec.get("workerGroupSpecs") or [])


def worker_count(group: Mapping) -> int:
    """Kueue's count for a worker group: replicas (1 when unset) times numOfHosts."""
    replicas = group.get("replicas")
    count = 1 if replicas is None else int(replicas)
    hosts = int(group.get("numOfHosts") or 1)
    return count * hosts if hosts > 1 else count


def templates(spec: Mapping, path: str) -> list[NamedTemplate]:
    """The head's and each worker group's template, in Kueue's pod-set order."""
    out = [NamedTemplate(HEAD, 1, head_template(spec), f"{path}.headGroupSpec.template")]
    for index, group in enumerate(worker_groups(spec)):
        out.append(
            NamedTemplate(
                _name(group),
                worker_count(group),
                dict(group.get("template") or {}),
                f"{path}.workerGroupSpecs[{index}].template",
            )
        )
    return out


def priority(spec: Mapping) -> int:
    """The highest `priority` of the templates (the Workload's without priority classes)."""
    return max(template_priority(t.template) for t in templates(spec, ""))


def pod_sets(spec: Mapping, path: str) -> list[dict]:
    """Raises TopologyRequestError naming the template's field path."""
    return named_templates.pod_sets_of(templates(spec, path))


def start_patch(spec: Mapping, workload: WorkloadInfo, flavors: Mapping[str, FlavorInfo]) -> dict:
    """The merge patch of the spec that readies every template for its admitted pod set."""
    head = named_templates.start_patch(head_template(spec), HEAD, workload, flavors)
    workers = []
    for group in worker_groups(spec):
        template = dict(group.get("template") or {})
        patch = named_templates.start_patch(template, _name(group), workload, flavors)
        workers.append({**group, "template": merge_patch(template, patch)})
    # A merge patch replaces a list whole: every worker group goes, as read, templates new.
    return {"headGroupSpec": {"template": head}, "workerGroupSpecs": workers}


def restore_patch(spec: Mapping, workload: WorkloadInfo) -> dict | None:
    """The merge patch of the spec that undoes `start_patch`; None when there is nothing to."""
    out: dict = {}
    head = named_templates.restore_patch(head_template(spec), HEAD, workload)
    if head is not None:
        out["headGroupSpec"] = {"template": head}
    workers, changed = [], False
    for group in worker_groups(spec):
        template = dict(group.get("template") or {})
        patch = named_templates.restore_patch(template, _name(group), workload)
        if patch is not None:
            changed = True
            group = {**group, "template": merge_patch(template, patch)}
        workers.append(group)
    if changed:
        out["workerGroupSpecs"] = workers
    return out or None


def problems(spec: Mapping, path: str, autoscaling: str = AUTOSCALING_NEEDS_SLICING) -> list[str]:
    """Kueue's refusals of a queued spec, each naming its field (`autoscaling`: the message
    the kind gives for in-tree autoscaling)."""
    errors = []
    if spec.get("enableInTreeAutoscaling") is True:
        errors.append(f"{path}.enableInTreeAutoscaling: Invalid value: true: {autoscaling}")
    groups = worker_groups(spec)
    if len(groups) > MAX_WORKER_GROUPS:
        errors.append(
            f"{path}.workerGroupSpecs: Too many: {len(groups)}: "
            f"must have at most {MAX_WORKER_GROUPS} items"
        )
    for index, group in enumerate(groups):
        if group.get("groupName") == HEAD:
            errors.append(
                f"{path}.workerGroupSpecs[{index}].groupName: Forbidden: "
                f'"{HEAD}" is reserved for the head group'
            )
    return errors


def _name(group: Mapping) -> str:
    return str(group.get("groupName") or "")
