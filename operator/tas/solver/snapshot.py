"""TopologySnapshot: the public entry point of the solver.

It holds the nodes of one TAS flavor, the domain tree built from them and every leaf's remaining
capacity (allocatable - non-TAS usage - admitted TAS usage), kept up to date incrementally by
`add_usage` and `upsert_node`. `find_assignments` places one workload without changing it.

A pod set is placed on the vectorized path (vectorized.py: numpy arrays over whole levels)
unless balanced placement applies, preferred node affinity orders the domains, NUMA zones break
ties for a partial last slice, or a quantity is too large for int64; then, and with
`reference=True`, on the plain path (Python over every Domain), which gives the same answers. A
partial last slice (TASPartialSlices) is rolled up on the arrays and its domains chosen on the
Domain objects (algorithm.py).

With TASNodeFeasibilityForAllLevels and a lowest level other than the hostname, the tree has one
more level than the topology: every node is a leaf (solver/feasibility.py). The partial slice's
capacities are then taken from the usage domains' bounded counts, as the whole slices' are.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from tas.solver import balanced, feasibility, groups, numa, partial_slices, profile, vectorized
from tas.solver.algorithm import (
    PlacementFailure,
    PlacementParams,
    descend,
    find_level_with_fit_domains,
    roll_up,
    roll_up_simple,
    set_affinity_scores,
)
from tas.solver.filters import (
    affinity_score,
    first_untolerated_taint,
    matches_node_selector,
    matches_required_affinity,
    scoring_terms,
    taint_string,
)
from tas.solver.tree import Domain, DomainTree
from tas.solver.types import (
    HOSTNAME_LEVEL,
    ONE_POD,
    PODS,
    DomainAssignment,
    FlavorSpec,
    Node,
    NodeNuma,
    NumaShape,
    PodSetPlacement,
    PodSetRequest,
    ReplacementPlacement,
    Resources,
    SliceLayer,
    SolverOptions,
    Toleration,
    TopologyAssignment,
    WorkloadPlacement,
    with_one_pod,
)

# The vectorized path's int64 arrays hold free capacities and requests up to this size; a
# difference of two such values cannot overflow. Larger quantities (an exbibyte of memory, in
# milli-units) switch the snapshot to exact Python integers and the plain path.
EXACT_LIMIT = 2**62
DEFAULT_PODS_ALLOCATABLE = 110_000  # Kubernetes' default max pods per node, in milli-pods

LeafKey = tuple[str, ...]  # the values of a leaf in assignments: (hostname,) or the full path


@dataclass
class _Eligibility:
    """Which leaves a pod set's taints/selector/affinity allow, and why the others are out."""

    allowed: np.ndarray | None  # bool per leaf; None: every leaf
    node_selector: int = 0
    affinity: int = 0
    taints: dict[str, int] | None = None


class _Invalid(Exception):
    """The request cannot be evaluated (unknown level, bad slice layers): Kueue's message."""


class _Placed(NamedTuple):
    """One pod set's assignment, and the pods it puts on each leaf."""

    assignment: TopologyAssignment
    leaves: list[tuple[Domain, int]]


class TopologySnapshot:
    def __init__(
        self,
        levels: Sequence[str],
        nodes: Iterable[Node],
        flavor: FlavorSpec = FlavorSpec(),  # noqa: B008 - frozen dataclass, never mutated
        options: SolverOptions = SolverOptions(),  # noqa: B008
        *,
        reference: bool = False,
    ) -> None:
        """`reference`: place with the plain path only (Python over every domain), which the
        vectorized path must match exactly; for tests, slower at scale."""
        if not levels:
            raise ValueError("a topology needs at least one level")
        self.levels = tuple(levels)
        self.flavor = flavor
        self.options = options
        self.reference = reference
        self.hostname_lowest = self.levels[-1] == HOSTNAME_LEVEL
        # TASNodeFeasibilityForAllLevels: a hidden hostname level below the lowest level, whose
        # domains are then the usage domains (solver/feasibility.py)
        self.virtual_hostname = options.node_feasibility_all_levels and not self.hostname_lowest
        self.leaves_are_nodes = self.hostname_lowest or self.virtual_hostname
        self._tree_levels = (*self.levels, HOSTNAME_LEVEL) if self.virtual_hostname else self.levels
        self._nodes: dict[str, Node] = {node.name: node for node in nodes}
        self._tas_usage: dict[LeafKey, dict[str, int]] = {}
        self._tree: DomainTree | None = None  # built lazily; None after a shape change
        self._leaf_keys: list[LeafKey] = []
        self._leaf_nodes: list[list[Node]] = []
        self._leaf_by_key: dict[LeafKey, int] = {}
        # Remaining capacity: one row per resource (`_rows`: name -> row), one column per leaf
        # index; int64, or Python ints (dtype object) once a quantity passes EXACT_LIMIT.
        self._rows: dict[str, int] = {}
        self._free: np.ndarray = np.zeros((0, 0), dtype=np.int64)
        self._eligibility_cache: dict[tuple, _Eligibility] = {}
        self._affinity_cache: dict[tuple, list[int]] = {}
        # with a virtual hostname level: usage domain path -> its position at its level, and
        # the admitted usage of each (resources x usage domains; None: to be rebuilt)
        self._usage_domains: dict[LeafKey, int] = {}
        self._usage_array: np.ndarray | None = None
        # per label key: every leaf's value as a code, and value -> code (for node selectors)
        self._label_columns: dict[str, tuple[np.ndarray, dict[str, int]]] = {}
        self._tainted_leaves: list[int] = []  # leaves whose node has taints
        self._numa = _NumaColumns()  # the zones of leaves whose node reports them
        self._group_layout: groups.Layout | None = None
        self._group_layout_of: DomainTree | None = None

    # -- cache maintenance ---------------------------------------------------------------------

    def upsert_node(self, node: Node) -> None:
        old = self._nodes.get(node.name)
        self._nodes[node.name] = node
        if self._tree is None:
            return
        old_key = self._leaf_key_of(old) if old is not None else None
        new_key = self._leaf_key_of(node)
        if old_key is None and new_key is None:
            return
        same_shape = (
            old is not None
            and old_key == new_key
            and old.labels == node.labels
            and old.taints == node.taints
        )
        if not same_shape:
            self._tree = None
            return
        leaf = self._leaf_by_key[new_key]
        self._leaf_nodes[leaf] = [
            node if n.name == node.name else n for n in self._leaf_nodes[leaf]
        ]
        self._refresh_leaf(leaf)

    def remove_node(self, name: str) -> None:
        old = self._nodes.pop(name, None)
        if old is not None and self._tree is not None and self._leaf_key_of(old) is not None:
            self._tree = None

    def add_usage(self, assignment: TopologyAssignment, per_pod: Resources, sign: int = 1) -> None:
        """With a virtual hostname level the usage stays on the usage domains the assignment
        names: no leaf (node) is charged (solver/feasibility.py)."""
        per_pod = with_one_pod(per_pod)
        leaf_by_key = self._leaf_by_key if self._tree is not None else {}
        if self.virtual_hostname:
            leaf_by_key = {}
            self._usage_array = None
        pods_on_leaf: dict[int, int] = {}  # leaf index -> pods added (negative: removed)
        for domain in assignment.domains:
            key = self._key_of_assigned(domain.values)
            pods = domain.count * sign
            usage = self._tas_usage.setdefault(key, {})
            for name, value in per_pod.items():
                usage[name] = usage.get(name, 0) + value * pods
            leaf = leaf_by_key.get(key)
            if leaf is not None:
                pods_on_leaf[leaf] = pods_on_leaf.get(leaf, 0) + pods
        if pods_on_leaf:
            self._take_free(pods_on_leaf, per_pod)

    def _take_free(self, pods_on_leaf: dict[int, int], per_pod: Mapping[str, int]) -> None:
        """Remaining capacity minus `per_pod` times the pods on each leaf, in one array
        operation while every value stays within EXACT_LIMIT, else in Python integers."""
        leaves = np.fromiter(pods_on_leaf, dtype=np.intp, count=len(pods_on_leaf))
        pods = list(pods_on_leaf.values())
        rows = np.array([self._row(name) for name in per_pod], dtype=np.intp)
        values = list(per_pod.values())
        cells = np.ix_(rows, leaves)
        if (
            self._free.dtype != object
            and max(map(abs, values)) * max(map(abs, pods)) <= EXACT_LIMIT
        ):
            # each term within 2**62: the int64 difference cannot overflow
            remaining = self._free[cells] - np.outer(values, pods)
            if np.abs(remaining).max() <= EXACT_LIMIT:
                self._free[cells] = remaining
                return
        exact = [
            [free - value * count for free, count in zip(row, pods, strict=True)]
            for row, value in zip(self._free[cells].tolist(), values, strict=True)
        ]
        if self._free.dtype != object:
            self._free = self._free.astype(object)
        self._free[cells] = np.array(exact, dtype=object)

    # -- placement -------------------------------------------------------------------------------

    def build(self) -> None:
        """Build the domain tree and the capacity arrays now rather than at the first
        placement (which otherwise pays for it; a shape change rebuilds them)."""
        self._ensure_tree()
        if self._numa.by_leaf:
            self._numa.arrays()

    def find_assignments(
        self, podsets: Sequence[PodSetRequest], *, excluded: np.ndarray | None = None
    ) -> WorkloadPlacement:
        """`excluded`: leaves no pod may use (domains an exclusive placement group owns)."""
        tree = self._ensure_tree()
        assumed: dict[int, dict[str, int]] = {}  # leaf index -> usage of earlier pod sets
        # leaf index -> the NUMA shapes of earlier pods there, in placement order
        assumed_shapes: dict[int, list[NumaShape]] = {}
        placed: dict[str, _Placed] = {}
        groups = _groups(podsets)
        for position, group in enumerate(groups, start=1):
            try:
                leader, workers = _leader_and_workers(group)
                result = self._place_group(
                    tree, workers, leader, assumed, (), assumed_shapes, excluded
                )
            except (PlacementFailure, _Invalid) as failure:
                return WorkloadPlacement(failure=str(failure))
            later = position < len(groups)  # only later groups see it
            if later and self._numa.by_leaf:
                for podset in (leader, workers):
                    if podset is not None and podset.numa is not None:
                        self._assume_shapes(
                            assumed_shapes, result[podset.name].assignment, podset.numa
                        )
            for podset in group:
                placed[podset.name] = result[podset.name]
                if later:
                    self._assume(assumed, result[podset.name].leaves, podset.requests)
        return WorkloadPlacement(
            podsets=tuple(
                PodSetPlacement(name=ps.name, count=ps.count, assignment=placed[ps.name].assignment)
                for ps in podsets
            )
        )

    # -- placement groups (ours: solver/groups.py) ---------------------------------------------

    def group_layout(self) -> groups.Layout:
        """The tree as the group planner sees it (rebuilt with the tree)."""
        tree = self._ensure_tree()
        if self._group_layout is None or self._group_layout_of is not tree:
            self._group_layout = groups.Layout(self.levels, [leaf.values for leaf in tree.leaves])
            self._group_layout_of = tree
        return self._group_layout

    def leaf_path(self, values: Sequence[str]) -> tuple[str, ...] | None:
        """The full level values of an assigned domain (which may name the hostname only; below
        a virtual hostname level, a usage domain, which has them all)."""
        tree = self._ensure_tree()
        if self.virtual_hostname:
            return tuple(values) if tuple(values) in self._usage_domains else None
        index = self._leaf_by_key.get(self._key_of_assigned(values))
        return None if index is None else tree.leaves[index].values

    def find_group_assignment(
        self,
        podset: PodSetRequest,
        rules: groups.GroupRules,
        state: groups.GroupState,
        owned_by_others: Mapping[int, set[tuple[str, ...]]],
        affinity_of_others: Mapping[int, set[tuple[str, ...]]] | None = None,
    ) -> tuple[WorkloadPlacement, groups.GroupPlacement | None]:
        """Place one pod set of a placement group's member (no NUMA zones, no leader).
        `affinity_of_others`: the affinity domains other groups hold, kept for them to grow in
        when the fragmentation-aware profile is on."""
        tree = self._ensure_tree()
        layout = self.group_layout()
        requests = with_one_pod(podset.requests)
        if self._free.dtype == object:
            capacity = np.array(self._counts_per_leaf(requests), dtype=np.int64)
        else:
            capacity = vectorized.pods_that_fit(
                vectorized.resource_fits(self._free, self._rows, requests)[1]
            )
        allowed = self._eligibility(podset).allowed
        if allowed is not None:
            capacity = np.where(allowed, capacity, 0)
        required = None
        if podset.topology.required:
            try:
                required = self._level_index(
                    podset.topology.required, "no requested topology level"
                )
            except _Invalid as failure:
                return WorkloadPlacement(failure=str(failure)), None
        occupied = self._occupied_leaves(tree)
        try:
            placed = groups.place(
                layout,
                capacity,
                podset.count,
                rules,
                state,
                required=required,
                occupied=occupied,
                foreign=groups.excluded_leaves(layout, owned_by_others),
                fragmentation_aware=self.options.fragmentation_aware,
                reserved=(
                    groups.excluded_leaves(layout, affinity_of_others)
                    if self.options.fragmentation_aware and affinity_of_others
                    else None
                ),
            )
        except groups.GroupPlacementFailure as failure:
            return (
                WorkloadPlacement(
                    failure=f"placement group: {failure} ({podset.count} pod(s) requested)"
                ),
                None,
            )
        leaves = [(tree.leaves[layout.leaf_of[path]], n) for path, n in placed.pods.items()]
        assignment = self._assignment(leaves)
        return (
            WorkloadPlacement(
                podsets=(
                    PodSetPlacement(name=podset.name, count=podset.count, assignment=assignment),
                )
            ),
            placed,
        )

    def _occupied_leaves(self, tree: DomainTree) -> np.ndarray:
        """Leaves holding admitted pods (below a virtual hostname level: in a usage domain
        that does, the leaf's parent). One whose pods have all left keeps a usage entry of
        zeros: it is empty again."""
        keys = [leaf.values[:-1] for leaf in tree.leaves] if self.virtual_hostname else None
        return np.array(
            [self._tas_usage.get(key, {}).get(PODS, 0) > 0 for key in keys or self._leaf_keys],
            dtype=bool,
        )

    def numa_zones(
        self, podsets: Sequence[PodSetRequest], placement: WorkloadPlacement
    ) -> WorkloadPlacement:
        """The placement with the zones its pods on NUMA nodes take, as the kubelet pins them
        (first fit; the leader first, then pod set order, as they were counted). Asked of the
        snapshot `find_assignments` ran on, before it changes. Placement itself never needs
        it: the operator's cache packs admitted pods into zones on its own."""
        if not placement.admitted or not self._numa.by_leaf:
            return placement
        result = {p.name: p.assignment for p in placement.podsets}
        assumed_shapes: dict[int, list[NumaShape]] = {}
        zones: dict[str, dict[str, tuple[tuple[str, ...], ...]]] = {}
        for group in _groups(podsets):
            leader, workers = _leader_and_workers(group)
            zones.update(self._zone_plans(leader, workers, result, assumed_shapes))
        return replace(
            placement,
            podsets=tuple(replace(p, numa_zones=zones.get(p.name, {})) for p in placement.podsets),
        )

    def _assume_shapes(
        self,
        assumed_shapes: dict[int, list[NumaShape]],
        assignment: TopologyAssignment,
        shape: NumaShape,
    ) -> None:
        for domain in assignment.domains:
            leaf = self._leaf_by_key.get(self._key_of_assigned(domain.values))
            if leaf is not None and leaf in self._numa.by_leaf:
                assumed_shapes.setdefault(leaf, []).extend([shape] * domain.count)

    def _zone_plans(
        self,
        leader: PodSetRequest | None,
        workers: PodSetRequest,
        result: dict[str, TopologyAssignment],
        assumed_shapes: dict[int, list[NumaShape]],
    ) -> dict[str, dict[str, tuple[tuple[str, ...], ...]]]:
        """Which zones one group's pods on NUMA nodes take (the leader first, as it was
        counted), recorded in `assumed_shapes` for the pod sets after them."""
        out: dict[str, dict[str, tuple[tuple[str, ...], ...]]] = {}
        _, free = self._numa.arrays()
        for podset in (leader, workers):
            if podset is None or podset.numa is None:
                continue
            # One aligned request per pod on every node that reports all its resources: the
            # zones' room comes from the arrays (the common case, and the fast one).
            unit = _NumaCounting._unit(podset.numa, free)
            single = len(podset.numa.containers) == 1
            for domain in result[podset.name].domains:
                leaf = self._leaf_by_key.get(self._key_of_assigned(domain.values))
                node_numa = self._numa.by_leaf.get(leaf) if leaf is not None else None
                if node_numa is None:
                    continue
                before = assumed_shapes.setdefault(leaf, [])
                room = None
                if (
                    not before
                    and unit
                    and (single or node_numa.scope == numa.POD_SCOPE)
                    and unit.keys() <= node_numa.reported
                ):
                    room = self._numa.room(leaf, unit)
                if room is not None:
                    chosen = numa.fill_zones(node_numa, room, domain.count)
                else:
                    chosen = numa.plan(node_numa, podset.numa, domain.count, before)
                if chosen is not None:  # placement counted them, so they fit
                    out.setdefault(podset.name, {})[domain.values[-1]] = tuple(chosen)
                before.extend([podset.numa] * domain.count)
        return out

    def find_replacement(
        self, podset: PodSetRequest, assignment: TopologyAssignment, failed_node: str
    ) -> ReplacementPlacement:
        """Move the pods `assignment` holds on `failed_node` elsewhere, as Kueue's node hot
        swap does: within the required domain (or the domain of an incomplete slice), under
        the same request, merged back into the surviving domains. Does not change the
        snapshot. As in Kueue the failed node is expected to be out of the snapshot already
        (NotReady, or tainted against the pod set); which usage the snapshot holds (the
        workload's own surviving pods or not) is the caller's choice, Kueue's unit tests
        hold none of it."""
        tree = self._ensure_tree()
        if self.virtual_hostname:
            # Kueue replaces only nodes an assignment names: hostname-lowest topologies
            return ReplacementPlacement(
                failure=f"cannot replace node {failed_node}: the topology's lowest level is "
                f"not {HOSTNAME_LEVEL}, so its assignments name no node"
            )
        surviving = [d for d in assignment.domains if d.values[-1] != failed_node]
        missing = 0
        for domain in assignment.domains:
            if domain.values[-1] == failed_node:
                missing = domain.count
        for domain in surviving:
            if self._key_of_assigned(domain.values) not in self._leaf_by_key:
                return ReplacementPlacement(
                    failure="Cannot replace the node, because the existing topologyAssignment "
                    f"is invalid, as it contains the stale domain {domain.values[0]}"
                )
        request = replace(podset, count=missing)
        within = self._replacement_domain(tree, request, surviving)
        layers = request.topology.slice_layers
        if layers and within and layers[0].size > 0 and missing % layers[0].size != 0:
            # Keep the innermost grouping that the missing pods can still satisfy.
            kept = next((lay for lay in reversed(layers) if missing % lay.size == 0), None)
            request = replace(
                request,
                topology=replace(request.topology, slice_layers=(kept,) if kept else ()),
            )
        try:
            added = self._place_group(tree, request, None, {}, within)[request.name].assignment
        except (PlacementFailure, _Invalid) as failure:
            return ReplacementPlacement(failure=str(failure))
        if not added.domains:
            return ReplacementPlacement(
                failure=f"cannot find replacement assignment for unhealthy node: {failed_node}"
            )
        merged = self._merge(assignment.levels, [*surviving, *added.domains])
        if self.options.partial_slices and layers:
            # As Kueue with TASPartialSlices: the tail last again, and no split slice.
            slice_level = self.levels.index(layers[0].level)
            merged = self._tail_last(merged, slice_level, layers[0].size)
            if merged is None:
                return ReplacementPlacement(
                    failure=f"cannot replace the node {failed_node} without splitting a "
                    "PodSet slice"
                )
        return ReplacementPlacement(assignment=merged, added=added)

    def _replacement_domain(
        self, tree: DomainTree, request: PodSetRequest, surviving: list[DomainAssignment]
    ) -> tuple[str, ...]:
        """Kueue's requiredReplacementDomain: the values of the domain the replacement must
        stay in, () for anywhere."""
        topology = request.topology
        layers = topology.slice_layers
        slice_only = bool(layers) and not topology.required and not topology.preferred
        if topology.required or topology.preferred:
            key = topology.required or topology.preferred
        else:
            key = self.levels[0] if slice_only else self.levels[-1]
        if key not in self.levels or not surviving:
            return ()
        if layers and layers[0].size > 0 and request.count % layers[0].size != 0:
            broken = layers[0]
            if len(layers) > 1:
                # the innermost layer the missing pods break
                broken = next(lay for lay in reversed(layers) if request.count % lay.size != 0)
            if broken.level not in self.levels:
                return ()
            return self._incomplete_slice_domain(
                tree, surviving, request.count, broken.size, self.levels.index(broken.level)
            )
        if not topology.required:
            return ()
        leaf = tree.leaves[self._leaf_by_key[self._key_of_assigned(surviving[0].values)]]
        return leaf.values[: self.levels.index(key) + 1]

    def _incomplete_slice_domain(
        self,
        tree: DomainTree,
        surviving: list[DomainAssignment],
        missing: int,
        size: int,
        level: int,
    ) -> tuple[str, ...]:
        """The slice-level domain whose pods plus the missing ones make whole slices again:
        the first by values. With TASPartialSlices, as Kueue: in the assignment's order, where
        only the last may hold the partial slice."""
        pods_in: dict[tuple[str, ...], int] = {}
        for domain in surviving:
            leaf = tree.leaves[self._leaf_by_key[self._key_of_assigned(domain.values)]]
            ancestor = leaf.values[: level + 1]
            pods_in[ancestor] = pods_in.get(ancestor, 0) + domain.count
        order = list(pods_in) if self.options.partial_slices else sorted(pods_in)
        tail = (missing + sum(pods_in.values())) % size if self.options.partial_slices else 0
        for position, ancestor in enumerate(order):
            expected = tail if position == len(order) - 1 else 0
            if (pods_in[ancestor] + missing) % size == expected:
                return ancestor
        return ()

    def _merge(
        self, levels: tuple[str, ...], domains: list[DomainAssignment]
    ) -> TopologyAssignment:
        """Sort by each leaf's full path and add up the counts of identical domains."""
        tree_leaves = self._tree.leaves if self._tree is not None else []

        def path(domain: DomainAssignment) -> tuple[str, ...]:
            index = self._leaf_by_key.get(self._key_of_assigned(domain.values))
            return tree_leaves[index].values if index is not None else tuple(domain.values)

        merged: list[DomainAssignment] = []
        for domain in sorted(domains, key=path):
            if merged and merged[-1].values == domain.values:
                merged[-1] = DomainAssignment(domain.values, merged[-1].count + domain.count)
            else:
                merged.append(domain)
        return TopologyAssignment(levels=tuple(levels), domains=tuple(merged))

    def _place_group(
        self,
        tree: DomainTree,
        workers: PodSetRequest,
        leader: PodSetRequest | None,
        assumed: dict[int, dict[str, int]],
        within: tuple[str, ...] = (),
        assumed_shapes: dict[int, list[NumaShape]] | None = None,
        excluded: np.ndarray | None = None,
    ) -> dict[str, _Placed]:
        """`within`: only leaves under the domain with these leading level values count."""
        params = self._params(workers, leader)
        counting = _NumaCounting.of(self._numa, workers, leader, assumed_shapes or {})
        requests = with_one_pod(workers.requests)
        leader_requests = with_one_pod(leader.requests) if leader is not None else None
        allowed = self._allowed_leaves(tree, workers, params, within)
        if excluded is not None and excluded.any():
            params.stats.exclusive_group = int(
                (excluded if allowed is None else excluded & allowed).sum()
            )
            allowed = ~excluded if allowed is None else allowed & ~excluded
        if self.options.fragmentation_aware and not within:
            allowed = self._profile_domain(
                tree, params, requests, leader, counting, assumed, allowed
            )
        scores = self._affinity_scores(workers)
        if scores is not None and any(scores):  # all 0: the orders without it
            params.affinity = True
            set_affinity_scores(tree, scores)
        placed = self._place(tree, requests, leader_requests, assumed, params, allowed, counting)
        return self._results(leader, workers, placed, params)

    def _place(
        self,
        tree: DomainTree,
        requests: dict[str, int],
        leader_requests: dict[str, int] | None,
        assumed: dict[int, dict[str, int]],
        params: PlacementParams,
        allowed: np.ndarray | None,
        counting: _NumaCounting | None,
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
    ) -> dict[str, _Placed]:
        result: dict[str, _Placed] = {}
        if leader is not None:
            # the leader's leaf is the one whose count field says so (both paths fill it)
            leader_counts = [(d, d.leader_count) for d, _ in placed if d.leader_count > 0]
            result[leader.name] = _Placed(self._assignment(leader_counts), leader_counts)
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
        result[workers.name] = _Placed(assignment, placed)
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

    def _usage_bounds(
        self,
        tree: DomainTree,
        requests: Resources,
        leader_requests: Resources | None,
        assumed: dict[int, dict[str, int]],
    ) -> feasibility.UsageBounds | None:
        """With a virtual hostname level: what each usage domain's own remaining capacity
        holds (its nodes' free capacity, less admitted usage and earlier pod sets')."""
        if not self.virtual_hostname or not tree.leaves:
            return None
        free = self._free_after(assumed)
        starts = tree.child_starts[-1]
        widest = max(b - a for a, b in itertools.pairwise(tree.child_bounds[-1]))
        used = self._usage_used()
        exact = (
            free.dtype != object
            and used.dtype != object
            and int(np.abs(free).max(initial=0)) * widest <= EXACT_LIMIT
        )
        if not exact:  # a sum of int64 could overflow: Python integers
            free, used = free.astype(object), used.astype(object)
        remaining = np.add.reduceat(free, starts, axis=1) - used
        return feasibility.usage_bounds(remaining, self._rows, requests, leader_requests)

    def _usage_used(self) -> np.ndarray:
        """Admitted usage per usage domain (resources x usage domains), kept until it changes.
        Usage of a domain with no counted node is left out, as Kueue skips it."""
        if self._usage_array is None:
            used = [[0] * len(self._usage_domains) for _ in self._rows]
            for key, usage in self._tas_usage.items():
                position = self._usage_domains.get(key)
                if position is None:
                    continue
                for name, value in usage.items():
                    row = self._rows.get(name)
                    if row is not None:  # an unknown resource: no capacity to bound anyway
                        used[row][position] += value
            exact = all(abs(v) <= EXACT_LIMIT for row in used for v in row)
            self._usage_array = np.array(used, dtype=np.int64 if exact else object).reshape(
                len(self._rows), len(self._usage_domains)
            )
        return self._usage_array

    def _profile_domain(
        self,
        tree: DomainTree,
        params: PlacementParams,
        requests: Resources,
        leader: PodSetRequest | None,
        counting: _NumaCounting | None,
        assumed: dict[int, dict[str, int]],
        allowed: np.ndarray | None,
    ) -> np.ndarray | None:
        """TASProfileFragmentationAware: keep only the leaves of the domain the profile picks
        (solver/profile.py), for a plain request at a required or preferred level; Kueue's
        algorithm then places inside it. Anything else is left to BestFit."""
        if (
            leader is not None
            or counting is not None
            or params.unconstrained
            or params.multi_layer
            or params.tail_size
            or not self._vectorizable(tree, requests, None, assumed)
        ):
            return allowed
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
            return allowed
        inside = layout.codes[params.requested_level] == chosen
        return inside if allowed is None else allowed & inside

    def _free_after(self, assumed: dict[int, dict[str, int]]) -> np.ndarray:
        """The remaining-capacity array with earlier pod sets' usage taken off (a copy only
        when there is some)."""
        if not assumed:
            return self._free
        free = self._free.copy()
        for leaf_index, usage in assumed.items():
            for name, value in usage.items():
                if name in self._rows:
                    free[self._rows[name], leaf_index] -= value
        return free

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
        counting: _NumaCounting | None,
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
                counts.leaf_zones = _LeafZones(counting, pods)
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
        counting: _NumaCounting | None,
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
        counting: _NumaCounting | None,
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
                raise _Invalid("slice topology requested, but slice size not provided")
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
            raise _Invalid(
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
        raise _Invalid(f"{field} {layers[0].size} must divide the pod set count {count}")

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
                raise _Invalid(
                    f"additional slice layer topology {layer.level} must be at a lower level "
                    f"than {self.levels[previous_level]}"
                )
            if layer.size <= 0 or previous_size % layer.size != 0:
                raise _Invalid(
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
            raise _Invalid(
                f"{what}: {key} (the topology's levels are: {', '.join(self.levels)})"
            ) from None

    # -- phase 1 at the leaves -------------------------------------------------------------------

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
        requests: dict[str, int],
        leader_requests: dict[str, int] | None,
        assumed: dict[int, dict[str, int]],
        params: PlacementParams,
        allowed: list[bool] | None,
        counting: _NumaCounting | None,
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

        slice_size = params.slice_size
        at_slice_level = params.slice_level == tree.level_count - 1
        if leader_requests is None:
            for leaf, count in zip(tree.leaves, counts, strict=True):
                leaf.pod_count = leaf.pod_count_with_leader = count
                leaf.leader_count = 0
                slices = count // slice_size if at_slice_level else 0
                leaf.slice_count = leaf.slice_count_with_leader = slices
                leaf.zones_needed = (
                    counting.one_zones(leaf.leaf_index, count) if counting is not None else 0
                )
            return
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

    def _counts_per_leaf(self, requests: Mapping[str, int]) -> list[int]:
        """How many pods of this shape fit on every leaf, one resource at a time."""
        leaf_total = len(self._leaf_keys)
        counts: list[int] | None = None
        for name, request in requests.items():
            if request <= 0:
                continue
            row = self._rows.get(name)
            if row is None:
                return [0] * leaf_total
            fits = [free // request for free in self._free[row].tolist()]
            counts = fits if counts is None else list(map(min, counts, fits))
        if counts is None:
            return [0] * leaf_total
        return [c if c > 0 else 0 for c in counts]

    def _remaining(self, leaf_index: int, usage: Mapping[str, int] | None) -> dict[str, int]:
        remaining = dict(zip(self._rows, self._free[:, leaf_index].tolist(), strict=True))
        if usage:
            for name, value in usage.items():
                remaining[name] = remaining.get(name, 0) - value
        return remaining

    def _limiting_resource(
        self, leaf_index: int, requests: Mapping[str, int], assumed: dict[int, dict[str, int]]
    ) -> str:
        """The resource giving the smallest count, ties broken by name (Kueue's rule)."""
        remaining = self._remaining(leaf_index, assumed.get(leaf_index))
        best_name, best_count = "", None
        for name in sorted(requests):
            request = requests[name]
            if request <= 0:
                continue
            count = max(0, remaining.get(name, 0) // request)
            if best_count is None or count < best_count:
                best_name, best_count = name, count
        return best_name

    def _eligibility(self, podset: PodSetRequest) -> _Eligibility:
        """Taints, nodeSelector and required affinity, checked only where leaves are nodes; a
        leaf is counted under the first check it fails, in that order."""
        if not self.leaves_are_nodes:
            return _Eligibility(allowed=None)
        cache_key = self._eligibility_key(podset)
        cached = self._eligibility_cache.get(cache_key)
        if cached is not None:
            return cached
        tolerations = cache_key[0]
        if self.reference:
            result = self._eligibility_per_leaf(podset, tolerations)
        else:
            result = self._eligibility_by_columns(podset, tolerations)
        self._eligibility_cache[cache_key] = result
        return result

    def _eligibility_key(self, podset: PodSetRequest) -> tuple:
        return (
            tuple(podset.tolerations) + tuple(self.flavor.tolerations),
            tuple(sorted(podset.node_selector.items())),
            tuple(podset.required_affinity),
        )

    def _affinity_scores(self, podset: PodSetRequest) -> list[int] | None:
        """TASRespectNodeAffinityPreferred: every leaf's preferred node affinity score (0 where
        the pod set may not run), or None when no score orders this placement: the gate is
        off, leaves are not nodes, or the pod set has no term that scores."""
        if not (self.options.respect_node_affinity_preferred and self.leaves_are_nodes):
            return None
        terms = scoring_terms(podset.preferred_affinity)
        if not terms:
            return None
        cache_key = (self._eligibility_key(podset), terms)
        scores = self._affinity_cache.get(cache_key)
        if scores is None:
            allowed = self._eligibility(podset).allowed
            scores = [
                affinity_score(nodes[0].labels, terms) if allowed is None or allowed[i] else 0
                for i, nodes in enumerate(self._leaf_nodes)
            ]
            self._affinity_cache[cache_key] = scores
        return scores

    def _eligibility_by_columns(
        self, podset: PodSetRequest, tolerations: tuple[Toleration, ...]
    ) -> _Eligibility:
        """Only tainted leaves are looked at one by one, and the leaves left for required
        affinity; a node selector compares label columns."""
        result = _Eligibility(allowed=None, taints={})
        excluded = np.zeros(len(self._leaf_nodes), dtype=bool)
        for index in self._tainted_leaves:
            taint = first_untolerated_taint(self._leaf_nodes[index][0].taints, tolerations)
            if taint is not None:
                text = taint_string(taint)
                result.taints[text] = result.taints.get(text, 0) + 1
                excluded[index] = True
        if podset.node_selector:
            selected = np.ones(len(excluded), dtype=bool)
            for key, value in podset.node_selector.items():
                codes, code_of = self._label_column(key)
                selected &= codes == code_of.get(value, -2)  # -1: no such label
            unselected = ~selected & ~excluded
            result.node_selector = int(unselected.sum())
            excluded |= unselected
        if podset.required_affinity:
            for index in (~excluded).nonzero()[0].tolist():
                labels = self._leaf_nodes[index][0].labels
                if not matches_required_affinity(labels, podset.required_affinity):
                    result.affinity += 1
                    excluded[index] = True
        if excluded.any():
            result.allowed = ~excluded
        return result

    def _label_column(self, key: str) -> tuple[np.ndarray, dict[str, int]]:
        """Every leaf's value of a label as a code (-1 where it has none), and the codes."""
        column = self._label_columns.get(key)
        if column is None:
            code_of: dict[str, int] = {}
            codes = [
                code_of.setdefault(nodes[0].labels[key], len(code_of))
                if key in nodes[0].labels
                else -1
                for nodes in self._leaf_nodes
            ]
            column = self._label_columns[key] = (np.array(codes, dtype=np.int64), code_of)
        return column

    def _eligibility_per_leaf(
        self, podset: PodSetRequest, tolerations: tuple[Toleration, ...]
    ) -> _Eligibility:
        """The plain path's: every leaf checked in Python."""
        allowed = [True] * len(self._leaf_nodes)
        result = _Eligibility(allowed=None, taints={})
        for index, nodes in enumerate(self._leaf_nodes):
            node = nodes[0]
            taint = first_untolerated_taint(node.taints, tolerations) if node.taints else None
            if taint is not None:
                text = taint_string(taint)
                result.taints[text] = result.taints.get(text, 0) + 1
            elif not matches_node_selector(node.labels, podset.node_selector):
                result.node_selector += 1
            elif not matches_required_affinity(node.labels, podset.required_affinity):
                result.affinity += 1
            else:
                continue
            allowed[index] = False
        if not all(allowed):
            result.allowed = np.array(allowed, dtype=bool)
        return result

    # -- usage bookkeeping -----------------------------------------------------------------------

    @staticmethod
    def _assume(
        assumed: dict[int, dict[str, int]], leaves: list[tuple[Domain, int]], per_pod: Resources
    ) -> None:
        """Earlier pod sets' pods, on the leaves they were placed on (below a virtual hostname
        level, the nodes, which the assignment does not name)."""
        for leaf, count in leaves:
            if count <= 0:
                continue
            usage = assumed.setdefault(leaf.leaf_index, {})
            for name, value in per_pod.items():
                usage[name] = usage.get(name, 0) + value * count
            usage[PODS] = usage.get(PODS, 0) + ONE_POD * count

    def _key_of_assigned(self, values: Sequence[str]) -> LeafKey:
        if self.hostname_lowest:
            return (values[-1],)
        return tuple(values)

    def _assignment(self, leaves_with_counts: list[tuple[Domain, int]]) -> TopologyAssignment:
        """Kueue's assignment of leaves; below a virtual hostname level, of their parents."""
        if self.virtual_hostname:
            leaves_with_counts = feasibility.counts_by_parent(leaves_with_counts)
        # Kueue sorts by the full level values even when only the hostname is reported: the
        # leaves' order in the tree.
        ordered = sorted(leaves_with_counts, key=lambda item: item[0].order)
        if self.hostname_lowest:
            levels: tuple[str, ...] = (HOSTNAME_LEVEL,)
            domains = tuple(
                DomainAssignment(values=(d.values[-1],), count=c) for d, c in ordered if c > 0
            )
        else:
            levels = self.levels
            domains = tuple(DomainAssignment(values=d.values, count=c) for d, c in ordered if c > 0)
        return TopologyAssignment(levels=levels, domains=domains)

    # -- building the tree -----------------------------------------------------------------------

    def _leaf_key_of(self, node: Node) -> LeafKey | None:
        """The leaf a node belongs to, or None when the node does not count for this flavor."""
        if not node.ready or node.unschedulable:
            return None
        labels = node.labels
        for key, value in self.flavor.node_labels.items():
            if labels.get(key) != value:
                return None
        for level in self.levels:
            if level not in labels:
                return None
        if self.hostname_lowest:
            return (labels[HOSTNAME_LEVEL],)
        if self.virtual_hostname:
            # by name: a hostname label need not be there, nor be unique (as in Kueue)
            return (node.name,)
        return tuple(labels[level] for level in self.levels)

    def _path_of(self, node: Node) -> tuple[str, ...]:
        """A counted node's leaf: its value at every level of the tree."""
        path = tuple(node.labels[level] for level in self.levels)
        return (*path, node.name) if self.virtual_hostname else path

    def _ensure_tree(self) -> DomainTree:
        if self._tree is not None:
            return self._tree
        nodes_by_key: dict[LeafKey, list[Node]] = {}
        for node in self._nodes.values():
            key = self._leaf_key_of(node)
            if key is not None:
                nodes_by_key.setdefault(key, []).append(node)
        path_of = {key: self._path_of(nodes[0]) for key, nodes in nodes_by_key.items()}
        keys = sorted(nodes_by_key, key=lambda k: path_of[k])
        tree = DomainTree(len(self._tree_levels), [path_of[k] for k in keys])
        self._leaf_keys = keys
        self._leaf_nodes = [nodes_by_key[k] for k in keys]
        self._leaf_by_key = {key: index for index, key in enumerate(keys)}
        self._eligibility_cache = {}
        self._affinity_cache = {}
        self._label_columns = {}
        if self.virtual_hostname:
            self._usage_domains = {d.values: d.order for d in tree.levels[-2]}
            self._usage_array = None
        self._tainted_leaves = [i for i, nodes in enumerate(self._leaf_nodes) if nodes[0].taints]
        self._numa = _NumaColumns(
            {
                index: nodes[0].numa
                for index, nodes in enumerate(self._leaf_nodes)
                if self.hostname_lowest and nodes[0].numa is not None
            }
        )
        self._tree = tree
        remaining = [self._leaf_remaining(index) for index in range(len(keys))]
        names = {PODS: None}
        for leaf in remaining:
            names.update(dict.fromkeys(leaf))
        self._rows = {name: row for row, name in enumerate(names)}
        values = [[leaf.get(name, 0) for leaf in remaining] for name in self._rows]
        exact = all(-EXACT_LIMIT <= v <= EXACT_LIMIT for row in values for v in row)
        self._free = np.array(values, dtype=np.int64 if exact else object).reshape(
            len(self._rows), len(keys)
        )
        return tree

    def _row(self, name: str) -> int:
        """The row of a resource, added (zero on every leaf) when new."""
        row = self._rows.get(name)
        if row is None:
            self._usage_array = None
            row = self._rows[name] = len(self._rows)
            new = np.zeros((1, self._free.shape[1]), dtype=self._free.dtype)
            self._free = np.vstack([self._free, new])
        return row

    def _set_free(self, row: int, leaf_index: int, value: int) -> None:
        if not -EXACT_LIMIT <= value <= EXACT_LIMIT and self._free.dtype != object:
            self._free = self._free.astype(object)
        self._free[row, leaf_index] = value

    def _leaf_remaining(self, index: int) -> dict[str, int]:
        """A leaf's remaining capacity from its nodes and admitted usage."""
        remaining: dict[str, int] = {}
        for node in self._leaf_nodes[index]:
            allocatable = dict(node.allocatable)
            allocatable.setdefault(PODS, DEFAULT_PODS_ALLOCATABLE)
            for name, value in allocatable.items():
                remaining[name] = remaining.get(name, 0) + value
            for name, value in node.usage.items():
                remaining[name] = remaining.get(name, 0) - value
        if not self.virtual_hostname:
            for name, value in self._tas_usage.get(self._leaf_keys[index], {}).items():
                remaining[name] = remaining.get(name, 0) - value
        return remaining

    def _refresh_leaf(self, index: int) -> None:
        if self.hostname_lowest:
            self._numa.update(index, self._leaf_nodes[index][0].numa)
        remaining = self._leaf_remaining(index)
        for name in remaining:
            self._row(name)
        for name, row in self._rows.items():
            self._set_free(row, index, remaining.get(name, 0))


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


def _groups(podsets: Sequence[PodSetRequest]) -> list[list[PodSetRequest]]:
    """Pod sets in spec order; two sharing a group name form one group at the first's place."""
    groups: dict[str, list[PodSetRequest]] = {}
    for index, podset in enumerate(podsets):
        key = podset.topology.group_name
        groups.setdefault(f"group:{key}" if key is not None else f"index:{index}", []).append(
            podset
        )
    return list(groups.values())


def _leader_and_workers(
    group: list[PodSetRequest],
) -> tuple[PodSetRequest | None, PodSetRequest]:
    """The leader is the pod set with the smaller count; on a tie, the second one."""
    if len(group) == 1:
        return None, group[0]
    if len(group) > 2:
        # Kueue's webhook rejects this; refuse rather than guess (our wording).
        raise _Invalid(
            f"pod set group {group[0].topology.group_name} has {len(group)} pod sets; "
            "a group is exactly one leader and one workers pod set"
        )
    first, second = group[0], group[1]
    if second.count > first.count:
        return first, second
    return second, first


# -- NUMA zones (solver/numa.py) ------------------------------------------------------------------

# Stands for "no limit" in zone arrays: where a node's zones do not report a resource. Small
# enough that a sum over zones stays far inside int64.
_UNLIMITED = 2**40


class _NumaColumns:
    """The zones of every leaf whose node reports them, and the same as arrays (one matrix per
    resource: zone slot x NUMA leaf) so that the common case, one aligned request per pod, is
    counted for all leaves at once. Kept up to date in place; rebuilt when the shape grows."""

    def __init__(self, by_leaf: dict[int, NodeNuma] | None = None) -> None:
        self.by_leaf: dict[int, NodeNuma] = by_leaf or {}
        # Every leaf's zones report every resource any of them reports (the arrays hold no
        # "unlimited" cell); set when the arrays are built, cleared by an update that breaks it.
        self.uniform = False
        self._arrays: tuple[np.ndarray, dict[int, int], int, dict[str, np.ndarray]] | None = None

    def update(self, leaf: int, node_numa: NodeNuma | None) -> None:
        if self.by_leaf.get(leaf) == node_numa:
            return
        if node_numa is None:
            self.by_leaf.pop(leaf, None)
            self._arrays = None
            return
        self.by_leaf[leaf] = node_numa
        arrays = self._arrays
        if arrays is None:
            return
        _, column_of, slots, free = arrays
        column = column_of.get(leaf)
        if column is None or len(node_numa.zones) > slots or not node_numa.reported <= set(free):
            self._arrays = None
            return
        if node_numa.reported != set(free):
            self.uniform = False
        self._fill_column(free, column, node_numa)

    def room(self, leaf: int, unit: Mapping[str, int]) -> list[int] | None:
        """Pods of one aligned `unit` each zone of a leaf holds, from the arrays."""
        column = self._arrays[1].get(leaf) if self._arrays is not None else None
        if column is None:
            return None
        free = self._arrays[3]
        zones = len(self.by_leaf[leaf].zones)
        return [
            max(0, min(int(free[name][slot, column]) // value for name, value in unit.items()))
            for slot in range(zones)
        ]

    def arrays(self) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """The NUMA leaves' indices and, per resource, zone slot x leaf free capacity."""
        if self._arrays is None:
            leaves = sorted(self.by_leaf)
            slots = max((len(n.zones) for n in self.by_leaf.values()), default=0)
            names = sorted({name for n in self.by_leaf.values() for name in n.reported})
            free = {name: np.zeros((slots, len(leaves)), dtype=np.int64) for name in names}
            for column, leaf in enumerate(leaves):
                self._fill_column(free, column, self.by_leaf[leaf])
            all_names = set(names)
            self.uniform = all(n.reported == all_names for n in self.by_leaf.values())
            self._arrays = (
                np.array(leaves, dtype=np.intp),
                {leaf: column for column, leaf in enumerate(leaves)},
                slots,
                free,
            )
        return self._arrays[0], self._arrays[3]

    @staticmethod
    def _fill_column(free: dict[str, np.ndarray], column: int, node_numa: NodeNuma) -> None:
        reported = node_numa.reported
        for name, matrix in free.items():
            matrix[:, column] = 0 if name in reported else _UNLIMITED
            if name in reported:
                for slot, zone in enumerate(node_numa.zones):
                    matrix[slot, column] = min(zone.free.get(name, 0), _UNLIMITED)


class _LeafZones:
    """LevelCounts.leaf_zones for the arrays: computed for every leaf on first use (only a
    tie between leaves asks for it)."""

    def __init__(self, counting: _NumaCounting, pods: np.ndarray) -> None:
        self.counting = counting
        self.pods = pods
        self._all: np.ndarray | None = None

    def __getitem__(self, positions: np.ndarray) -> np.ndarray:
        if self._all is None:
            self._all = self.counting.zones(self.pods)
        return self._all[positions]


@dataclass
class _NumaCounting:
    """One pod set's zone limits for one placement: its shape (and its leader's), the zones,
    and the shapes earlier pod sets of the workload left on each leaf."""

    columns: _NumaColumns
    shape: NumaShape | None
    leader_shape: NumaShape | None
    assumed: dict[int, list[NumaShape]]
    _cached_room: tuple | None = None  # see _room
    _cached_python: set[int] | None = None  # see _python_leaves

    @classmethod
    def of(
        cls,
        columns: _NumaColumns,
        workers: PodSetRequest,
        leader: PodSetRequest | None,
        assumed: dict[int, list[NumaShape]],
    ) -> _NumaCounting | None:
        leader_shape = leader.numa if leader is not None else None
        if not columns.by_leaf or (workers.numa is None and leader_shape is None):
            return None
        return cls(columns, workers.numa, leader_shape, assumed)

    def one(self, leaf: int, by_totals: int) -> int:
        """Pods of the shape the leaf holds: its count by node totals, or fewer by zones."""
        node_numa = self.columns.by_leaf.get(leaf)
        if node_numa is None or self.shape is None or by_totals <= 0:
            return by_totals
        return numa.count(node_numa, self.shape, by_totals, self.assumed.get(leaf, ()))

    def one_zones(self, leaf: int, pods: int) -> int:
        """The fewest zones the leaf's `pods` pods need (0 off the zones)."""
        node_numa = self.columns.by_leaf.get(leaf)
        if node_numa is None or self.shape is None:
            return 0
        return numa.zones_needed(node_numa, self.shape, pods, self.assumed.get(leaf, ()))

    def zones(self, pods: np.ndarray) -> np.ndarray:
        """`one_zones` for every leaf, in arrays where a pod aligns one request."""
        out = np.zeros(len(pods), dtype=np.int64)
        room = self._room()
        if room is not None:
            leaves, per_zone, aligned = room
            wanted = pods[leaves]
            # Most leaves hold their pods in their roomiest zone, or (two zones) in both; only
            # the others are sorted.
            needed = np.where(per_zone.max(axis=0) >= wanted, 1, len(per_zone))
            if len(per_zone) > 2:
                rest = np.flatnonzero(needed > 1)
                ordered = -np.sort(-per_zone[:, rest], axis=0)  # most first
                short = np.cumsum(ordered, axis=0) < wanted[rest]
                needed[rest] = np.minimum(short.sum(axis=0) + 1, len(per_zone))
            out[leaves] = np.where((wanted > 0) & aligned, needed, 0)
        for leaf in self._python_leaves():
            out[leaf] = self.one_zones(leaf, int(pods[leaf]))
        return out

    def _room(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """For the workers' one aligned request: the NUMA leaves, the pods each zone slot of
        each holds (zone slot x leaf), and whether the leaf's zones report any of the
        request's resources (computed once per placement)."""
        if self._cached_room is None:
            leaves, free = self.columns.arrays()
            unit = self._unit(self.shape, free)
            if not unit or not len(leaves):
                self._cached_room = ()
            else:
                per_zone = None
                for name, value in unit.items():
                    fits = free[name] // value
                    per_zone = fits if per_zone is None else np.minimum(per_zone, fits)
                if self.columns.uniform:  # every NUMA leaf reports every resource
                    aligned = np.ones(len(leaves), dtype=bool)
                else:
                    aligned = ~np.logical_and.reduce(
                        [(free[name] >= _UNLIMITED).all(axis=0) for name in unit]
                    )
                self._cached_room = (leaves, np.maximum(per_zone, 0), aligned)
        return self._cached_room or None

    def one_with_leader(self, leaf: int, by_totals: int) -> tuple[bool, int]:
        """Whether the leaf's zones take the leader, and then how many workers besides."""
        node_numa = self.columns.by_leaf.get(leaf)
        if node_numa is None:
            return True, by_totals
        before = list(self.assumed.get(leaf, ()))
        if self.leader_shape is not None:
            if numa.count(node_numa, self.leader_shape, 1, before) < 1:
                return False, 0
            before.append(self.leader_shape)
        if self.shape is None or by_totals <= 0:
            return True, by_totals
        return True, numa.count(node_numa, self.shape, by_totals, before)

    def _python_leaves(self) -> set[int]:
        """NUMA leaves the arrays cannot count: those holding earlier pod sets' pods, and in
        container scope those where a pod aligns several containers one by one."""
        if self._cached_python is not None:
            return self._cached_python
        out = {leaf for leaf in self.assumed if leaf in self.columns.by_leaf}
        shapes = [s for s in (self.shape, self.leader_shape) if s is not None]
        if any(len(s.containers) > 1 for s in shapes):
            out.update(
                leaf
                for leaf, node_numa in self.columns.by_leaf.items()
                if node_numa.scope == numa.CONTAINER_SCOPE
            )
        self._cached_python = out
        return out

    @staticmethod
    def _unit(shape: NumaShape | None, free: dict[str, np.ndarray]) -> dict[str, int]:
        """A pod's one aligned request, over the resources some zone reports."""
        if shape is None:
            return {}
        return {
            name: value
            for name, value in shape.total().items()
            if value > 0 and not numa.flows(name) and name in free
        }

    @staticmethod
    def _zone_counts(
        free: dict[str, np.ndarray], unit: dict[str, int], taken: dict[str, np.ndarray]
    ) -> np.ndarray:
        """Pods of `unit` every NUMA leaf's zones hold, each zone on its own, after `taken`."""
        per_zone = None
        for name, value in unit.items():
            fits = (free[name] - taken[name] if name in taken else free[name]) // value
            per_zone = fits if per_zone is None else np.minimum(per_zone, fits)
        return np.maximum(per_zone, 0).sum(axis=0)

    def limit(self, by_totals: np.ndarray) -> np.ndarray:
        """`one` for every leaf: in arrays where each NUMA leaf aligns one request per pod,
        in Python for the rest."""
        out = by_totals.copy()
        room = self._room() if self.shape is not None else None
        if room is not None:
            leaves, per_zone, _ = room
            out[leaves] = np.minimum(out[leaves], per_zone.sum(axis=0))
        for leaf in self._python_leaves():
            out[leaf] = self.one(leaf, int(by_totals[leaf]))
        return out

    def with_leader(
        self, hosts_leader: np.ndarray, after_leader: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """`one_with_leader` for every leaf: the leader takes the first zone that fits it (the
        kubelet's choice), the workers count in what the zones have left."""
        hosts, after = hosts_leader.copy(), after_leader.copy()
        leaves, free = self.columns.arrays()
        if len(leaves):
            leader = self._unit(self.leader_shape, free)
            workers = self._unit(self.shape, free)
            fits_leader = np.ones(len(leaves), dtype=bool)
            taken: dict[str, np.ndarray] = {}
            if leader:
                each = None
                for name, value in leader.items():
                    ok = free[name] >= value
                    each = ok if each is None else each & ok
                fits_leader = each.any(axis=0)
                first = each.argmax(axis=0)
                columns = np.arange(len(leaves))
                for name, value in leader.items():
                    taken[name] = np.zeros_like(free[name])
                    taken[name][first, columns] = np.where(fits_leader, value, 0)
            hosts[leaves] &= fits_leader
            if workers:
                counts = self._zone_counts(free, workers, taken)
                after[leaves] = np.where(
                    fits_leader, np.minimum(after[leaves], counts), after[leaves]
                )
        for leaf in self._python_leaves():
            if hosts_leader[leaf]:
                ok, count = self.one_with_leader(leaf, int(after_leader[leaf]))
                hosts[leaf], after[leaf] = ok, count
        return hosts, after
