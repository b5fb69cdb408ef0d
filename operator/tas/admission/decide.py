"""One admission decision: quota, then topology, flavor by flavor, on the cache's snapshot.

Pure with respect to the cluster: it reads the state and returns what to write. The loop
assumes the returned charge in the cache before it writes the status.
"""

from __future__ import annotations

from dataclasses import dataclass

from tas.api import topologyassignment
from tas.api.annotations import TopologyRequestError, validate_levels, validate_pod_set_groups
from tas.api.format import format_milli
from tas.cache.projections import ClusterQueueInfo, FlavorQuota, WorkloadInfo
from tas.cache.state import Charge, ClusterState, PodSetCharge, with_pod
from tas.solver.types import PODS, PodSetRequest


@dataclass(frozen=True)
class Decision:
    admitted: bool
    message: str  # why not, or a note on success
    admission: dict | None = None  # status.admission, Kueue's v1beta1 shape
    charge: Charge | None = None
    invalid: bool = False  # the request itself is wrong: no capacity change will help


def _total(pod_sets: tuple[PodSetRequest, ...]) -> dict[str, int]:
    total: dict[str, int] = {}
    for ps in pod_sets:
        for resource, value in with_pod(ps.requests).items():
            total[resource] = total.get(resource, 0) + ps.count * value
    return total


def _quota_shortfall(
    state: ClusterState, cq: ClusterQueueInfo, fq: FlavorQuota, covered, need
) -> str | None:
    used = state.quota_usage(cq.name, fq.flavor)
    for resource in sorted(covered):
        want = need.get(resource, 0)
        if not want:
            continue
        free = fq.nominal.get(resource, 0) - used.get(resource, 0)
        if want > free:
            more = format_milli(resource, want - max(free, 0))
            return f"insufficient unused quota for {resource} in flavor {fq.flavor}, {more} more needed"
    return None


def _admission(cq: str, workload: WorkloadInfo, flavor: str, covered, placements) -> dict:
    by_name = {p.name: p.assignment for p in placements} if placements else {}
    out = []
    for ps in workload.pod_sets:
        # As Kueue: `pods` is listed only when the ClusterQueue covers it.
        per_pod = with_pod(ps.requests) if PODS in covered else ps.requests
        usage = {r: format_milli(r, ps.count * v) for r, v in sorted(per_pod.items())}
        flavors = {r: flavor for r in sorted(per_pod) if r in covered}
        if not flavors:
            # A pod set with no covered request (BestEffort) would record no flavor, and its
            # charge could not be rebuilt from the status after a restart.
            flavors = {PODS: flavor}
        entry = {
            "name": ps.name,
            "flavors": flavors,
            "resourceUsage": usage,
            "count": ps.count,
        }
        if ps.name in by_name:
            entry["topologyAssignment"] = topologyassignment.to_api(by_name[ps.name])
        out.append(entry)
    return {"clusterQueue": cq, "podSetAssignments": out}


def _check_requests(workload: WorkloadInfo, levels: tuple[str, ...]) -> None:
    validate_pod_set_groups(workload.pod_sets)
    for ps in workload.pod_sets:
        validate_levels(ps.topology, levels)


def decide(state: ClusterState, workload: WorkloadInfo, cq: ClusterQueueInfo) -> Decision:
    if workload.spec_error:
        return Decision(False, workload.spec_error, invalid=True)
    if not workload.pod_sets:
        return Decision(False, "spec.podSets is empty", invalid=True)
    need = _total(workload.pod_sets)
    requested = {r for r in need if r != PODS}
    group = next((g for g in cq.resource_groups if requested <= g.covered), None)
    if group is None:
        missing = sorted(requested - set().union(*(g.covered for g in cq.resource_groups)))
        return Decision(
            False, f"resource(s) {', '.join(missing)} not covered by ClusterQueue {cq.name}"
        )

    reasons = []
    for fq in group.flavors:
        flavor = state.flavors[fq.flavor]
        shortfall = _quota_shortfall(state, cq, fq, group.covered, need)
        if shortfall:
            reasons.append(shortfall)
            continue
        placements = None
        if flavor.topology_name:
            levels = state.topologies[flavor.topology_name]
            try:
                _check_requests(workload, levels)
            except TopologyRequestError as exc:
                return Decision(False, str(exc), invalid=True)
            result = state.snapshot(fq.flavor).find_assignments(workload.pod_sets)
            if not result.admitted:
                reasons.append(result.failure or "does not fit")
                continue
            placements = result.podsets
        elif any(not ps.topology.implied for ps in workload.pod_sets):
            reasons.append(f"flavor {fq.flavor} does not support TopologyAwareScheduling")
            continue
        charge = Charge(
            cluster_queue=cq.name,
            pod_sets=tuple(
                PodSetCharge(
                    name=ps.name,
                    flavor=fq.flavor,
                    count=ps.count,
                    per_pod=with_pod(ps.requests),
                    assignment=next(
                        (p.assignment for p in placements or () if p.name == ps.name), None
                    ),
                )
                for ps in workload.pod_sets
            ),
        )
        admission = _admission(cq.name, workload, fq.flavor, group.covered, placements)
        return Decision(
            True, f"Quota reserved in ClusterQueue {cq.name}", admission=admission, charge=charge
        )
    names = ", ".join(ps.name for ps in workload.pod_sets)
    return Decision(False, f"couldn't assign flavors to pod set {names}: {'; '.join(reasons)}")


def pending_order(workloads: list[WorkloadInfo]) -> list[WorkloadInfo]:
    """Kueue's queue order: higher priority first, then older first."""
    return sorted(workloads, key=lambda w: (-w.priority, w.created, w.name))
