"""The admission loop's writes, through the kube client."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from tas.cache.projections import WorkloadInfo
from tas.kube import KUEUE, Kube, KubeError, Ref

log = logging.getLogger(__name__)


class KubeStatusWriter:
    def __init__(self, kube: Kube) -> None:
        self.kube = kube

    async def write_workload_status(self, workload: WorkloadInfo, status: Mapping) -> bool:
        try:
            return await self.kube.patch_workload_status(
                workload.namespace, workload.name, workload.resource_version, status
            )
        except KubeError as exc:
            log.warning("status of %s/%s not written: %s", workload.namespace, workload.name, exc)
            return False

    async def record_event(
        self, workload: WorkloadInfo, type_: str, reason: str, message: str
    ) -> None:
        ref = Ref(
            "kueue.x-k8s.io/v1beta1", "Workload", workload.namespace, workload.name, workload.uid
        )
        await self.kube.event(ref, type_, reason, message)

    async def write_cluster_queue_status(self, name: str, status: Mapping) -> None:
        try:
            await self.kube.patch(f"{KUEUE}/clusterqueues/{name}/status", {"status": dict(status)})
        except KubeError as exc:
            log.warning("status of ClusterQueue %s not written: %s", name, exc)

    async def write_local_queue_status(self, namespace: str, name: str, status: Mapping) -> None:
        try:
            await self.kube.patch(
                f"{KUEUE}/namespaces/{namespace}/localqueues/{name}/status",
                {"status": dict(status)},
            )
        except KubeError as exc:
            log.warning("status of LocalQueue %s/%s not written: %s", namespace, name, exc)
