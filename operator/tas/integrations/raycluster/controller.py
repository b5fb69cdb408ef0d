"""RayCluster as a GenericJob (jobframework/interface.py), as Kueue's
pkg/controller/jobs/raycluster/raycluster_controller.go.

- Pod sets: the spec's (integrations/ray/cluster_spec.py): "head", then one per worker group.
- Held by `spec.suspend` until admitted; started by readying every template and unsuspending.
- Never finished: a RayCluster runs until deleted (Kueue's Finished says so too).
- A RayCluster a RayJob or RayService controls carries its parent's labels, queue name
  included (KubeRay copies them): it is admitted with its parent, never on its own (Kueue's
  ancestor check). Its pods are the parent's Workload's.
"""

from __future__ import annotations

from collections.abc import Mapping

from tas.api.frameworks import RAYCLUSTER, RAYJOB, RAYSERVICE
from tas.cache.projections import FlavorInfo, WorkloadInfo
from tas.integrations.ray import cluster_spec
from tas.jobframework.interface import Finished, guarded

SPEC = "spec"
RAY_PARENTS = (RAYJOB, RAYSERVICE)


def spec_of(obj: Mapping) -> dict:
    return dict(obj.get("spec") or {})


def ray_parent(obj: Mapping) -> str | None:
    """The uid of the RayJob or RayService controlling this RayCluster, if one does."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller") and any(
            ref.get("kind") == parent.kind and ref.get("apiVersion") == parent.api_version
            for parent in RAY_PARENTS
        ):
            return ref.get("uid")
    return None


class _RayCluster:
    resource = RAYCLUSTER

    def pod_sets(
        self,
        obj: Mapping,
    ) -> list[dict]:
        return cluster_spec.pod_sets(spec_of(obj), SPEC)

    def priority(self, obj: Mapping) -> int:
        return cluster_spec.priority(spec_of(obj))

    def suspended(self, obj: Mapping) -> bool:
        return bool(spec_of(obj).get("suspend"))

    def finished(self, obj: Mapping) -> Finished | None:
        return None

    def skips(self, obj: Mapping) -> bool:
        return ray_parent(obj) is not None

    def start_patch(
        self, obj: Mapping, workload: WorkloadInfo, flavors: Mapping[str, FlavorInfo]
    ) -> dict:
        patch = cluster_spec.start_patch(spec_of(obj), workload, flavors)
        return guarded(obj, {"spec": {"suspend": False, **patch}})

    def stop_patch(self, obj: Mapping) -> dict:
        return guarded(obj, {"spec": {"suspend": True}})

    def restore_patch(self, obj: Mapping, workload: WorkloadInfo) -> dict | None:
        if not self.suspended(obj):
            return None
        patch = cluster_spec.restore_patch(spec_of(obj), workload)
        return None if patch is None else guarded(obj, {"spec": patch})

    def needs_start_time_reset(self, obj: Mapping) -> bool:
        return False


RAY_CLUSTER = _RayCluster()
