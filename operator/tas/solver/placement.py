"""Placing one pod set (with its leader, if any) on a LeafCapacity: phase 1 counts what every
leaf holds (the plain path over Domain objects, or the vectorized path over whole levels),
phase 2 chooses the domains (algorithm.py, vectorized.py, balanced.py, partial_slices.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import NamedTuple

import numpy as np

from tas.solver import balanced, feasibility, partial_slices, profile, vectorized
from tas.solver.algorithm import (
    PlacementFailure,
    PlacementParams,
    descend,
    find_level_with_fit_domains,
    roll_up,
    roll_up_simple,
    set_affinity_scores,
)
from tas.solver.capacity import EXACT_LIMIT, LeafCapacity
from tas.solver.numa_counting import LeafZones, NumaCounting
from tas.solver.tree import Domain, DomainTree
from tas.solver.types import (
    NumaShape,
    PodSetRequest,
    Resources,
    SliceLayer,
    TopologyAssignment,
    with_one_pod,
)


class InvalidRequest(Exception):
    """The request cannot be evaluated (unknown level, bad slice layers): Kueue's message."""


class Placed(NamedTuple):
    """One pod set's assignment, and the pods it puts on each leaf."""

    assignment: TopologyAssignment
    leaves: list[tuple[Domain, int]]


class Placement(LeafCapacity):
    """The placement steps TopologySnapshot's public calls are made of."""

    def _place_group(
        self,
        tree: DomainTree,
        workers: PodSetRequest,
        leader: PodSetRequest | None,
        assumed: dict[int, dict[str, int]],
        within: tuple[str, ...] = (),
        assumed_shapes: dict[int, list[NumaShape]] | None = None,
        excluded: np.ndarray | None = None,
    ) -> dict[str, Placed]:
        """`within`: only leaves under the domain with these leading level values count."""
        params = self._params(workers, leader)
        counting = NumaCounting.of(self._numa, workers, leader, assumed_shapes or {})
        requests = with_one_pod(workers.requests)
        leader_requests = with_one_pod(leader.requests) if leader is not None else None
        allowed = self._allowed_leaves(tree, workers, params, within)
        if excluded is not None and excluded.any():
            params.stats.exclusive_group = int(
                (excluded if allowed is None else excluded & allowed).sum()
            )
            allowed = ~excluded if allowed is None else allowed & ~excluded
        if self.options.fragmentation_aware and not within:
            chosen = self._profile_domain(
                tree, params, requests, leader, counting, assumed, allowed
            )
            if chosen is not None:
                allowed = chosen if allowed is None else allowed & chosen
                params.least_free_capacity = True  # fullest first inside it: profile.py
        scores = self._affinity_scores(workers)
        if scores is not None and any(scores):  # all 0: the orders without it
            params.affinity = True
            set_affinity_scores(tree, scores)
        placed = self._place(tree, requests, leader_requests, assumed, params, allowed, counting)
        return self._results(leader, workers, placed, params)

    def _assume_shapes(
        self,
        assumed_shapes: dict[int, list[NumaShape]],
        assignment: TopologyAssignment,
        shape: NumaShape,
    ) -> None:
        """Earlier pods' NUMA shapes, on the NUMA leaves they were placed on."""
        for domain in assignment.domains:
            leaf = self._leaf_by_key.get(self._key_of_assigned(domain.values))
            if leaf is not None and leaf in self._numa.by_leaf:
                assumed_shapes.setdefault(leaf, []).extend([shape] * domain.count)

    def _place(
        self,
        tree: DomainTree,
        requests: dict[str, int],
        leader_requests: dict[str, int] | None,
        assumed: dict[int, dict[str, int]],
        params: PlacementParams,
        allowed: np.ndarray | None,
        counting: NumaCounting | None,
    ) -> list[tuple[Domain, int]]:
        """Every leaf that takes pods and how many: on the vectorized path when it applies."""
        bounds = self._usage_bounds(tree, requests, leader_requests, assumed)
        # Balanced placement hands out whole slices only (Kueue: TODO for a tail).
        balanced_placement = (
            self.options.balanced_placement
            and not params.required
            and not params.unconstrained
            and not params.tail_size
        )
        # Preferred affinity orders, and NUMA tie-breaks with a tail, are on Domain objects
        # only: the plain path.
        plain = (
            balanced_placement or params.affinity or (params.tail_size > 0 and counting is not None)
        )
        if plain or not self._vectorizable(tree, requests, leader_requests, assumed):
            if bounds is not None:
                feasibility.set_domain_bounds(tree, tree.level_count - 2, bounds)
            leaves = self._place_plain(
                tree,
                requests,
                leader_requests,
                assumed,
                params,
                allowed,
                balanced_placement,
                counting,
            )
            return [(leaf, leaf.pod_count) for leaf in leaves]
        return self._place_vectorized(
            tree, requests, leader_requests, assumed, params, allowed, counting, bounds
        )

    def _results(
        self,
        leader: PodSetRequest | None,
        workers: PodSetRequest,
        placed: list[tuple[Domain, int]],
        params: PlacementParams,
    ) -> dict[str, Placed]:
        result: dict[str, Placed] = {}
        if leader is not None:
            # the leader's leaf is the one whose count field says so (both paths fill it)
            leader_counts = [(d, d.leader_count) for d, _ in placed if d.leader_count > 0]
            result[leader.name] = Placed(self._assignment(leader_counts), leader_counts)
        assignment = self._assignment(placed)
        if params.tail_size:
            ordered = self._tail_last(assignment, params.slice_level, params.slice_size)
            if ordered is None or _pod_total(ordered) != params.count:
                # phase 1 chose the domains knowing where the tail goes: unreachable
                raise PlacementFailure(
                    f"cannot place the partial slice of PodSet {workers.name} "
                    "in a single topology domain"
                )
            assignment = ordered
        result[workers.name] = Placed(assignment, placed)
        return result

    def _tail_last(
        self, assignment: TopologyAssignment, slice_level: int, size: int
    ) -> TopologyAssignment | None:
        """The assignment with the domains holding the partial slice last (see
        partial_slices.tail_last); None when its counts are not whole slices and one tail, or
        it names a domain the snapshot does not have."""
        keys = []
        for domain in assignment.domains:
            path = self.leaf_path(domain.values)  # below a virtual hostname: a usage domain's
            if path is None:
                return None
            keys.append(path[: slice_level + 1])
        counts = [d.count for d in assignment.domains]
        order = partial_slices.tail_last(keys, counts, size)
        if order is None:
            return None
        return replace(assignment, domains=tuple(assignment.domains[i] for i in order))

    def _profile_domain(
        self,
        tree: DomainTree,
        params: PlacementParams,
        requests: Resources,
        leader: PodSetRequest | None,
        counting: NumaCounting | None,
        assumed: dict[int, dict[str, int]],
        allowed: np.ndarray | None,
    ) -> np.ndarray | None:
        """TASProfileFragmentationAware: the leaves of the domain the profile picks
        (solver/profile.py), for a plain request at a required or preferred level; None when
        it picks none. Anything else is left to BestFit."""
        if (
            leader is not None
            or counting is not None
            or params.unconstrained
            or params.multi_layer
            or params.tail_size
            or not self._vectorizable(tree, requests, None, assumed)
        ):
            return None
        free = self._free_after(assumed)
        capacity = vectorized.pods_that_fit(vectorized.resource_fits(free, self._rows, requests)[1])
        if allowed is not None:
            capacity = np.where(allowed, capacity, 0)
        layout = self.group_layout()
        chosen = profile.choose_domain(
            layout,
            capacity,
            params.requested_level,
            params.count,
            params.slice_level,
            params.slice_size,
        )
        if chosen is None:
            return None
        inside: np.ndarray = layout.codes[params.requested_level] == chosen
        return inside

    def _vectorizable(
        self,
        tree: DomainTree,
        requests: Resources,
        leader_requests: Resources | None,
        assumed: dict[int, dict[str, int]],
    ) -> bool:
        """Whether the int64 arrays of the vectorized path hold every quantity exactly."""
        if self.reference or not tree.leaves or self._free.dtype == object:
            return False
        quantities = [*requests.values(), *(leader_requests or {}).values()]
        for usage in assumed.values():
            quantities.extend(usage.values())
        return all(-EXACT_LIMIT <= value <= EXACT_LIMIT for value in quantities)

    def _place_vectorized(
        self,
        tree: DomainTree,
        requests: Resources,
        leader_requests: Resources | None,
        assumed: dict[int, dict[str, int]],
        params: PlacementParams,
        allowed: np.ndarray | None,
        counting: NumaCounting | None,
        bounds: feasibility.UsageBounds | None = None,
    ) -> list[tuple[Domain, int]]:
        free = self._free_after(assumed)
        names, fits = vectorized.resource_fits(free, self._rows, requests)
        pods = vectorized.pods_that_fit(fits)
        if allowed is not None:
            pods[~allowed] = 0
        by_totals = pods
        if counting is not None:
            pods = counting.limit(by_totals)
            limited = pods
            params.stats.count_numa_zones = lambda: int(
                ((limited < by_totals) & (by_totals > 0)).sum()
            )
        params.stats.count_resource_exclusions = lambda: vectorized.limiting_resources(
            names, fits, by_totals == 0 if allowed is None else (by_totals == 0) & allowed
        )
        if leader_requests is None:
            counts = feasibility.roll_up(tree, pods, params, bounds)
            if params.tail_size:
                return self._descend_filled(tree, counts, params)
            if counting is not None:
                counts.leaf_zones = LeafZones(counting, pods)
            fit_level, fit = vectorized.find_level_with_fit_domains(
                counts, params.requested_level, params
            )
            placed = vectorized.descend(counts, fit_level, fit, params)
            return [(tree.leaves[leaf], count) for leaf, count in placed]
        pods_with_leader, leaders = self._leader_leaf_counts(
            free, pods, requests, leader_requests, allowed, counting
        )
        counts = feasibility.roll_up(tree, pods, params, bounds, pods_with_leader, leaders)
        if params.tail_size:
            return self._descend_filled(tree, counts, params)
        fit_level, fit = vectorized.find_level_with_fit_domains(
            counts, params.requested_level, params
        )
        leaves = descend(
            tree, fit_level, counts.fill(fit_level, fit), params, fill=counts.fill_domains
        )
        return [(leaf, leaf.pod_count) for leaf in leaves]

    def _leader_leaf_counts(
        self,
        free: np.ndarray,
        pods: np.ndarray,
        requests: Resources,
        leader_requests: Resources,
        allowed: np.ndarray | None,
        counting: NumaCounting | None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per leaf: the pods it holds beside the leader where it can host the leader (else
        `pods`), and whether it can (1 or 0)."""
        hosts_leader = (
            vectorized.pods_that_fit(vectorized.resource_fits(free, self._rows, leader_requests)[1])
            > 0
        )
        if allowed is not None:
            hosts_leader &= allowed
        after_leader = vectorized.pods_that_fit(
            vectorized.resource_fits(free, self._rows, requests, leader_requests)[1]
        )
        if counting is not None:
            hosts_leader, after_leader = counting.with_leader(hosts_leader, after_leader)
        return np.where(hosts_leader, after_leader, pods), hosts_leader.astype(np.int64)

    @staticmethod
    def _descend_filled(
        tree: DomainTree, counts: vectorized.LevelCounts, params: PlacementParams
    ) -> list[tuple[Domain, int]]:
        """Phase 2 of algorithm.py over the arrays' counts, written onto the domains it reads:
        choosing domains for a tail lives there only (its levels are small but for the leaves)."""
        fit_level, fit_domains = find_level_with_fit_domains(
            tree, params.requested_level, params, fill=counts.fill_domains
        )
        leaves = descend(tree, fit_level, fit_domains, params, fill=counts.fill_domains)
        return [(leaf, leaf.pod_count) for leaf in leaves]

    def _place_plain(
        self,
        tree: DomainTree,
        requests: Resources,
        leader_requests: Resources | None,
        assumed: dict[int, dict[str, int]],
        params: PlacementParams,
        allowed: np.ndarray | None,
        balanced_placement: bool,
        counting: NumaCounting | None,
    ) -> list[Domain]:
        """Counts on every Domain object, levels sorted in Python: the reference the
        vectorized path is tested against, and the path of balanced placement."""
        allowed_list = allowed.tolist() if allowed is not None else None
        bounded = self.virtual_hostname  # usage domains carry a capacity_bound: roll_up keeps it

        def fill_counts() -> None:
            self._fill_leaf_counts(
                tree, requests, leader_requests, assumed, params, allowed_list, counting
            )
            if leader_requests is None and not params.slice_size_at_level and not bounded:
                roll_up_simple(tree, params.slice_size, params.slice_level)
            else:
                for root in tree.roots:
                    roll_up(
                        root,
                        0,
                        params.slice_size,
                        params.slice_level,
                        params.slice_size_at_level,
                        leader_requests is not None,
                    )
            if params.tail_size:
                partial_slices.roll_up_tails(
                    tree,
                    params.slice_size,
                    params.tail_size,
                    params.slice_level,
                    leader_requests is not None,
                )

        fill_counts()
        if balanced_placement:
            leaves = self._try_balanced(tree, params)
            if leaves is not None:
                return leaves
            fill_counts()  # balanced placement pruned counts in place; start over
        fit_level, fit_domains = find_level_with_fit_domains(tree, params.requested_level, params)
        return descend(tree, fit_level, fit_domains, params)

    def _try_balanced(self, tree: DomainTree, params: PlacementParams) -> list[Domain] | None:
        fit_domains, threshold = balanced.find_best_domains(tree, params)
        if threshold <= 0:
            return None
        try:
            placed, fit_level = balanced.apply_balanced_placement(params, threshold, fit_domains)
        except balanced.BalancedPlacementFailed:
            return None
        return descend(tree, fit_level, placed, params, balanced=True)

    def _params(self, workers: PodSetRequest, leader: PodSetRequest | None) -> PlacementParams:
        request = workers.topology
        layers = request.slice_layers
        slice_size = 1
        if layers:
            slice_size = layers[0].size
            if slice_size <= 0:
                raise InvalidRequest("slice topology requested, but slice size not provided")
        slice_only = bool(layers) and not request.required and not request.preferred
        unconstrained = request.unconstrained or request.implied or slice_only
        if request.required:
            level_key = request.required
        elif request.preferred:
            level_key = request.preferred
        elif slice_only:
            level_key = self.levels[0]
        else:
            level_key = self.levels[-1]
        requested_level = self._level_index(level_key, "no requested topology level")
        slice_key = layers[0].level if layers else self.levels[-1]
        slice_level = self._level_index(slice_key, "no requested topology level for slices")
        tail_size = self._tail_size(workers.count, layers)
        if requested_level > slice_level:
            raise InvalidRequest(
                f"podset slice topology {slice_key} is above the podset topology {level_key}"
            )
        slice_size_at_level = self._inner_slice_sizes(layers, slice_level)
        multi_layer: tuple[tuple[int, int], ...] = ()
        if slice_size_at_level:
            multi_layer = tuple((self.levels.index(lay.level), lay.size) for lay in layers)
        return PlacementParams(
            count=workers.count,
            slice_size=slice_size,
            requested_level=requested_level,
            slice_level=slice_level,
            required=bool(request.required),
            unconstrained=unconstrained,
            least_free_capacity=unconstrained and self.options.profile_mixed,
            topology_name=self.flavor.topology_name or "",
            level_keys=self._tree_levels,
            leader_count=1 if leader is not None else 0,
            slice_size_at_level=slice_size_at_level,
            multi_layer=multi_layer,
            tail_size=tail_size,
        )

    def _tail_size(self, count: int, layers: tuple[SliceLayer, ...]) -> int:
        """The pods of a partial last slice: with TASPartialSlices and a single layer only
        (inner layers could not divide it); otherwise a count that is not a whole number of
        slices is refused (Kueue would place the whole slices and leave the rest gated)."""
        if not layers or count % layers[0].size == 0:
            return 0
        if self.options.partial_slices and len(layers) == 1:
            return count % layers[0].size
        field = "podSetSliceSize" if len(layers) == 1 else "slice layer 0 size"
        raise InvalidRequest(f"{field} {layers[0].size} must divide the pod set count {count}")

    def _inner_slice_sizes(
        self, layers: tuple[SliceLayer, ...], slice_level: int
    ) -> dict[int, int]:
        """Level index -> inner slice size, for every level an inner layer covers."""
        slice_size_at_level: dict[int, int] = {}
        previous_size, previous_level = layers[0].size if layers else 1, slice_level
        for layer in layers[1:]:
            layer_level = self._level_index(
                layer.level, "no requested topology level for additional slice layer"
            )
            if layer_level <= previous_level:
                raise InvalidRequest(
                    f"additional slice layer topology {layer.level} must be at a lower level "
                    f"than {self.levels[previous_level]}"
                )
            if layer.size <= 0 or previous_size % layer.size != 0:
                raise InvalidRequest(
                    f"additional slice layer size {layer.size} must evenly divide parent "
                    f"layer size {previous_size}"
                )
            for level in range(previous_level + 1, layer_level + 1):
                slice_size_at_level[level] = layer.size
            previous_size, previous_level = layer.size, layer_level
        return slice_size_at_level

    def _level_index(self, key: str, what: str) -> int:
        try:
            return self.levels.index(key)
        except ValueError:
            # Kueue's wording, plus the valid levels so the user can fix the annotation.
            raise InvalidRequest(
                f"{what}: {key} (the topology's levels are: {', '.join(self.levels)})"
            ) from None

    def _allowed_leaves(
        self,
        tree: DomainTree,
        podset: PodSetRequest,
        params: PlacementParams,
        within: tuple[str, ...],
    ) -> np.ndarray | None:
        """Which leaves the pod set may use (None: all), with why the others may not in
        `params.stats`."""
        stats = params.stats
        stats.total_nodes = len(tree.leaves)
        eligibility = self._eligibility(podset)
        allowed = eligibility.allowed
        stats.node_selector = eligibility.node_selector
        stats.affinity = eligibility.affinity
        stats.taints = dict(eligibility.taints or {})
        stats.draining = eligibility.draining
        stats.topology_domain = 0
        if within:
            # Replacement: leaves outside the required domain count as excluded (after the
            # node filters, as in Kueue).
            depth = len(within)
            inside = np.array([leaf.values[:depth] == within for leaf in tree.leaves], dtype=bool)
            if allowed is None:
                allowed = np.ones(len(tree.leaves), dtype=bool)
            stats.topology_domain = int((allowed & ~inside).sum())
            allowed = allowed & inside
        return allowed

    def _fill_leaf_counts(
        self,
        tree: DomainTree,
        requests: Resources,
        leader_requests: Resources | None,
        assumed: dict[int, dict[str, int]],
        params: PlacementParams,
        allowed: list[bool] | None,
        counting: NumaCounting | None,
    ) -> None:
        counts = self._counts_per_leaf(requests)
        for leaf_index, usage in assumed.items():
            counts[leaf_index] = _count_in(requests, self._remaining(leaf_index, usage))
        if allowed is not None:
            counts = [c if ok else 0 for c, ok in zip(counts, allowed, strict=True)]
        by_totals = counts
        if counting is not None:
            counts = [counting.one(index, c) for index, c in enumerate(by_totals)]
            limited = counts
            params.stats.count_numa_zones = lambda: sum(
                1 for c, t in zip(limited, by_totals, strict=True) if c < t
            )

        def count_resource_exclusions() -> dict[str, int]:
            excluded: dict[str, int] = {}
            for leaf_index, count in enumerate(by_totals):
                if count == 0 and (allowed is None or allowed[leaf_index]):
                    limiting = self._limiting_resource(leaf_index, requests, assumed)
                    excluded[limiting] = excluded.get(limiting, 0) + 1
            return excluded

        params.stats.count_resource_exclusions = count_resource_exclusions

        if leader_requests is None:
            at_slice_level = params.slice_level == tree.level_count - 1
            for leaf, count in zip(tree.leaves, counts, strict=True):
                leaf.pod_count = leaf.pod_count_with_leader = count
                leaf.leader_count = 0
                slices = count // params.slice_size if at_slice_level else 0
                leaf.slice_count = leaf.slice_count_with_leader = slices
                leaf.zones_needed = (
                    counting.one_zones(leaf.leaf_index, count) if counting is not None else 0
                )
            return
        self._fill_with_leader(tree, counts, requests, leader_requests, assumed, allowed, counting)

    def _fill_with_leader(
        self,
        tree: DomainTree,
        counts: list[int],
        requests: Resources,
        leader_requests: Resources,
        assumed: dict[int, dict[str, int]],
        allowed: list[bool] | None,
        counting: NumaCounting | None,
    ) -> None:
        """Phase 1 at the leaves beside a leader: where it fits, how many workers besides."""
        for leaf, count in zip(tree.leaves, counts, strict=True):
            leaf.clear_counts()
            leaf.pod_count = leaf.pod_count_with_leader = count
            index = leaf.leaf_index
            if allowed is not None and not allowed[index]:
                continue
            remaining = self._remaining(index, assumed.get(index))
            if _count_in(leader_requests, remaining) > 0:
                leaf.leader_count = 1
                for name, value in leader_requests.items():
                    remaining[name] = remaining.get(name, 0) - value
                leaf.pod_count_with_leader = _count_in(requests, remaining)
                if counting is not None:
                    hosts, after = counting.one_with_leader(index, leaf.pod_count_with_leader)
                    leaf.leader_count = int(hosts)
                    leaf.pod_count_with_leader = after if hosts else count


def _pod_total(assignment: TopologyAssignment) -> int:
    return sum(domain.count for domain in assignment.domains)


def _count_in(requests: Mapping[str, int], remaining: Mapping[str, int]) -> int:
    count = None
    for name, request in requests.items():
        if request <= 0:
            continue
        fits = remaining.get(name, 0) // request
        if count is None or fits < count:
            count = fits
    if count is None or count < 0:
        return 0
    return count


def pod_set_groups(podsets: Sequence[PodSetRequest]) -> list[list[PodSetRequest]]:
    """Pod sets in spec order; two sharing a group name form one group at the first's place."""
    groups: dict[str, list[PodSetRequest]] = {}
    for index, podset in enumerate(podsets):
        key = podset.topology.group_name
        groups.setdefault(f"group:{key}" if key is not None else f"index:{index}", []).append(
            podset
        )
    return list(groups.values())


def leader_and_workers(
    group: list[PodSetRequest],
) -> tuple[PodSetRequest | None, PodSetRequest]:
    """The leader is the pod set with the smaller count; on a tie, the second one."""
    if len(group) == 1:
        return None, group[0]
    if len(group) > 2:
        # Kueue's webhook rejects this; refuse rather than guess (our wording).
        raise InvalidRequest(
            f"pod set group {group[0].topology.group_name} has {len(group)} pod sets; "
            "a group is exactly one leader and one workers pod set"
        )
    first, second = group[0], group[1]
    if second.count > first.count:
        return first, second
    return second, first


def placed_as_gang(group: Sequence[PodSetRequest]) -> bool:
    """A group that is not Kueue's leader (count 1) and workers pair: with
    TASMultiRolePodSetGroups, placed as one gang (solver/role_groups.py)."""
    return len(group) > 2 or (len(group) == 2 and all(p.count != 1 for p in group))


def leader_first(podsets: Sequence[PodSetRequest]) -> list[PodSetRequest]:
    """The order a workload's pods are counted in, and take NUMA zones in: groups in spec
    order, in each the leader before its workers."""
    out: list[PodSetRequest] = []
    for group in pod_set_groups(podsets):
        if len(group) == 2:
            leader, workers = leader_and_workers(group)
            out += [leader, workers] if leader is not None else [workers]
        else:  # a group of more than two never places (leader_and_workers refuses it)
            out += group
    return out
