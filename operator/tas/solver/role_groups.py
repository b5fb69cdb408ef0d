"""Pod-set groups of any number of roles (ours, gate TASMultiRolePodSetGroups).

Kueue's `podset-group-name` joins exactly a leader (count 1) and its workers. With the gate, a
group that is not such a pair (a trainer, rollout workers and a reward model; prefill, decode
and a router) is one gang: every pod of every role in one domain of the group's level. The
domains of that level are tried least room first (BestFit's order among those with room for
every role); inside one, the roles are placed scarcest first, each by its own request (its own
slices), each seeing the ones before it. A preferred level climbs as Kueue's preferred
algorithm does when no domain holds the gang; at the top the roles are placed one by one.
"""

from __future__ import annotations

import numpy as np

from tas.solver.algorithm import PlacementFailure
from tas.solver.placement import InvalidRequest, Placed
from tas.solver.required_preferred import RequiredPreferredPlacement
from tas.solver.tree import DomainTree
from tas.solver.types import NumaShape, PodSetRequest

Path = tuple[str, ...]


class RoleGroupPlacement(RequiredPreferredPlacement):
    def _place_role_group(
        self,
        tree: DomainTree,
        group: list[PodSetRequest],
        assumed: dict[int, dict[str, int]],
        assumed_shapes: dict[int, list[NumaShape]],
        excluded: np.ndarray | None,
    ) -> dict[str, Placed]:
        """Every role of the group in one domain of its level; the first domain that holds
        them all. `assumed` is left as it was (the caller adds the group's pods)."""
        topology = group[0].topology
        level_key = topology.required or topology.preferred
        if level_key is None:
            raise InvalidRequest(f"pod set group {topology.group_name} has no topology level")
        level = self._level_index(level_key, "no requested topology level")
        depths = [level] if topology.required else list(range(level, -1, -1))
        for depth in depths:
            for path, roles in self._gang_candidates(group, depth):
                placed = self._roles_within(tree, roles, path, assumed, assumed_shapes, excluded)
                if placed is not None:
                    return placed
        if topology.required:
            pods = sum(podset.count for podset in group)
            raise PlacementFailure(
                f"pod set group {topology.group_name}: no domain of {level_key} holds all "
                f"{pods} pods of its {len(group)} pod sets"
            )
        placed = self._roles_within(tree, group, (), assumed, assumed_shapes, excluded)
        if placed is None:
            raise PlacementFailure(
                f"pod set group {topology.group_name}: its pod sets do not fit together"
            )
        return placed

    def _gang_candidates(
        self, group: list[PodSetRequest], depth: int
    ) -> list[tuple[Path, list[PodSetRequest]]]:
        """The domains of `depth` with free room for every role's pods (each counted in its
        own shape, ignoring the others), least total room first, then by values; with each,
        the roles in the order they are placed there: the scarcest first (the least room for
        its pods), so a role few nodes can host is not crowded out by the others."""
        layout = self.group_layout()
        codes = layout.codes[depth]
        size = len(layout.domains[depth])
        rooms = [
            np.bincount(codes, weights=self._pods_per_leaf(podset), minlength=size)
            for podset in group
        ]
        enough = np.ones(size, dtype=bool)
        for podset, room in zip(group, rooms, strict=True):
            enough &= room >= podset.count
        out = []
        for code in np.flatnonzero(enough).tolist():
            ratios = [room[code] / podset.count for podset, room in zip(group, rooms, strict=True)]
            order = sorted(range(len(group)), key=lambda index: (ratios[index], index))
            total = int(sum(room[code] for room in rooms))
            out.append((total, layout.domains[depth][code], [group[index] for index in order]))
        return [(path, roles) for _, path, roles in sorted(out, key=lambda item: item[:2])]

    def _roles_within(
        self,
        tree: DomainTree,
        group: list[PodSetRequest],
        path: Path,
        assumed: dict[int, dict[str, int]],
        assumed_shapes: dict[int, list[NumaShape]],
        excluded: np.ndarray | None,
    ) -> dict[str, Placed] | None:
        """Each role in the given order inside `path` (everywhere when empty), on copies of
        the usage so far; None when one does not fit."""
        local = {leaf: dict(usage) for leaf, usage in assumed.items()}
        local_shapes = {leaf: list(shapes) for leaf, shapes in assumed_shapes.items()}
        out: dict[str, Placed] = {}
        for podset in group:
            try:
                result = self._place_request(
                    tree, podset, None, local, local_shapes, excluded, within=path
                )
            except PlacementFailure:
                return None
            out[podset.name] = result[podset.name]
            self._assume(local, result[podset.name].leaves, podset.requests)
            if podset.numa is not None and self._numa.by_leaf:
                self._assume_shapes(local_shapes, result[podset.name].assignment, podset.numa)
        return out
