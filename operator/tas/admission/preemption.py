"""Which admitted workloads a pending one may evict to fit: Kueue's classical preemption,
with reclaim in a tree of cohorts.

Candidates use a (flavor, resource) short of room, and their policy allows them:
- in the preemptor's ClusterQueue, `withinClusterQueue` (reason InClusterQueue);
- in other queues of its cohort tree that borrow, `reclaimWithinCohort` (InCohortReclamation;
  InCohortReclaimWhileBorrowing when `borrowWithinCohort` lets the preemptor borrow while it
  preempts a lower priority).
In Kueue's order (already evicted first; other queues before its own; lowest priority; most
recently admitted) each is taken out of a simulation of the quota tree and the flavor's
topology until the preemptor fits; then each but the last is put back when the preemptor
still fits without its removal. The topology is part of the fit: a victim in a rack the
preemptor cannot use frees nothing it needs, and is put back. When even every candidate's
removal would not make room, no one is evicted.

Pure with respect to the cluster: the simulation changes the cache's flavor snapshot and
always restores it before returning.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from tas.api.constants import (
    ANY,
    LOWER_OR_NEWER_EQUAL_PRIORITY,
    LOWER_PRIORITY,
    NEVER,
    REASON_IN_CLUSTER_QUEUE,
    REASON_IN_COHORT_FAIR_SHARING,
    REASON_IN_COHORT_RECLAIM_WHILE_BORROWING,
    REASON_IN_COHORT_RECLAMATION,
)
from tas.cache.projections import ClusterQueueInfo, FlavorQuota, WorkloadInfo
from tas.cache.quota import FlavorResource, Node, QuotaTree
from tas.cache.state import Charge, ClusterState
from tas.solver.types import PodSetRequest, TopologyAssignment

# Kueue's words for each Preempted reason, in the victim's message.
REASON_TEXT = {
    REASON_IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    REASON_IN_COHORT_RECLAMATION: "reclamation within the cohort",
    REASON_IN_COHORT_RECLAIM_WHILE_BORROWING: "reclamation within the cohort while borrowing",
    REASON_IN_COHORT_FAIR_SHARING: "Fair Sharing within the cohort",
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
    return policy == ANY


# what Kueue's CandidatesOrdering compares, in order
CandidateKey = tuple[bool, bool, int, float, str]


def candidate_order(
    cq_name: str, now: datetime
) -> Callable[[tuple[WorkloadInfo, Charge]], CandidateKey]:
    """Kueue's CandidatesOrdering as a sort key: evicted first, other queues before the
    preemptor's own, lower priority first, most recently admitted first, then by uid."""

    def key(item: tuple[WorkloadInfo, Charge]) -> CandidateKey:
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


def message(preemptor: WorkloadInfo, reason: str, preemptor_path: str, victim_path: str) -> str:
    """The victim's Evicted and Preempted message, worded as Kueue's; a path is the queue's
    place in the cohort tree, "/root/.../queue" (see QuotaTree.path)."""
    return (
        f"Preempted to accommodate a workload (UID: {preemptor.uid or 'UNKNOWN'}, "
        f"JobUID: {preemptor.job_uid or 'UNKNOWN'}) due to {REASON_TEXT.get(reason, 'UNKNOWN')}; "
        f"preemptor path: {preemptor_path or 'UNKNOWN'}; preemptee path: {victim_path or 'UNKNOWN'}"
    )


# How a candidate may be preempted (Kueue's preemption variants).
WITHIN_CQ = "WithinClusterQueue"
HIERARCHICAL_RECLAIM = "HierarchicalReclaim"
RECLAIM_WITHOUT_BORROWING = "ReclaimWithoutBorrowing"
RECLAIM_WHILE_BORROWING = "ReclaimWhileBorrowing"
_REASON = {
    WITHIN_CQ: REASON_IN_CLUSTER_QUEUE,
    HIERARCHICAL_RECLAIM: REASON_IN_COHORT_RECLAMATION,
    RECLAIM_WITHOUT_BORROWING: REASON_IN_COHORT_RECLAMATION,
    RECLAIM_WHILE_BORROWING: REASON_IN_COHORT_RECLAIM_WHILE_BORROWING,
}


@dataclass(frozen=True)
class _Candidate:
    workload: WorkloadInfo
    charge: Charge
    variant: str
    lca: Node | None  # the cohort below which it was found (reclaim only)


def shift_quota(tree: QuotaTree, charge: Charge, sign: int) -> None:
    """Add (sign 1) or take away (-1) a charge's quota usage in the tree."""
    for ps in charge.pod_sets:
        for resource, value in ps.per_pod.items():
            tree.shift(charge.cluster_queue, (ps.flavor, resource), sign * ps.count * value)


class Simulation:
    """Quota (the whole cohort tree) and the flavor's topology with some charges taken out;
    undone by `restore`."""

    def __init__(self, state: ClusterState, tree: QuotaTree, flavor: str) -> None:
        self.tree = tree
        self.flavor = flavor
        self.snapshot = state.snapshot(flavor) if state.flavors[flavor].topology_name else None
        self.removed: list[Charge] = []

    def _shift(self, charge: Charge, sign: int) -> None:
        shift_quota(self.tree, charge, sign)
        for ps in charge.pod_sets:
            if ps.flavor == self.flavor and self.snapshot is not None and ps.assignment is not None:
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

    def place(self, pod_sets: Sequence[PodSetRequest]) -> dict[str, TopologyAssignment] | None:
        """Where the pod sets go now, or None when they do not fit; {} without a topology."""
        if self.snapshot is None:
            return {}
        result = self.snapshot.find_assignments(pod_sets)
        if not result.admitted:
            return None
        return {p.name: p.assignment for p in result.podsets if p.assignment is not None}


class _Search:
    """One preemptor's search (Kueue's classical preemption with hierarchical reclaim)."""

    def __init__(
        self,
        state: ClusterState,
        tree: QuotaTree,
        preemptor: WorkloadInfo,
        cq: ClusterQueueInfo,
        flavor: str,
        requests: Mapping[FlavorResource, int],
        short: frozenset[FlavorResource],
        now: datetime,
    ) -> None:
        self.state = state
        self.tree = tree
        self.preemptor = preemptor
        self.cq = cq
        self.node: Node = ("cq", cq.name)
        self.requests = requests  # (flavor, resource) -> what the preemptor needs
        self.short = short  # (flavor, resource) pairs that lack room
        self.now = now
        self.by_queue: dict[str, list[tuple[WorkloadInfo, Charge]]] = {}
        for key, charge in state.charges().items():
            workload = state.workloads.get(key)
            # An admission whose write has not landed is no candidate yet: its eviction
            # would race its own admission write (both guarded by the same version).
            if key != preemptor.key and workload is not None and not state.is_assumed(key):
                self.by_queue.setdefault(charge.cluster_queue, []).append((workload, charge))
        self.sim = Simulation(state, tree, flavor)

    def _variant(self, workload: WorkloadInfo, charge: Charge, advantage: bool) -> str | None:
        """Kueue's classifyPreemptionVariant; None: not a candidate."""
        if not uses(charge, self.short):
            return None
        own = charge.cluster_queue == self.cq.name
        policy = self.cq.within_cluster_queue if own else self.cq.reclaim_within_cohort
        if not allowed(policy, self.preemptor, workload):
            return None
        if own:
            return WITHIN_CQ
        if advantage:
            return HIERARCHICAL_RECLAIM
        if self.cq.borrow_within_cohort == NEVER:
            return RECLAIM_WITHOUT_BORROWING
        threshold = self.cq.borrow_threshold
        if workload.priority >= self.preemptor.priority or (
            threshold is not None and workload.priority > threshold
        ):
            return RECLAIM_WITHOUT_BORROWING
        return RECLAIM_WHILE_BORROWING

    def _from_queue(self, name: str, lca: Node | None, advantage: bool) -> list[_Candidate]:
        out = []
        for workload, charge in self.by_queue.get(name, ()):
            variant = self._variant(workload, charge, advantage)
            if variant is not None:
                out.append(_Candidate(workload, charge, variant, lca))
        return out

    def _in_subtree(
        self, cohort: Node, root: Node, skip: Node | None, advantage: bool, out: list[_Candidate]
    ) -> None:
        for child in self.tree.children(cohort[1]):
            if child == skip or child == self.node:
                continue
            if self.tree.within_nominal(child, self.short):
                continue
            if child[0] == "cohort":
                self._in_subtree(child, root, skip, advantage, out)
            else:
                out.extend(self._from_queue(child[1], root, advantage))

    def candidates(self) -> tuple[list[_Candidate], bool, bool]:
        """Every candidate in Kueue's order, and whether any come from other queues, and any
        with a hierarchical advantage."""
        same = []
        if self.cq.within_cluster_queue != NEVER:
            same = self._from_queue(self.cq.name, None, False)
        hierarchy: list[_Candidate] = []
        others: list[_Candidate] = []
        if self.tree.parent(self.node) is not None and self.cq.reclaim_within_cohort != NEVER:
            advantage, remaining = self.tree.fits_in(self.node, self.requests)
            previous = None
            for root in self.tree.path_to_root(self.node):
                self._in_subtree(
                    root, root, previous, advantage, hierarchy if advantage else others
                )
                fits, remaining = self.tree.fits_in(root, remaining)
                advantage = advantage or fits
                previous = root
        order = candidate_order(self.cq.name, self.now)
        lists = [
            sorted(c, key=lambda x: order((x.workload, x.charge)))
            for c in (hierarchy, others, same)
        ]
        ordered = [c for group in lists for c in group if c.workload.evicted]
        ordered += [c for group in lists for c in group if not c.workload.evicted]
        return ordered, bool(hierarchy or others), bool(hierarchy)

    def _valid(self, candidate: _Candidate, borrow: bool) -> bool:
        """Kueue's candidateIsValid, on the simulated usage."""
        queue = candidate.charge.cluster_queue
        if queue == self.cq.name:
            return True
        if borrow and candidate.variant == RECLAIM_WITHOUT_BORROWING:
            return False
        node: Node = ("cq", queue)
        if self.tree.within_nominal(node, self.short):
            return False
        for ancestor in self.tree.path_to_root(node):
            if ancestor == candidate.lca:
                break
            if self.tree.within_nominal(ancestor, self.short):
                return False
        return True

    def fits(self, borrow: bool) -> dict[str, TopologyAssignment] | None:
        for fr, value in self.requests.items():
            if not borrow and self.tree.borrowing_with(self.node, fr, value):
                return None
            if value > self.tree.available(self.cq.name, fr):
                return None
        return self.sim.place(self.preemptor.pod_sets)

    def _under_nominal(self) -> bool:
        return all(
            self.tree.usage(self.node, fr) < self.tree.quota(self.node, fr).nominal
            for fr in self.short
        )

    def run(self) -> Preemption | str:
        candidates, from_others, hierarchical = self.candidates()
        if not candidates:
            return (
                f"no workload in ClusterQueue {self.cq.name} or its cohort that its preemption "
                f"policies let it preempt uses flavor {self.sim.flavor}"
            )
        forbidden = self.cq.borrow_within_cohort == NEVER
        if not from_others or (forbidden and not self._under_nominal()):
            attempts = [True]
        elif forbidden and not hierarchical:
            attempts = [False, True]
        else:
            attempts = [True, False]
        try:
            for borrow in attempts:
                chosen: list[_Candidate] = []
                for candidate in candidates:
                    if not self._valid(candidate, borrow):
                        continue
                    self.sim.remove(candidate.charge)
                    chosen.append(candidate)
                    if self.fits(borrow) is not None:
                        chosen = self._fill_back(chosen, borrow)
                        placements = self.fits(borrow)
                        assert placements is not None  # the fill-back keeps only what fits
                        targets = tuple(Target(c.workload, _REASON[c.variant]) for c in chosen)
                        return Preemption(targets, placements)
                self.sim.restore()
        finally:
            self.sim.restore()
        return (
            f"preempting all {len(candidates)} workload(s) its preemption policies allow "
            f"would still not make room in flavor {self.sim.flavor}"
        )

    def _fill_back(self, chosen: list[_Candidate], borrow: bool) -> list[_Candidate]:
        """Kueue's fillBackWorkloads: from the second-to-last victim back to the first, put
        each back when the preemptor still fits without its removal (the last one is needed:
        without it the preemptor did not fit). A spared victim's slot takes the last one."""
        chosen = list(chosen)
        for i in range(len(chosen) - 2, -1, -1):
            self.sim.add(chosen[i].charge)
            if self.fits(borrow) is not None:
                chosen[i] = chosen[-1]
                chosen.pop()
            else:
                self.sim.remove(chosen[i].charge)
        return chosen


def find(
    state: ClusterState,
    tree: QuotaTree,
    preemptor: WorkloadInfo,
    cq: ClusterQueueInfo,
    fq: FlavorQuota,
    requests: Mapping[FlavorResource, int],
    short: frozenset[FlavorResource],
    now: datetime,
) -> Preemption | str:
    """The victims that make `preemptor` fit in flavor `fq`, or why there are none.

    `requests` is what it needs per (flavor, resource); `short` names the pairs that lack
    room (all of the flavor's when the quota fits but the topology does not). A candidate
    that uses none of them is left alone, as in Kueue."""
    return _Search(state, tree, preemptor, cq, fq.flavor, requests, short, now).run()


def uses(charge: Charge, pairs: frozenset[FlavorResource]) -> bool:
    return any(
        ps.per_pod.get(resource, 0) > 0
        for ps in charge.pod_sets
        for flavor, resource in pairs
        if ps.flavor == flavor
    )
