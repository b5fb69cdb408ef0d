"""The order in which a cycle tries the ClusterQueues' heads.

Classical (Kueue's classicalIterator): a workload within its queue's nominal quota before one
that borrows, then higher priority, then older.

With fair sharing (Kueue v0.17's fairSharingIterator, pkg/scheduler/fair_sharing_iterator.go):
a tournament down the cohort tree. Each queue's head is counted as admitted in its queue;
then at every cohort, from the leaves up, the child (ClusterQueue or cohort) whose dominant
resource share would then be lowest nominates its candidate. Ties go to a head that does not
make its subtree borrow on what it requests (gate FairSharingPrioritizeNonBorrowing), then to
higher priority (gate PrioritySortingWithinCohort), then to the older. A queue without a cohort
is its own tournament. Kueue takes one head per queue per cycle; we go on to a queue's next
workload once its head is decided, and the shares are computed afresh for every pick (an
admission changes them). Which root's tournament runs next is arbitrary in Kueue; here it is
the root holding the head that comes first by priority and age, so runs repeat.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping
from typing import Any

from tas import features
from tas.admission.decide import requested_quota
from tas.cache import fairshare
from tas.cache.fairshare import DRS
from tas.cache.projections import WorkloadInfo
from tas.cache.quota import FlavorResource, Node, QuotaTree
from tas.cache.state import ClusterState
from tas.features import Gate

Head = tuple[str, int]  # (ClusterQueue, index in its queue order)


class ClassicalOrder:
    """Heads by a sort key (the loop's HeadKey), smallest first."""

    def __init__(self, key: Callable[[str, int], Any]) -> None:
        self._key = key
        self._heap: list[tuple[Any, str, int]] = []

    def push(self, cq_name: str, index: int) -> None:
        heapq.heappush(self._heap, (self._key(cq_name, index), cq_name, index))

    def pop(self) -> Head | None:
        if not self._heap:
            return None
        _, cq_name, index = heapq.heappop(self._heap)
        return cq_name, index


class FairSharingOrder:
    """Kueue's fair-sharing tournament over the queues' current heads."""

    def __init__(self, state: ClusterState, queues: Mapping[str, list[WorkloadInfo]]) -> None:
        self._state = state
        self._queues = queues
        self._heads: dict[str, int] = {}  # ClusterQueue -> index of its head
        self._non_borrowing_first = features.enabled(Gate.FAIR_SHARING_PRIORITIZE_NON_BORROWING)
        self._by_priority = features.enabled(Gate.PRIORITY_SORTING_WITHIN_COHORT)

    def push(self, cq_name: str, index: int) -> None:
        self._heads[cq_name] = index

    def pop(self) -> Head | None:
        heads = {
            name: self._queues[name][index]
            for name, index in self._heads.items()
            if name in self._state.cluster_queues
        }
        if not heads:
            return None
        tree = self._state.quota_tree()
        first = min(heads, key=lambda n: _age_key(heads[n], n))
        root = _root(tree, ("cq", first))
        winner = first if root[0] == "cq" else self._tournament(tree, root, heads)
        assert winner is not None, "the root holds the first head"
        return winner, self._heads.pop(winner)

    def _tournament(self, tree: QuotaTree, root: Node, heads: dict[str, WorkloadInfo]) -> str:
        tournament = _Tournament(
            self._state, tree, heads, self._non_borrowing_first, self._by_priority
        )
        winner = tournament.run(root)
        assert winner is not None
        return winner


class _Tournament:
    def __init__(
        self,
        state: ClusterState,
        tree: QuotaTree,
        heads: Mapping[str, WorkloadInfo],
        non_borrowing_first: bool,
        by_priority: bool,
    ) -> None:
        self.state = state
        self.tree = tree
        self.heads = heads
        self.non_borrowing_first = non_borrowing_first  # gate FairSharingPrioritizeNonBorrowing
        self.by_priority = by_priority  # gate PrioritySortingWithinCohort
        self.shares: dict[tuple[Node, str], DRS] = {}  # (parent cohort, queue) -> child's DRS
        self.requested: dict[str, Mapping[FlavorResource, int]] = {}

    def compute_shares(self, root: Node) -> None:
        """Kueue's computeDRS: each head counted as admitted, the share of every node on its
        way up, keyed by that node's parent."""
        for node in self.tree.descendants(root[1]):
            if node[0] != "cq" or node[1] not in self.heads:
                continue
            cq_name = node[1]
            cq = self.state.cluster_queues[cq_name]
            usage = requested_quota(self.state, self.heads[cq_name], cq)
            self.requested[cq_name] = usage
            for fr, value in usage.items():
                self.tree.shift(cq_name, fr, value)
            try:
                current = fairshare.share(self.tree, node)
                for ancestor in self.tree.path_to_root(node):
                    self.shares[(ancestor, cq_name)] = current
                    current = fairshare.share(self.tree, ancestor)
            finally:
                for fr, value in usage.items():
                    self.tree.shift(cq_name, fr, -value)

    def run(self, root: Node) -> str | None:
        self.compute_shares(root)
        return self._best(root)

    def _best(self, cohort: Node) -> str | None:
        """runTournament: the child cohorts' winners, then the child queues' heads."""
        children = self.tree.children(cohort[1])
        candidates = []
        for child in sorted(c for c in children if c[0] == "cohort"):
            winner = self._best(child)
            if winner is not None:
                candidates.append(winner)
        candidates += sorted(c[1] for c in children if c[0] == "cq" and c[1] in self.heads)
        if not candidates:
            return None
        best = candidates[0]
        for current in candidates[1:]:
            if self.less(current, best, cohort):
                best = current
        return best

    def less(self, a: str, b: str, cohort: Node) -> bool:
        """Kueue's entryComparer.less, at the children of `cohort`."""
        a_share, b_share = self.shares[(cohort, a)], self.shares[(cohort, b)]
        if self.non_borrowing_first:
            a_borrows = a_share.borrowing_on(self.requested.get(a, {}))
            b_borrows = b_share.borrowing_on(self.requested.get(b, {}))
            if a_borrows != b_borrows:
                return not a_borrows
        order = fairshare.compare(a_share, b_share)
        if order:
            return order < 0
        a_head, b_head = self.heads[a], self.heads[b]
        if self.by_priority and a_head.priority != b_head.priority:
            return a_head.priority > b_head.priority
        return a_head.created < b_head.created


def _age_key(workload: WorkloadInfo, cq_name: str) -> tuple:
    return (-workload.priority, workload.created, workload.name, cq_name)


def _root(tree: QuotaTree, node: Node) -> Node:
    root = node
    for ancestor in tree.path_to_root(node):
        root = ancestor
    return root
