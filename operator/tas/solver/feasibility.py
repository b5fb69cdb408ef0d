"""TASNodeFeasibilityForAllLevels: every node a leaf, below a lowest level other than the hostname.

With the gate Kueue appends a virtual hostname level to such a topology (keyed by node name), so
each leaf is one node: taints, nodeSelector and node affinity are checked per node, and a domain
of the lowest declared level (a "usage domain") holds the pods each of its nodes holds, not the
pods its summed capacity holds. Assignments still name usage domains: the leaves' counts are
summed into their parents.

An admitted workload's usage is known only per usage domain (kube-scheduler picks the node
inside it and never says which), so it is charged to no node. Instead each usage domain's counts
are bounded by what its own remaining capacity holds: its nodes' free capacity, less that usage
and less what earlier pod sets of the workload being placed took there (Kueue's capacityBound).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from tas.solver import vectorized
from tas.solver.algorithm import PlacementParams
from tas.solver.tree import Domain, DomainTree

_COUNT_LIMIT = 2**62


@dataclass(frozen=True)
class UsageBounds:
    """Per usage domain, in level order: the pod set's pods its remaining capacity holds; with a
    leader, whether it holds the leader (0 or 1) and the pods beside it (or, when it does not
    hold the leader, the same pods)."""

    pods: np.ndarray
    leaders: np.ndarray
    pods_with_leader: np.ndarray


def usage_bounds(
    remaining: np.ndarray,
    rows: Mapping[str, int],
    requests: Mapping[str, int],
    leader_requests: Mapping[str, int] | None,
) -> UsageBounds:
    """`remaining`: resources x usage domains, the capacity each has left."""
    pods = _count(remaining, rows, requests)
    if leader_requests is None:
        return UsageBounds(pods, np.zeros_like(pods), pods)
    hosts_leader = _count(remaining, rows, leader_requests) > 0
    beside = _count(remaining, rows, requests, taken=leader_requests)
    return UsageBounds(pods, hosts_leader.astype(np.int64), np.where(hosts_leader, beside, pods))


def _count(
    remaining: np.ndarray,
    rows: Mapping[str, int],
    requests: Mapping[str, int],
    taken: Mapping[str, int] | None = None,
) -> np.ndarray:
    counts = vectorized.pods_that_fit(vectorized.resource_fits(remaining, rows, requests, taken)[1])
    if counts.dtype == object:  # exact integers; a count this large bounds nothing anyway
        return np.array([min(c, _COUNT_LIMIT) for c in counts.tolist()], dtype=np.int64)
    return counts


def set_domain_bounds(tree: DomainTree, level: int, bounds: UsageBounds) -> None:
    """Give the usage domains their bounds, for algorithm.roll_up to apply (apply_bound)."""
    for domain, bound in zip(
        tree.levels[level],
        zip(
            bounds.pods.tolist(),
            bounds.leaders.tolist(),
            bounds.pods_with_leader.tolist(),
            strict=True,
        ),
        strict=True,
    ):
        domain.capacity_bound = bound


def roll_up(
    tree: DomainTree,
    leaf_pods: np.ndarray,
    params: PlacementParams,
    bounds: UsageBounds | None,
    leaf_pods_with_leader: np.ndarray | None = None,
    leaf_leaders: np.ndarray | None = None,
) -> vectorized.LevelCounts:
    """vectorized.roll_up, with the usage domains (the level above the leaves) cut to `bounds`
    when given: the counts are rolled up to them, cut, and rolled up again from them, taken as
    the leaves of the levels above (which also recomputes their slices from the cut pods, as
    Kueue's bound does). As the plain path's apply_bound (algorithm.py), on arrays."""
    if bounds is None:
        return vectorized.roll_up(tree, leaf_pods, params, leaf_pods_with_leader, leaf_leaders)
    # a partial slice's capacities come from the cut counts: the upper roll-up only
    uncut = replace(params, tail_size=0) if params.tail_size else params
    counts = vectorized.roll_up(tree, leaf_pods, uncut, leaf_pods_with_leader, leaf_leaders)
    level = tree.level_count - 2
    pods = np.minimum(counts.pods[level], bounds.pods)
    pods_with_leader = leaders = None
    if leaf_leaders is not None:
        # a leader's cost is measured on one node, so the with-leader count can fall below 0
        pods_with_leader = np.minimum(
            np.maximum(counts.pods_with_leader[level], 0), bounds.pods_with_leader
        )
        leaders = np.minimum(counts.leaders[level], bounds.leaders)
    upper = vectorized.roll_up(tree.top(level + 1), pods, params, pods_with_leader, leaders)
    below = slice(level + 1, None)
    return replace(
        upper,
        tree=tree,
        pods=upper.pods + counts.pods[below],
        slices=upper.slices + counts.slices[below],
        pods_with_leader=upper.pods_with_leader + counts.pods_with_leader[below],
        slices_with_leader=upper.slices_with_leader + counts.slices_with_leader[below],
        leaders=upper.leaders + counts.leaders[below],
        # the slice level is declared, at or above the usage domains: zeros below them
        slices_with_tail=_extended(upper.slices_with_tail, tree.zeros[below]),
        slices_with_leader_and_tail=_extended(upper.slices_with_leader_and_tail, tree.zeros[below]),
    )


def _extended(upper: list[np.ndarray] | None, lower: list[np.ndarray]) -> list[np.ndarray] | None:
    return None if upper is None else upper + lower


def counts_by_parent(leaves_with_counts: list[tuple[Domain, int]]) -> list[tuple[Domain, int]]:
    """Leaves' counts summed into their parents (the usage domains an assignment names)."""
    totals: dict[Domain, int] = {}
    for leaf, count in leaves_with_counts:
        parent = leaf.parent
        assert parent is not None  # leaves sit below the usage level
        totals[parent] = totals.get(parent, 0) + count
    return list(totals.items())
