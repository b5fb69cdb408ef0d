"""What a workload holding quota takes: per pod set, its flavor, count, per-pod requests and
topology assignment, read from its status.admission. The cache sums these; admission,
preemption, exclusive groups and hot swap read them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tas.cache.projections import WorkloadInfo
from tas.solver.types import ONE_POD, PODS, TopologyAssignment, with_one_pod


@dataclass(frozen=True)
class PodSetCharge:
    name: str
    flavor: str
    count: int
    per_pod: Mapping[str, int]  # including the 1 "pods"
    assignment: TopologyAssignment | None

    @property
    def requests(self) -> dict[str, int]:
        """Per pod without the implicit 1 "pods", which a snapshot adds by itself."""
        out = dict(self.per_pod)
        out[PODS] = out.get(PODS, 0) - ONE_POD
        if not out[PODS]:
            del out[PODS]
        return out


@dataclass(frozen=True)
class Charge:
    cluster_queue: str
    pod_sets: tuple[PodSetCharge, ...]


def charge_of(workload: WorkloadInfo) -> Charge | None:
    """What a workload holding quota takes, read from its status.admission."""
    if not workload.has_quota:
        return None
    requests = {ps.name: ps.requests for ps in workload.pod_sets}
    pod_sets = tuple(
        PodSetCharge(
            name=a.name,
            flavor=a.flavor or "",
            count=a.count,
            per_pod=with_one_pod(requests.get(a.name, {})),
            assignment=a.assignment,
        )
        for a in workload.admissions
    )
    return Charge(cluster_queue=workload.admission_cq or "", pod_sets=pod_sets)
