"""Placement groups: constraints that hold across workloads (ours; Kueue has none).

A group's members are placed one request at a time, each seeing what the earlier members hold:

- affinity at level L: every pod of the group in one domain of L (chosen by the first member,
  free again once the group is empty);
- anti-affinity at level L: no two pods of the group in one domain of L;
- partitions: K partitions, and a domain of the partition level holds pods of one partition
  only; each new pod goes to a smallest partition, so the sizes differ by at most 1 after each
  request, unless members that left set them further apart than the request can even out
  (pods never move);
- exclusivity at level L: the group takes whole domains of L, empty when taken, and no pod
  outside the group may enter them (callers exclude `owned_domains` for everyone else).

The planner works on a `Layout` (the static domain tree as arrays) and, per request, the number
of pods of the request's shape that fit on every leaf. It descends as Kueue's BestFit does: in a
domain, take the child that fits the rest most tightly, else the largest children first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import cast

import numpy as np

Path = tuple[str, ...]  # a domain's values, highest level first


class GroupPlacementFailure(Exception):
    """The request cannot be placed under the group's constraints; the message says why."""


@dataclass(frozen=True)
class GroupRules:
    """A group's constraints; each level is an index into the topology's levels, or None."""

    affinity: int | None = None
    anti_affinity: int | None = None
    partitions: int = 0
    partition_level: int | None = None
    exclusive: int | None = None
    # Each request takes only domains of the exclusive level that are empty (seed 001's whole
    # pods: a request's VMs fill whole pods), never the group's own partly used ones.
    whole: bool = False

    def __post_init__(self) -> None:
        if (self.partitions > 0) != (self.partition_level is not None):
            raise ValueError("partitions and partition_level go together")


@dataclass
class GroupState:
    """What the group holds now: its pods per leaf path and the partition of each domain of the
    partition level (kept so that a partition's domains stay its own across requests)."""

    pods: dict[Path, int] = field(default_factory=dict)
    partition_of: dict[Path, int] = field(default_factory=dict)  # domain -> partition (1..K)
    partition_sizes: dict[int, int] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not any(self.pods.values())

    def domains_at(self, depth: int) -> set[Path]:
        """The domains of level index `depth` where the group has pods."""
        return {path[: depth + 1] for path, count in self.pods.items() if count > 0}

    def add(self, placement: GroupPlacement) -> None:
        for path, count in placement.pods.items():
            self.pods[path] = self.pods.get(path, 0) + count
        for path, partition in placement.new_partition_domains.items():
            self.partition_of[path] = partition
        for partition, count in placement.partition_counts.items():
            self.partition_sizes[partition] = self.partition_sizes.get(partition, 0) + count

    def remove(self, pods: Mapping[Path, int], partition_level: int | None = None) -> None:
        """Take pods away (a member left). A partition domain with no pods left is released."""
        for path, count in pods.items():
            left = self.pods.get(path, 0) - count
            if left > 0:
                self.pods[path] = left
            else:
                self.pods.pop(path, None)
            if partition_level is not None:
                domain = path[: partition_level + 1]
                partition = self.partition_of.get(domain)
                if partition is not None:
                    self.partition_sizes[partition] = max(
                        0, self.partition_sizes.get(partition, 0) - count
                    )
        if partition_level is not None:
            held = self.domains_at(partition_level)
            for domain in [d for d in self.partition_of if d not in held]:
                del self.partition_of[domain]


@dataclass(frozen=True)
class GroupPlacement:
    pods: dict[Path, int]  # leaf path -> pods of this request
    partition_of_leaf: dict[Path, int]  # leaf path -> partition (partitioned groups only)
    new_partition_domains: dict[Path, int]
    partition_counts: dict[int, int]  # partition -> pods of this request


class Layout:
    """The static shape of a topology: every leaf's path and, per level, each leaf's domain."""

    def __init__(self, levels: Sequence[str], leaf_paths: Sequence[Path]) -> None:
        self.levels = tuple(levels)
        self.leaf_paths = list(leaf_paths)
        depth = len(self.levels)
        # codes[d][leaf]: the leaf's domain at level d; domains[d][code]: that domain's path
        self.codes: list[np.ndarray] = []
        self.domains: list[list[Path]] = []
        for d in range(depth):
            index: dict[Path, int] = {}
            codes = np.empty(len(self.leaf_paths), dtype=np.int64)
            for leaf, path in enumerate(self.leaf_paths):
                codes[leaf] = index.setdefault(path[: d + 1], len(index))
            self.codes.append(codes)
            self.domains.append(list(index))
        self.code_of: list[dict[Path, int]] = [
            {path: code for code, path in enumerate(paths)} for paths in self.domains
        ]
        # children[d][code]: the codes at level d+1 under that domain (sorted by path)
        self.children: list[list[list[int]]] = []
        for d in range(depth - 1):
            kids: list[set[int]] = [set() for _ in self.domains[d]]
            for parent, child in zip(self.codes[d], self.codes[d + 1], strict=True):
                kids[int(parent)].add(int(child))
            self.children.append([sorted(k, key=self.domains[d + 1].__getitem__) for k in kids])
        self.leaf_of = {path: leaf for leaf, path in enumerate(self.leaf_paths)}

    def leaves_under(self, depth: int, paths: set[Path]) -> np.ndarray:
        codes = [self.code_of[depth][p] for p in paths if p in self.code_of[depth]]
        return np.isin(self.codes[depth], codes)


def excluded_leaves(layout: Layout, owned: Mapping[int, set[Path]]) -> np.ndarray:
    """Leaves inside domains some exclusive group owns (level index -> domains)."""
    out = np.zeros(len(layout.leaf_paths), dtype=bool)
    for depth, paths in owned.items():
        out |= layout.leaves_under(depth, paths)
    return out


def place(
    layout: Layout,
    capacity: np.ndarray,
    count: int,
    rules: GroupRules,
    state: GroupState,
    *,
    required: int | None = None,
    occupied: np.ndarray | None = None,
    foreign: np.ndarray | None = None,
    fragmentation_aware: bool = False,
    reserved: np.ndarray | None = None,
) -> GroupPlacement:
    """Place `count` pods of one shape for a member of the group.

    `capacity`: pods of the shape that fit on each leaf (eligibility already applied);
    `required`: the member's own required level, if any (all its pods in one domain of it);
    `occupied`: leaves holding any pod (exclusivity takes only empty domains);
    `foreign`: leaves inside domains other exclusive groups own;
    `fragmentation_aware` (TASProfileFragmentationAware): a new affinity domain is chosen
    top-down, in the parent with the least room first (solver/profile.py's rule), and there
    the emptiest (the group will grow in it), rather than the tightest anywhere; a request
    without affinity takes the tightest there; and `reserved` leaves (the affinity domains of
    other groups, which may grow) are used only when nothing fits without them.
    """
    if count <= 0:
        raise GroupPlacementFailure("nothing to place")
    cap = np.array(capacity, dtype=np.int64).clip(min=0)
    if foreign is not None:
        cap[foreign] = 0
    if rules.exclusive is not None:
        own = GroupState() if rules.whole else state
        cap[~_takeable(layout, rules.exclusive, own, occupied)] = 0
    scopes = _scopes(layout, rules, state, required)
    plan = _Plan(layout, rules, state, fragmentation_aware)
    failures: list[str] = []
    tries = [cap]
    if fragmentation_aware and reserved is not None and reserved.any():
        # first without the room other groups' affinity domains keep to grow in
        tries.insert(0, np.where(reserved, 0, cap))
    for room in tries:
        for depth, code in _scope_order(layout, plan, room, scopes, count):
            try:
                return plan.fill(room, depth, code, count)
            except GroupPlacementFailure as failure:
                failures.append(str(failure))
    reason = failures[0] if failures else _no_scope_reason(layout, rules, state, required)
    raise GroupPlacementFailure(reason)


def _takeable(
    layout: Layout, depth: int, state: GroupState, occupied: np.ndarray | None
) -> np.ndarray:
    """Leaves in domains the group owns, or in domains with no pod at all."""
    owned = layout.leaves_under(depth, state.domains_at(depth))
    if occupied is None:
        return np.ones_like(owned)
    busy = np.zeros(len(layout.domains[depth]), dtype=bool)
    busy[layout.codes[depth][occupied]] = True
    free: np.ndarray = owned | ~busy[layout.codes[depth]]
    return free


def _scopes(
    layout: Layout, rules: GroupRules, state: GroupState, required: int | None
) -> list[tuple[int, int]] | None:
    """The domains one request must fit in, as (level index, code); None: the whole topology."""
    fixed: Path | None = None
    if rules.affinity is not None and not state.empty:
        held = state.domains_at(rules.affinity)
        fixed = min(held)  # one domain by construction (a node's labels may move: take one)
    depth = max(d for d in (rules.affinity, required, -1) if d is not None)
    if depth < 0:
        return None
    if fixed is None:
        return [(depth, code) for code in range(len(layout.domains[depth]))]
    return [
        (depth, code)
        for code, path in enumerate(layout.domains[depth])
        if path[: len(fixed)] == fixed
    ]


def _scope_order(
    layout: Layout,
    plan: _Plan,
    cap: np.ndarray,
    scopes: list[tuple[int, int]] | None,
    count: int,
) -> list[tuple[int, int]]:
    """Best fit first: the scope with the least room that may still hold the request. With
    the profile, parents with the least room first; and a group opening its affinity domain
    takes the emptiest domain in that parent, to have room to grow."""
    if scopes is None:
        return [(-1, 0)]
    if not scopes:
        return []
    depth = scopes[0][0]
    room = plan.room(cap, depth)
    parents: list[tuple[np.ndarray, np.ndarray]] = []
    if plan.fragmentation_aware:
        for ancestor in range(depth):
            of = np.zeros(len(layout.domains[depth]), dtype=np.int64)
            of[layout.codes[depth]] = layout.codes[ancestor]
            parents.append((plan.room(cap, ancestor), of))
    sign = -1 if plan.opens_growing_domain else 1
    ranked = [
        (
            *(int(parent_room[of[code]]) for parent_room, of in parents),
            sign * int(room[code]),
            layout.domains[depth][code],
            code,
        )
        for _, code in scopes
        if room[code] >= count
    ]
    return [(depth, cast(int, entry[-1])) for entry in sorted(ranked)]


def _no_scope_reason(
    layout: Layout, rules: GroupRules, state: GroupState, required: int | None
) -> str:
    if rules.affinity is not None and not state.empty:
        held = min(state.domains_at(rules.affinity))
        return f"the group's {layout.levels[rules.affinity]} {held[-1]} has no room for the pods"
    if rules.affinity is not None or required is not None:
        depth = max(d for d in (rules.affinity, required) if d is not None)
        return f"no {layout.levels[depth]} has room for all the pods"
    return "not enough room for the pods"


class _Plan:
    """The fill of one request: room per domain under the anti-affinity cap, then descent."""

    def __init__(
        self, layout: Layout, rules: GroupRules, state: GroupState, fragmentation_aware: bool
    ) -> None:
        self.fragmentation_aware = fragmentation_aware
        # a new affinity domain for a group, which later members will grow in
        self.opens_growing_domain = (
            fragmentation_aware and rules.affinity is not None and state.empty
        )
        self.layout = layout
        self.rules = rules
        self.state = state
        anti = rules.anti_affinity
        self.used_anti: np.ndarray | None = None
        if anti is not None:
            self.used_anti = np.zeros(len(layout.domains[anti]), dtype=bool)
            for path in state.domains_at(anti):
                code = layout.code_of[anti].get(path)
                if code is not None:  # a domain no longer in the topology holds nobody new
                    self.used_anti[code] = True

    def _mark_anti(self, placed: Mapping[int, int]) -> None:
        """Within one request, later partitions see the anti-affinity domains the earlier
        ones took."""
        if self.used_anti is None or self.rules.anti_affinity is None:
            return
        for leaf in placed:
            self.used_anti[self.layout.codes[self.rules.anti_affinity][leaf]] = True

    def room(self, cap: np.ndarray, depth: int) -> np.ndarray:
        """Pods that fit in each domain of level `depth`, with at most one per domain of the
        anti-affinity level and none where the group already is."""
        anti = self.rules.anti_affinity
        if anti is None or anti < depth:
            return np.bincount(
                self.layout.codes[depth], weights=cap, minlength=len(self.layout.domains[depth])
            ).astype(np.int64)
        per_anti = np.bincount(
            self.layout.codes[anti], weights=cap, minlength=len(self.layout.domains[anti])
        )
        per_anti = np.minimum(per_anti, 1).astype(np.int64)
        per_anti[self.used_anti] = 0
        if anti == depth:
            return per_anti
        parent_of = np.zeros(len(self.layout.domains[anti]), dtype=np.int64)
        parent_of[self.layout.codes[anti]] = self.layout.codes[depth]
        return np.bincount(
            parent_of, weights=per_anti, minlength=len(self.layout.domains[depth])
        ).astype(np.int64)

    def fill(self, cap: np.ndarray, depth: int, code: int, count: int) -> GroupPlacement:
        if self.rules.partitions:
            return self._fill_partitions(cap, depth, code, count)
        inside = self._inside(depth, code)
        taken = self._descend(np.where(inside, cap, 0), count)
        pods = {self.layout.leaf_paths[leaf]: n for leaf, n in taken.items()}
        return GroupPlacement(pods, {}, {}, {})

    def _inside(self, depth: int, code: int) -> np.ndarray:
        if depth < 0:
            return np.ones(len(self.layout.leaf_paths), dtype=bool)
        inside: np.ndarray = self.layout.codes[depth] == code
        return inside

    def _descend(self, cap: np.ndarray, count: int) -> dict[int, int]:
        """Leaf -> pods for `count` pods over the leaves with `cap` > 0 (BestFit descent)."""
        rooms = [self.room(cap, d) for d in range(len(self.layout.levels))]
        top = rooms[0]
        if int(top.sum()) < count:
            raise GroupPlacementFailure(
                f"room for {int(top.sum())} of {count} pods under the group's constraints"
            )
        taken: dict[int, int] = {}
        self._take(rooms, cap, -1, 0, count, taken)
        return taken

    def _take(
        self,
        rooms: list[np.ndarray],
        cap: np.ndarray,
        depth: int,
        code: int,
        count: int,
        taken: dict[int, int],
    ) -> None:
        levels = len(self.layout.levels)
        if depth == levels - 1:
            leaves = np.flatnonzero(self.layout.codes[depth] == code)
            for leaf in leaves:
                n = min(count, int(cap[leaf]))
                if self.rules.anti_affinity == depth:
                    n = min(n, 1)
                if n > 0:
                    taken[int(leaf)] = taken.get(int(leaf), 0) + n
                    count -= n
                if count == 0:
                    return
            return
        children = (
            list(range(len(self.layout.domains[0])))
            if depth < 0
            else self.layout.children[depth][code]
        )
        room = rooms[depth + 1]
        ordered = sorted(
            (c for c in children if room[c] > 0),
            key=lambda c: (-int(room[c]), self.layout.domains[depth + 1][c]),
        )
        while count > 0:
            fitting = [c for c in ordered if room[c] >= count]
            if fitting:
                child = min(
                    fitting, key=lambda c: (int(room[c]), self.layout.domains[depth + 1][c])
                )
                self._take(rooms, cap, depth + 1, child, count, taken)
                return
            child = ordered.pop(0)
            n = int(room[child])
            if n <= 0:
                raise GroupPlacementFailure("ran out of room while descending")
            self._take(rooms, cap, depth + 1, child, n, taken)
            count -= n

    def _fill_partitions(
        self, cap: np.ndarray, depth: int, code: int, count: int
    ) -> GroupPlacement:
        rules, state, layout = self.rules, self.state, self.layout
        level = rules.partition_level
        assert level is not None
        needs = _partition_needs(rules.partitions, state.partition_sizes, count)
        inside = self._inside(depth, code)
        cap = np.where(inside, cap, 0)
        claimed = dict(state.partition_of)
        pods: dict[Path, int] = {}
        partition_of_leaf: dict[Path, int] = {}
        new_domains: dict[Path, int] = {}
        # Fill the partitions needing most first: they need the most new domains.
        for partition, need in sorted(needs.items(), key=lambda item: (-item[1], item[0])):
            if need == 0:
                continue
            own = {d for d, p in claimed.items() if p == partition}
            free = {d for d in layout.domains[level] if d not in claimed}
            mine = layout.leaves_under(level, own)
            placed: dict[int, int] = {}
            room_mine = int(np.where(mine, cap, 0).sum()) if own else 0
            if room_mine:
                first = min(need, int(self.room(np.where(mine, cap, 0), 0).sum()))
                if first:
                    placed = self._descend(np.where(mine, cap, 0), first)
            rest = need - sum(placed.values())
            if rest:
                open_leaves = layout.leaves_under(level, free)
                more = self._descend(np.where(open_leaves, cap, 0), rest)
                for leaf, n in more.items():
                    placed[leaf] = placed.get(leaf, 0) + n
            for leaf, n in placed.items():
                path = layout.leaf_paths[leaf]
                pods[path] = pods.get(path, 0) + n
                partition_of_leaf[path] = partition
                cap[leaf] -= n
                domain = path[: level + 1]
                if domain not in claimed:
                    claimed[domain] = partition
                    new_domains[domain] = partition
            # a domain claimed by this partition is closed to the others
            cap[layout.leaves_under(level, {d for d, p in claimed.items() if p == partition})] = 0
            self._mark_anti(placed)
        counts = {p: n for p, n in needs.items() if n}
        return GroupPlacement(pods, partition_of_leaf, new_domains, counts)


def _partition_needs(partitions: int, sizes: Mapping[int, int], count: int) -> dict[int, int]:
    """How many of `count` new pods each partition (1..K) takes: each pod goes to the smallest
    partition, so sizes end within 1 of each other whenever `count` can make them so (members
    that left may have unbalanced them; a request too small to rebalance still fills the
    smallest first rather than wait for ever)."""
    current = {p: sizes.get(p, 0) for p in range(1, partitions + 1)}
    needs = dict.fromkeys(current, 0)
    for _ in range(count):
        # ties: the partition that was larger before, then the lower number (stable choices)
        smallest = min(current, key=lambda p: (current[p] + needs[p], -current[p], p))
        needs[smallest] += 1
    return needs
