"""Which admitted workloads a pending one may evict to fit: Kueue's classical preemption,
within one ClusterQueue.

Candidates are the workloads holding quota in the preemptor's ClusterQueue that its
`withinClusterQueue` policy allows, and that use a resource of the flavor short of room. In
Kueue's order (already evicted first, then lowest priority, then the most recently admitted)
each is taken out of a simulation of the flavor's quota and topology until the preemptor fits;
then each but the last is put back when the preemptor still fits without its removal. The
topology is part of the fit: a victim in a rack the preemptor cannot use frees nothing it
needs, and is put back. When even every candidate's removal would not make room, no one is
evicted.

Pure with respect to the cluster: the simulation changes the cache's flavor snapshot and
always restores it before returning.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from tas.api.constants import (
    LOWER_OR_NEWER_EQUAL_PRIORITY,
    LOWER_PRIORITY,
    NEVER,
    REASON_IN_CLUSTER_QUEUE,
)
from tas.cache.projections import ClusterQueueInfo, FlavorQuota, WorkloadInfo
from tas.cache.state import Charge, ClusterState
from tas.solver.types import PodSetRequest, TopologyAssignment

# Kueue's words for each Preempted reason, in the victim's message.
REASON_TEXT = {
    REASON_IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
}


@dataclass(frozen=True)
class Target:
    workload: WorkloadInfo
    reason: str


@dataclass(frozen=True)
class Preemption:
    """The victims, and where the preemptor goes once they are gone (by pod set name)."""

    targets: tuple[Target, ...]
    placements: Mapping[str, TopologyAssignment]


def allowed(policy: str, preemptor: WorkloadInfo, candidate: WorkloadInfo) -> bool:
    """Kueue's SatisfiesPreemptionPolicy for withinClusterQueue."""
    if policy == LOWER_PRIORITY:
        return candidate.priority < preemptor.priority
    if policy == LOWER_OR_NEWER_EQUAL_PRIORITY:
        return candidate.priority < preemptor.priority or (
            candidate.priority == preemptor.priority and preemptor.created < candidate.created
        )
    return False


def candidate_order(cq_name: str, now: datetime):
    """Kueue's CandidatesOrdering as a sort key: evicted first, other queues before the
    preemptor's own, lower priority first, most recently admitted first, then by uid."""

    def key(item: tuple[WorkloadInfo, Charge]):
        workload, charge = item
        reserved = workload.reserved_at or now
        return (
            not workload.evicted,
            charge.cluster_queue == cq_name,
            workload.priority,
            -reserved.timestamp(),
            workload.uid,
        )

    return key


def message(preemptor: WorkloadInfo, reason: str, preemptor_cq: str, victim_cq: str) -> str:
    """The victim's Evicted and Preempted message, worded as Kueue's."""
    return (
        f"Preempted to accommodate a workload (UID: {preemptor.uid or 'UNKNOWN'}, "
        f"JobUID: {preemptor.job_uid or 'UNKNOWN'}) due to {REASON_TEXT.get(reason, 'UNKNOWN')}; "
        f"preemptor path: /{preemptor_cq}; preemptee path: /{victim_cq}"
    )


class _Simulation:
    """The flavor's quota and topology with some charges taken out; undone by `restore`."""

    def __init__(self, state: ClusterState, cq: ClusterQueueInfo, fq: FlavorQuota) -> None:
        self.state = state
        self.cq = cq
        self.fq = fq
        flavor = state.flavors[fq.flavor]
        self.snapshot = state.snapshot(fq.flavor) if flavor.topology_name else None
        self.freed: dict[str, int] = {}
        self.removed: list[Charge] = []

    def _shift(self, charge: Charge, sign: int) -> None:
        for ps in charge.pod_sets:
            if ps.flavor != self.fq.flavor:
                continue
            if charge.cluster_queue == self.cq.name:
                for resource, value in ps.per_pod.items():
                    self.freed[resource] = self.freed.get(resource, 0) - sign * ps.count * value
            if self.snapshot is not None and ps.assignment is not None:
                self.snapshot.add_usage(ps.assignment, ps.requests, sign)

    def remove(self, charge: Charge) -> None:
        self._shift(charge, -1)
        self.removed.append(charge)

    def add(self, charge: Charge) -> None:
        self._shift(charge, 1)
        self.removed.remove(charge)

    def restore(self) -> None:
        for charge in list(self.removed):
            self.add(charge)

    def quota_fits(self, covered: Iterable[str], need: Mapping[str, int]) -> bool:
        used = self.state.quota_usage(self.cq.name, self.fq.flavor)
        for resource in covered:
            want = need.get(resource, 0)
            if want and want > self.fq.nominal.get(resource, 0) - (
                used.get(resource, 0) - self.freed.get(resource, 0)
            ):
                return False
        return True

    def place(self, pod_sets: Sequence[PodSetRequest]) -> dict[str, TopologyAssignment] | None:
        """Where the pod sets go now, or None when they do not fit; {} without a topology."""
        if self.snapshot is None:
            return {}
        result = self.snapshot.find_assignments(pod_sets)
        if not result.admitted:
            return None
        return {p.name: p.assignment for p in result.podsets if p.assignment is not None}


def find(
    state: ClusterState,
    preemptor: WorkloadInfo,
    cq: ClusterQueueInfo,
    fq: FlavorQuota,
    covered: frozenset[str],
    need: Mapping[str, int],
    short: frozenset[str],
    now: datetime,
) -> Preemption | str:
    """The victims that make `preemptor` fit in flavor `fq`, or why there are none.

    `short` names the resources of the flavor that lack room (all of the preemptor's when
    the quota fits but the topology does not); a candidate that uses none of them is left
    alone, as in Kueue."""
    policy = cq.within_cluster_queue
    if policy == NEVER:
        return f"ClusterQueue {cq.name} does not preempt (withinClusterQueue: Never)"
    pool = []
    for key, charge in state.charges().items():
        if key == preemptor.key or charge.cluster_queue != cq.name:
            continue
        candidate = state.workloads.get(key)
        if candidate is None or not allowed(policy, preemptor, candidate):
            continue
        if _uses(charge, fq.flavor, short):
            pool.append((candidate, charge))
    if not pool:
        return (
            f"no workload in ClusterQueue {cq.name} that withinClusterQueue: {policy} "
            f"lets it preempt uses flavor {fq.flavor}"
        )
    pool.sort(key=candidate_order(cq.name, now))
    sim = _Simulation(state, cq, fq)
    try:
        chosen: list[tuple[WorkloadInfo, Charge]] = []
        for candidate, charge in pool:
            sim.remove(charge)
            chosen.append((candidate, charge))
            if _fits(sim, preemptor, covered, need) is None:
                continue
            chosen = _fill_back(sim, preemptor, covered, need, chosen)
            placements = _fits(sim, preemptor, covered, need)
            assert placements is not None  # the fill-back keeps only what still fits
            return Preemption(
                tuple(Target(w, REASON_IN_CLUSTER_QUEUE) for w, _ in chosen), placements
            )
        return (
            f"preempting all {len(pool)} lower-priority workload(s) in ClusterQueue "
            f"{cq.name} would still not make room in flavor {fq.flavor}"
        )
    finally:
        sim.restore()


def _uses(charge: Charge, flavor: str, resources: frozenset[str]) -> bool:
    return any(
        ps.flavor == flavor and any(ps.per_pod.get(r, 0) > 0 for r in resources)
        for ps in charge.pod_sets
    )


def _fits(sim: _Simulation, preemptor: WorkloadInfo, covered, need):
    if not sim.quota_fits(covered, need):
        return None
    return sim.place(preemptor.pod_sets)


def _fill_back(sim: _Simulation, preemptor: WorkloadInfo, covered, need, chosen: list) -> list:
    """Kueue's fillBackWorkloads: from the second-to-last victim back to the first, put each
    back when the preemptor still fits without its removal (the last one is needed: without
    it the preemptor did not fit). A spared victim's slot takes the last one, as in Kueue."""
    chosen = list(chosen)
    for i in range(len(chosen) - 2, -1, -1):
        sim.add(chosen[i][1])
        if _fits(sim, preemptor, covered, need) is not None:
            chosen[i] = chosen[-1]
            chosen.pop()
        else:
            sim.remove(chosen[i][1])
    return chosen
