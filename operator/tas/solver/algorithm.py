"""Kueue's two-phase placement over a DomainTree whose leaf counts are already filled in.

Phase 1 (`roll_up`) sums pod/slice/leader capacities from the leaves to the roots. Phase 2
picks the level and domains that fit (`find_level_with_fit_domains`), then walks down turning
capacities into assigned counts (`update_counts_to_minimum`). Orders and tie-breaks follow
pkg/cache/scheduler/tas_flavor_snapshot.go, including its quirks, so choices match Kueue's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tas.solver.partial_slices import (
    CheapestTwo,
    cheapest_tail_domains,
    find_best_fit_domain_with_tail,
    first_domain_hosting_tail,
    fits_slices,
    hosts_tail_with_assigned_slices,
    leader_penalty_with_tail,
    place_tail,
    selection_holds_tail,
    slice_capacity,
)
from tas.solver.tree import MAX_INT32, Domain, DomainTree


@dataclass
class ExclusionStats:
    """Why leaves could not take a pod; appended to failure messages as Kueue does."""

    total_nodes: int = 0
    node_selector: int = 0
    affinity: int = 0
    topology_domain: int = 0
    exclusive_group: int = 0  # ours: inside domains an exclusive placement group holds
    draining: int = 0  # ours: on draining nodes (TASDrainingDomains)
    taints: dict[str, int] = field(default_factory=dict)
    resources: dict[str, int] = field(default_factory=dict)
    # Leaves that node totals allow more pods than their NUMA zones do (not excluded:
    # limited); counted on first use, as the resource exclusions are.
    count_numa_zones: Callable[[], int] | None = None
    # Counting the limiting resource of every full leaf costs a pass over all leaves, and only
    # a failure message needs it, so it is computed on first use.
    count_resource_exclusions: Callable[[], dict[str, int]] | None = None

    def _resolve(self) -> None:
        if self.count_resource_exclusions is not None:
            for name, count in self.count_resource_exclusions().items():
                self.resources[name] = self.resources.get(name, 0) + count
            self.count_resource_exclusions = None

    def has_exclusions(self) -> bool:
        self._resolve()
        return bool(
            self.node_selector
            or self.affinity
            or self.taints
            or self.topology_domain
            or self.exclusive_group
            or self.draining
            or self.resources
        )

    def reasons(self) -> str:
        self._resolve()
        reasons = []
        if self.node_selector:
            reasons.append(f"nodeSelector: {self.node_selector}")
        if self.affinity:
            reasons.append(f"affinity: {self.affinity}")
        if self.topology_domain:
            reasons.append(f"topologyDomain: {self.topology_domain}")
        if self.exclusive_group:
            reasons.append(f"exclusive placement group: {self.exclusive_group}")
        if self.draining:
            reasons.append(f"draining: {self.draining}")
        reasons.extend(f'taint "{taint}": {n}' for taint, n in self.taints.items())
        reasons.extend(f'resource "{res}": {n}' for res, n in self.resources.items())
        return ", ".join(sorted(reasons))

    def suffix(self) -> str:
        numa = ""
        limited = self.count_numa_zones() if self.count_numa_zones is not None else 0
        if limited:
            numa = (
                ": NUMA zones (single-numa-node) fit fewer pods than node totals on "
                f"{limited} node(s)"
            )
        if not self.has_exclusions():
            return numa
        return f"{numa}. Total nodes: {self.total_nodes}; excluded: {self.reasons()}"


@dataclass
class PlacementParams:
    count: int
    slice_size: int
    requested_level: int
    slice_level: int
    required: bool
    unconstrained: bool
    least_free_capacity: bool  # LeastFreeCapacity ordering instead of BestFit
    topology_name: str  # empty: messages quote the level key instead
    level_keys: tuple[str, ...]
    leader_count: int = 0
    # level index -> inner slice size, for every level below the outer slice level that an
    # inner slice layer covers (multi-layer slices)
    slice_size_at_level: dict[int, int] = field(default_factory=dict)
    # (level index, size) of every slice layer when there are several, outermost first
    multi_layer: tuple[tuple[int, int], ...] = ()
    # TASRespectNodeAffinityPreferred: domains' affinity_score orders them first, and BestFit
    # looks only among the domains of the leading score
    affinity: bool = False
    # pods of the partial last slice (TASPartialSlices): count % slice_size, else 0
    tail_size: int = 0
    stats: ExclusionStats = field(default_factory=ExclusionStats)

    @property
    def best_fit(self) -> bool:
        return not self.least_free_capacity


class PlacementFailure(Exception):
    """Raised inside phase 2 with Kueue's failure message."""


# ---------------------------------------------------------------------------------------------
# Phase 1: roll the leaf counts up the tree.


def roll_up(
    domain: Domain,
    level: int,
    slice_size: int,
    slice_level: int,
    slice_size_at_level: dict[int, int] | None,
    leader_required: bool,
    recursive: bool = True,
) -> None:
    """Kueue's fillInCountsHelper: capacity of a domain from its children (recursively, or
    from the children's current counts when `recursive` is False)."""
    if not domain.children:
        if level == slice_level:
            domain.slice_count = domain.pod_count // slice_size
            domain.slice_count_with_leader = domain.pod_count_with_leader // slice_size
        return
    inner_size = slice_size_at_level.get(level + 1) if slice_size_at_level else None
    if not leader_required and not inner_size:
        _sum_children(domain, level, slice_size, slice_level, slice_size_at_level, recursive)
        return
    if recursive:
        for child in domain.children:
            roll_up(child, level + 1, slice_size, slice_level, slice_size_at_level, leader_required)
    _sum_with_leader(domain, level, slice_size, slice_level, inner_size, leader_required)


def _sum_children(
    domain: Domain,
    level: int,
    slice_size: int,
    slice_level: int,
    slice_size_at_level: dict[int, int] | None,
    recursive: bool,
) -> None:
    """roll_up without a leader or inner slices: every with-leader count equals the plain one,
    plain sums suffice."""
    pods = slices = 0
    for child in domain.children:
        if recursive:
            roll_up(child, level + 1, slice_size, slice_level, slice_size_at_level, False)
        pods += child.pod_count
        slices += child.slice_count
    if level == slice_level:
        slices = pods // slice_size
    domain.pod_count = domain.pod_count_with_leader = pods
    domain.slice_count = domain.slice_count_with_leader = slices
    domain.leader_count = 0
    if domain.capacity_bound is not None:
        apply_bound(domain, level == slice_level, slice_size, False)


def _sum_with_leader(
    domain: Domain,
    level: int,
    slice_size: int,
    slice_level: int,
    inner_size: int | None,
    leader_required: bool,
) -> None:
    """roll_up with a leader or inner slices, from the children's counts: the with-leader
    counts less the smallest penalty among the children able to host the leader."""
    pods = 0
    slices = 0
    has_contributor = False
    min_pod_penalty = MAX_INT32
    min_slice_penalty = MAX_INT32
    leaders = 0
    for child in domain.children:
        child_pods = child.pod_count
        child_pods_with_leader = child.pod_count_with_leader
        if inner_size:
            # Children only contribute whole inner slices.
            child_pods = child_pods // inner_size * inner_size
            child_pods_with_leader = child_pods_with_leader // inner_size * inner_size
        pods += child_pods
        slices += child.slice_count
        if not leader_required or child.leader_count > 0:
            has_contributor = True
            min_pod_penalty = min(child_pods - child_pods_with_leader, min_pod_penalty)
            min_slice_penalty = min(
                child.slice_count - child.slice_count_with_leader, min_slice_penalty
            )
        leaders = max(leaders, child.leader_count)
    domain.pod_count = pods
    slices_with_leader = 0
    if has_contributor:
        domain.pod_count_with_leader = pods - min_pod_penalty
        slices_with_leader = slices - min_slice_penalty
    else:
        domain.pod_count_with_leader = 0
    domain.leader_count = leaders
    if level == slice_level:
        slices = domain.pod_count // slice_size
        slices_with_leader = domain.pod_count_with_leader // slice_size
    domain.slice_count = slices
    domain.slice_count_with_leader = slices_with_leader
    if domain.capacity_bound is not None:
        apply_bound(domain, level == slice_level, slice_size, leader_required)


def apply_bound(domain: Domain, at_slice_level: bool, slice_size: int, leader: bool) -> None:
    """A usage domain's counts, summed from its nodes, cut to what its own remaining capacity
    holds (capacity_bound; solver/feasibility.py). Below the slice level it holds no whole
    slice of its own; at it, its slices follow its pods. Without a leader the with-leader
    counts stay the plain ones."""
    pods, leaders, pods_with_leader = domain.capacity_bound  # type: ignore[misc]
    domain.pod_count = min(domain.pod_count, pods)
    domain.slice_count = _bounded_slices(
        domain.slice_count, domain.pod_count, at_slice_level, slice_size
    )
    if not leader:
        domain.pod_count_with_leader = domain.pod_count
        domain.slice_count_with_leader = domain.slice_count
        return
    domain.leader_count = min(domain.leader_count, leaders)
    # a leader's cost is measured on one node, so the with-leader count can fall below zero
    domain.pod_count_with_leader = min(max(0, domain.pod_count_with_leader), pods_with_leader)
    domain.slice_count_with_leader = _bounded_slices(
        max(0, domain.slice_count_with_leader),
        domain.pod_count_with_leader,
        at_slice_level,
        slice_size,
    )


def _bounded_slices(slices: int, pods: int, at_slice_level: bool, slice_size: int) -> int:
    if at_slice_level:
        return pods // slice_size
    return min(slices, pods // slice_size)


def roll_up_simple(tree: DomainTree, slice_size: int, slice_level: int) -> None:
    """roll_up for the common case (no leader, no inner slice layers), level by level.

    Without a leader every with-leader count equals the plain one, so only sums remain.
    """
    last = tree.level_count - 1
    if last == slice_level:
        for leaf in tree.leaves:
            leaf.slice_count = leaf.slice_count_with_leader = leaf.pod_count // slice_size
    for level in range(last - 1, -1, -1):
        at_slice_level = level == slice_level
        for domain in tree.levels[level]:
            pods = 0
            slices = 0
            for child in domain.children:
                pods += child.pod_count
                slices += child.slice_count
            if at_slice_level:
                slices = pods // slice_size
            domain.pod_count = domain.pod_count_with_leader = pods
            domain.slice_count = domain.slice_count_with_leader = slices
            domain.leader_count = 0


def set_affinity_scores(tree: DomainTree, leaf_scores: list[int]) -> None:
    """Kueue's affinityScore: a leaf's is its node's, a parent's the sum of its children's."""
    for leaf, score in zip(tree.leaves, leaf_scores, strict=True):
        leaf.affinity_score = score
    for level in range(tree.level_count - 2, -1, -1):
        for domain in tree.levels[level]:
            domain.affinity_score = sum(child.affinity_score for child in domain.children)


# ---------------------------------------------------------------------------------------------
# Sorting and best-fit primitives.


# Sort keys packed into one int (count fields < 2**31, order < 2**24): building a tuple per
# domain dominates sorting the thousands of leaves an unconstrained request looks at.
_COUNT_BITS = 31
_ZONE_BITS = 8  # NUMA zones a leaf's pods need (0 off the gate): after the counts
_ORDER_BITS = 24
_FLIP = (1 << _COUNT_BITS) - 1  # turns an ascending count key into a descending one


def sorted_domains(domains: list[Domain], least_free: bool, affinity: bool = False) -> list[Domain]:
    """BestFit: most slices first; LeastFreeCapacity: fewest first; then fewest pods, fewest
    NUMA zones needed (TASNUMAZones; 0 otherwise), values. With `affinity`, the highest
    affinity score before all of these."""
    if affinity:
        return _by_affinity(sorted_domains(domains, least_free))
    count_bits, zone_bits, order_bits = _COUNT_BITS, _ZONE_BITS, _ORDER_BITS
    if least_free:
        return sorted(
            domains,
            key=lambda d: (
                (
                    (((d.slice_count << count_bits) | d.pod_count) << zone_bits | d.zones_needed)
                    << order_bits
                )
                | d.order
            ),
        )
    flip = _FLIP
    return sorted(
        domains,
        key=lambda d: (
            (
                (
                    ((((flip - d.slice_count) << count_bits) | d.pod_count) << zone_bits)
                    | d.zones_needed
                )
                << order_bits
            )
            | d.order
        ),
    )


def _by_affinity(ordered: list[Domain]) -> list[Domain]:
    """Highest affinity score first, the given order within a score (a stable sort)."""
    return sorted(ordered, key=lambda d: -d.affinity_score)


def _packed(high: int, middle: int, order: int) -> int:
    return (((high << _COUNT_BITS) | middle) << _ORDER_BITS) | order


def sorted_domains_with_leader(
    domains: list[Domain], least_free: bool, affinity: bool = False
) -> list[Domain]:
    """As sorted_domains on the with-leader counts, domains able to host the leader first
    (before the affinity score too)."""
    if affinity:
        return sorted(
            _by_affinity(sorted_domains_with_leader(domains, least_free)),
            key=lambda d: -d.leader_count,
        )
    if least_free:
        return sorted(
            domains,
            key=lambda d: (
                -d.leader_count,
                _packed(d.slice_count_with_leader, d.pod_count_with_leader, d.order),
            ),
        )
    return sorted(
        domains,
        key=lambda d: (
            -d.leader_count,
            _packed(_FLIP - d.slice_count_with_leader, d.pod_count_with_leader, d.order),
        ),
    )


def _pods_of(domain: Domain, with_leader: bool) -> int:
    return domain.pod_count_with_leader if with_leader else domain.pod_count


def _slices_of(domain: Domain, with_leader: bool) -> int:
    return domain.slice_count_with_leader if with_leader else domain.slice_count


def find_best_fit_domain(
    domains: list[Domain], needed: int, leader_count: int, slices: bool, affinity: bool = False
) -> Domain:
    """The first domain (in the given order) with the smallest count still >= needed, skipping
    domains that cannot host the leaders; domains[0] when none fits. With `affinity`, only
    the leading domains with domains[0]'s affinity score are candidates (Kueue's
    topAffinityTierDomains): capacity never beats preference."""
    with_leader = leader_count > 0
    count_of = _slices_of if slices else _pods_of
    best = None
    best_count = MAX_INT32
    tier = domains[0].affinity_score
    for domain in domains:
        if affinity and domain.affinity_score != tier:
            break
        if domain.leader_count < leader_count:
            continue
        count = count_of(domain, with_leader)
        if needed <= count < best_count:
            best = domain
            best_count = count
    return best if best is not None else domains[0]


def prioritize_leader_domain(
    domains: list[Domain],
    count: int,
    leader_count: int,
    slice_size: int,
    slices: bool,
    tail: bool = False,
) -> list[Domain]:
    """Move to the front the first leader-capable domain whose leader penalty the total
    capacity can absorb, so the descent never loses a feasible leader placement. With a tail
    the leader and the tail are costed together: a domain that is the tail's only home does
    not get the leader."""
    if leader_count == 0 or len(domains) < 2:
        return domains
    required = count
    if slices:
        required //= slice_size
        available = sum(d.slice_count for d in domains)
    else:
        available = sum(d.pod_count for d in domains)
    tails = cheapest_tail_domains(domains) if tail else CheapestTwo()
    for position, domain in enumerate(domains):
        if domain.leader_count < leader_count:
            continue
        if tail:
            penalty = leader_penalty_with_tail(domains, tails, position)
            if penalty is None:
                continue
        elif slices:
            penalty = domain.slice_count - domain.slice_count_with_leader
        else:
            penalty = domain.pod_count - domain.pod_count_with_leader
        if available - penalty < required:
            continue
        if position == 0:
            return domains
        return [domain, *domains[:position], *domains[position + 1 :]]
    return domains


# ---------------------------------------------------------------------------------------------
# Phase 2b: turn capacities into assigned counts.


def update_counts_to_minimum(
    domains: list[Domain],
    count: int,
    leader_count: int,
    slice_size: int,
    best_fit: bool,
    slices: bool,
    affinity: bool = False,
    tail_size: int = 0,
) -> list[Domain]:
    """Kueue's updateCountsToMinimumGeneric: take whole domains in order; BestFit swaps the
    last one for the tightest remaining domain that covers what is left (`affinity`: of the
    same affinity score). A tail (only while whole slices are handed out) goes to a domain
    that closes the count with it, else to the first taken domain with room for it, else to
    one more domain."""
    tail_pending = slices and tail_size > 0
    domains = prioritize_leader_domain(
        domains, count, leader_count, slice_size, slices, tail_pending
    )
    result: list[Domain] = []
    remaining = count // slice_size if slices else count
    remaining_leaders = leader_count
    tail_hosted = False
    unit = slice_size if slices else 1
    for position, domain in enumerate(domains):
        rest = domains[position:]
        if tail_pending and not tail_hosted:
            closing = closing_domain_with_tail(
                rest, remaining, remaining_leaders, slice_size, tail_size, best_fit, affinity
            )
            if closing is not None:
                return [*result, closing]
        if remaining_leaders > 0:
            domain, remaining, remaining_leaders, completed = _consume_with_leaders(
                domain, rest, remaining, remaining_leaders, best_fit, unit, slices, affinity
            )
        else:
            domain, remaining, completed = _consume(
                domain, rest, remaining, best_fit, unit, slices, affinity
            )
        result.append(domain)
        if completed:
            return place_tail(result, domains, tail_size) if tail_pending else result
        tail_hosted = tail_hosted or (tail_pending and hosts_tail_with_assigned_slices(domain))
    # Unreachable when phase 2a succeeded; Kueue logs and yields no domains here.
    return []


def _consume(
    domain: Domain,
    remaining_domains: list[Domain],
    remaining: int,
    best_fit: bool,
    unit: int,
    slices: bool,
    affinity: bool,
) -> tuple[Domain, int, bool]:
    """One domain without leaders to place: all it holds, or (BestFit: the tightest domain
    from here on that covers it) what is left. `unit` is the slice size (1 for pods)."""
    count_of = _slices_of if slices else _pods_of
    if best_fit and count_of(domain, False) >= remaining:
        domain = find_best_fit_domain(remaining_domains, remaining, 0, slices, affinity)
    domain.leader_count = 0
    capacity = count_of(domain, False)
    if capacity >= remaining:
        domain.pod_count = remaining * unit
        if slices:
            domain.slice_count = remaining
        return domain, 0, True
    domain.pod_count = capacity * unit
    return domain, remaining - capacity, False


def closing_domain_with_tail(
    candidates: list[Domain],
    remaining: int,
    remaining_leaders: int,
    slice_size: int,
    tail_size: int,
    best_fit: bool,
    affinity: bool,
) -> Domain | None:
    """Kueue's closingDomainWithTail: one domain that takes the remaining whole slices, the
    remaining leaders and the tail, unless that steps up to a roomier domain than the one
    best fit would close the whole slices with (both best fits within the leading affinity
    score, with `affinity`)."""
    with_leader = remaining_leaders > 0
    domain = candidates[0]
    if (
        slice_capacity(domain, with_leader, False) < remaining
        or domain.leader_count < remaining_leaders
    ):
        return None
    whole_fit = domain
    if best_fit:
        domain = find_best_fit_domain_with_tail(candidates, remaining, remaining_leaders, affinity)
        whole_fit = find_best_fit_domain(candidates, remaining, remaining_leaders, True, affinity)
    if (
        slice_capacity(domain, with_leader, True) < remaining
        or domain.leader_count < remaining_leaders
        or slice_capacity(domain, with_leader, False)
        > slice_capacity(whole_fit, with_leader, False)
    ):
        return None
    domain.leader_count = remaining_leaders
    domain.slice_count = domain.slice_count_with_leader = remaining
    domain.pod_count = remaining * slice_size + tail_size
    return domain


def _consume_with_leaders(
    domain: Domain,
    remaining_domains: list[Domain],
    remaining: int,
    remaining_leaders: int,
    best_fit: bool,
    unit: int,
    slices: bool,
    affinity: bool,
) -> tuple[Domain, int, int, bool]:
    """Kueue's consumeWithLeadersGeneric; `unit` is the slice size (1 when placing pods)."""
    with_leader_attr = "slice_count_with_leader" if slices else "pod_count_with_leader"
    primary_attr = "slice_count" if slices else "pod_count"
    if (
        best_fit
        and getattr(domain, with_leader_attr) >= remaining
        and domain.leader_count >= remaining_leaders
    ):
        domain = find_best_fit_domain(
            remaining_domains, remaining, remaining_leaders, slices, affinity
        )
    with_leader = getattr(domain, with_leader_attr)
    if with_leader >= remaining and domain.leader_count >= remaining_leaders:
        setattr(domain, primary_attr, remaining)
        domain.leader_count = remaining_leaders
        domain.pod_count = remaining * unit
        return domain, 0, 0, True
    if with_leader > remaining:
        with_leader = remaining
        setattr(domain, with_leader_attr, remaining)
    if domain.leader_count > remaining_leaders:
        domain.leader_count = remaining_leaders
    setattr(domain, primary_attr, with_leader)
    domain.pod_count = with_leader * unit
    return domain, remaining - with_leader, remaining_leaders - domain.leader_count, False


# ---------------------------------------------------------------------------------------------
# Phase 2a: the level and the domains that can take the whole request.


def not_fit_message(params: PlacementParams, level: int, fit: int, total: int) -> str:
    unit = "pod" if params.slice_size == 1 else "slice"
    name = params.topology_name or params.level_keys[level]
    if fit == 0:
        text = f'topology "{name}" doesn\'t allow to fit any of {total} {unit}(s)'
    else:
        text = f'topology "{name}" allows to fit only {fit} out of {total} {unit}(s)'
    return text + params.stats.suffix()


def multi_layer_not_fit_message(
    params: PlacementParams, level: int, layer_fits: list[int] | None
) -> str:
    """`layer_fits`: the slices of every layer that fit under the level's domain with the most
    slices (None when the level has no domain)."""
    name = params.topology_name or params.level_keys[level]
    text = f'topology "{name}" doesn\'t allow to fit'
    if layer_fits is None:
        return text
    for (layer_level, size), fit in zip(params.multi_layer, layer_fits, strict=True):
        needed = params.count // size
        text += f"; {fit}/{needed} slice(s) fit on level {params.level_keys[layer_level]}"
    return text + params.stats.suffix()


def _not_fit(params: PlacementParams, tree: DomainTree, level: int, fit: int, total: int) -> str:
    if params.multi_layer:
        return multi_layer_not_fit_message(params, level, _layer_fits(params, tree, level))
    return not_fit_message(params, level, fit, total)


def _layer_fits(params: PlacementParams, tree: DomainTree, level: int) -> list[int] | None:
    best = None
    for domain in tree.levels[level]:
        if (
            best is None
            or domain.slice_count > best.slice_count
            or (domain.slice_count == best.slice_count and domain.id < best.id)
        ):
            best = domain
    if best is None:
        return None
    return [
        _count_slices_in_subtree(best, level, layer_level, size)
        for layer_level, size in params.multi_layer
    ]


def _count_slices_in_subtree(domain: Domain, level: int, target_level: int, size: int) -> int:
    if level == target_level:
        return domain.pod_count // size
    return sum(
        _count_slices_in_subtree(child, level + 1, target_level, size) for child in domain.children
    )


def find_level_with_fit_domains(
    tree: DomainTree,
    level: int,
    params: PlacementParams,
    fill: Callable[[list[Domain]], None] | None = None,
) -> tuple[int, list[Domain]]:
    """`fill` writes phase 1's counts onto a level's domains before they are read (see
    descend). With a tail, a domain fits when it holds the whole slices beside the tail."""
    domains = tree.levels[level]
    if not domains:
        raise PlacementFailure(f"no topology domains at level: {params.level_keys[level]}")
    if fill is not None:
        fill(domains)
    least_free, affinity = params.least_free_capacity, params.affinity
    leaders = params.leader_count
    tail = params.tail_size > 0
    if leaders == 0:
        # no domain hosts a leader and with-leader counts equal the plain ones
        ordered = sorted_domains(domains, least_free, affinity)
    else:
        ordered = sorted_domains_with_leader(domains, least_free, affinity)
    top = ordered[0]
    needed = params.count // params.slice_size
    requested = needed + 1 if tail else needed  # messages count the tail as a slice
    # Sorted by whole slices, the first domain need not hold the tail: the scan finds one.
    if (
        params.best_fit
        and top.leader_count >= leaders
        and (tail or fits_slices(top, needed, leaders, False))
    ):
        if tail:
            top = find_best_fit_domain_with_tail(ordered, needed, leaders, affinity)
        else:
            top = find_best_fit_domain(ordered, needed, leaders, True, affinity)

    if least_free:
        for candidate in ordered:
            if fits_slices(candidate, needed, leaders, tail):
                return level, [candidate]
        if params.required:
            raise PlacementFailure(_not_fit(params, tree, level, ordered[-1].pod_count, requested))

    if fits_slices(top, needed, leaders, tail):
        return level, [top]

    if params.required:
        return level, [_required_fit_after_top(tree, level, params, ordered)]
    if level > 0 and not params.unconstrained:
        # preferred: climb one level and try to fit in a single, bigger domain
        return find_level_with_fit_domains(tree, level - 1, params, fill)
    return level, _spread_over_domains(tree, level, ordered, params)


def _spread_over_domains(
    tree: DomainTree, level: int, ordered: list[Domain], params: PlacementParams
) -> list[Domain]:
    """Top level reached (or unconstrained): several domains, leaders first; with a tail, one
    more domain when none of the chosen ones has room for it beside its whole slices."""
    least_free, affinity = params.least_free_capacity, params.affinity
    leaders = params.leader_count
    tail = params.tail_size > 0
    needed = params.count // params.slice_size
    requested = needed + 1 if tail else needed

    def fail(fit: int) -> PlacementFailure:
        return PlacementFailure(_not_fit(params, tree, level, fit, requested))

    results: list[Domain] = []
    assigned: list[int] = []  # the whole slices each chosen domain is to take
    remaining = needed
    remaining_leaders = leaders
    ordered = prioritize_leader_domain(
        ordered, params.count, leaders, params.slice_size, True, tail
    )
    position = 0
    while remaining_leaders > 0 and position < len(ordered) and ordered[position].leader_count > 0:
        domain = ordered[position]
        if params.best_fit and domain.slice_count_with_leader >= remaining:
            domain = find_best_fit_domain(
                ordered[position:], remaining, remaining_leaders, True, affinity
            )
        results.append(domain)
        assigned.append(min(domain.slice_count_with_leader, remaining))
        remaining_leaders -= domain.leader_count
        remaining -= domain.slice_count_with_leader
        position += 1
    if remaining_leaders > 0:
        raise fail(leaders - remaining_leaders)
    leader_domains = len(results)
    # Without a leader the with-leader counts equal the plain ones: already in this order.
    rest = ordered if leaders == 0 else sorted_domains(ordered[position:], least_free, affinity)
    position = 0
    while remaining > 0 and position < len(rest):
        domain = rest[position]
        if params.best_fit and domain.slice_count >= remaining:
            domain = find_best_fit_domain(rest[position:], remaining, 0, True, affinity)
        results.append(domain)
        assigned.append(min(domain.slice_count, remaining))
        remaining -= domain.slice_count
        position += 1
    if remaining > 0:
        raise fail(needed - remaining)
    takes_leader = [position < leader_domains for position in range(len(results))]
    if tail and not selection_holds_tail(results, assigned, takes_leader):
        extra = first_domain_hosting_tail(rest, results)
        if extra is None:
            raise fail(needed)
        results.append(extra)
    return results


def _required_fit_after_top(
    tree: DomainTree, level: int, params: PlacementParams, ordered: list[Domain]
) -> Domain:
    """A required level whose first domain does not fit. Only the affinity order can put a
    fitting domain after it (the capacity orders put the roomiest first; with a tail the best
    fit has scanned them all), so only then are the others looked at: the best fit among the
    first fitting one's affinity score and below, beside the tail when there is one. Kueue's
    message otherwise (counting the tail as a slice)."""
    needed = params.count // params.slice_size
    leaders = params.leader_count
    tail = params.tail_size > 0
    if params.affinity:
        for position in range(1, len(ordered)):
            if fits_slices(ordered[position], needed, leaders, tail):
                if tail:
                    return find_best_fit_domain_with_tail(ordered[position:], needed, leaders, True)
                return find_best_fit_domain(ordered[position:], needed, leaders, True, True)
    requested = needed + 1 if tail else needed
    raise PlacementFailure(_not_fit(params, tree, level, ordered[0].slice_count, requested))


# ---------------------------------------------------------------------------------------------
# Phase 2c: descend to the leaves.


def descend(
    tree: DomainTree,
    fit_level: int,
    fit_domains: list[Domain],
    params: PlacementParams,
    balanced: bool = False,
    fill: Callable[[list[Domain]], None] | None = None,
) -> list[Domain]:
    """From the chosen domains down to the leaves; returns the leaves with their counts.

    `fill` writes phase 1's counts onto domains before they are first read, when phase 1 left
    them in arrays (vectorized.LevelCounts.fill_domains); None when every domain has them.
    """
    current = _take_whole_slices(fit_domains, params)
    lowest = tree.level_count - 1
    level = fit_level
    if not balanced:
        # Above the slice level the children of all chosen domains are pooled and re-chosen
        # globally; the per-parent split from the level above is not kept (as in Kueue).
        while level < min(lowest, params.slice_level):
            pooled = [child for domain in current for child in domain.children]
            if fill is not None:
                fill(pooled)
            ordered = sorted_domains(pooled, params.least_free_capacity, params.affinity)
            current = _take_whole_slices(ordered, params)
            level += 1
    # Below, every domain splits its own pods (the tail's among them, one by one).
    while level < lowest:
        size_on_level = params.slice_size
        if level >= params.slice_level:
            size_on_level = params.slice_size_at_level.get(level + 1, 1)
        next_level: list[Domain] = []
        if fill is not None:
            fill([child for domain in current for child in domain.children])
        for domain in current:
            next_level.extend(_split_among_children(domain, size_on_level, params))
        current = next_level
        level += 1
    return current


def _take_whole_slices(domains: list[Domain], params: PlacementParams) -> list[Domain]:
    """The whole request (its tail too) over these domains, in whole slices."""
    return update_counts_to_minimum(
        domains,
        params.count,
        params.leader_count,
        params.slice_size,
        params.best_fit,
        True,
        affinity=params.affinity,
        tail_size=params.tail_size,
    )


def _split_among_children(
    domain: Domain, size_on_level: int, params: PlacementParams
) -> list[Domain]:
    """A domain's pods over its own children, in groups of `size_on_level`."""
    # Children below the slice level still carry slice_count 0 when sorted, so they are
    # ordered by pod count alone: a Kueue quirk kept for identical choices.
    children = sorted_domains(domain.children, params.least_free_capacity, params.affinity)
    if size_on_level > 1:
        for child in children:
            child.slice_count = child.pod_count // size_on_level
            child.slice_count_with_leader = child.pod_count_with_leader // size_on_level
    return update_counts_to_minimum(
        children,
        domain.pod_count,
        domain.leader_count,
        size_on_level,
        params.best_fit,
        size_on_level > 1,
        affinity=params.affinity,
    )
