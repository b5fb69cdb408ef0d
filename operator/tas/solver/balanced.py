"""Balanced placement for preferred requests (Kueue's TASBalancedPlacement gate).

Instead of filling domains greedily, find the sibling group (children of one domain one level
above the preferred level) that allows the highest minimum number of slices per used domain
(the threshold), then give every chosen domain that minimum and hand out the rest.
Works on cloned subtrees so pruning never touches the shared tree.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from tas.solver.algorithm import (
    PlacementParams,
    roll_up,
    sorted_domains,
    sorted_domains_with_leader,
)
from tas.solver.tree import Domain, DomainTree

BALANCED_PREFIX = "TAS Balanced Placement: "

# Copy every sibling group deeply before pruning, exactly as Kueue does, instead of pruning in
# place. Slower; tests switch it on to check both ways choose the same placement.
ALWAYS_DEEP_COPY = False


class BalancedPlacementFailed(Exception):
    """Balanced placement gave up; the caller falls back to BestFit."""


def evaluate_greedy(
    domains: list[Domain], slice_count: int, leader_count: int, affinity: bool = False
) -> tuple[bool, int, Domain | None, Domain | None]:
    """Greedy BestFit-order take: (fits, domains used, last leader domain, last worker domain).
    `affinity`: in the preferred node affinity order (PlacementParams.affinity)."""
    used = 0
    remaining = slice_count
    remaining_leaders = leader_count
    last_with_leader = None
    last = None
    position = 0
    if leader_count > 0:
        with_leader = sorted_domains_with_leader(domains, False, affinity)
        while (
            remaining_leaders > 0
            and position < len(with_leader)
            and with_leader[position].leader_count > 0
        ):
            domain = with_leader[position]
            used += 1
            last_with_leader = domain
            remaining_leaders -= domain.leader_count
            remaining -= domain.slice_count_with_leader
            position += 1
        without_leader = sorted_domains(with_leader[position:], False, affinity)
    else:
        without_leader = sorted_domains(domains, False, affinity)
    if remaining_leaders > 0:
        return False, 0, None, None
    for domain in without_leader:
        if remaining <= 0 or domain.slice_count <= 0:
            break
        used += 1
        last = domain
        remaining -= domain.slice_count
    if remaining > 0:
        return False, 0, None, None
    return True, used, last_with_leader, last


def balance_threshold(
    slice_count: int, used: int, last_with_leader: Domain | None, last: Domain | None
) -> int:
    if used == 0:
        # No slice to place (fewer pods than one slice): Kueue divides by zero here (its webhook
        # keeps such requests out); we report "not possible" and fall back to BestFit.
        return 0
    threshold = slice_count // used
    if last_with_leader is not None:
        threshold = min(threshold, last_with_leader.slice_count_with_leader)
    if last is not None:
        threshold = min(threshold, last.slice_count)
    return threshold


def _children_entropy(domain: Domain) -> float:
    counts = sorted(child.pod_count for child in domain.children if child.pod_count > 0)
    total = sum(counts)
    if total == 0:
        return 0.0
    entropy = -sum(c / total * math.log2(c / total) for c in counts)
    # Rounded so that equal distributions compare equal whatever the summation order.
    return round(entropy, 9)


def _capacity_and_entropy_key(domain: Domain) -> tuple[int, int, float, tuple[str, ...]]:
    return (
        -domain.leader_count,
        -domain.slice_count_with_leader,
        -_children_entropy(domain),
        domain.values,
    )


def select_optimal_domain_set(
    domains: list[Domain],
    slice_count: int,
    leader_count: int,
    slice_size: int,
    by_entropy: bool,
    affinity: bool = False,
) -> list[Domain] | None:
    """The set of exactly as many domains as greedy needs with the least capacity that still
    covers the request (a knapsack over (domains used, leaders left, pods left))."""
    fits, optimal, _, _ = evaluate_greedy(domains, slice_count, leader_count, affinity)
    if not fits:
        return None
    if by_entropy:
        ordered = sorted(domains, key=_capacity_and_entropy_key)
    else:
        ordered = sorted(domains, key=lambda d: d.values)
    # placements[i][leaders_left][pods_left] = the first set of i domains reaching that state
    placements: list[dict[int, dict[int, list[Domain]]]] = [{} for _ in range(optimal + 1)]
    placements[0][leader_count] = {slice_count * slice_size: []}
    for domain in ordered:
        for used in range(optimal, 0, -1):
            before_level = placements[used - 1]
            target = placements[used]
            for leaders_before in sorted(before_level):
                by_pods = before_level[leaders_before]
                for pods_before in sorted(by_pods):
                    if leaders_before <= 0 and pods_before <= 0:
                        continue
                    chosen = [*by_pods[pods_before], domain]
                    if leaders_before > 0 and domain.leader_count > 0:
                        leaders_after = leaders_before - domain.leader_count
                        pods_after = pods_before - domain.pod_count_with_leader
                        target.setdefault(leaders_after, {}).setdefault(pods_after, chosen)
                    if domain.slice_count > 0:
                        pods_after = pods_before - domain.pod_count
                        target.setdefault(leaders_before, {}).setdefault(pods_after, chosen)
    complete = placements[optimal].get(0, {})
    overshoots = [left for left in complete if left <= 0]
    if not overshoots:
        return None
    return complete[max(overshoots)]


def place_slices_balanced(
    domains: list[Domain],
    slice_count: int,
    leader_count: int,
    slice_size: int,
    threshold: int,
    affinity: bool = False,
) -> list[Domain]:
    chosen = select_optimal_domain_set(
        domains, slice_count, leader_count, slice_size, False, affinity
    )
    if chosen is None:
        raise BalancedPlacementFailed(
            BALANCED_PREFIX + "Cannot find optimal domain set to fit the request"
        )
    if slice_count < len(chosen) * threshold:
        raise BalancedPlacementFailed(BALANCED_PREFIX + "Not enough slices to meet the threshold")
    chosen = sorted_domains_with_leader(chosen, False, affinity)
    extra_left = slice_count - len(chosen) * threshold
    leaders_left = leader_count
    for domain in chosen:
        if leaders_left > 0:
            extra = min(domain.slice_count_with_leader - threshold, extra_left)
            domain.leader_count = 1
            leaders_left -= 1
        elif extra_left > 0:
            extra = min(domain.slice_count - threshold, extra_left)
            domain.leader_count = 0
        else:
            domain.leader_count = 0
            extra = 0
        domain.slice_count = threshold + extra
        domain.pod_count = domain.slice_count * slice_size
        domain.slice_count_with_leader = domain.slice_count
        domain.pod_count_with_leader = domain.pod_count - domain.leader_count
        extra_left -= extra
    if extra_left > 0 or leaders_left > 0:
        raise BalancedPlacementFailed(BALANCED_PREFIX + "Not all slices or leaders could be placed")
    return chosen


class _Candidates:
    """One sibling group, prunable, and restorable to its state before pruning.

    Kueue deep-copies every group's subtrees before pruning. Pruning only changes the group's
    domains and their children (a child below the threshold is zeroed with its whole subtree,
    and no pod is ever placed under it), so we prune the tree in place, keeping an undo log
    for the retry at a lower threshold; the caller refills the tree if balanced placement is
    abandoned. With inner slice layers Kueue's recomputation also drops the inner rounding
    deeper down, so that case keeps Kueue's deep copy.
    """

    def __init__(self, siblings: list[Domain], params: PlacementParams) -> None:
        self.siblings = siblings
        self.params = params
        self.deep = ALWAYS_DEEP_COPY or bool(params.slice_size_at_level)
        self.domains = [d.clone_subtree() for d in siblings] if self.deep else list(siblings)
        # each domain changed in place and its five counts before: put back by `fresh`
        self._undo: list[tuple[Domain, int, int, int, int, int]] = []

    def fresh(self) -> _Candidates:
        """The group as it was before any pruning."""
        if self.deep:
            return _Candidates(self.siblings, self.params)
        for domain, *state in reversed(self._undo):
            (
                domain.pod_count,
                domain.slice_count,
                domain.pod_count_with_leader,
                domain.slice_count_with_leader,
                domain.leader_count,
            ) = state
        self._undo.clear()
        return self

    def _save(self, domain: Domain) -> None:
        if not self.deep:
            self._undo.append(
                (
                    domain,
                    domain.pod_count,
                    domain.slice_count,
                    domain.pod_count_with_leader,
                    domain.slice_count_with_leader,
                    domain.leader_count,
                )
            )

    def prune_below(self, threshold: int, leader_required: bool) -> None:
        for domain in self.domains:
            for child in domain.children:
                self._prune(child, threshold, leader_required)
        for domain in self.domains:
            self._save(domain)
            roll_up(
                domain,
                self.params.requested_level,
                self.params.slice_size,
                self.params.slice_level,
                None,
                leader_required,
                recursive=self.deep,
            )
            self._prune(domain, threshold, leader_required)

    def _prune(self, domain: Domain, threshold: int, leader_required: bool) -> None:
        if domain.slice_count < threshold:
            self._save(domain)
            self._clear(domain, Domain.clear_counts)
        elif (
            leader_required
            and domain.leader_count > 0
            and domain.slice_count_with_leader < threshold
        ):
            # still usable for workers, no longer as the leader's host at this threshold
            self._save(domain)
            self._clear(domain, _clear_leader_capacity)

    def _clear(self, domain: Domain, clear: Callable[[Domain], None]) -> None:
        clear(domain)
        if self.deep:
            for child in domain.children:
                self._clear(child, clear)


def _clear_leader_capacity(domain: Domain) -> None:
    domain.pod_count_with_leader = 0
    domain.slice_count_with_leader = 0
    domain.leader_count = 0


def _lower_level(domains: list[Domain], params: PlacementParams) -> list[Domain]:
    if params.requested_level < params.slice_level:
        return [child for domain in domains for child in domain.children]
    return domains


def find_best_domains(tree: DomainTree, params: PlacementParams) -> tuple[list[Domain], int]:
    """The pruned best sibling group and its threshold (0: not possible).

    May leave counts in the tree pruned: refill before any other placement algorithm.
    """
    slice_count = params.count // params.slice_size
    leader_required = params.leader_count > 0
    if params.requested_level == 0:
        groups = [tree.levels[0]]
    else:
        groups = [parent.children for parent in tree.levels[params.requested_level - 1]]
    best_threshold = 0
    best_domain_count = 0
    best: list[Domain] = []
    for siblings in groups:
        # Greedy only reads counts, so the group itself can be evaluated before copying it.
        fits, used, last_with_leader, last = evaluate_greedy(
            _lower_level(siblings, params), slice_count, params.leader_count, params.affinity
        )
        if not fits:
            continue
        threshold = balance_threshold(slice_count, used, last_with_leader, last)
        threshold_with_reservation = threshold
        if leader_required and last is not None:
            threshold_with_reservation = min(threshold, last.slice_count_with_leader)
        if threshold < best_threshold:
            continue
        candidates = _Candidates(siblings, params)
        candidates.prune_below(threshold, leader_required)
        fits, domain_count, _, _ = evaluate_greedy(
            candidates.domains, slice_count, params.leader_count, params.affinity
        )
        if not fits and threshold_with_reservation < threshold:
            # retry with a lower threshold that keeps room for the leader
            if threshold_with_reservation <= 0 or threshold_with_reservation < best_threshold:
                continue
            threshold = threshold_with_reservation
            candidates = candidates.fresh()
            candidates.prune_below(threshold, leader_required)
            fits, domain_count, _, _ = evaluate_greedy(
                candidates.domains, slice_count, params.leader_count, params.affinity
            )
        if not fits:
            continue
        if threshold > best_threshold or (
            threshold == best_threshold and domain_count < best_domain_count
        ):
            best_threshold = threshold
            best_domain_count = domain_count
            best = candidates.domains
    return best, best_threshold


def apply_balanced_placement(
    params: PlacementParams, threshold: int, fit_domains: list[Domain]
) -> tuple[list[Domain], int]:
    """Choose the preferred-level domains and give their children balanced slice counts;
    returns those children and their level."""
    slice_count = params.count // params.slice_size
    if params.requested_level < params.slice_level:
        chosen = select_optimal_domain_set(
            fit_domains, slice_count, params.leader_count, params.slice_size, True, params.affinity
        )
        if chosen is None:
            raise BalancedPlacementFailed(
                BALANCED_PREFIX + "Cannot find optimal domain set to fit the request"
            )
        fit_domains = [child for domain in chosen for child in domain.children]
        fit_level = params.requested_level + 1
    else:
        fit_level = params.requested_level
    placed = place_slices_balanced(
        fit_domains, slice_count, params.leader_count, params.slice_size, threshold, params.affinity
    )
    return placed, fit_level
