"""Required at one level, preferred at a lower one (ours, gate TASRequiredWithPreferred).

Kueue takes a required level alone: it picks the required domain by BestFit and spreads the
pods inside it however its counts fall. Here every required domain that can hold the pod set is
tried with Kueue's preferred algorithm at the lower level, limited to that domain, and the one
whose placement spans the fewest domains of the lower level wins; ties go as Kueue's BestFit
orders the required domains (least room that still fits, then by values).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from tas.solver.algorithm import PlacementFailure
from tas.solver.placement import InvalidRequest, Placed, Placement
from tas.solver.tree import DomainTree
from tas.solver.types import NumaShape, PodSetRequest


def lower_preferred(request: PodSetRequest) -> PodSetRequest:
    """The pod set as it is placed inside one required domain: preferred at the lower level."""
    topology = replace(
        request.topology,
        required=None,
        preferred=request.topology.inner_preferred,
        inner_preferred=None,
    )
    return replace(request, topology=topology)


class RequiredPreferredPlacement(Placement):
    def _place_request(
        self,
        tree: DomainTree,
        workers: PodSetRequest,
        leader: PodSetRequest | None,
        assumed: dict[int, dict[str, int]],
        assumed_shapes: dict[int, list[NumaShape]],
        excluded: np.ndarray | None,
        within: tuple[str, ...] = (),
    ) -> dict[str, Placed]:
        """One pod set (and its leader): Kueue's placement, or with the gate and a lower
        preferred level, the tightest of the required domains."""
        topology = workers.topology
        if not (
            self.options.required_with_preferred and topology.required and topology.inner_preferred
        ):
            return self._place_group(
                tree, workers, leader, assumed, within, assumed_shapes, excluded
            )
        required = self._level_index(topology.required, "no requested topology level")
        preferred = self._level_index(topology.inner_preferred, "no preferred topology level")
        if preferred <= required:
            raise InvalidRequest(
                f"preferred topology {topology.inner_preferred} must be below the required "
                f"topology {topology.required}"
            )
        inner_workers = lower_preferred(workers)
        inner_leader = lower_preferred(leader) if leader is not None else None
        best: tuple[tuple[int, int], dict[str, Placed]] | None = None
        candidates = self._required_candidates(tree, workers, required)
        for rank, (_, path) in enumerate(candidates):
            if within and path[: len(within)] != within[: len(path)]:
                continue  # outside the domain the caller holds the pod set to
            inside = path if len(path) >= len(within) else within
            try:
                placed = self._place_group(
                    tree, inner_workers, inner_leader, assumed, inside, assumed_shapes, excluded
                )
            except PlacementFailure:
                continue
            key = (_domains_spanned(placed, preferred), rank)
            if best is None or key < best[0]:
                best = (key, placed)
        if best is None:  # nothing fits: Kueue's own placement, and its message
            return self._place_group(
                tree, workers, leader, assumed, within, assumed_shapes, excluded
            )
        return best[1]

    def _required_candidates(
        self,
        tree: DomainTree,
        workers: PodSetRequest,
        required: int,
    ) -> list[tuple[int, tuple[str, ...]]]:
        """The required level's domains that could hold every pod by free capacity, least room
        first, then by values (BestFit's order among fitting domains)."""
        layout = self.group_layout()
        codes = layout.codes[required]
        room = np.bincount(
            codes, weights=self._pods_per_leaf(workers), minlength=len(layout.domains[required])
        )
        needed = workers.count  # the leader's pods may be of another shape: not counted
        candidates = [
            (int(pods), layout.domains[required][code])
            for code, pods in enumerate(room.tolist())
            if pods >= needed
        ]
        return sorted(candidates)


def _domains_spanned(placed: dict[str, Placed], level: int) -> int:
    """How many domains of `level` the placed pods take."""
    return len(
        {
            leaf.values[: level + 1]
            for result in placed.values()
            for leaf, count in result.leaves
            if count > 0
        }
    )
