"""Kueue's queue gauges, read off the cache at the end of every admission cycle.

Kueue's queue manager and cache report them as workloads come and go; we report the same facts
once per cycle: pending workloads (active or inadmissible), workloads reserving quota and
admitted ones, each queue's status, quotas and usage per flavor and resource, and each cohort's
subtree totals. A cycle costs one pass over the pending workloads (as the cycle itself makes)
and a look at each charge: what the charges hold is summed again only for those that changed.
Nothing here runs in the solver.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from tas import metrics
from tas.cache import fairshare
from tas.cache.projections import ClusterQueueInfo, CohortInfo, Key, WorkloadInfo
from tas.cache.quota import FlavorResource, QuotaTree, quotas_of
from tas.cache.state import Charge, ClusterState
from tas.pacing import Pacer

# The loop tried the workload and will not try it again until the cluster changes.
TriedUnchanged = Callable[[WorkloadInfo], bool]


@dataclass
class Holding:
    """The workloads holding quota in one queue, and what they hold (milli-units)."""

    reserving: int = 0
    admitted: int = 0
    reserved: dict[FlavorResource, int] = field(default_factory=lambda: defaultdict(int))
    used: dict[FlavorResource, int] = field(default_factory=lambda: defaultdict(int))

    def add(self, charge: Charge, admitted: bool, sign: int = 1) -> None:
        self.reserving += sign
        self.admitted += sign * admitted
        for ps in charge.pod_sets:
            for resource, value in ps.per_pod.items():
                self.reserved[(ps.flavor, resource)] += sign * ps.count * value
                if admitted:
                    self.used[(ps.flavor, resource)] += sign * ps.count * value


@dataclass(frozen=True)
class _Held:
    charge: Charge
    workload: WorkloadInfo | None
    admitted: bool


class Holdings:
    """What the workloads holding quota hold, per ClusterQueue and per LocalQueue, brought up
    to date from the charges and workloads replaced since the last update. An assumed admission
    (its write on the way) counts as admitted, as in Kueue's cache."""

    def __init__(self) -> None:
        self.by_cq: dict[str, Holding] = defaultdict(Holding)
        self.by_lq: dict[Key, Holding] = defaultdict(Holding)
        self._held: dict[Key, _Held] = {}

    async def update(self, state: ClusterState, pacer: Pacer) -> None:
        charges = state.charges()
        for key in [key for key in self._held if key not in charges]:
            self._count(self._held.pop(key), -1)
        for key, charge in list(charges.items()):
            await pacer.maybe_yield()
            workload = state.workloads.get(key)
            admitted = state.is_assumed(key) or (workload is not None and workload.admitted)
            held = self._held.get(key)
            if held is not None:
                if (held.charge, held.workload, held.admitted) == (charge, workload, admitted):
                    continue
                self._count(held, -1)
            self._held[key] = _Held(charge, workload, admitted)
            self._count(self._held[key], 1)

    def _count(self, held: _Held, sign: int) -> None:
        self.by_cq[held.charge.cluster_queue].add(held.charge, held.admitted, sign)
        if held.workload is not None:
            lq = (held.workload.namespace, held.workload.queue_name)
            self.by_lq[lq].add(held.charge, held.admitted, sign)


class QueueMetrics:
    """The loop's reporter: keeps what the charges hold from one cycle to the next."""

    def __init__(self) -> None:
        self._holdings = Holdings()
        self._pacer = Pacer()

    async def report(self, state: ClusterState, tried_unchanged: TriedUnchanged) -> None:
        """Yields between workloads (see tas.pacing); the queues are read after that."""
        await self._holdings.update(state, self._pacer)
        cq_pending, lq_pending = await _pending_counts(state, tried_unchanged, self._pacer)
        active = _active_queues(state)
        tree = state.quota_tree()
        _report_cluster_queues(state, active, cq_pending, self._holdings.by_cq)
        _report_local_queues(state, active, lq_pending, self._holdings.by_lq)
        _report_cohorts(state, tree, self._holdings.by_cq)
        if state.fair_sharing is not None:
            _report_weighted_shares(state, tree)
        metrics.end_round(state.cluster_queues, state.local_queues, tree.cohorts())


def _active_queues(state: ClusterState) -> dict[str, bool]:
    return {
        name: state.cluster_queue_problem(cq) is None for name, cq in state.cluster_queues.items()
    }


def _inadmissible(
    state: ClusterState,
    cq: ClusterQueueInfo,
    active: bool,
    workload: WorkloadInfo,
    tried: TriedUnchanged,
) -> bool:
    """In Kueue's list of inadmissible workloads, which wait for the cluster to change: all of
    an inactive queue's, those of a namespace the queue does not select, and those that were
    tried and did not fit since (a StrictFIFO queue keeps its head among the active ones)."""
    if not active or not state.namespace_allowed(cq, workload.namespace):
        return True
    return not cq.strict_fifo and tried(workload)


async def _pending_counts(
    state: ClusterState, tried: TriedUnchanged, pacer: Pacer
) -> tuple[dict[str, tuple[int, int]], dict[Key, tuple[int, int]]]:
    """(active, inadmissible) pending workloads per ClusterQueue and per LocalQueue. Workloads
    whose LocalQueue or ClusterQueue does not exist are in no queue (as in Kueue)."""
    active = _active_queues(state)
    by_cq: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    by_lq: dict[Key, list[int]] = defaultdict(lambda: [0, 0])
    for key in list(state.pending):
        await pacer.maybe_yield()
        workload = state.workloads.get(key)
        if workload is None or not workload.pending or state.is_assumed(key):
            continue
        cq = state.cluster_queues.get(state.cluster_queue_of(workload) or "")
        if cq is None:
            continue
        column = int(_inadmissible(state, cq, active.get(cq.name, False), workload, tried))
        by_cq[cq.name][column] += 1
        by_lq[(workload.namespace, workload.queue_name)][column] += 1
    return (
        {name: (a, i) for name, (a, i) in by_cq.items()},
        {key: (a, i) for key, (a, i) in by_lq.items()},
    )


def _report_cluster_queues(
    state: ClusterState,
    active: Mapping[str, bool],
    pending: Mapping[str, tuple[int, int]],
    holding: Mapping[str, Holding],
) -> None:
    for name, cq in state.cluster_queues.items():
        held = holding.get(name, Holding())
        metrics.report_cluster_queue(
            name,
            active=active[name],
            pending=pending.get(name, (0, 0)),
            reserving=held.reserving,
            admitted=held.admitted,
        )
        for fr, quota in quotas_of(cq.resource_groups).items():
            metrics.report_cluster_queue_resource(
                cq.cohort,
                name,
                metrics.ResourceQuota(
                    *fr,
                    quota.nominal,
                    quota.borrowing_limit,
                    quota.lending_limit,
                    reserved=held.reserved.get(fr, 0),
                    used=held.used.get(fr, 0),
                ),
            )


def _report_local_queues(
    state: ClusterState,
    active: Mapping[str, bool],
    pending: Mapping[Key, tuple[int, int]],
    holding: Mapping[Key, Holding],
) -> None:
    """Active (its ClusterQueue exists and is active) and pending for every LocalQueue; what
    it holds only while its ClusterQueue exists (Kueue's cache keeps it under that queue)."""
    for key, cq_name in state.local_queues.items():
        cq = state.cluster_queues.get(cq_name)
        metrics.report_local_queue(
            key, active=cq is not None and active[cq_name], pending=pending.get(key, (0, 0))
        )
        if cq is None:
            continue
        held = holding.get(key, Holding())
        metrics.report_local_queue_holding(key, reserving=held.reserving, admitted=held.admitted)
        for flavor, resource in quotas_of(cq.resource_groups):
            metrics.report_local_queue_resource(
                key,
                flavor,
                resource,
                reserved=held.reserved.get((flavor, resource), 0),
                used=held.used.get((flavor, resource), 0),
            )


def _report_cohorts(
    state: ClusterState, tree: QuotaTree, cq_holding: Mapping[str, Holding]
) -> None:
    """Per cohort, over its whole subtree: admitted workloads, and per flavor and resource the
    quota (as the quota tree counts it) and what its ClusterQueues reserve."""
    for name in tree.cohorts():
        below = list(tree.descendants(name))
        held = [cq_holding[n] for kind, n in below if kind == "cq" and n in cq_holding]
        metrics.report_cohort(name, admitted=sum(h.admitted for h in held))
        infos: list[ClusterQueueInfo | CohortInfo | None] = [state.cohorts.get(name)]
        infos += [
            state.cluster_queues.get(n) if kind == "cq" else state.cohorts.get(n)
            for kind, n in below
        ]
        frs = {fr for info in infos if info for fr in quotas_of(info.resource_groups)}
        for fr in sorted(frs):
            metrics.report_cohort_resource(
                name,
                *fr,
                quota=tree.subtree(("cohort", name), fr),
                reserved=sum(h.reserved.get(fr, 0) for h in held),
            )


def _report_weighted_shares(state: ClusterState, tree: QuotaTree) -> None:
    """Kueue's weighted-share gauges, with fair sharing on: every ClusterQueue and cohort."""
    for name, cq in state.cluster_queues.items():
        share = fairshare.share(tree, ("cq", name)).precise()
        metrics.report_cluster_queue_weighted_share(name, cq.cohort, share)
    for name in tree.cohorts():
        metrics.report_cohort_weighted_share(
            name, fairshare.share(tree, ("cohort", name)).precise()
        )
