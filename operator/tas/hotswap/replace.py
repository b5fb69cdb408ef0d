"""Replacement assignments for failed nodes, and the eviction when there is none. Pure.

Only the pods of the failed node move: within the required domain (or the broken slice's
domain) of the surviving pods, the rest of the assignment unchanged. The workload's own pods on
surviving nodes keep their usage in the snapshot, since they keep running there.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tas.admission.decide import assignment_to_api
from tas.api import conditions as cond
from tas.api.constants import (
    COND_ADMITTED,
    COND_EVICTED,
    COND_QUOTA_RESERVED,
    COND_REQUEUED,
    REASON_EVICTED,
    REASON_NO_RESERVATION,
    REASON_NODE_FAILURES,
    REASON_PENDING,
)
from tas.cache.projections import WorkloadInfo
from tas.cache.state import Charge, ClusterState
from tas.solver.types import HOSTNAME_LEVEL, TopologyAssignment


@dataclass(frozen=True)
class Replacement:
    charge: Charge | None = None
    assignments: dict[str, TopologyAssignment] | None = None  # pod set -> new assignment
    failure: str | None = None


def assigned_hosts(assignment: TopologyAssignment | None) -> set[str]:
    if assignment is None or assignment.levels[-1:] != (HOSTNAME_LEVEL,):
        return set()
    return {d.values[-1] for d in assignment.domains}


def needs_replacement(workload: WorkloadInfo) -> list[str]:
    """Unhealthy nodes that still carry part of the workload's assignment."""
    hosts = (
        set().union(*(assigned_hosts(a.assignment) for a in workload.admissions))
        if workload.admissions
        else set()
    )
    return [n for n in workload.unhealthy_nodes if n in hosts]


def find_replacement(state: ClusterState, workload: WorkloadInfo, charge: Charge) -> Replacement:
    failed = needs_replacement(workload)
    requests = {ps.name: ps for ps in workload.pod_sets}
    new_pod_sets = list(charge.pod_sets)
    assignments: dict[str, TopologyAssignment] = {}
    for i, ps_charge in enumerate(new_pod_sets):
        assignment = ps_charge.assignment
        if assignment is None or ps_charge.flavor not in state.flavors:
            continue
        snapshot = state.snapshot(ps_charge.flavor)
        for node in failed:
            if node not in assigned_hosts(assignment):
                continue
            result = snapshot.find_replacement(requests[ps_charge.name], assignment, node)
            if not result.replaced:
                return Replacement(
                    failure=result.failure
                    or f"cannot find replacement assignment for unhealthy node: {node}"
                )
            assignment = result.assignment
        new_pod_sets[i] = replace(ps_charge, assignment=assignment)
        assignments[ps_charge.name] = assignment
    return Replacement(
        charge=replace(charge, pod_sets=tuple(new_pod_sets)), assignments=assignments
    )


def replaced_status(workload: WorkloadInfo, assignments: dict[str, TopologyAssignment]) -> dict:
    """status.admission with the new assignments, and unhealthyNodes cleared."""
    admission = dict(workload.admission_raw or {})
    pod_sets = []
    for ps in admission.get("podSetAssignments") or []:
        ps = dict(ps)
        if ps["name"] in assignments:
            ps["topologyAssignment"] = assignment_to_api(assignments[ps["name"]])
        pod_sets.append(ps)
    return {"admission": {**admission, "podSetAssignments": pod_sets}, "unhealthyNodes": None}


def evicted_status(workload: WorkloadInfo, message: str) -> dict:
    """Kueue's eviction for node failures, first step: the Job is to stop. The quota stays
    reserved until its pods are gone (see released_status), so a new admission never lands on
    capacity that terminating pods still hold."""
    g = workload.generation
    conditions = cond.set_condition(
        workload.conditions, COND_EVICTED, True, REASON_NODE_FAILURES, message, generation=g
    )
    conditions = cond.set_condition(
        conditions, COND_ADMITTED, False, REASON_EVICTED, message, generation=g
    )
    return {"conditions": conditions, "unhealthyNodes": None}


def released_status(workload: WorkloadInfo) -> dict:
    """Eviction, second step, once the Job's pods are gone: the quota is released and the
    workload waits in its queue again."""
    g = workload.generation
    evicted = (workload.condition(COND_EVICTED) or {}).get("message", "")
    message = f"The workload was evicted and requeued: {evicted}"
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
        conditions, COND_REQUEUED, True, REASON_EVICTED, message, generation=g
    )
    return {"conditions": conditions, "admission": None}


def no_replacement_message(nodes: list[str], reason: str) -> str:
    return f"Workload was evicted as there was no replacement for unhealthy node(s): {', '.join(nodes)}: {reason}"


def multiple_failures_message(nodes: list[str]) -> str:
    return f"Workload eviction triggered due to multiple TAS assigned node failures, including: {', '.join(nodes)}"
