"""The one writer of Workload status, used by admission, the Job integration and hot swap.

Each write is a merge patch guarded by the resourceVersion the decision was made on, so a
decision taken on a stale object never lands. On 409 the writer reads the object again and
hands it to the cache (as a watch event would), so the caller decides again on the newer object
instead of re-sending the same patch until the watch catches up. A 409 after which the object
still has the version the write was guarded by was not about the version (an admission webhook,
say): the same write would be refused again, so it is raised like any other failure, as
`KubeError`, for the caller to release what it assumed and back off.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from tas import metrics
from tas.api.constants import (
    KUEUE_API_VERSION,
    REASON_DEACTIVATED,
    REASON_NODE_FAILURES,
    REASON_PREEMPTED,
    TAS_GROUP,
)
from tas.cache.projections import WorkloadInfo
from tas.kube import Kube, KubeError, Ref, kueue_path, workload_path
from tas.workload import transitions

log = logging.getLogger(__name__)

# (the Workload read again, the resourceVersion the refused write was guarded by)
Refresh = Callable[[Mapping[str, Any], str], Awaitable[None]]


class StatusWriter(Protocol):
    """What evict and preempt write through: WorkloadWriter, or a test's fake."""

    async def write_status(self, workload: WorkloadInfo, status: Mapping[str, Any]) -> bool: ...

    async def record_event(
        self, workload: WorkloadInfo, type_: str, reason: str, message: str
    ) -> None: ...


class WorkloadWriter:
    def __init__(self, kube: Kube, refresh: Refresh | None = None) -> None:
        self.kube = kube
        self.refresh = refresh  # takes a freshly read Workload into the cache
        self.conflicts = 0

    async def write_status(self, workload: WorkloadInfo, status: Mapping[str, Any]) -> bool:
        """True when written; False when the decision was stale (409, and the re-read shows a
        newer version) or the Workload is gone (404). Raises KubeError for anything else."""
        body = {"metadata": {"resourceVersion": workload.resource_version}, "status": dict(status)}
        path = workload_path(workload.namespace, workload.name)
        try:
            await self.kube.patch(path + "/status", body)
        except KubeError as exc:
            if exc.not_found:
                return False
            if not exc.conflict:
                raise
            self.conflicts += 1
            fresh = await self.kube.get(path)
            version = (fresh or {}).get("metadata", {}).get("resourceVersion")
            log.debug(
                "workload %s/%s: write on %s refused (409); read %s",
                workload.namespace,
                workload.name,
                workload.resource_version,
                version,
            )
            if version == workload.resource_version:
                raise  # not a version conflict: deciding again on the same object changes nothing
            if fresh is not None and self.refresh is not None:
                await self.refresh(fresh, workload.resource_version)
            return False
        return True

    async def settle(self, workload: WorkloadInfo) -> None:
        """After a write that may have landed unseen (see KubeError.may_have_landed): read the
        Workload, and hand it to the cache when it moved past the version the write was
        guarded by, so the cache holds what was stored. Raises KubeError when it cannot read."""
        fresh = await self.kube.get(workload_path(workload.namespace, workload.name))
        if fresh is None:
            return  # gone: the watch brings the deletion
        moved = (fresh.get("metadata") or {}).get("resourceVersion") != workload.resource_version
        if moved and self.refresh is not None:
            await self.refresh(fresh, workload.resource_version)

    async def record_event(
        self, workload: WorkloadInfo, type_: str, reason: str, message: str
    ) -> None:
        ref = Ref(KUEUE_API_VERSION, "Workload", workload.namespace, workload.name, workload.uid)
        await self.kube.event(ref, type_, reason, message)

    async def write_cluster_queue_status(self, name: str, status: Mapping[str, Any]) -> None:
        await self.kube.patch(
            kueue_path("clusterqueues", name=name) + "/status", {"status": dict(status)}
        )

    async def write_cohort_status(self, name: str, status: Mapping[str, Any]) -> None:
        await self.kube.patch(
            kueue_path("cohorts", name=name) + "/status", {"status": dict(status)}
        )

    async def write_placement_group(
        self, namespace: str, name: str, spec: Mapping[str, Any], status: Mapping[str, Any]
    ) -> None:
        """Write a PlacementGroup's status, creating the group (from its first member's
        annotations) when it does not exist yet."""
        collection = f"/apis/{TAS_GROUP}/v1alpha1/namespaces/{namespace}/placementgroups"
        try:
            await self.kube.patch(f"{collection}/{name}/status", {"status": dict(status)})
            return
        except KubeError as exc:
            if not exc.not_found:
                raise
        body = {
            "apiVersion": f"{TAS_GROUP}/v1alpha1",
            "kind": "PlacementGroup",
            "metadata": {"name": name, "namespace": namespace},
            "spec": dict(spec),
        }
        try:
            await self.kube.create(collection, body)
        except KubeError as exc:
            if not exc.conflict:  # made meanwhile by someone else: write the status on it
                raise
        await self.kube.patch(f"{collection}/{name}/status", {"status": dict(status)})

    async def write_local_queue_status(
        self, namespace: str, name: str, status: Mapping[str, Any]
    ) -> None:
        await self.kube.patch(
            kueue_path("localqueues", namespace, name) + "/status", {"status": dict(status)}
        )


async def evict(
    writer: StatusWriter, workload: WorkloadInfo, message: str, reason: str = REASON_NODE_FAILURES
) -> bool:
    """Evict (Kueue's reason and event, EvictedDueTo<reason>): the Job stops, and the quota is
    released once its pods are gone (the Job integration writes `transitions.released`)."""
    if not await writer.write_status(workload, transitions.evicted(workload, message, reason)):
        return False
    _count_eviction(workload, reason)
    log.info("evicted %s/%s: %s", workload.namespace, workload.name, message)
    event_type = "Normal" if reason == REASON_DEACTIVATED else "Warning"
    await writer.record_event(workload, event_type, "EvictedDueTo" + reason, message)
    return True


async def preempt(writer: StatusWriter, victim: WorkloadInfo, reason: str, message: str) -> bool:
    """Evict a victim of preemption (Kueue's conditions and events); False when the write was
    stale or the workload is gone. Its quota is released once its pods are gone."""
    if not await writer.write_status(victim, transitions.preempted(victim, reason, message)):
        return False
    _count_eviction(victim, REASON_PREEMPTED)
    log.info("preempted %s/%s: %s", victim.namespace, victim.name, message)
    await writer.record_event(victim, "Normal", REASON_PREEMPTED, message)
    await writer.record_event(victim, "Normal", "EvictedDueTo" + REASON_PREEMPTED, message)
    return True


def _count_eviction(workload: WorkloadInfo, reason: str) -> None:
    metrics.EVICTIONS.labels(reason).inc()
    if workload.admission_cq is not None:  # Kueue counts only evictions of admitted workloads
        metrics.workload_evicted(
            workload.admission_cq,
            (workload.namespace, workload.queue_name),
            workload.priority_class,
            workload.uid,
            reason,
        )
