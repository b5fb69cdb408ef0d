"""NUMA zones on the solver's side: every NUMA leaf's zones as arrays, and the zone limits of
one placement (how many pods of a shape each leaf's zones hold, and how few zones they need),
counted with solver/numa.py's rules in arrays where a pod aligns one request, in Python
otherwise.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from tas.solver import numa
from tas.solver.types import (
    NodeNuma,
    NumaShape,
    PodSetRequest,
)

# Stands for "no limit" in zone arrays: where a node's zones do not report a resource. Small
# enough that a sum over zones stays far inside int64.
_UNLIMITED = 2**40


class NumaColumns:
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


class LeafZones:
    """LevelCounts.leaf_zones for the arrays: computed for every leaf on first use (only a
    tie between leaves asks for it)."""

    def __init__(self, counting: NumaCounting, pods: np.ndarray) -> None:
        self.counting = counting
        self.pods = pods
        self._all: np.ndarray | None = None

    def __getitem__(self, positions: np.ndarray) -> np.ndarray:
        if self._all is None:
            self._all = self.counting.zones(self.pods)
        zones: np.ndarray = self._all[positions]
        return zones


@dataclass
class NumaCounting:
    """One pod set's zone limits for one placement: its shape (and its leader's), the zones,
    and the shapes earlier pod sets of the workload left on each leaf."""

    columns: NumaColumns
    shape: NumaShape | None
    leader_shape: NumaShape | None
    assumed: dict[int, list[NumaShape]]
    _cached_room: tuple[np.ndarray, ...] | None = None  # see _room
    _cached_python: set[int] | None = None  # see _python_leaves

    @classmethod
    def of(
        cls,
        columns: NumaColumns,
        workers: PodSetRequest,
        leader: PodSetRequest | None,
        assumed: dict[int, list[NumaShape]],
    ) -> NumaCounting | None:
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

    def _room(self) -> tuple[np.ndarray, ...] | None:
        """For the workers' one aligned request: the NUMA leaves, the pods each zone slot of
        each holds (zone slot x leaf), and whether the leaf's zones report any of the
        request's resources (computed once per placement)."""
        if self._cached_room is None:
            leaves, free = self.columns.arrays()
            unit = self._unit(self.shape, free)
            if not unit or not len(leaves):
                self._cached_room = ()
            else:
                if self.columns.uniform:  # every NUMA leaf reports every resource
                    aligned = np.ones(len(leaves), dtype=bool)
                else:
                    aligned = ~np.logical_and.reduce(
                        [(free[name] >= _UNLIMITED).all(axis=0) for name in unit]
                    )
                self._cached_room = (leaves, _per_zone(free, unit), aligned)
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
        counts: np.ndarray = _per_zone(free, unit, taken).sum(axis=0)
        return counts

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
            fits_leader: np.ndarray = np.ones(len(leaves), dtype=bool)
            taken: dict[str, np.ndarray] = {}
            if leader:
                each: np.ndarray = functools.reduce(
                    np.logical_and, [free[name] >= value for name, value in leader.items()]
                )
                fits_leader = np.asarray(each.any(axis=0))
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


def _per_zone(
    free: dict[str, np.ndarray], unit: Mapping[str, int], taken: dict[str, np.ndarray] | None = None
) -> np.ndarray:
    """Pods of `unit` (not empty) each zone slot of every NUMA leaf holds (zone slot x leaf),
    after `taken`; never below 0."""
    fits = [
        (free[name] - taken[name] if taken and name in taken else free[name]) // value
        for name, value in unit.items()
    ]
    room: np.ndarray = np.maximum(functools.reduce(np.minimum, fits), 0)
    return room
