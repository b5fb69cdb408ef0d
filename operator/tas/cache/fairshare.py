"""Kueue's dominant resource share (DRS): how far a ClusterQueue or Cohort borrows, relative to
what its cohort could lend, divided by its fair-sharing weight (Kueue v0.17's
pkg/cache/scheduler/fair_sharing.go).

For a node with a parent, per resource name: what it uses beyond its subtree quota, summed over
the flavors, times 1000, over what its parent could lend of that resource (the parent's
potentially available quota summed over every flavor of the tree). The dominant resource is
the one with the largest ratio (by name on a tie); the share is that ratio over the weight.
A node within its quota everywhere, or without a parent, has share 0. A node of weight 0
that borrows has the largest share of all ("infinite"; its rounded share is 2^63-1).

Pure: it reads a QuotaTree (usage as the tree holds it, preemption simulations included).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from tas.api.fairsharing import MAX_WEIGHTED_SHARE
from tas.cache.quota import FlavorResource, Node, QuotaTree

DEFAULT_WEIGHT = 1.0


@dataclass(frozen=True)
class DRS:
    weight: float = DEFAULT_WEIGHT
    ratio: float = 0.0  # the dominant resource's borrowed/lendable, in thousandths, unweighted
    dominant: str = ""  # the resource name that gave the ratio
    borrowing: bool = False  # uses beyond its quota in some (flavor, resource)
    borrowed: frozenset[FlavorResource] = frozenset()

    def is_zero(self) -> bool:
        return self.ratio == 0

    def zero_weight_borrows(self) -> bool:
        return self.weight == 0 and not self.is_zero()

    def precise(self) -> float:
        """The weighted share (Kueue's PreciseWeightedShare): +inf for a borrowing weight 0."""
        if self.is_zero():
            return 0.0
        if self.weight == 0:
            return math.inf
        return self.ratio / self.weight

    def rounded(self) -> int:
        """status.fairSharing.weightedShare: the share rounded up, 2^63-1 for weight 0."""
        if self.zero_weight_borrows():
            return MAX_WEIGHTED_SHARE
        return math.ceil(self.precise())

    def borrowing_on(self, requested: Mapping[FlavorResource, int]) -> bool:
        """Borrows on a (flavor, resource) the request asks for (Kueue's IsBorrowingOn)."""
        return any(requested.get(fr, 0) > 0 for fr in self.borrowed)


# Kueue's NegativeDRS: below every real share, a starting point for the highest.
NEGATIVE = DRS(ratio=-1.0)


def compare(a: DRS, b: DRS) -> int:
    """Kueue's CompareDRS: -1, 0 or 1. Lower is preferred for admission, higher for
    preemption; nodes of weight 0 that borrow come after every other, by unweighted ratio."""
    if a.zero_weight_borrows() and b.zero_weight_borrows():
        return _cmp(a.ratio, b.ratio)
    if a.zero_weight_borrows():
        return 1
    if b.zero_weight_borrows():
        return -1
    return _cmp(a.precise(), b.precise())


def _cmp(x: float, y: float) -> int:
    return (x > y) - (x < y)


def lendable(tree: QuotaTree, node: Node) -> dict[str, int]:
    """Kueue's calculateLendable: per resource name, what the node could get at most, summed
    over every (flavor, resource) of its whole tree. Depends on quotas only: kept on the tree."""
    key = ("lendable", node)
    kept = tree.memo.get(key)
    if kept is not None:
        return kept  # type: ignore[return-value]
    root = node
    for ancestor in tree.path_to_root(node):
        root = ancestor
    out: dict[str, int] = {}
    for fr in tree.flavor_resources(root):
        out[fr[1]] = out.get(fr[1], 0) + tree.potential_available(node, fr)
    tree.memo[key] = out
    return out


def share(tree: QuotaTree, node: Node, adding: Mapping[FlavorResource, int] | None = None) -> DRS:
    """The node's DRS, with `adding` (a workload's requests) counted as its usage too."""
    weight = tree.fair_weight(node)
    parent = tree.parent(node)
    if parent is None:
        return DRS(weight)
    adding = adding or {}
    borrowing: dict[str, int] = {}
    borrowed = set()
    for fr in tree.flavor_resources(node):
        beyond = adding.get(fr, 0) + tree.usage(node, fr) - tree.subtree(node, fr)
        if beyond > 0:
            borrowing[fr[1]] = borrowing.get(fr[1], 0) + beyond
            borrowed.add(fr)
    if not borrowing:
        return DRS(weight)
    lend = lendable(tree, parent)
    ratio, dominant = 0.0, ""
    for name in sorted(borrowing):  # by name: the first of equal ratios wins
        if lend.get(name, 0) > 0:
            value = borrowing[name] * 1000.0 / lend[name]
            if value > ratio:
                ratio, dominant = value, name
    return DRS(weight, ratio, dominant, True, frozenset(borrowed))


def status(tree: QuotaTree, node: Node, enabled: bool) -> dict[str, int] | None:
    """status.fairSharing of a ClusterQueue or Cohort: its rounded share with fair sharing on;
    None (cleared) with it off, as Kueue's controllers write it."""
    return {"weightedShare": share(tree, node).rounded()} if enabled else None
