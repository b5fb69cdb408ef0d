"""Placement over numpy arrays: every domain of a level at once.

The plain path (snapshot's `_fill_leaf_counts`, algorithm's `roll_up`,
`find_level_with_fit_domains` and `descend`) writes counts onto every Domain object and sorts
whole levels in Python: interpreted work in proportion to the cluster, for every pod set. Here
the leaf counts, the roll-up, the choice of level and domains, and (without a leader) the
descent are array operations, so the interpreted work follows the size of the answer. With a
leader the descent stays algorithm.descend, and only the domains it visits get their count
fields (`LevelCounts.fill`). Choices and messages are the plain path's, exactly: a property
test compares both.

Arrays hold int64. The snapshot keeps every quantity within +-2**62 on this path (see
`capacity.EXACT_LIMIT`), so the differences taken here cannot overflow.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from tas.solver.algorithm import (
    PlacementFailure,
    PlacementParams,
    multi_layer_not_fit_message,
    not_fit_message,
)
from tas.solver.partial_slices import NO_TAIL_FIT
from tas.solver.tree import MAX_INT32, Domain, DomainTree

Array = np.ndarray
# "No such child" in penalty arrays: far above any slice count, and twice it fits int64.
_NONE = 2**40


# ---------------------------------------------------------------------------------------------
# Leaf counts


def resource_fits(
    free: Array,
    rows: Mapping[str, int],
    requests: Mapping[str, int],
    taken: Mapping[str, int] | None = None,
) -> tuple[list[str], list[Array]]:
    """Every requested resource (by name) and its own count of pods of this shape on every
    leaf: free // request, after taking `taken` (a leader's requests) off. A resource no leaf
    has allows none. One division per resource by a constant, numpy's fast case."""
    names = sorted(name for name, request in requests.items() if request > 0)
    fits = []
    for name in names:
        row = rows.get(name)
        available = free[row] if row is not None else np.zeros(free.shape[1], dtype=np.int64)
        if taken and name in taken:
            available = available - taken[name]
        fits.append(available // requests[name])
    if not fits:  # nothing requested (every pod asks for one "pods", so never in practice)
        fits.append(np.zeros(free.shape[1], dtype=np.int64))
    return names, fits


def pods_that_fit(fits: list[Array]) -> Array:
    """Pods that fit on every leaf: the fewest any resource allows, never below 0."""
    counts = fits[0]
    for more in fits[1:]:
        counts = np.minimum(counts, more)
    fit: Array = np.maximum(counts, 0)
    return fit


def limiting_resources(names: list[str], fits: list[Array], leaves: Array) -> dict[str, int]:
    """For the leaves in the boolean mask `leaves`: how many are limited by each resource (the
    one allowing the fewest pods, ties to the first name), for "excluded: resource ..."."""
    if not names or not leaves.any():
        return {}
    limiting = np.maximum(np.stack([each[leaves] for each in fits]), 0).argmin(axis=0)
    per_name = np.bincount(limiting, minlength=len(names))
    return {name: int(n) for name, n in zip(names, per_name.tolist(), strict=True) if n}


# ---------------------------------------------------------------------------------------------
# Phase 1: counts of every domain, level by level


@dataclass
class LevelCounts:
    """Phase 1's counts, one array per level (index: the domain's `order`) and kind. Without a
    leader the with-leader arrays are the plain ones and `leaders` is all zero."""

    tree: DomainTree
    pods: list[Array]
    slices: list[Array]
    pods_with_leader: list[Array]
    slices_with_leader: list[Array]
    leaders: list[Array]
    # NUMA zones each leaf's pods need at the fewest (TASNUMAZones), a tie-break after the
    # counts; None: no leaf is counted by zones
    leaf_zones: Any = None  # indexable by positions (numa_counting.LeafZones), or None
    # With a partial last slice: whole slices beside it, and beside it and the leader
    # (solver/partial_slices.py), for every level (0 below the slice level); else None.
    slices_with_tail: list[Array] | None = None
    slices_with_leader_and_tail: list[Array] | None = None

    def fill(self, level: int, indices: Array | list[int]) -> list[Domain]:
        """Write the counts of these domains of `level` onto their Domain objects."""
        domains = self.tree.levels[level]
        columns = (
            self.pods[level][indices].tolist(),
            self.slices[level][indices].tolist(),
            self.pods_with_leader[level][indices].tolist(),
            self.slices_with_leader[level][indices].tolist(),
            self.leaders[level][indices].tolist(),
        )
        filled = []
        positions = indices.tolist() if isinstance(indices, np.ndarray) else indices
        for position, pods, slices, pods_wl, slices_wl, leaders in zip(
            positions, *columns, strict=True
        ):
            domain = domains[position]
            domain.pod_count = pods
            domain.slice_count = slices
            domain.pod_count_with_leader = pods_wl
            domain.slice_count_with_leader = slices_wl
            domain.leader_count = leaders
            filled.append(domain)
        if self.slices_with_tail is not None and self.slices_with_leader_and_tail is not None:
            tails = self.slices_with_tail[level][indices].tolist()
            both = self.slices_with_leader_and_tail[level][indices].tolist()
            for domain, with_tail, with_both in zip(filled, tails, both, strict=True):
                domain.slice_count_with_tail = with_tail
                domain.slice_count_with_leader_and_tail = with_both
        return filled

    def fill_domains(self, domains: list[Domain]) -> None:
        """`fill` for Domain objects of one level (the descent's children)."""
        if domains:
            self.fill(domains[0].level, [domain.order for domain in domains])


def roll_up(
    tree: DomainTree,
    leaf_pods: Array,
    params: PlacementParams,
    leaf_pods_with_leader: Array | None = None,
    leaf_leaders: Array | None = None,
) -> LevelCounts:
    """The plain path's `roll_up` on whole levels: sums over each domain's children (whole inner
    slices only, with multi-layer slices); with a leader, less the smallest penalty among the
    children able to host it."""
    last = tree.level_count - 1
    size, slice_level = params.slice_size, params.slice_level
    with_leader = leaf_leaders is not None
    pods: list[Array] = list(tree.zeros)
    slices: list[Array] = list(tree.zeros)
    leaders: list[Array] = list(tree.zeros)
    pods[last] = leaf_pods
    if slice_level == last:
        slices[last] = leaf_pods // size
    # Without a leader every with-leader count is the plain one: the same lists.
    pods_wl, slices_wl = pods, slices
    if leaf_leaders is not None:
        assert leaf_pods_with_leader is not None, "a leader's counts come together"
        pods_wl, slices_wl = list(pods), list(slices)
        pods_wl[last] = leaf_pods_with_leader
        if slice_level == last:
            slices_wl[last] = leaf_pods_with_leader // size
        leaders[last] = leaf_leaders
    for level in range(last - 1, -1, -1):
        below = level + 1
        starts = tree.child_starts[level]
        child_pods, child_pods_wl = pods[below], pods_wl[below]
        inner = params.slice_size_at_level.get(below)
        if inner:
            child_pods = child_pods // inner * inner
            child_pods_wl = child_pods_wl // inner * inner
        pods[level] = np.add.reduceat(child_pods, starts)
        slices[level] = np.add.reduceat(slices[below], starts)
        if with_leader:
            able = leaders[below] > 0
            any_able = np.logical_or.reduceat(able, starts)
            pod_penalty = _smallest(np.where(able, child_pods - child_pods_wl, MAX_INT32), starts)
            slice_penalty = _smallest(
                np.where(able, slices[below] - slices_wl[below], MAX_INT32), starts
            )
            pods_wl[level] = np.where(any_able, pods[level] - pod_penalty, 0)
            slices_wl[level] = np.where(any_able, slices[level] - slice_penalty, 0)
            leaders[level] = np.maximum.reduceat(leaders[below], starts)
        if level == slice_level:
            slices[level] = pods[level] // size
            if with_leader:
                slices_wl[level] = pods_wl[level] // size
    counts = LevelCounts(tree, pods, slices, pods_wl, slices_wl, leaders)
    if params.tail_size:
        _roll_up_tails(counts, params, with_leader)
    return counts


def _roll_up_tails(counts: LevelCounts, params: PlacementParams, with_leader: bool) -> None:
    """partial_slices.roll_up_tails on whole levels: at the slice level the tail is charged to
    the domain itself, above it to the cheapest child (with a leader: the cheapest way to hold
    both, never the same child's lowest penalty twice)."""
    tree, size, tail = counts.tree, params.slice_size, params.tail_size
    with_tail, both = list(tree.zeros), list(tree.zeros)
    level = params.slice_level
    with_tail[level] = _hosting_tail(counts.pods[level], size, tail)
    both[level] = np.full(len(tree.levels[level]), NO_TAIL_FIT, dtype=np.int64)
    if with_leader:
        both[level] = _hosting_tail(counts.pods_with_leader[level], size, tail)
    for level in range(params.slice_level - 1, -1, -1):
        below, starts = level + 1, tree.child_starts[level]
        child_slices = counts.slices[below]
        tail_penalty = np.where(
            with_tail[below] != NO_TAIL_FIT, child_slices - with_tail[below], _NONE
        )
        tails = _cheapest_two(tail_penalty, starts)
        slices = counts.slices[level]
        with_tail[level] = np.where(
            tails[0] < _NONE,
            np.minimum(slices - tails[0], _hosting_tail(counts.pods[level], size, tail)),
            NO_TAIL_FIT,
        )
        both[level] = np.full(len(slices), NO_TAIL_FIT, dtype=np.int64)
        if with_leader:
            penalty = _both_penalty(counts, below, starts, tails, both[below])
            both[level] = np.where(
                penalty < _NONE,
                np.minimum(
                    slices - penalty, _hosting_tail(counts.pods_with_leader[level], size, tail)
                ),
                NO_TAIL_FIT,
            )
    counts.slices_with_tail, counts.slices_with_leader_and_tail = with_tail, both


def _both_penalty(
    counts: LevelCounts, below: int, starts: Array, tails: tuple[Array, ...], child_both: Array
) -> Array:
    """Per domain: the whole slices its children give up to hold the leader and the tail (in
    one child, or in two), _NONE when they cannot (partial_slices.both_penalty)."""
    able = counts.leaders[below] > 0
    child_slices = counts.slices[below]
    leader = _cheapest_two(
        np.where(able, child_slices - counts.slices_with_leader[below], _NONE), starts
    )
    together = _smallest_of(
        np.where(able & (child_both != NO_TAIL_FIT), child_slices - child_both, _NONE), starts
    )
    (leader_best, leader_at, leader_second), (tail_best, tail_at, tail_second) = leader, tails
    apart = np.where(
        leader_at != tail_at,
        leader_best + tail_best,
        np.minimum(leader_second + tail_best, leader_best + tail_second),
    )
    found = (leader_best < _NONE) & (tail_best < _NONE)
    penalty = np.minimum(together, np.where(found, apart, _NONE))
    capped: Array = np.minimum(penalty, _NONE)
    return capped


def _cheapest_two(penalty: Array, starts: Array) -> tuple[Array, Array, Array]:
    """Per domain over its children: the lowest penalty, the position of its first child with
    it, and the lowest of the others (_NONE where there is none)."""
    best = _smallest_of(penalty, starts)
    owner = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(penalty))))
    positions = np.arange(len(penalty))
    first = np.minimum.reduceat(np.where(penalty == best[owner], positions, len(penalty)), starts)
    others = penalty.copy()
    others[first[best < _NONE]] = _NONE
    return best, first, _smallest_of(others, starts)


def _smallest_of(values: Array, starts: Array) -> Array:
    return np.minimum.reduceat(values, starts)


def _hosting_tail(pods: Array, size: int, tail: int) -> Array:
    return np.where(pods >= tail, (pods - tail) // size, NO_TAIL_FIT)


def _smallest(values: Array, starts: Array) -> Array:
    """Per domain, the smallest of its children's values, never above MAX_INT32 (the plain
    path's starting point)."""
    return np.minimum(np.minimum.reduceat(values, starts), MAX_INT32)


# ---------------------------------------------------------------------------------------------
# Phase 2a: the level and the domains that can take the whole request


def _nonzero(mask: Array) -> Array:
    return mask.nonzero()[0]  # np.flatnonzero without its ravel: these are 1-d


def _first(keys: list[Array], candidates: Array | None = None) -> int:
    """The first domain in the order given by `keys` (lexicographic, then by position) among
    the candidates (a boolean mask; None: all). -1 when there is none."""
    positions = _nonzero(candidates) if candidates is not None else None
    for key in keys:
        values = key if positions is None else key[positions]
        if len(values) == 0:
            return -1
        best = values == values.min()
        positions = _nonzero(best) if positions is None else positions[best]
        if len(positions) == 1:
            break
    assert positions is not None, "at least one key"
    return int(positions[0])


def _last(keys: list[Array]) -> int:
    """The last domain in the order given by `keys`."""
    positions = None
    for key in keys:
        values = key if positions is None else key[positions]
        best = values == values.max()
        positions = _nonzero(best) if positions is None else positions[best]
    assert positions is not None, "at least one key"
    return int(positions[-1])


def _best_fit(keys: list[Array], capacity: Array, needed: int, able: Array | None) -> int:
    """algorithm.find_best_fit_domain: among the domains able to host the leaders, the smallest
    capacity still >= needed, the first in order on a tie; -1 when none fits."""
    fits = (capacity >= needed) & (capacity < MAX_INT32)
    if able is not None:
        fits &= able
    if not fits.any():
        return -1
    smallest = capacity[fits].min()
    return _first(keys, fits & (capacity == smallest))


def find_level_with_fit_domains(
    counts: LevelCounts, level: int, params: PlacementParams
) -> tuple[int, Array]:
    """algorithm.find_level_with_fit_domains on arrays: the level and its chosen domains'
    positions, in the order the descent takes them."""
    tree = counts.tree
    while True:
        if not tree.levels[level]:
            raise PlacementFailure(f"no topology domains at level: {params.level_keys[level]}")
        chosen = _fit_at_level(counts, level, params)
        if chosen is not None:
            return level, chosen
        level -= 1  # preferred: climb one level and try to fit in a single, bigger domain


def _fit_at_level(counts: LevelCounts, level: int, params: PlacementParams) -> Array | None:
    """One level of find_level_with_fit_domains: the domains, or None to climb a level."""
    pods, slices = counts.pods[level], counts.slices[level]
    slices_wl, hosted = counts.slices_with_leader[level], counts.leaders[level]
    leaders = params.leader_count
    least_free = params.least_free_capacity
    needed = params.count // params.slice_size
    slices_key = slices if least_free else -slices
    if leaders == 0:
        keys = [slices_key, pods]
        if counts.leaf_zones is not None and level == counts.tree.level_count - 1:
            keys.append(counts.leaf_zones)  # TASNUMAZones: fewest zones needed, after counts
        able = None
        capacity = slices
    else:
        keys = [-hosted, slices_wl if least_free else -slices_wl, counts.pods_with_leader[level]]
        able = hosted >= leaders
        capacity = slices_wl

    def fail(fit: int) -> PlacementFailure:
        return PlacementFailure(_message(counts, params, level, fit, needed))

    if params.best_fit and leaders == 0:
        # The common answer, found directly: when some domain holds the whole request, the
        # first in order has the most slices, so holds it too, and best fit picks the same.
        best = _best_fit(keys, capacity, needed, None)
        if best >= 0:
            return np.array([best])
    top = _first(keys)
    if params.best_fit and slices_wl[top] >= needed and hosted[top] >= leaders:
        best = _best_fit(keys, capacity, needed, able)
        top = best if best >= 0 else top
    if least_free:
        fits = capacity >= needed if able is None else (capacity >= needed) & able
        if fits.any():
            return np.array([_first(keys, fits)])
        if params.required:
            raise fail(int(pods[_last(keys)]))
    if slices_wl[top] >= needed and hosted[top] >= leaders:
        return np.array([top])
    if params.required:
        raise fail(int(slices[top]))
    if level > 0 and not params.unconstrained:
        return None

    # Top level reached (or unconstrained): spread over several domains.
    results = []
    remaining = needed
    front = None
    if leaders > 0:
        front = _leader_front(counts, level, params, keys)
        if hosted[front] <= 0:
            raise fail(0)
        # No leader-capable domain holds the whole request (it would have fit above), so
        # Kueue's best fit for the leader's domain never applies here: `front` takes it.
        results.append(np.array([front]))
        remaining -= int(slices_wl[front])
    if remaining > 0:
        results.append(_spread(counts, level, params, slices_key, remaining, front, fail))
    return np.concatenate(results)


def _leader_front(
    counts: LevelCounts, level: int, params: PlacementParams, keys: list[Array]
) -> int:
    """algorithm.prioritize_leader_domain's choice: the first leader-capable domain whose leader
    penalty the level's total capacity can absorb, else the first in order."""
    slices, slices_wl = counts.slices[level], counts.slices_with_leader[level]
    hosted = counts.leaders[level]
    if len(slices) < 2:
        return _first(keys)
    required = params.count // params.slice_size
    available = int(slices.sum())
    absorbable = (hosted >= params.leader_count) & (available - (slices - slices_wl) >= required)
    return _first(keys, absorbable) if absorbable.any() else _first(keys)


def _spread(
    counts: LevelCounts,
    level: int,
    params: PlacementParams,
    slices_key: Array,
    remaining: int,
    taken: int | None,
    fail: Callable[[int], PlacementFailure],
) -> Array:
    """Take domains in order (by slices, then pods) until they hold `remaining` slices; BestFit
    swaps the last one for the tightest domain from there on that covers what is left."""
    slices = counts.slices[level]
    needed = params.count // params.slice_size
    candidates = np.ones(len(slices), dtype=bool)
    if taken is not None:
        candidates[taken] = False
    total = int(slices[candidates].sum())
    if total < remaining:
        raise fail(needed - (remaining - total))
    if params.leader_count == 0:
        # A domain without a whole slice takes no pods at this level or below: leaving it out
        # changes nothing but the work (LeastFreeCapacity would list every full domain first).
        candidates &= slices > 0
    ordered = _in_order(counts, level, _nonzero(candidates), params)
    covering = _cover(ordered, slices[ordered], remaining, params.best_fit)
    assert covering is not None, "the candidates' total covers it (checked above)"
    return covering[0]


# ---------------------------------------------------------------------------------------------
# Phase 2b/c without a leader: from the chosen domains down to the leaves


def descend(
    counts: LevelCounts, fit_level: int, fit: Array, params: PlacementParams
) -> list[tuple[int, int]]:
    """algorithm.descend for a request without a leader: (leaf position, pods) of every leaf
    that takes pods. Domains that take none are dropped as soon as they appear: they hand
    nothing down, so what the others take is the same."""
    tree = counts.tree
    best_fit = params.best_fit
    size = params.slice_size
    taken, slices = _take(fit, counts.slices[fit_level][fit], params.count // size, best_fit)
    current, pods = taken, slices * size
    lowest = tree.level_count - 1
    level = fit_level
    # Above the slice level the children of all chosen domains are pooled and re-chosen.
    while level < min(lowest, params.slice_level):
        level += 1
        ordered = _in_order(counts, level, _children(tree, level - 1, current), params)
        current, slices = _take(
            ordered, counts.slices[level][ordered], params.count // size, best_fit
        )
        pods = slices * size
    # Below it every domain splits its own pods among its children.
    while level < lowest:
        inner = (
            params.slice_size_at_level.get(level + 1, 1) if level >= params.slice_level else size
        )
        bounds = tree.child_bounds[level]
        next_current, next_pods = [], []
        for parent, parent_pods in zip(current.tolist(), pods.tolist(), strict=True):
            children = np.arange(bounds[parent], bounds[parent + 1])
            ordered = _in_order(counts, level + 1, children, params)
            capacity = counts.pods[level + 1][ordered] // inner
            chosen, amounts = _take(ordered, capacity, parent_pods // inner, best_fit)
            next_current.append(chosen)
            next_pods.append(amounts * inner)
        if not next_current:
            break  # nothing was taken (count 0)
        current, pods = np.concatenate(next_current), np.concatenate(next_pods)
        level += 1
    return [(leaf, n) for leaf, n in zip(current.tolist(), pods.tolist(), strict=True) if n > 0]


def _in_order(counts: LevelCounts, level: int, positions: Array, params: PlacementParams) -> Array:
    """These domains of `level` in algorithm.sorted_domains' order: by slices (BestFit: most
    first), then fewest pods, then position."""
    slices = counts.slices[level][positions]
    by_slices = slices if params.least_free_capacity else -slices
    pods = counts.pods[level][positions]
    if counts.leaf_zones is not None and level == counts.tree.level_count - 1:
        zones = counts.leaf_zones[positions]
        return positions[np.lexsort((positions, zones, pods, by_slices))]
    return positions[np.lexsort((positions, pods, by_slices))]


def _children(tree: DomainTree, level: int, parents: Array) -> Array:
    bounds = tree.child_bounds[level]
    ranges = [range(bounds[p], bounds[p + 1]) for p in parents.tolist()]
    return np.fromiter(itertools.chain.from_iterable(ranges), dtype=np.intp)


def _take(ordered: Array, capacity: Array, remaining: int, best_fit: bool) -> tuple[Array, Array]:
    """algorithm.update_counts_to_minimum without a leader: `_cover`, less the domains that
    take nothing (nothing at all when they cannot cover it, unreachable after phase 2a)."""
    if len(ordered) == 1 and capacity[0] >= remaining > 0:
        return ordered, np.array([remaining])  # one domain takes it all: the usual descent
    covering = _cover(ordered, capacity, remaining, best_fit)
    if covering is None:
        return ordered[:0], capacity[:0]
    chosen, amounts = covering
    keep = amounts > 0
    return chosen[keep], amounts[keep]


def _cover(
    ordered: Array, capacity: Array, remaining: int, best_fit: bool
) -> tuple[Array, Array] | None:
    """For domains in order with their capacities: whole domains until `remaining` is
    covered, the last one in part; BestFit swaps the last one for the tightest domain from
    there on that covers what is left. The domains and what each takes; None when they do
    not cover it."""
    covered = np.cumsum(capacity)
    last = int(np.searchsorted(covered, remaining))  # the first position covering it
    if last == len(ordered):
        return None
    chosen, amounts = ordered[: last + 1].copy(), capacity[: last + 1].copy()
    amounts[-1] = remaining - (int(covered[last - 1]) if last > 0 else 0)
    if best_fit:
        tail = capacity[last:]
        fits = _nonzero((tail >= amounts[-1]) & (tail < MAX_INT32))
        if len(fits):
            chosen[-1] = ordered[last + fits[tail[fits].argmin()]]
    return chosen, amounts


def _message(counts: LevelCounts, params: PlacementParams, level: int, fit: int, total: int) -> str:
    if params.multi_layer:
        return multi_layer_not_fit_message(params, level, _layer_fits(counts, params, level))
    return not_fit_message(params, level, fit, total)


def _layer_fits(counts: LevelCounts, params: PlacementParams, level: int) -> list[int] | None:
    """For the domain with the most slices (ties: the smallest id): the slices of every layer
    its subtree holds."""
    tree = counts.tree
    slices = counts.slices[level]
    if len(slices) == 0:
        return None
    tied = _nonzero(slices == slices.max()).tolist()
    best = min(tied, key=lambda position: tree.levels[level][position].id)
    fits = []
    for layer_level, size in params.multi_layer:
        start, stop = best, best + 1
        for below in range(level, layer_level):
            bounds = tree.child_bounds[below]
            start, stop = bounds[start], bounds[stop]
        fits.append(int((counts.pods[layer_level][start:stop] // size).sum()))
    return fits
