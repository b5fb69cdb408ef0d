"""A partial last slice (Kueue's TASPartialSlices): a pod count that is not a multiple of the
slice size is cut into whole slices and one shorter "tail" of count % size pods, which must
still fit in one domain of the slice level.

Phase 2 reasons in whole slices, so every domain at or above the slice level carries two more
capacities, rolled up with the others (as Kueue's pkg/cache/scheduler/tas_partial_slices.go):

    at the slice level:   slice_count_with_tail = (pod_count - tail) // size
    above it:             slice_count_with_tail = slice_count - cheapest child penalty

where a child's penalty is the whole slices it gives up to hold the tail, and the minimum runs
over the children that can hold it at all; NO_TAIL_FIT marks a domain that cannot.
`slice_count_with_leader_and_tail` is the same with room kept for a group's leader. Choosing
domains then knows whether the tail has a home among them before it commits to them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tas.solver.tree import MAX_INT32, Domain, DomainTree

NO_TAIL_FIT = -1  # below any number of slices, zero included


def slice_capacity(domain: Domain, with_leader: bool, with_tail: bool) -> int:
    """Whole slices the domain holds next to the obligations asked about (NO_TAIL_FIT when
    the tail is asked for and does not fit)."""
    if with_tail:
        return (
            domain.slice_count_with_leader_and_tail if with_leader else domain.slice_count_with_tail
        )
    return domain.slice_count_with_leader if with_leader else domain.slice_count


def fits_slices(domain: Domain, slices: int, leaders: int, with_tail: bool) -> bool:
    if leaders > 0 and domain.leader_count < leaders:
        return False
    return slice_capacity(domain, leaders > 0, with_tail) >= slices


def hosting_tail(pods: int, size: int, tail: int) -> int:
    """Whole slices left in `pods` once the tail is placed among them."""
    return NO_TAIL_FIT if pods < tail else (pods - tail) // size


@dataclass
class CheapestTwo:
    """The two lowest penalties over a list and the position of the lowest (the first on a
    tie): a leader and the tail may compete for the same cheapest domain."""

    best_index: int = -1
    best: int = MAX_INT32
    second: int = MAX_INT32

    @property
    def has_best(self) -> bool:
        return self.best_index >= 0

    @property
    def has_second(self) -> bool:
        return self.second < MAX_INT32

    def add(self, index: int, penalty: int) -> None:
        if not self.has_best or penalty < self.best:
            self.second = self.best
            self.best_index, self.best = index, penalty
        elif penalty < self.second:
            self.second = penalty


def both_penalty(leader: CheapestTwo, tail: CheapestTwo, together: int) -> int:
    """Slices given up to hold the leader and the tail: in one domain (`together`, MAX_INT32
    when none can) or in two, the same cheapest one never counted twice."""
    best = together
    if leader.has_best and tail.has_best:
        if leader.best_index != tail.best_index:
            best = min(best, leader.best + tail.best)
        else:
            if leader.has_second:
                best = min(best, leader.second + tail.best)
            if tail.has_second:
                best = min(best, leader.best + tail.second)
    return best


# ---------------------------------------------------------------------------------------------
# Phase 1 (plain path): after roll_up, from the slice level up.


def roll_up_tails(
    tree: DomainTree, size: int, tail: int, slice_level: int, leader_required: bool
) -> None:
    """The tail capacities of every domain at or above the slice level, from the counts
    roll_up left; below the slice level a domain is too small to hold a slice."""
    for domain in tree.levels[slice_level]:
        domain.slice_count_with_tail = hosting_tail(domain.pod_count, size, tail)
        domain.slice_count_with_leader_and_tail = (
            hosting_tail(domain.pod_count_with_leader, size, tail)
            if leader_required
            else NO_TAIL_FIT
        )
    for level in range(slice_level - 1, -1, -1):
        for domain in tree.levels[level]:
            _tail_from_children(domain, size, tail, leader_required)


def _tail_from_children(domain: Domain, size: int, tail: int, leader_required: bool) -> None:
    """Charge the cheapest child for the tail (and, with a leader, for both)."""
    tails, leaders, together = CheapestTwo(), CheapestTwo(), MAX_INT32
    for index, child in enumerate(domain.children):
        if child.slice_count_with_tail != NO_TAIL_FIT:
            tails.add(index, child.slice_count - child.slice_count_with_tail)
        if leader_required and child.leader_count > 0:
            leaders.add(index, child.slice_count - child.slice_count_with_leader)
            if child.slice_count_with_leader_and_tail != NO_TAIL_FIT:
                together = min(together, child.slice_count - child.slice_count_with_leader_and_tail)
    # Above the slice level slice_count is the sum of the children's.
    domain.slice_count_with_tail = NO_TAIL_FIT
    if tails.has_best:
        domain.slice_count_with_tail = min(
            domain.slice_count - tails.best, hosting_tail(domain.pod_count, size, tail)
        )
    domain.slice_count_with_leader_and_tail = NO_TAIL_FIT
    penalty = both_penalty(leaders, tails, together)
    if penalty < MAX_INT32:
        domain.slice_count_with_leader_and_tail = min(
            domain.slice_count - penalty, hosting_tail(domain.pod_count_with_leader, size, tail)
        )


# ---------------------------------------------------------------------------------------------
# Phase 2: choosing domains that hold the tail too.


def find_best_fit_domain_with_tail(
    domains: list[Domain], slices: int, leaders: int, affinity: bool = False
) -> Domain:
    """Kueue's findBestFitDomainForSlicesWithTail: the fewest whole slices left beside the tail
    (at least `slices`), then the fewest whole slices; domains[0] when none holds it. With
    `affinity`, as every best fit, only among the leading domains of domains[0]'s affinity
    score (TASRespectNodeAffinityPreferred: capacity never beats preference)."""
    with_leader = leaders > 0
    best, best_key = None, (MAX_INT32, MAX_INT32)
    tier = domains[0].affinity_score
    for domain in domains:
        if affinity and domain.affinity_score != tier:
            break
        if domain.leader_count < leaders:
            continue
        key = (
            slice_capacity(domain, with_leader, True),
            slice_capacity(domain, with_leader, False),
        )
        if key[0] >= slices and key < best_key:
            best, best_key = domain, key
    return best if best is not None else domains[0]


def cheapest_tail_domains(domains: Sequence[Domain]) -> CheapestTwo:
    tails = CheapestTwo()
    for index, domain in enumerate(domains):
        if domain.slice_count_with_tail != NO_TAIL_FIT:
            tails.add(index, domain.slice_count - domain.slice_count_with_tail)
    return tails


def leader_penalty_with_tail(
    domains: Sequence[Domain], tails: CheapestTwo, index: int
) -> int | None:
    """Whole slices given up when domains[index] takes the leader and the tail goes where it
    costs least (there too, or to the cheapest other one); None when it then has no home."""
    domain = domains[index]
    penalty = None
    if domain.slice_count_with_leader_and_tail != NO_TAIL_FIT:
        penalty = domain.slice_count - domain.slice_count_with_leader_and_tail
    if tails.has_best:
        elsewhere = tails.second if tails.best_index == index else tails.best
        if elsewhere < MAX_INT32:
            split = domain.slice_count - domain.slice_count_with_leader + elsewhere
            if penalty is None or split < penalty:
                penalty = split
    return penalty


def hosts_tail_with_assigned_slices(domain: Domain) -> bool:
    """Whether the tail fits beside the whole slices the domain was given (its slice_count,
    trimmed by the descent; its tail capacities still describe the room it had)."""
    capacity = domain.slice_count_with_tail
    if domain.leader_count > 0:
        capacity = domain.slice_count_with_leader_and_tail
    return capacity != NO_TAIL_FIT and domain.slice_count <= capacity


def first_domain_hosting_tail(
    candidates: Sequence[Domain], selected: Sequence[Domain]
) -> Domain | None:
    taken = {id(domain) for domain in selected}
    for domain in candidates:
        if id(domain) not in taken and domain.slice_count_with_tail != NO_TAIL_FIT:
            return domain
    return None


def selection_holds_tail(
    selected: Sequence[Domain], assigned: Sequence[int], takes_leader: Sequence[bool]
) -> bool:
    """Whether one chosen domain has room for the tail next to the slices it is to take."""
    for domain, slices, leader in zip(selected, assigned, takes_leader, strict=True):
        capacity = slice_capacity(domain, leader, True)
        if capacity != NO_TAIL_FIT and slices <= capacity:
            return True
    return False


def place_tail(assigned: list[Domain], candidates: Sequence[Domain], tail: int) -> list[Domain]:
    """Give the tail to the first assigned domain with room, else open the first unused one
    that can hold it; [] when none can (phase 1 rules that out)."""
    for domain in assigned:
        if hosts_tail_with_assigned_slices(domain):
            domain.pod_count += tail
            return assigned
    extra = first_domain_hosting_tail(candidates, assigned)
    if extra is None:
        return []
    extra.slice_count = 0
    extra.leader_count = 0
    extra.pod_count = tail
    return [*assigned, extra]


# ---------------------------------------------------------------------------------------------
# The published assignment.


def tail_last(
    keys: Sequence[tuple[str, ...]], counts: Sequence[int], size: int
) -> list[int] | None:
    """The order to publish an assignment's domains in (positions into `keys`, the slice-level
    domain of each, and `counts`): those of the slice-level domain holding the tail moved last,
    as the ungater hands pods their domains in that order and a slice stays whole only if the
    tail comes last. None when the counts are not whole slices plus one tail (Kueue then
    refuses rather than publish a split slice)."""
    per_domain: dict[tuple[str, ...], int] = {}
    for key, count in zip(keys, counts, strict=True):
        per_domain[key] = per_domain.get(key, 0) + count
    remainder = sum(per_domain.values()) % size
    holder = None
    if remainder:
        holder = next((key for key, total in per_domain.items() if total % size == remainder), None)
    positions = list(range(len(keys)))
    if holder is not None:
        positions = [i for i in positions if keys[i] != holder] + [
            i for i in positions if keys[i] == holder
        ]
        per_domain[holder] = per_domain.pop(holder)
    totals = list(per_domain.values())
    whole = all(total % size == 0 for total in totals[:-1])
    return positions if whole and (not totals or totals[-1] % size == remainder) else None
