"""RayService as a GenericJob (jobframework/interface.py), as Kueue's
pkg/controller/jobs/rayservice/rayservice_controller.go.

KubeRay makes, for a RayService, a RayCluster from `rayClusterSpec` that it controls
(RayService -> RayCluster -> head and worker pods), `suspend` included.

- Pod sets: the cluster's (integrations/ray/cluster_spec.py): "head", then one per worker
  group.
- Held by `spec.rayClusterSpec.suspend`; started by readying every template and unsuspending.
- Never finished: a RayService serves until deleted (Kueue's Finished says so too).
"""

from __future__ import annotations

from collections.abc import Mapping

from tas.api.frameworks import RAYSERVICE
from tas.cache.projections import FlavorInfo, WorkloadInfo
from tas.integrations.ray import cluster_spec
from tas.jobframework.interface import Finished, guarded

CLUSTER_SPEC = "spec.rayClusterSpec"


def cluster_of(obj: Mapping) -> dict:
    return dict((obj.get("spec") or {}).get("rayClusterSpec") or {})


def cluster_patch(obj: Mapping, patch: dict) -> dict:
    return guarded(obj, {"spec": {"rayClusterSpec": patch}})


class _RayService:
    resource = RAYSERVICE

    def pod_sets(
        self,
        obj: Mapping,
    ) -> list[dict]:
        return cluster_spec.pod_sets(cluster_of(obj), CLUSTER_SPEC)

    def priority(self, obj: Mapping) -> int:
        return cluster_spec.priority(cluster_of(obj))

    def suspended(self, obj: Mapping) -> bool:
        return bool(cluster_of(obj).get("suspend"))

    def finished(self, obj: Mapping) -> Finished | None:
        return None

    def start_patch(
        self, obj: Mapping, workload: WorkloadInfo, flavors: Mapping[str, FlavorInfo]
    ) -> dict:
        patch = cluster_spec.start_patch(cluster_of(obj), workload, flavors)
        return cluster_patch(obj, {"suspend": False, **patch})

    def stop_patch(self, obj: Mapping) -> dict:
        return cluster_patch(obj, {"suspend": True})

    def restore_patch(self, obj: Mapping, workload: WorkloadInfo) -> dict | None:
        if not self.suspended(obj):
            return None
        patch = cluster_spec.restore_patch(cluster_of(obj), workload)
        return None if patch is None else cluster_patch(obj, patch)

    def needs_start_time_reset(self, obj: Mapping) -> bool:
        return False


RAY_SERVICE = _RayService()
