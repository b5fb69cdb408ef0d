"""Defragmentation's planner (ours, gate TASDefragmentation): which running workloads that
allow it to move would open room for a gang that fits nowhere now.

Pure: its inputs are the solver's (a flavor's snapshot, the gang's pod sets, the movable
workloads as their requests and assignments), so a test drives it without a cluster. The
plan is checked with the real solver in one simulation on the snapshot: the candidates' pods
are taken out, the gang is placed, then each candidate is placed again by its own topology
request on what is left, kept off the hosts the gang takes. The snapshot is always restored.

Sets are tried smallest first (one workload, then two, ... up to `Limits.max_moves`) and,
within a size, cheapest first (fewest pods moved; a workload already leaving costs nothing).
Only sets within one domain of the gang's required level can open that domain, and a set
whose pods, with the domain's free room, do not even add up to the gang's requests is skipped
without asking the solver. A plan is therefore minimal: every smaller set was tried and
failed. The search stops at `Limits.seconds` (or `max_attempts` sets simulated, which is
deterministic), and then finds nothing.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from tas.solver import PODS, PodSetRequest, TopologyAssignment, TopologySnapshot
from tas.solver.types import with_one_pod

Path = tuple[str, ...]


@dataclass(frozen=True)
class Candidate:
    """A running workload that may be moved."""

    key: Hashable
    pod_sets: tuple[PodSetRequest, ...]  # its requests, topology request included
    # where each pod set runs now, by pod set name
    assignments: Mapping[str, TopologyAssignment]
    queue: str = ""  # whose move budget it takes
    leaving: bool = False  # already evicted: moving it costs nothing and takes no budget

    @property
    def cost(self) -> int:
        return 0 if self.leaving else sum(ps.count for ps in self.pod_sets)


@dataclass(frozen=True)
class Limits:
    max_moves: int = 3  # the largest set tried
    max_candidates: int = 32  # per domain of the gang's level, cheapest kept
    seconds: float = 0.25  # the whole search
    max_attempts: int | None = None  # simulations with the solver (None: no limit)


@dataclass(frozen=True)
class Plan:
    moved: tuple[Hashable, ...]  # in the order of the candidates given
    gang: Mapping[str, TopologyAssignment]  # where the gang goes, by pod set name
    # where each moved workload fits again once the gang is placed, by pod set name
    moves: Mapping[Hashable, Mapping[str, TopologyAssignment]] = field(default_factory=dict)


def required_level(gang: Sequence[PodSetRequest], levels: Sequence[str]) -> int | None:
    """The highest level any of the gang's pod sets requires (its index), or None: a gang
    without a required level fits wherever the room adds up, and moving others cannot make a
    domain for it."""
    depths = [levels.index(ps.topology.required) for ps in gang if ps.topology.required in levels]
    return min(depths) if depths else None


def plan(
    snapshot: TopologySnapshot,
    gang: Sequence[PodSetRequest],
    candidates: Sequence[Candidate],
    budget: Mapping[str, int] | None = None,
    limits: Limits = Limits(),
    clock: Callable[[], float] = time.monotonic,
) -> Plan | str:
    """The smallest, then cheapest, set of candidates whose move lets the gang fit, or why
    there is none. `budget`: moves left per queue (a queue not named has no limit)."""
    depth = required_level(gang, snapshot.levels)
    if depth is None:
        return "it requires no topology level: moving others cannot open a domain for it"
    if not candidates:
        return "no running workload that allows it may be moved yet"
    search = _Search(snapshot, gang, candidates, depth, budget or {}, limits)
    deadline = clock() + limits.seconds
    for attempts, combo in enumerate(search.combos()):
        if clock() > deadline or attempts == limits.max_attempts:
            return "no plan found within the search's bounds"
        found = search.attempt(combo)
        if found is not None:
            return found
    return (
        f"moving up to {limits.max_moves} of the {len(candidates)} movable workload(s) "
        "would not open a domain for it"
    )


class _Search:
    def __init__(
        self,
        snapshot: TopologySnapshot,
        gang: Sequence[PodSetRequest],
        candidates: Sequence[Candidate],
        depth: int,
        budget: Mapping[str, int],
        limits: Limits,
    ) -> None:
        self.snapshot = snapshot
        self.gang = tuple(gang)
        self.candidates = list(candidates)
        self.depth = depth
        self.budget = budget
        self.limits = limits
        self.need = _total(self.gang)
        self.free: dict[Path, dict[str, int]] = {}  # domain -> free room, over its leaves
        for key, room in snapshot.remaining().items():
            path = snapshot.leaf_path(key)
            if path is not None:
                _add(self.free.setdefault(path[: depth + 1], {}), room, positive=True)
        # candidate index -> domain -> what its pods there take
        self.held: list[dict[Path, dict[str, int]]] = [self._held(c) for c in self.candidates]

    def _held(self, candidate: Candidate) -> dict[Path, dict[str, int]]:
        out: dict[Path, dict[str, int]] = {}
        requests = {ps.name: with_one_pod(ps.requests) for ps in candidate.pod_sets}
        for name, assignment in candidate.assignments.items():
            for domain in assignment.domains:
                path = self.snapshot.leaf_path(domain.values)
                if path is not None:
                    used = {r: v * domain.count for r, v in requests[name].items()}
                    _add(out.setdefault(path[: self.depth + 1], {}), used)
        return out

    def combos(self) -> Iterator[tuple[int, ...]]:
        """Sets of candidate indices, smallest first, then cheapest, each within one domain."""
        by_domain: dict[Path, list[int]] = {}
        for index, held in enumerate(self.held):
            for domain in held:
                by_domain.setdefault(domain, []).append(index)
        for members in by_domain.values():
            members.sort(key=lambda i: self.candidates[i].cost)
            del members[self.limits.max_candidates :]
        for size in range(1, self.limits.max_moves + 1):
            sets: dict[tuple[int, ...], int] = {}
            for domain, members in by_domain.items():
                for combo in itertools.combinations(sorted(members), size):
                    if combo not in sets and self._may_open(domain, combo) and self._affords(combo):
                        sets[combo] = sum(self.candidates[i].cost for i in combo)
            yield from sorted(sets, key=lambda combo: (sets[combo], combo))

    def _may_open(self, domain: Path, combo: tuple[int, ...]) -> bool:
        """The domain's free room and what the set frees there add up to the gang's needs."""
        room = dict(self.free.get(domain, {}))
        for index in combo:
            _add(room, self.held[index].get(domain, {}))
        return all(room.get(r, 0) >= v for r, v in self.need.items())

    def _affords(self, combo: tuple[int, ...]) -> bool:
        spent: dict[str, int] = {}
        for index in combo:
            candidate = self.candidates[index]
            if not candidate.leaving:
                spent[candidate.queue] = spent.get(candidate.queue, 0) + 1
        return all(n <= self.budget.get(q, n) for q, n in spent.items())

    def attempt(self, combo: tuple[int, ...]) -> Plan | None:
        """Take the set out, place the gang, place each of the set again off the gang's
        hosts; the snapshot as it was afterwards."""
        undo: list[tuple[TopologyAssignment, Mapping[str, int], int]] = []

        def use(assignment: TopologyAssignment, requests: Mapping[str, int], sign: int) -> None:
            self.snapshot.add_usage(assignment, requests, sign)
            undo.append((assignment, requests, -sign))

        try:
            for index in combo:
                for ps in self.candidates[index].pod_sets:
                    assignment = self.candidates[index].assignments.get(ps.name)
                    if assignment is not None:
                        use(assignment, ps.requests, -1)
            gang = _placed(self.snapshot, self.gang)
            if gang is None:
                return None
            for ps in self.gang:
                use(gang[ps.name], ps.requests, 1)
            excluded = self._leaves_of(gang.values())
            moves = {}
            for index in sorted(combo, key=lambda i: -self.candidates[i].cost):  # big first
                candidate = self.candidates[index]
                again = _placed(self.snapshot, candidate.pod_sets, excluded)
                if again is None:
                    return None
                for ps in candidate.pod_sets:
                    use(again[ps.name], ps.requests, 1)
                moves[candidate.key] = again
            moved = tuple(self.candidates[i].key for i in combo)
            return Plan(moved, gang, {key: moves[key] for key in moved})
        finally:
            for assignment, requests, sign in reversed(undo):
                self.snapshot.add_usage(assignment, requests, sign)

    def _leaves_of(self, assignments: Iterable[TopologyAssignment]) -> np.ndarray:
        layout = self.snapshot.group_layout()
        paths = set()
        for assignment in assignments:
            for domain in assignment.domains:
                path = self.snapshot.leaf_path(domain.values)
                if path is not None:
                    paths.add(path)
        return layout.leaves_under(len(layout.levels) - 1, paths)


def _placed(
    snapshot: TopologySnapshot,
    pod_sets: Sequence[PodSetRequest],
    excluded: np.ndarray | None = None,
) -> dict[str, TopologyAssignment] | None:
    result = snapshot.find_assignments(pod_sets, excluded=excluded)
    if not result.admitted:
        return None
    return {p.name: p.assignment for p in result.podsets}


def _total(pod_sets: Sequence[PodSetRequest]) -> dict[str, int]:
    total: dict[str, int] = {PODS: 0}
    for ps in pod_sets:
        _add(total, {r: v * ps.count for r, v in with_one_pod(ps.requests).items()})
    return total


def _add(into: dict[str, int], amounts: Mapping[str, int], positive: bool = False) -> None:
    for resource, value in amounts.items():
        into[resource] = into.get(resource, 0) + (max(0, value) if positive else value)
