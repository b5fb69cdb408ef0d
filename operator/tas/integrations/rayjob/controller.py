"""RayJob as a GenericJob (jobframework/interface.py), as Kueue's
pkg/controller/jobs/rayjob/rayjob_controller.go.

KubeRay makes, for a RayJob it controls, a RayCluster from `rayClusterSpec` (RayJob ->
RayCluster -> head and worker pods) and, in K8sJobMode, a submitter batch/v1 Job (RayJob ->
Job -> pod) from `submitterPodTemplate` or its default.

- Pod sets: the cluster's (integrations/ray/cluster_spec.py), then "submitter" (1 pod) in
  K8sJobMode. In SidecarMode KubeRay adds the submitter container to the head pod, and so does
  the head pod set (Kueue v0.17.7).
- Held by `spec.suspend`; started by readying every template, the submitter's included: a
  RayJob without a `submitterPodTemplate` gets KubeRay's default one, readied, so that its pod
  is placed as admitted (Kueue v0.17.7). Restored templates are the user's again; a default
  submitter template we wrote goes again.
- Finished when its deployment is Complete or Failed; succeeded when the Ray job SUCCEEDED.
- Skipped with a `clusterSelector`: it runs on a cluster that is not its own.
"""

from __future__ import annotations

from collections.abc import Mapping

from tas.api.frameworks import RAYJOB
from tas.cache.projections import FlavorInfo, WorkloadInfo
from tas.integrations.ray import cluster_spec
from tas.jobframework import named_templates
from tas.jobframework.interface import Finished, guarded
from tas.jobframework.named_templates import NamedTemplate
from tas.jobframework.podset import merge_patch
from tas.jobframework.workload import template_priority

CLUSTER_SPEC = "spec.rayClusterSpec"
SUBMITTER = "submitter"
SUBMITTER_TEMPLATE = "spec.submitterPodTemplate"
K8S_JOB_MODE = "K8sJobMode"
SIDECAR_MODE = "SidecarMode"
SUBMITTER_CONTAINER = "ray-job-submitter"
FINISHED_DEPLOYMENTS = ("Complete", "Failed")
SUCCEEDED = "SUCCEEDED"
# KubeRay's default submitter container's resources (common/job.go GetDefaultSubmitterContainer)
SUBMITTER_RESOURCES = {
    "limits": {"cpu": "1", "memory": "1Gi"},
    "requests": {"cpu": "500m", "memory": "200Mi"},
}


def spec_of(obj: Mapping) -> dict:
    return dict(obj.get("spec") or {})


def cluster_of(obj: Mapping) -> dict:
    return dict(spec_of(obj).get("rayClusterSpec") or {})


def mode(obj: Mapping) -> str:
    return str(spec_of(obj).get("submissionMode") or "")


def default_submitter_template(obj: Mapping) -> dict:
    """KubeRay's submitter pod template when the RayJob has none: the head's image."""
    head_containers = (cluster_spec.head_template(cluster_of(obj)).get("spec") or {}).get(
        "containers"
    ) or [{}]
    container = {"name": SUBMITTER_CONTAINER, "resources": SUBMITTER_RESOURCES}
    if head_containers[0].get("image"):
        container["image"] = head_containers[0]["image"]
    return {"spec": {"containers": [container], "restartPolicy": "Never"}}


def submitter_template(obj: Mapping) -> dict:
    return dict(spec_of(obj).get("submitterPodTemplate") or default_submitter_template(obj))


def templates(obj: Mapping) -> list[NamedTemplate]:
    out = cluster_spec.templates(cluster_of(obj), CLUSTER_SPEC)
    if mode(obj) == SIDECAR_MODE:
        out[0] = _with_sidecar(out[0])
    if mode(obj) == K8S_JOB_MODE:
        out.append(NamedTemplate(SUBMITTER, 1, submitter_template(obj), SUBMITTER_TEMPLATE))
    return out


def _with_sidecar(head: NamedTemplate) -> NamedTemplate:
    """The head as KubeRay runs it in SidecarMode: with the submitter container beside Ray's."""
    spec = dict(head.template.get("spec") or {})
    sidecar = {"name": SUBMITTER_CONTAINER, "resources": SUBMITTER_RESOURCES}
    spec["containers"] = [*(spec.get("containers") or []), sidecar]
    return NamedTemplate(head.name, head.count, {**head.template, "spec": spec}, head.path)


class _RayJob:
    resource = RAYJOB

    def pod_sets(
        self,
        obj: Mapping,
    ) -> list[dict]:
        return named_templates.pod_sets_of(templates(obj))

    def priority(self, obj: Mapping) -> int:
        return max(template_priority(t.template) for t in templates(obj))

    def suspended(self, obj: Mapping) -> bool:
        return bool(spec_of(obj).get("suspend"))

    def finished(self, obj: Mapping) -> Finished | None:
        status = obj.get("status") or {}
        deployment = status.get("jobDeploymentStatus")
        if deployment not in FINISHED_DEPLOYMENTS:
            return None
        succeeded = status.get("jobStatus") == SUCCEEDED
        return Finished(succeeded, status.get("message") or f"RayJob deployment {deployment}")

    def skips(self, obj: Mapping) -> bool:
        return bool(spec_of(obj).get("clusterSelector"))

    def start_patch(
        self, obj: Mapping, workload: WorkloadInfo, flavors: Mapping[str, FlavorInfo]
    ) -> dict:
        spec: dict = {"suspend": False}
        spec["rayClusterSpec"] = cluster_spec.start_patch(cluster_of(obj), workload, flavors)
        if mode(obj) == K8S_JOB_MODE:
            template = submitter_template(obj)
            patch = named_templates.start_patch(template, SUBMITTER, workload, flavors)
            written = spec_of(obj).get("submitterPodTemplate")
            spec["submitterPodTemplate"] = patch if written else merge_patch(template, patch)
        return guarded(obj, {"spec": spec})

    def stop_patch(self, obj: Mapping) -> dict:
        return guarded(obj, {"spec": {"suspend": True}})

    def restore_patch(self, obj: Mapping, workload: WorkloadInfo) -> dict | None:
        if not self.suspended(obj):
            return None
        spec: dict = {}
        cluster = cluster_spec.restore_patch(cluster_of(obj), workload)
        if cluster is not None:
            spec["rayClusterSpec"] = cluster
        written = spec_of(obj).get("submitterPodTemplate")
        if mode(obj) == K8S_JOB_MODE and written:
            patch = named_templates.restore_patch(written, SUBMITTER, workload)
            if patch is not None:
                as_user_wrote = merge_patch(written, patch)
                ours = as_user_wrote == default_submitter_template(obj)
                spec["submitterPodTemplate"] = None if ours else patch
        return guarded(obj, {"spec": spec}) if spec else None

    def needs_start_time_reset(self, obj: Mapping) -> bool:
        return False


RAY_JOB = _RayJob()
