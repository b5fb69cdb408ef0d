"""A `tas simulate` trace's state at a chosen time, as the view model (`tas top --trace FILE
--at SECONDS`).

The simulation runs as `tas simulate` runs it; at the last event at or before the time asked,
the running workloads (with the assignments the simulation gave them) and the waiting ones
(with the message of their last failed try, as their QuotaReserved condition would say it) are
put in the operator's cache built from the trace's scenario, and the live view is built from
it. So the offline picture is drawn by the same code as the live one.

Not drawn: a trace's placement groups, and the NUMA zones the running pods took (the nodes
show the zones they start with).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

from tas.cache.projections import PodSetAdmission, WorkloadInfo
from tas.cache.state import ClusterState
from tas.offline import scenario
from tas.offline.reader import SCENARIO_FLAVOR
from tas.offline.simulate.run import PodSetUse, simulate
from tas.offline.simulate.trace import Trace, TracedWorkload
from tas.view import live
from tas.view.model import ClusterView

QUOTA_RESERVED, ADMITTED = "QuotaReserved", "Admitted"
PENDING = "Pending"  # the reason of a waiting workload's QuotaReserved=False, as Kueue's


def view_at(trace: Trace, at: float) -> ClusterView:
    """The trace's cluster at `at` seconds (from 0 to the time of its last event)."""
    if isinstance(at, bool) or not isinstance(at, int | float) or not math.isfinite(at) or at < 0:
        raise ValueError(f"at: must be a number of seconds from 0, got {at!r}")
    running: dict[str, tuple[PodSetUse, ...]] = {}  # at the last event at or before `at`
    waiting: dict[str, str] = {}

    def observe(now: float, uses: Mapping[str, tuple[PodSetUse, ...]]) -> None:
        if now <= at:
            running.clear()
            running.update(uses)

    def observe_waiting(now: float, reasons: Mapping[str, str]) -> None:
        if now <= at:
            waiting.clear()
            waiting.update(reasons)

    end = simulate(trace, observe, observe_waiting)["end"]
    if at > end:
        raise ValueError(f"at: {at} is beyond the trace's end ({end} seconds)")
    state = scenario.cluster_state(trace.scenario)
    by_name = {traced.name: traced for traced in trace.workloads}
    for name, uses in running.items():
        state.upsert_workload(_running(state, by_name[name], uses))
    for name, message in waiting.items():
        state.upsert_workload(_waiting(state, by_name[name], message))
    return live.build(state, now=float(at))


def _info(state: ClusterState, traced: TracedWorkload) -> WorkloadInfo:
    queue = traced.workload.cluster_queue or next(iter(state.cluster_queues), "")
    return scenario.workload_info(traced.workload, queue, traced.arrival)


def _running(
    state: ClusterState, traced: TracedWorkload, uses: tuple[PodSetUse, ...]
) -> WorkloadInfo:
    """Admitted with the simulation's assignments: one use per pod set, in pod set order."""
    info = _info(state, traced)
    admissions = tuple(
        PodSetAdmission(
            podset.name,
            SCENARIO_FLAVOR,
            sum(d.count for d in use.assignment.domains),
            use.assignment,
        )
        for podset, use in zip(traced.workload.podsets, uses, strict=True)
    )
    conditions = tuple(
        {"type": t, "status": "True", "reason": t} for t in (QUOTA_RESERVED, ADMITTED)
    )
    return replace(
        info,
        resource_version="2",
        admission_cq=info.queue_name,
        admissions=admissions,
        conditions=conditions,
    )


def _waiting(state: ClusterState, traced: TracedWorkload, message: str) -> WorkloadInfo:
    condition = {"type": QUOTA_RESERVED, "status": "False", "reason": PENDING, "message": message}
    return replace(_info(state, traced), conditions=(condition,))
