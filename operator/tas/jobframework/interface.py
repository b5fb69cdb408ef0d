"""The interface of a kind held suspended until its Workload is admitted (Kueue's GenericJob).

batch/v1 Job and JobSet implement it; the reconciler (reconciler.py) does the rest the same way
for both. Every method is pure: the object as watched in, a decision or a patch out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from tas.api.frameworks import Resource
from tas.cache.projections import FlavorInfo, WorkloadInfo


class ReferenceMissing(LookupError):
    """An object the pod sets are built from is not in the cluster (yet): a TrainJob's
    runtime. The Workload is built once it appears (its watch syncs the owners again)."""


@dataclass(frozen=True)
class Finished:
    succeeded: bool
    message: str


class GenericJob(Protocol):
    @property
    def resource(self) -> Resource: ...  # read-only: a kind may be a frozen dataclass

    def pod_sets(
        self,
        obj: Mapping,
    ) -> list[dict]:
        """The Workload's spec.podSets; raises TopologyRequestError for a bad annotation,
        ReferenceMissing when an object they are built from is missing."""

    def priority(self, obj: Mapping) -> int: ...

    def suspended(self, obj: Mapping) -> bool: ...

    def finished(self, obj: Mapping) -> Finished | None: ...

    def start_patch(
        self, obj: Mapping, workload: WorkloadInfo, flavors: Mapping[str, FlavorInfo]
    ) -> dict:
        """The merge patch that readies every pod template for its admitted pod set (gate,
        labels, the flavor's node selector and tolerations) and unsuspends."""

    def stop_patch(self, obj: Mapping) -> dict:
        """Suspend: the owner's controller removes the active pods."""

    def restore_patch(self, obj: Mapping, workload: WorkloadInfo) -> dict | None:
        """Undo what start_patch put into the templates of a stopped object; None when there
        is nothing to undo, or the templates may not change yet."""

    def needs_start_time_reset(self, obj: Mapping) -> bool:
        """A suspended object whose templates stay immutable until its status is reset."""


@runtime_checkable
class JobWithPriorityClass(Protocol):
    """A GenericJob that may name a PriorityClass in a field of its own, ahead of its pod
    templates' (Kueue's JobWithPriorityClass)."""

    def priority_class(self, obj: Mapping) -> tuple[str, str] | None:
        """(class name, the field naming it), or None."""


@runtime_checkable
class JobWithSkip(Protocol):
    """A kind some of whose queued objects are not ours to admit (Kueue's JobWithSkip: a
    RayJob on an existing cluster, a RayCluster its RayJob made)."""

    def skips(self, obj: Mapping) -> bool: ...


def guarded(obj: Mapping, body: dict) -> dict:
    """A merge patch that applies only to the version `obj` was read at."""
    return {"metadata": {"resourceVersion": obj["metadata"]["resourceVersion"]}, **body}


def finished_at_condition(
    obj: Mapping, complete_type: str, *, succeeded: str, failed: str
) -> Finished | None:
    """Finished at the first True status condition of type `complete_type` or "Failed": with
    its message (a failure's reason next), else `succeeded` or `failed`."""
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("status") != "True":
            continue
        if cond.get("type") == complete_type:
            return Finished(True, cond.get("message") or succeeded)
        if cond.get("type") == "Failed":
            return Finished(False, cond.get("message") or cond.get("reason") or failed)
    return None
