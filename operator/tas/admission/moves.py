"""Defragmentation in the admission loop (ours, gate TASDefragmentation): the cluster's side
of the planner (admission/defrag.py).

When the head of a queue fits its quota but no domain of its topology, and no preemption
applies, the movable workloads of the flavor are the candidates: admitted, their write landed,
opted in (tas-operator.io/movable on the Workload, or its LocalQueue's default), and running
for at least their movable-after; a workload already evicted by an earlier plan is a candidate
that costs nothing. The plan comes back as a Decision to preempt, whose targets carry the
reason Defragmented: the loop evicts them (Evicted, reason Defragmented; requeued as after a
preemption) and holds the gang's room as it holds a preemptor's, until their pods are gone
and the gang fits. The moved workloads, requeued, are placed again by their own decision
wherever they fit outside the held room (the plan showed that room exists; pinning them to
the plan's hosts would hold a second room against everyone else).

Each ClusterQueue has a budget of moves per hour, spent by the queue of the workload moved.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from tas.admission.decide import Decision, _charge, topology_flavors_within_quota
from tas.admission.defrag import Candidate, Limits, Plan, plan
from tas.admission.preemption import Preemption, Target
from tas.api import movable as movable_api
from tas.api.constants import REASON_DEFRAGMENTED
from tas.cache.projections import ClusterQueueInfo, Key, WorkloadInfo
from tas.cache.state import ClusterState

DEFAULT_MOVES_PER_HOUR = 10  # per ClusterQueue (--defragmentation-moves-per-hour)
HOUR = timedelta(hours=1)
_SEC = timedelta(seconds=1)


@dataclass
class Budget:
    """Moves per hour per ClusterQueue (a sliding hour)."""

    per_hour: int = DEFAULT_MOVES_PER_HOUR
    moves: dict[str, deque[datetime]] = field(default_factory=dict)

    def left(self, now: datetime) -> dict[str, int]:
        out = {}
        for queue, times in self.moves.items():
            while times and times[0] <= now - HOUR:
                times.popleft()
            out[queue] = self.per_hour - len(times)
        return out

    def spend(self, queue: str, now: datetime) -> None:
        self.moves.setdefault(queue, deque()).append(now)


@dataclass(frozen=True)
class DefragRules:
    enabled: bool = False
    moves_per_hour: int = DEFAULT_MOVES_PER_HOUR
    limits: Limits = field(default_factory=Limits)


def movable(state: ClusterState, workload: WorkloadInfo) -> tuple[bool, float]:
    """Whether it opted in (its own annotations, else its LocalQueue's) and after how many
    seconds of running; a workload whose annotations cannot be read never moves."""
    if workload.movable_error:
        return False, 0.0
    default = state.local_queue_movable.get((workload.namespace, workload.queue_name))
    return movable_api.effective(workload.movable, default)


def _candidates(
    state: ClusterState, gang: WorkloadInfo, flavor: str, now: datetime
) -> list[Candidate]:
    out = []
    for key, charge in state.charges().items():
        workload = state.workloads.get(key)
        if key == gang.key or workload is None or state.is_assumed(key):
            continue
        may, after = movable(state, workload)
        since = workload.reserved_at
        if not may or (not workload.evicted and (since is None or now - since < after * _SEC)):
            continue
        assignments = {
            ps.name: ps.assignment
            for ps in charge.pod_sets
            if ps.flavor == flavor and ps.assignment is not None
        }
        if len(assignments) != len(workload.pod_sets):
            continue  # partly in another flavor: the planner places one flavor's pods
        out.append(
            Candidate(key, workload.pod_sets, assignments, charge.cluster_queue, workload.evicted)
        )
    return out


def find(
    state: ClusterState,
    gang: WorkloadInfo,
    cq: ClusterQueueInfo,
    budget: Budget,
    limits: Limits,
    now: datetime,
) -> Decision | str:
    """A decision to move the planned workloads for the gang (a Decision with a Preemption
    whose targets carry the reason Defragmented), or why there is none."""
    flavors = topology_flavors_within_quota(state, gang, cq)
    if not flavors:
        return "its quota does not fit, or no flavor has a topology"
    flavor = flavors[0]
    candidates = _candidates(state, gang, flavor, now)
    left: Mapping[str, int] = {
        **{c.queue: budget.per_hour for c in candidates},
        **budget.left(now),
    }
    found = plan(state.snapshot(flavor), gang.pod_sets, candidates, left, limits)
    if isinstance(found, str):
        return found
    return _decision(state, gang, cq, flavor, found)


def _decision(
    state: ClusterState, gang: WorkloadInfo, cq: ClusterQueueInfo, flavor: str, found: Plan
) -> Decision:
    moved: list[WorkloadInfo] = [state.workloads[key] for key in found.moved]  # type: ignore[index]
    names = ", ".join(f"{w.namespace}/{w.name}" for w in moved)
    message = (
        f"couldn't fit in any domain of the topology: moving {len(moved)} workload(s) that "
        f"allow it ({names}) opens one"
    )
    targets = tuple(Target(w, REASON_DEFRAGMENTED) for w in moved)
    return Decision(
        False,
        message,
        charge=_charge(cq, gang, flavor, found.gang),
        preemption=Preemption(targets, found.gang),
    )


def seconds_until_more(state: ClusterState, budget: Budget, now: datetime) -> float | None:
    """When a plan may find more than now without the cluster changing: the next movable
    workload reaching its movable-after, or the next move leaving a spent budget's hour.
    Admission decides again only when the cluster changes, so the loop sets a timer."""
    times = []
    for key in state.charges():
        workload = state.workloads.get(key)
        if workload is None or workload.evicted or workload.reserved_at is None:
            continue
        may, after = movable(state, workload)
        ready = workload.reserved_at + after * _SEC
        if may and ready > now:
            times.append(ready)
    for queue, left in budget.left(now).items():
        if left <= 0:
            times.append(budget.moves[queue][0] + HOUR)
    return min((t - now).total_seconds() for t in times) if times else None


def eviction_message(gang: WorkloadInfo) -> str:
    return (
        f"Moved to make room for a workload that needs one domain of the topology "
        f"(UID: {gang.uid or 'UNKNOWN'}, JobUID: {gang.job_uid or 'UNKNOWN'}); it is queued "
        "again"
    )


def is_move(target: Target) -> bool:
    return target.reason == REASON_DEFRAGMENTED


def moved_keys(decision: Decision) -> set[Key]:
    if decision.preemption is None:
        return set()
    return {t.workload.key for t in decision.preemption.targets if is_move(t)}
