"""Which admitted workloads a pending one may evict to fit, with fair sharing on: Kueue v0.17's
fair-sharing preemption (pkg/scheduler/preemption/preemption.go fairPreemptions, and
pkg/scheduler/preemption/fairsharing/).

The candidates are the preemptor's own queue's workloads its `withinClusterQueue` policy
allows, and, with `reclaimWithinCohort`, the workloads of every queue in its cohort tree that
borrows on a (flavor, resource) the preemptor is short of; each must use one of those pairs.
With the preemptor counted as admitted, queues are visited from the root down, always into
the child with the highest dominant resource share that still has candidates (a queue that
no longer borrows is dropped). From its own queue it takes candidates as they come
(InClusterQueue). From another queue it takes one (InCohortFairSharing) when the configured
strategy allows it, comparing the shares of the two children of the queues' lowest common
cohort (their "almost lowest common ancestors"):
- LessThanOrEqualToFinalShare: the preemptor's share is at most the target's after removal;
- LessThanInitialShare: the preemptor's share is below the target's before removal.
With FairSharingPreemptWithinNominal, a preemptor that stays within its nominal quota on the
pairs it is short of takes from borrowing queues whatever the shares (InCohortReclamation).
The second strategy, when configured, retries the candidates the first one passed over.

The topology is part of "fits", as in our classical preemption (tas.admission.preemption):
each removal is simulated on the quota tree and the flavor's topology snapshot, and the
preemptor fits only when its pod sets can be placed; victims that did not help are put back
at the end (Kueue's fillBackWorkloads). The simulation is always undone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime

from tas import features
from tas.admission.preemption import (
    CandidateKey,
    Preemption,
    Simulation,
    Target,
    allowed,
    candidate_order,
    shift_quota,
    uses,
)
from tas.api.constants import (
    NEVER,
    REASON_IN_CLUSTER_QUEUE,
    REASON_IN_COHORT_FAIR_SHARING,
    REASON_IN_COHORT_RECLAMATION,
)
from tas.api.fairsharing import LESS_THAN_INITIAL_SHARE, LESS_THAN_OR_EQUAL_TO_FINAL_SHARE
from tas.cache import fairshare
from tas.cache.fairshare import DRS
from tas.cache.projections import ClusterQueueInfo, FlavorQuota, WorkloadInfo
from tas.cache.quota import FlavorResource, Node, QuotaTree
from tas.cache.state import Charge, ClusterState
from tas.features import Gate


def less_than_or_equal_to_final_share(preemptor_new: DRS, target_old: DRS, target_new: DRS) -> bool:
    """Kueue's rule S2-a."""
    return fairshare.compare(preemptor_new, target_new) <= 0


def less_than_initial_share(preemptor_new: DRS, target_old: DRS, target_new: DRS) -> bool:
    """Kueue's rule S2-b."""
    return fairshare.compare(preemptor_new, target_old) < 0


Strategy = Callable[[DRS, DRS, DRS], bool]
STRATEGIES: dict[str, Strategy] = {
    LESS_THAN_OR_EQUAL_TO_FINAL_SHARE: less_than_or_equal_to_final_share,
    LESS_THAN_INITIAL_SHARE: less_than_initial_share,
}


@dataclass(frozen=True)
class _Candidate:
    workload: WorkloadInfo
    charge: Charge


class TargetOrdering:
    """Kueue's TargetClusterQueueOrdering: which queue to take the next candidate from."""

    def __init__(
        self,
        tree: QuotaTree,
        preemptor_cq: str,
        candidates: list[_Candidate],
        order: Callable[[tuple[WorkloadInfo, Charge]], CandidateKey],
    ) -> None:
        self.tree = tree
        self.preemptor: Node = ("cq", preemptor_cq)
        self.ancestors = set(tree.path_to_root(self.preemptor))
        self.by_queue: dict[str, list[_Candidate]] = {}
        for candidate in candidates:
            self.by_queue.setdefault(candidate.charge.cluster_queue, []).append(candidate)
        self.pruned: set[Node] = set()
        self._order = order  # candidate_order's key, for ties between queues

    def __iter__(self) -> Iterator[str]:
        """The queue to take from next; the same one again while it stays the most unfair.
        The caller pops a candidate or drops the queue between two steps."""
        if self.tree.parent(self.preemptor) is None:
            while self.has_workload(self.preemptor[1]):
                yield self.preemptor[1]
            return
        root = self.preemptor
        for ancestor in self.tree.path_to_root(self.preemptor):
            root = ancestor
        while root not in self.pruned:
            target = self._next(root)
            if target is not None:
                yield target

    def has_workload(self, cq_name: str) -> bool:
        return bool(self.by_queue.get(cq_name))

    def pop(self, cq_name: str) -> _Candidate:
        return self.by_queue[cq_name].pop(0)

    def drop(self, cq_name: str) -> None:
        self.pruned.add(("cq", cq_name))

    def _next(self, cohort: Node) -> str | None:
        """Kueue's nextTarget: the highest-share child with candidates, into cohorts."""
        children = sorted(self.tree.children(cohort[1]))
        best_cq, best_cq_share = None, fairshare.NEGATIVE
        for child in (c for c in children if c[0] == "cq" and c not in self.pruned):
            share = fairshare.share(self.tree, child)
            if (not share.borrowing and child != self.preemptor) or not self.has_workload(child[1]):
                self.pruned.add(child)
                continue
            order = fairshare.compare(share, best_cq_share)
            if order > 0 or (order == 0 and self._first_goes_before(child[1], best_cq)):
                best_cq, best_cq_share = child[1], share
        best_cohort, best_cohort_share = None, fairshare.NEGATIVE
        for child in (c for c in children if c[0] == "cohort" and c not in self.pruned):
            share = fairshare.share(self.tree, child)
            if not share.borrowing and child not in self.ancestors:
                self.pruned.add(child)
            elif fairshare.compare(share, best_cohort_share) >= 0:
                best_cohort, best_cohort_share = child, share
        if best_cohort is None and best_cq is None:
            self.pruned.add(cohort)
            return None
        if best_cohort is not None and fairshare.compare(best_cohort_share, best_cq_share) >= 0:
            return self._next(best_cohort)
        return best_cq

    def _first_goes_before(self, cq_name: str, current: str | None) -> bool:
        if current is None:
            return True
        a, b = self.by_queue[cq_name][0], self.by_queue[current][0]
        return self._order((a.workload, a.charge)) < self._order((b.workload, b.charge))

    def almost_lcas(self, target_cq: str) -> tuple[Node, Node]:
        """The children of the lowest cohort holding both queues, on each one's way up."""
        target: Node = ("cq", target_cq)
        lca = next(a for a in self.tree.path_to_root(target) if a in self.ancestors)
        return _child_below(self.tree, self.preemptor, lca), _child_below(self.tree, target, lca)


def _child_below(tree: QuotaTree, node: Node, lca: Node) -> Node:
    below = node
    for ancestor in tree.path_to_root(node):
        if ancestor == lca:
            return below
        below = ancestor
    raise AssertionError(f"{lca} is not above {node}")


class _FairSearch:
    """One preemptor's fair-sharing search."""

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
        assert state.fair_sharing is not None, "fair-sharing preemption with fair sharing on"
        self.state = state
        self.tree = tree
        self.preemptor = preemptor
        self.cq = cq
        self.node: Node = ("cq", cq.name)
        self.requests = requests
        self.short = short
        self.order = candidate_order(cq.name, now)
        self.strategy_names = state.fair_sharing.preemption_strategies
        self.strategies = [STRATEGIES[name] for name in self.strategy_names]
        self.sim = Simulation(state, tree, flavor)
        self.targets: list[Target] = []
        self._charges: list[Charge] = []

    def candidates(self) -> list[_Candidate]:
        """Kueue's findCandidates, in CandidatesOrdering."""
        queues: dict[str, str] = {}  # queue -> the policy its workloads are judged by
        if self.cq.within_cluster_queue != NEVER:
            queues[self.cq.name] = self.cq.within_cluster_queue
        parent = self.tree.parent(self.node)
        if parent is not None and self.cq.reclaim_within_cohort != NEVER:
            root = parent
            for ancestor in self.tree.path_to_root(parent):
                root = ancestor
            for node in self.tree.descendants(root[1]):
                if node[0] == "cq" and node != self.node and self._borrows(node):
                    queues[node[1]] = self.cq.reclaim_within_cohort
        out = []
        for key, charge in self.state.charges().items():
            policy = queues.get(charge.cluster_queue)
            workload = self.state.workloads.get(key)
            if (
                policy is None
                or workload is None
                or key == self.preemptor.key
                or self.state.is_assumed(key)  # its eviction would race its admission write
                or not allowed(policy, self.preemptor, workload)
                or not uses(charge, self.short)
            ):
                continue
            out.append(_Candidate(workload, charge))
        return sorted(out, key=lambda c: self.order((c.workload, c.charge)))

    def _borrows(self, node: Node) -> bool:
        return any(self.tree.borrowing_with(node, fr) for fr in self.short)

    def fits(self) -> bool:
        """Kueue's workloadFits with borrowing allowed, topology included."""
        if any(v > self.tree.available(self.cq.name, fr) for fr, v in self.requests.items()):
            return False
        return self.sim.place(self.preemptor.pod_sets) is not None

    def _with_preemptor(self, sign: int) -> None:
        for fr, value in self.requests.items():
            self.tree.shift(self.cq.name, fr, sign * value)

    def _fits_without_preemptor(self) -> bool:
        """workloadFitsForFairSharing: shares count the preemptor, the fit does not."""
        self._with_preemptor(-1)
        try:
            return self.fits()
        finally:
            self._with_preemptor(1)

    def _take(self, candidate: _Candidate, reason: str) -> bool:
        self.sim.remove(candidate.charge)
        self.targets.append(Target(candidate.workload, reason))
        self._charges.append(candidate.charge)
        return self._fits_without_preemptor()

    def run(self) -> Preemption | str:
        candidates = self.candidates()
        if not candidates:
            return (
                f"no workload in ClusterQueue {self.cq.name} or its cohort that its preemption "
                f"policies let it preempt uses flavor {self.sim.flavor}"
            )
        try:
            self._with_preemptor(1)  # shares are those after its admission
            try:
                fits, retry = self._first(candidates, self.strategies[0])
                if not fits and len(self.strategies) > 1:
                    fits = self._second(retry)
            finally:
                self._with_preemptor(-1)
            if not fits:
                return (
                    f"fair sharing: preempting the {len(candidates)} workload(s) its preemption "
                    "policies allow, where the preemption strategies "
                    f"({', '.join(self.strategy_names)}) let it, "
                    f"would not make room in flavor {self.sim.flavor}"
                )
            self._fill_back()
            placements = self.sim.place(self.preemptor.pod_sets)
            assert placements is not None, "the fill-back keeps only what fits"
            return Preemption(tuple(self.targets), placements)
        finally:
            self.sim.restore()

    def _first(
        self, candidates: list[_Candidate], strategy: Strategy
    ) -> tuple[bool, list[_Candidate]]:
        """Kueue's runFirstFsStrategy: (fits, the candidates passed over)."""
        ordering = TargetOrdering(self.tree, self.cq.name, candidates, self.order)
        within_nominal = features.enabled(
            Gate.FAIR_SHARING_PREEMPT_WITHIN_NOMINAL
        ) and not self._borrows(self.node)
        retry: list[_Candidate] = []
        for target in ordering:
            if target == self.cq.name or within_nominal:
                reason = REASON_IN_CLUSTER_QUEUE if target == self.cq.name else None
                if self._take(ordering.pop(target), reason or REASON_IN_COHORT_RECLAMATION):
                    return True, []
                continue
            preemptor_new, target_old = self._shares(ordering, target)
            while ordering.has_workload(target):
                candidate = ordering.pop(target)
                target_new = self._share_after_removal(ordering, target, candidate)
                if not strategy(preemptor_new, target_old, target_new):
                    retry.append(candidate)
                    continue
                if self._take(candidate, REASON_IN_COHORT_FAIR_SHARING):
                    return True, []
                break  # the shares changed: the next target may be another queue
        return False, retry

    def _second(self, retry: list[_Candidate]) -> bool:
        """Kueue's runSecondFsStrategy (LessThanInitialShare): at most one per queue."""
        ordering = TargetOrdering(self.tree, self.cq.name, retry, self.order)
        for target in ordering:
            preemptor_new, target_old = self._shares(ordering, target)
            if less_than_initial_share(preemptor_new, target_old, target_old) and self._take(
                ordering.pop(target), REASON_IN_COHORT_FAIR_SHARING
            ):
                return True
            ordering.drop(target)
        return False

    def _shares(self, ordering: TargetOrdering, target: str) -> tuple[DRS, DRS]:
        preemptor_side, target_side = ordering.almost_lcas(target)
        return fairshare.share(self.tree, preemptor_side), fairshare.share(self.tree, target_side)

    def _share_after_removal(
        self, ordering: TargetOrdering, target: str, candidate: _Candidate
    ) -> DRS:
        shift_quota(self.tree, candidate.charge, -1)
        try:
            return fairshare.share(self.tree, ordering.almost_lcas(target)[1])
        finally:
            shift_quota(self.tree, candidate.charge, 1)

    def _fill_back(self) -> None:
        """Kueue's fillBackWorkloads: from the second-to-last victim back to the first, put
        each back when the preemptor still fits without its removal."""
        for i in range(len(self.targets) - 2, -1, -1):
            self.sim.add(self._charges[i])
            if self.fits():
                self.targets[i], self._charges[i] = self.targets[-1], self._charges[-1]
                self.targets.pop()
                self._charges.pop()
            else:
                self.sim.remove(self._charges[i])


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
    """The victims that make `preemptor` fit in flavor `fq` under fair sharing, or why there
    are none (the same contract as tas.admission.preemption.find)."""
    return _FairSearch(state, tree, preemptor, cq, fq.flavor, requests, short, now).run()
