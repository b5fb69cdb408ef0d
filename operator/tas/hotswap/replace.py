"""Replacement assignments for failed nodes. Pure.

Only the pods of the failed node move: within the required domain (or the broken slice's
domain) of the surviving pods, the rest of the assignment unchanged. The workload's own pods on
surviving nodes keep their usage in the snapshot, since they keep running there.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

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
    return list(workload.nodes_to_replace)


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
