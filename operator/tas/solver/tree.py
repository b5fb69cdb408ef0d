"""The domain tree: one Domain per topology domain, leaves at the lowest level.

The structure is static (rebuilt only when the node set changes shape); the count fields are
scratch state that each placement overwrites, as Kueue's per-snapshot domainState.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

MAX_INT32 = 2**31 - 1  # Kueue's counts are int32: its "no such domain" and "none fits yet"


class Domain:
    __slots__ = (
        "affinity_score",
        "capacity_bound",
        "children",
        "leader_count",
        "leaf_index",
        "level",
        "order",
        "parent",
        "pod_count",
        "pod_count_with_leader",
        "slice_count",
        "slice_count_with_leader",
        "slice_count_with_leader_and_tail",
        "slice_count_with_tail",
        "values",
        "zones_needed",
    )

    def __init__(self, values: tuple[str, ...], level: int) -> None:
        self.values = values  # full path, highest level first
        self.level = level
        self.order = 0  # rank among the level's domains by values: the final sort tie-break
        self.parent: Domain | None = None
        self.children: list[Domain] = []
        self.leaf_index = -1
        self.pod_count = 0
        self.slice_count = 0
        self.pod_count_with_leader = 0
        self.slice_count_with_leader = 0
        self.leader_count = 0
        # whole slices held beside a partial last slice (solver/partial_slices.py)
        self.slice_count_with_tail = 0
        self.slice_count_with_leader_and_tail = 0
        # NUMA zones the leaf's pods need at the fewest (0: not counted by zones); a tie-break
        # after Kueue's keys (gate TASNUMAZones)
        self.zones_needed = 0
        # The preferred node affinity weights its nodes match, summed (gate
        # TASRespectNodeAffinityPreferred); read only when the placement orders by it
        self.affinity_score = 0
        # (pods, leaders, pods beside the leader) its own remaining capacity holds: set on usage
        # domains with TASNodeFeasibilityForAllLevels (solver/feasibility.py), else None
        self.capacity_bound: tuple[int, int, int] | None = None

    @property
    def id(self) -> str:
        """Kueue's domain id (values joined by commas), used only for message tie-breaks."""
        return ",".join(self.values)

    def clone_subtree(self, parent: Domain | None = None) -> Domain:
        """A deep copy with its own count state (balanced placement prunes copies)."""
        copy = self._copy(parent)
        copy.children = [child.clone_subtree(copy) for child in self.children]
        return copy

    def _copy(self, parent: Domain | None) -> Domain:
        copy = Domain(self.values, self.level)
        copy.order = self.order
        copy.parent = parent
        copy.leaf_index = self.leaf_index
        copy.children = self.children
        copy.pod_count = self.pod_count
        copy.slice_count = self.slice_count
        copy.pod_count_with_leader = self.pod_count_with_leader
        copy.slice_count_with_leader = self.slice_count_with_leader
        copy.leader_count = self.leader_count
        copy.slice_count_with_tail = self.slice_count_with_tail
        copy.slice_count_with_leader_and_tail = self.slice_count_with_leader_and_tail
        copy.zones_needed = self.zones_needed
        copy.affinity_score = self.affinity_score
        copy.capacity_bound = self.capacity_bound
        return copy

    def clear_counts(self) -> None:
        self.pod_count = 0
        self.slice_count = 0
        self.pod_count_with_leader = 0
        self.slice_count_with_leader = 0
        self.leader_count = 0
        self.zones_needed = 0

    def __repr__(self) -> str:  # for debugging and test failure output
        return (
            f"Domain({'/'.join(self.values)} pods={self.pod_count} slices={self.slice_count} "
            f"leaders={self.leader_count})"
        )


class DomainTree:
    """Domains per level, each level sorted by values; children of a domain are contiguous.

    `child_bounds[level]` (for every level but the lowest) holds, for the domains of `level` in
    order, where their children start in the next level, plus the next level's length: the
    children of domain i are `levels[level + 1][bounds[i]:bounds[i + 1]]`. `child_starts`
    is the same without the length.
    """

    def __init__(self, level_count: int, leaf_paths: Sequence[tuple[str, ...]]) -> None:
        """`leaf_paths` are the full level values of every leaf, sorted and unique."""
        self.level_count = level_count
        self.leaves: list[Domain] = []
        self.levels: list[list[Domain]] = [[] for _ in range(level_count)]
        by_path: list[dict[tuple[str, ...], Domain]] = [{} for _ in range(level_count)]
        for path in leaf_paths:
            leaf = Domain(path, level_count - 1)
            leaf.leaf_index = len(self.leaves)
            self.leaves.append(leaf)
            self.levels[-1].append(leaf)
            child = leaf
            for level in range(level_count - 2, -1, -1):
                prefix = path[: level + 1]
                parent = by_path[level].get(prefix)
                created = parent is None
                if parent is None:
                    parent = Domain(prefix, level)
                    by_path[level][prefix] = parent
                    self.levels[level].append(parent)
                parent.children.append(child)
                child.parent = parent
                if not created:
                    break
                child = parent
        # Sorted leaf paths make every level's append order the sorted order.
        for domains in self.levels:
            for position, domain in enumerate(domains):
                domain.order = position
        self.child_bounds = [
            [d.children[0].order for d in domains] + [len(below)]
            for domains, below in itertools.pairwise(self.levels)
        ]
        self.child_starts = [np.array(bounds[:-1], dtype=np.intp) for bounds in self.child_bounds]
        # A zero count per domain of each level; read-only, so that sharing them is safe.
        self.zeros = [np.zeros(len(domains), dtype=np.int64) for domains in self.levels]
        for zeros in self.zeros:
            zeros.flags.writeable = False

    @property
    def roots(self) -> list[Domain]:
        return self.levels[0]

    def top(self, level_count: int) -> DomainTree:
        """The tree's first `level_count` levels, sharing its domains and arrays: a tree whose
        leaves are this tree's domains at level `level_count - 1`."""
        view = object.__new__(DomainTree)
        view.level_count = level_count
        view.levels = self.levels[:level_count]
        view.leaves = self.levels[level_count - 1]
        view.child_bounds = self.child_bounds[: level_count - 1]
        view.child_starts = self.child_starts[: level_count - 1]
        view.zeros = self.zeros[:level_count]
        return view
