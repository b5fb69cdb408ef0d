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

By concern: the tree and its usage are capacity.py (LeafCapacity), the placement steps
placement.py (Placement), the NUMA zone counting numa_counting.py beside numa.py; this module
holds the public calls: find_assignments, find_group_assignment, numa_zones, find_replacement.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from tas.solver import groups, numa
from tas.solver.algorithm import PlacementFailure
from tas.solver.placement import (
    InvalidRequest,
    Placed,
    leader_and_workers,
    leader_first,
    placed_as_gang,
    pod_set_groups,
)
from tas.solver.role_groups import RoleGroupPlacement
from tas.solver.tree import DomainTree
from tas.solver.types import (
    HOSTNAME_LEVEL,
    DomainAssignment,
    NumaShape,
    PodSetPlacement,
    PodSetRequest,
    ReplacementPlacement,
    TopologyAssignment,
    WorkloadPlacement,
)


class TopologySnapshot(RoleGroupPlacement):
    """The nodes of one TAS flavor and their usage (capacity.py), and the calls that place on
    them (placement.py) without changing them."""

    def find_assignments(
        self, podsets: Sequence[PodSetRequest], *, excluded: np.ndarray | None = None
    ) -> WorkloadPlacement:
        """`excluded`: leaves no pod may use (domains an exclusive placement group owns)."""
        tree = self._ensure_tree()
        assumed: dict[int, dict[str, int]] = {}  # leaf index -> usage of earlier pod sets
        # leaf index -> the NUMA shapes of earlier pods there, in placement order
        assumed_shapes: dict[int, list[NumaShape]] = {}
        placed: dict[str, Placed] = {}
        groups = pod_set_groups(podsets)
        for position, group in enumerate(groups, start=1):
            try:
                if self.options.multi_role_groups and placed_as_gang(group):
                    result = self._place_role_group(tree, group, assumed, assumed_shapes, excluded)
                else:
                    leader, workers = leader_and_workers(group)
                    result = self._place_request(
                        tree, workers, leader, assumed, assumed_shapes, excluded
                    )
            except (PlacementFailure, InvalidRequest) as failure:
                return WorkloadPlacement(failure=str(failure))
            later = position < len(groups)  # only later groups see it
            if later and self._numa.by_leaf:
                for podset in leader_first(group):
                    if podset.numa is not None:
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
        capacity = self._pods_per_leaf(podset)
        required = None
        if podset.topology.required:
            try:
                required = self._level_index(
                    podset.topology.required, "no requested topology level"
                )
            except InvalidRequest as failure:
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

    def numa_zones(
        self, podsets: Sequence[PodSetRequest], placement: WorkloadPlacement
    ) -> WorkloadPlacement:
        """The placement with the zones its pods on NUMA nodes take, as the kubelet pins them:
        numa.pack, the packing the operator's cache uses, in the order placement counted them
        (leader_first). Asked of the snapshot `find_assignments` ran on, before it changes."""
        if not placement.admitted or not self._numa.by_leaf:
            return placement
        result = {p.name: p.assignment for p in placement.podsets}
        # per NUMA leaf: its batches in packing order, with the pod set and host of each
        batches: dict[int, list[tuple[str, str, numa.Batch]]] = {}
        for podset in leader_first(podsets):
            if podset.numa is None:
                continue
            for domain in result[podset.name].domains:
                leaf = self._leaf_by_key.get(self._key_of_assigned(domain.values))
                if leaf is not None and leaf in self._numa.by_leaf:
                    batch = numa.Batch(podset.numa, domain.count)
                    batches.setdefault(leaf, []).append((podset.name, domain.values[-1], batch))
        zones: dict[str, dict[str, tuple[tuple[str, ...], ...]]] = {}
        for leaf, items in batches.items():
            _, plans = numa.pack(self._numa.by_leaf[leaf], [batch for _, _, batch in items])
            for (name, host, _), chosen in zip(items, plans, strict=True):
                zones.setdefault(name, {})[host] = tuple(chosen)
        return replace(
            placement,
            podsets=tuple(replace(p, numa_zones=zones.get(p.name, {})) for p in placement.podsets),
        )

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
        except (PlacementFailure, InvalidRequest) as failure:
            return ReplacementPlacement(failure=str(failure))
        if not added.domains:
            return ReplacementPlacement(
                failure=f"cannot find replacement assignment for unhealthy node: {failed_node}"
            )
        merged = self._merge(assignment.levels, [*surviving, *added.domains])
        if self.options.partial_slices and layers:
            # As Kueue with TASPartialSlices: the tail last again, and no split slice.
            slice_level = self.levels.index(layers[0].level)
            tail_last = self._tail_last(merged, slice_level, layers[0].size)
            if tail_last is None:
                return ReplacementPlacement(
                    failure=f"cannot replace the node {failed_node} without splitting a "
                    "PodSet slice"
                )
            merged = tail_last
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
