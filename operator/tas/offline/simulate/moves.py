"""`tas simulate`'s defragmentation (gate TASDefragmentation): when the first workload of an
admission pass does not fit, the operator's planner (admission/defrag.py) looks for running
workloads that allow it (their trace `annotations`) to move, within each queue's budget of
moves per hour of simulated time. The moved workloads leave at once and wait in the queue
again, in their old place; the gang is then tried again in the room they left."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from tas.admission.defrag import Candidate, Limits, Plan, plan
from tas.solver import PodSetRequest, TopologyAssignment, TopologySnapshot

HOUR = 3600.0
DEFAULT_MOVES_PER_HOUR = 10  # per queue, as the operator's --defragmentation-moves-per-hour
# Deterministic: the simulation bounds the search by solver calls, not by the wall clock.
SIMULATION_LIMITS = Limits(seconds=float("inf"), max_attempts=400)


@dataclass(frozen=True)
class Running:
    """A running workload as the planner sees it."""

    name: str
    queue: str
    pod_sets: tuple[PodSetRequest, ...]
    assignments: Sequence[TopologyAssignment]  # in the order of its pod sets
    since: float  # admitted at
    movable: bool
    movable_after: float


class Mover:
    def __init__(self, moves_per_hour: int = DEFAULT_MOVES_PER_HOUR) -> None:
        self.moves_per_hour = moves_per_hour
        self.done: dict[str, deque[float]] = {}  # queue -> times of its moves in the last hour

    def budget(self, now: float) -> dict[str, int]:
        left = {}
        for queue, times in self.done.items():
            while times and times[0] <= now - HOUR:
                times.popleft()
            left[queue] = self.moves_per_hour - len(times)
        return left

    def plan(
        self,
        snapshot: TopologySnapshot,
        gang: Sequence[PodSetRequest],
        running: Iterable[Running],
        now: float,
    ) -> Plan | str:
        candidates = [
            Candidate(
                r.name,
                r.pod_sets,
                {ps.name: a for ps, a in zip(r.pod_sets, r.assignments, strict=True)},
                r.queue,
            )
            for r in running
            if r.movable and now - r.since >= r.movable_after
        ]
        budget: Mapping[str, int] = self.budget(now)
        budget = {**{c.queue: self.moves_per_hour for c in candidates}, **budget}
        return plan(snapshot, gang, candidates, budget, SIMULATION_LIMITS)

    def record(self, queue: str, now: float) -> None:
        self.done.setdefault(queue, deque()).append(now)
