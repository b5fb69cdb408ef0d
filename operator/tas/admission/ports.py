"""What the admission loop needs from the API server; `workload.writer.WorkloadWriter` is it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from tas.cache.projections import WorkloadInfo


class WorkloadStatusWriter(Protocol):
    async def write_status(self, workload: WorkloadInfo, status: Mapping[str, Any]) -> bool:
        """Merge-patch status guarded by the workload's resourceVersion. False when the decision
        was stale (conflict: re-read) or the workload is gone; raises on any other failure."""

    async def settle(self, workload: WorkloadInfo) -> None:
        """Read the Workload back after a write that may have been stored unseen, and hand a
        newer version to the cache; raises when it cannot read."""

    async def record_event(
        self, workload: WorkloadInfo, type_: str, reason: str, message: str
    ) -> None: ...

    async def write_cluster_queue_status(self, name: str, status: Mapping[str, Any]) -> None: ...

    async def write_cohort_status(self, name: str, status: Mapping[str, Any]) -> None: ...

    async def write_local_queue_status(
        self, namespace: str, name: str, status: Mapping[str, Any]
    ) -> None: ...

    async def write_placement_group(
        self, namespace: str, name: str, spec: Mapping[str, Any], status: Mapping[str, Any]
    ) -> None:
        """Write a PlacementGroup's status, making the object first when it does not exist."""
