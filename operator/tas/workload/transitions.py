"""Every Workload status transition, as pure functions: current WorkloadInfo in, status patch out.

Admission, the Job integration and hot swap all change a Workload's status only through these,
and write them only through `writer.WorkloadWriter`. The condition types, reasons and messages
are Kueue's, so `kubectl describe workload` reads the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tas.api import conditions as cond
from tas.api import topologyassignment
from tas.api.constants import (
    COND_ADMITTED,
    COND_EVICTED,
    COND_FINISHED,
    COND_PREEMPTED,
    COND_QUOTA_RESERVED,
    COND_REQUEUED,
    REASON_ADMITTED,
    REASON_DEACTIVATED,
    REASON_DEFRAGMENTED,
    REASON_EVICTED,
    REASON_FAILED,
    REASON_NO_RESERVATION,
    REASON_NODE_FAILURES,
    REASON_PENDING,
    REASON_PREEMPTED,
    REASON_QUOTA_RESERVED,
    REASON_REACTIVATED,
    REASON_SUCCEEDED,
)
from tas.cache.projections import WorkloadInfo
from tas.solver.types import TopologyAssignment


def admitted(workload: WorkloadInfo, admission: Mapping[str, Any], message: str) -> dict[str, Any]:
    """Quota reserved and admitted in one step (no admission checks), with the assignment."""
    g = workload.generation
    conditions = cond.set_condition(
        workload.conditions, COND_QUOTA_RESERVED, True, REASON_QUOTA_RESERVED, message, generation=g
    )
    conditions = cond.set_condition(
        conditions, COND_ADMITTED, True, REASON_ADMITTED, "The workload is admitted", generation=g
    )
    if workload.evicted:  # admitted again after an eviction; Kueue keeps the old message
        previous = (workload.condition(COND_EVICTED) or {}).get("message", "")
        conditions = cond.set_condition(
            conditions,
            COND_EVICTED,
            False,
            REASON_QUOTA_RESERVED,
            "Previously: " + previous,
            generation=g,
        )
    return {"admission": dict[str, Any](admission), "conditions": conditions}


def pending(
    workload: WorkloadInfo, message: str, reason: str = REASON_PENDING
) -> dict[str, Any] | None:
    """QuotaReserved=False with why; None when the workload already says exactly that."""
    current = workload.condition(COND_QUOTA_RESERVED)
    if current and current.get("status") == "False" and current.get("message") == message:
        return None
    conditions = cond.set_condition(
        workload.conditions,
        COND_QUOTA_RESERVED,
        False,
        reason,
        message,
        generation=workload.generation,
    )
    return {"conditions": conditions}


def evicted(
    workload: WorkloadInfo, message: str, reason: str = REASON_NODE_FAILURES
) -> dict[str, Any]:
    """Eviction, first step: the Job is to stop. The quota stays reserved until its pods are
    gone (see `released`), so a new admission never lands on capacity that terminating pods
    still hold.

    A Workload owned by a single Pod is never requeued: the pod integration deletes the
    evicted pod, and the Workload goes with it. Requeued=False (the eviction's reason and
    message) says so, as Kueue's SkipReassignmentForPodOwnedWorkloads writes it; requeuing it
    would place a Workload no pod can ever use. Here that holds whatever the gate."""
    g = workload.generation
    conditions = cond.set_condition(
        workload.conditions, COND_EVICTED, True, reason, message, generation=g
    )
    conditions = cond.set_condition(
        conditions, COND_ADMITTED, False, REASON_EVICTED, message, generation=g
    )
    if workload.owned_by_single_pod:
        conditions = cond.set_condition(
            conditions, COND_REQUEUED, False, reason, message, generation=g
        )
    return {"conditions": conditions, "unhealthyNodes": None}


def preempted(workload: WorkloadInfo, reason: str, message: str) -> dict[str, Any]:
    """Eviction by preemption: Evicted (reason Preempted) and Preempted (why: InClusterQueue,
    ...), both with the message naming the preemptor. The quota is released as for any
    eviction, once the pods are gone."""
    status = evicted(workload, message, REASON_PREEMPTED)
    status["conditions"] = cond.set_condition(
        status["conditions"],
        COND_PREEMPTED,
        True,
        reason,
        message,
        generation=workload.generation,
    )
    return status


# Evictions after which the workload goes back to its queue at once (Kueue's rule); after any
# other (a deactivation) it waits until something requeues it.
REQUEUED_AFTER = (REASON_PREEMPTED, REASON_NODE_FAILURES, REASON_DEFRAGMENTED)

DEACTIVATED_MESSAGE = "The workload is deactivated"
REACTIVATED_MESSAGE = "The workload was reactivated"


def deactivated(workload: WorkloadInfo) -> dict[str, Any]:
    """spec.active is false: evicted as Kueue does (reason Deactivated); the quota is released
    once the pods are gone, and the workload is not queued until it is active again."""
    return evicted(workload, DEACTIVATED_MESSAGE, REASON_DEACTIVATED)


def reactivated(workload: WorkloadInfo) -> dict[str, Any]:
    """spec.active is true again after a deactivation: Requeued=True, reason Reactivated."""
    conditions = cond.set_condition(
        workload.conditions,
        COND_REQUEUED,
        True,
        REASON_REACTIVATED,
        REACTIVATED_MESSAGE,
        generation=workload.generation,
    )
    return {"conditions": conditions}


def released(workload: WorkloadInfo) -> dict[str, Any]:
    """Eviction, second step, once the Job's pods are gone: the quota is released, and, as in
    Kueue, Requeued says whether the workload waits in its queue again: True after a
    preemption or node failures, False (with the eviction's reason) after a deactivation."""
    g = workload.generation
    evicted = workload.condition(COND_EVICTED) or {}
    reason = evicted.get("reason") or REASON_EVICTED
    message = evicted.get("message", "")
    conditions = cond.set_condition(
        workload.conditions, COND_QUOTA_RESERVED, False, REASON_PENDING, message, generation=g
    )
    conditions = cond.set_condition(
        conditions,
        COND_ADMITTED,
        False,
        REASON_NO_RESERVATION,
        "The workload has no reservation",
        generation=g,
    )
    conditions = cond.set_condition(
        conditions, COND_REQUEUED, reason in REQUEUED_AFTER, reason, message, generation=g
    )
    return {"conditions": conditions, "admission": None}


def finished(workload: WorkloadInfo, succeeded: bool, message: str) -> dict[str, Any]:
    conditions = cond.set_condition(
        workload.conditions,
        COND_FINISHED,
        True,
        REASON_SUCCEEDED if succeeded else REASON_FAILED,
        message,
        generation=workload.generation,
    )
    return {"conditions": conditions}


def condition(
    workload: WorkloadInfo, type_: str, status: bool, reason: str, message: str
) -> dict[str, Any]:
    """One more condition an integration keeps (a pod group's WaitingForReplacementPods)."""
    conditions = cond.set_condition(
        workload.conditions, type_, status, reason, message, generation=workload.generation
    )
    return {"conditions": conditions}


def unhealthy_nodes(nodes: list[str]) -> dict[str, Any]:
    """status.unhealthyNodes as Kueue lists it; an empty list clears the field."""
    return {"unhealthyNodes": [{"name": n} for n in nodes] or None}


def replaced(
    workload: WorkloadInfo,
    assignments: Mapping[str, TopologyAssignment],
    remaining: Sequence[str] = (),
) -> dict[str, Any]:
    """status.admission with the new assignments of the pod sets that moved, and
    unhealthyNodes cleared but for `remaining`, the failed nodes left for later passes."""
    admission = dict(workload.admission_raw or {})
    pod_sets = []
    for ps in admission.get("podSetAssignments") or []:
        ps = dict(ps)
        if ps["name"] in assignments:
            ps["topologyAssignment"] = topologyassignment.to_stored(assignments[ps["name"]])
        pod_sets.append(ps)
    return {
        "admission": {**admission, "podSetAssignments": pod_sets},
        **unhealthy_nodes(list(remaining)),
    }


def no_replacement_message(nodes: list[str], reason: str) -> str:
    return f"Workload was evicted as there was no replacement for unhealthy node(s): {', '.join(nodes)}: {reason}"


def multiple_failures_message(nodes: list[str]) -> str:
    return f"Workload eviction triggered due to multiple TAS assigned node failures, including: {', '.join(nodes)}"
