"""The single serial admission loop.

Every decision happens here, one at a time, so two workloads can never be given the same
capacity. The loop sleeps until something wakes it (a watch event that may change a decision)
and never runs on a timer. A cycle walks the ClusterQueues; in each it tries the pending
workloads in queue order (StrictFIFO stops at the first that does not fit). A workload that did
not fit is tried again only when its own spec changed, or something that can let it in (as
Kueue requeues its inadmissible workloads): quota released in its cohort tree, the capacity of
its queue's flavors, or any queue's spec (ClusterState.retry_marker). A
cycle hands the event loop back every few milliseconds (tas.pacing): the lease, the webhooks
and the watches run meanwhile, and each decision reads the workload as the cache holds it then.

Per admission: decide on the snapshot, assume the charge in the cache, write the status with the
workload's resourceVersion. If the write fails in any way the charge is forgotten in the same
step: on a conflict the writer has re-read the workload and the next cycle decides again; on any
other failure (a 409 that was not a version conflict among them, and a write the lease's fence
refused) the workload waits out its own capped, jittered backoff before it is tried again.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from tas import features, metrics
from tas.admission import fairshare_order, moves, queue_metrics
from tas.admission.admission_fair_sharing import LocalQueueUsage
from tas.admission.decide import Decision, borrows_first, decide, queue_order_key
from tas.admission.holds import Holds
from tas.admission.moves import DefragRules
from tas.admission.ports import WorkloadStatusWriter
from tas.admission.preemption import Target
from tas.admission.preemption import message as preemption_message
from tas.api import conditions as cond
from tas.api.constants import (
    COND_ACTIVE,
    REASON_ADMITTED,
    REASON_DEACTIVATED,
    REASON_INADMISSIBLE,
    REASON_PENDING,
    REASON_QUOTA_RESERVED,
    REASON_READY,
)
from tas.api.fairsharing import AdmissionFairSharing
from tas.api.format import format_milli
from tas.api.placementgroups import GroupSpec, PlacementGroupError, spec_to_object
from tas.cache import fairshare, placementgroups
from tas.cache.projections import (
    ClusterQueueInfo,
    Key,
    WorkloadInfo,
    placement_group_status_key,
)
from tas.cache.state import ClusterState
from tas.features import Gate
from tas.hotswap.replace import (
    ReplacementRules,
    evicts_without_replacement,
    find_replacement,
    needs_replacement,
)
from tas.kube import KubeError
from tas.kube.retry import Backoff, PerKeyBackoff
from tas.pacing import Pacer, sorted_paced
from tas.workload import transitions
from tas.workload.writer import evict, preempt

# Kueue's order of the queues' heads in a cycle: (borrows, -priority, created, name)
HeadKey = tuple[bool, int, datetime, str]

log = logging.getLogger(__name__)

DRAIN_BATCH = 256  # writes drain() waits on at once
PARALLEL_PREEMPTIONS = 8  # victims evicted at once (Kueue's parallelPreemptions)

# A relaxation timer fires this long after the stage begins, so the decision it wakes is taken
# in the new stage whatever the clocks' rounding.
RELAX_MARGIN = 0.05

# Reading a Workload back after a write that may have landed unseen: until the read succeeds the
# capacity stays assumed (nothing else can be admitted onto it meanwhile).
SETTLE_BACKOFF = Backoff(base=0.5, cap=10.0)


class AdmissionLoop:
    def __init__(
        self,
        state: ClusterState,
        writer: WorkloadStatusWriter,
        *,
        replacement: ReplacementRules | None = None,
        defrag: DefragRules | None = None,
        admission_fair_sharing: AdmissionFairSharing | None = None,
    ) -> None:
        self.state = state
        self.writer = writer
        self.replacement = replacement or ReplacementRules()  # the hot swap gates
        self.defrag = defrag or DefragRules()  # gate TASDefragmentation (ours)
        self._moves = moves.Budget(self.defrag.moves_per_hour)
        self._planned: set[str] = set()  # queues whose head was planned for in this cycle
        self.synced = asyncio.Event()  # set once every watched kind has been listed
        self._wake = asyncio.Event()
        # key -> (ClusterState.retry_marker, spec generation, message) of a try that did not fit
        # (for a replacement: the cluster generation, spec generation, failed nodes)
        self._tried: dict[Key, tuple[object, int, str]] = {}
        self._cq_status: dict[str, dict[str, Any]] = {}
        self._cohort_status: dict[str, dict[str, Any]] = {}
        self._group_status: dict[Key, dict[str, Any]] = {}  # as last written
        self._group_specs: dict[Key, GroupSpec] = {}  # the spec it was written with
        self._lq_status: dict[Key, dict[str, Any]] = {}
        self._writes: set[asyncio.Task[None]] = set()
        self._write_slots = asyncio.Semaphore(16)  # workload status writes in flight at once
        self._pending_writes: set[Key] = set()  # one pending-status write per workload at once
        self._backoff = PerKeyBackoff()
        self._retry_at: dict[object, float] = {}  # workload key or queue -> monotonic time
        self._holds = Holds()  # room waiting preemptors hold against later decisions
        self._pacer = Pacer()  # the cycle lets the lease, webhooks and watches run between items
        self.cycles = 0
        self._first_cycle = asyncio.Event()
        self._first_writes: list[asyncio.Task[None]] = []  # what the first cycle wrote
        self.write_failures = 0
        # This cycle tried a workload (or a replacement), and admitted (or evicted) one:
        # Kueue's admission attempt and its result.
        self._cycle_tried = self._cycle_succeeded = False
        self._queue_metrics = queue_metrics.QueueMetrics()
        # Per pending workload, the one timer that decides it again at a time of its own: its
        # next relaxation stage, or when defragmentation may move more (the loop never polls).
        self._decide_timers: dict[Key, asyncio.TimerHandle] = {}
        # Kueue's admission fair sharing (None: off): LocalQueue usage orders a queue.
        self.fair = LocalQueueUsage(state, admission_fair_sharing, self.wake)

    def wake(self) -> None:
        self._wake.set()

    async def first_decisions(self) -> None:
        """Returns once the first cycle after the sync has run and its writes are answered."""
        await self._first_cycle.wait()
        if self._first_writes:
            await asyncio.wait(self._first_writes)

    async def run(self) -> None:
        await self.synced.wait()
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self.cycle()
            except Exception:  # one bad cycle must not stop admission for good
                log.exception("admission cycle failed; retrying on the next event")
            if not self._first_cycle.is_set():
                self._first_writes = list(self._writes)
                self._first_cycle.set()

    async def cycle(self) -> None:
        self.cycles += 1
        self._holds.begin_cycle()
        self._planned.clear()
        started = time.monotonic()
        self._cycle_tried = self._cycle_succeeded = False
        await self._activity()
        await self._replacements()
        by_cq = await self._pending_by_queue()
        problems = await self._decide_heads(by_cq)
        if self._cycle_tried:
            metrics.admission_cycle(self._cycle_succeeded, time.monotonic() - started)
        await self._write_cq_statuses(by_cq, problems)
        if self.state.fair_sharing is not None:
            await self._write_cohort_statuses()
        if self._holds.end_cycle():
            self.wake()  # what the dropped holds blocked is decided again
        await self._write_lq_statuses()
        if self.state.options.placement_groups:
            await self._write_group_statuses()
        await self._queue_metrics.report(self.state, self._tried_unchanged)
        self._prune()

    def _still_pending(self, key: Key) -> WorkloadInfo | None:
        """The workload as the cache holds it now, if it still waits for a decision. The cycle
        yields between decisions (see tas.pacing), so a watch event may have changed it, or
        removed it, since the cycle began."""
        workload = self.state.workloads.get(key)
        if (
            workload is None
            or not workload.pending
            or self.state.is_assumed(key)
            or self._backing_off(key)
        ):
            return None
        return workload

    async def _pending_by_queue(self) -> dict[str, list[WorkloadInfo]]:
        """The pending workloads per ClusterQueue; those whose queue is missing are told so."""
        state = self.state
        by_cq: dict[str, list[WorkloadInfo]] = {name: [] for name in state.cluster_queues}
        for key in list(state.pending):
            await self._pacer.maybe_yield()
            workload = self._still_pending(key)
            if workload is None:
                continue
            cq_name = state.cluster_queue_of(workload)
            if cq_name is None:
                await self._pending(workload, f"LocalQueue {workload.queue_name} doesn't exist")
            elif cq_name not in state.cluster_queues:
                await self._pending(workload, f"ClusterQueue {cq_name} doesn't exist")
            else:
                by_cq.setdefault(cq_name, []).append(workload)
        return by_cq

    async def _decide_heads(
        self, by_cq: dict[str, list[WorkloadInfo]]
    ) -> dict[str, tuple[str, str] | None]:
        """The queues' heads are merged in Kueue's order across queues (a workload within its
        queue's nominal quota before one that borrows, then priority, then age); each queue
        keeps its own order, and a StrictFIFO queue stops at its first workload that does not
        fit. Returns each queue's problem (None: active)."""
        state = self.state
        problems: dict[str, tuple[str, str] | None] = {}
        queues: dict[str, Sequence[WorkloadInfo]] = {}
        heads = self._head_order(queues)
        for cq_name, waiting in by_cq.items():
            cq = state.cluster_queues.get(cq_name)
            if cq is None:  # deleted while the loop yielded
                continue
            problems[cq_name] = state.cluster_queue_problem(cq)
            if problems[cq_name] is None and not cq.strict_fifo:
                waiting = await self._may_fit(cq, waiting)
            ordered = await sorted_paced(waiting, queue_order_key, self._pacer)
            queues[cq_name] = self.fair.order(cq, ordered)
            if queues[cq_name]:
                heads.push(cq_name, 0)
        while (head := heads.pop()) is not None:
            await self._pacer.maybe_yield()
            cq_name, index = head
            cq = state.cluster_queues.get(cq_name)
            if cq is None:  # deleted while the loop yielded or awaited a write
                continue
            go_on = await self._decide_head(cq, queues[cq_name][index], problems[cq_name])
            if go_on and index + 1 < len(queues[cq_name]):
                heads.push(cq_name, index + 1)
        return problems

    async def _may_fit(
        self, cq: ClusterQueueInfo, waiting: list[WorkloadInfo]
    ) -> list[WorkloadInfo]:
        """Those of an active BestEffortFIFO queue that need a decision: one that did not fit,
        with nothing changed since that can let it in, would only be passed over (Kueue keeps
        such workloads out of its heads too, as inadmissible). Neither sorted nor visited, an
        idle cycle costs a look per workload."""
        out = []
        for workload in waiting:
            await self._pacer.maybe_yield()
            if not self._tried_unchanged(workload, cq) or not self.state.namespace_allowed(
                cq, workload.namespace
            ):
                out.append(workload)
        return out

    def _head_order(
        self, queues: dict[str, Sequence[WorkloadInfo]]
    ) -> fairshare_order.ClassicalOrder | fairshare_order.FairSharingOrder:
        """Kueue's order across queues: by share with fair sharing on, else classical."""
        if self.state.fair_sharing is not None:
            return fairshare_order.FairSharingOrder(self.state, queues)

        infos = dict(self.state.cluster_queues)  # a queue deleted mid-cycle keeps its key

        def key(cq_name: str, index: int) -> HeadKey:
            return self._head_key(infos[cq_name], queues[cq_name][index])

        return fairshare_order.ClassicalOrder(key)

    async def _decide_head(
        self, cq: ClusterQueueInfo, queued: WorkloadInfo, problem: tuple[str, str] | None
    ) -> bool:
        """Decide one head of a queue; whether the queue goes on to its next workload."""
        workload = self._still_pending(queued.key)
        if workload is None or self.state.cluster_queue_of(workload) != cq.name:
            return True  # gone, decided, backing off or moved since the cycle began
        if problem:
            await self._pending(workload, f"ClusterQueue {cq.name} is inactive")
        elif not self.state.namespace_allowed(cq, workload.namespace):
            await self._pending(workload, "Workload namespace doesn't match ClusterQueue selector")
        else:
            admitted = await self._guarded(self._try(workload, cq), workload)
            return admitted or not cq.strict_fifo
        return True

    def _tried_unchanged(self, workload: WorkloadInfo, cq: ClusterQueueInfo | None = None) -> bool:
        """It did not fit, and nothing that can let it in changed since: not its spec, nor its
        queue, nor what its queue's retry marker counts. `cq`: its queue, when known."""
        tried = self._tried.get(workload.key)
        if tried is None:
            return False
        if cq is None:
            cq = self.state.cluster_queues.get(self.state.cluster_queue_of(workload) or "")
        return cq is not None and tried[:2] == (self.state.retry_marker(cq), workload.generation)

    async def _activity(self) -> None:
        """spec.active, as Kueue's workload controller acts on it: an inactive workload that
        holds quota is evicted (its quota comes back once its pods are gone); one made active
        again after that is requeued."""
        state = self.state
        for key in sorted(state.to_deactivate | state.to_reactivate):
            await self._pacer.maybe_yield()
            workload = state.workloads.get(key)
            if workload is None or state.is_assumed(key) or self._backing_off(key):
                continue
            if workload.to_deactivate:
                step = evict(
                    self.writer, workload, transitions.DEACTIVATED_MESSAGE, REASON_DEACTIVATED
                )
            elif workload.to_reactivate:
                step = self.writer.write_status(workload, transitions.reactivated(workload))
            else:
                continue
            await self._guarded(step, workload)

    async def _replacements(self) -> None:
        """Second pass first: admitted workloads that lost a node get their replacement before
        anyone else can take the capacity around their surviving pods."""
        state = self.state
        for key in sorted(state.to_replace):
            await self._pacer.maybe_yield()
            workload = state.workloads.get(key)
            if (
                workload is not None
                and not state.is_assumed(key)
                and not self._backing_off(key)
                and needs_replacement(workload)
            ):
                await self._guarded(self._replace(workload), workload)

    def _head_key(self, cq: ClusterQueueInfo, workload: WorkloadInfo) -> HeadKey:
        """Kueue's order of the queues' heads in a cycle."""
        borrows = borrows_first(self.state, workload, cq)
        by_priority = features.enabled(Gate.PRIORITY_SORTING_WITHIN_COHORT)
        return (borrows, -workload.priority if by_priority else 0, workload.created, workload.name)

    def _prune(self) -> None:
        """Forget what was kept for workloads that are gone. Amortised: only once the
        bookkeeping has grown past twice the workloads, so a cycle stays O(what changed)."""
        workloads = self.state.workloads
        if len(self._tried) + len(self._retry_at) <= 2 * len(workloads) + 256:
            return
        self._tried = {k: v for k, v in self._tried.items() if k in workloads}
        for key in [k for k in self._decide_timers if k not in workloads]:
            self._decide_timers.pop(key).cancel()
        # Queue keys ("cq", name) and ("lq", key) are few and kept.
        self._retry_at = {
            k: v for k, v in self._retry_at.items() if k in workloads or _is_queue_key(k)
        }
        failures = self._backoff.failures
        for k in [k for k in failures if k not in workloads and not _is_queue_key(k)]:
            del failures[k]

    async def _guarded(self, step: Awaitable[object], workload: WorkloadInfo) -> bool:
        """One workload's trouble (a bug, an API error) must not stop the others' admission;
        it backs off on its own."""
        try:
            return bool(await step)
        except Exception as exc:
            self._failed(workload.key, exc, workload, "admission failed")
            return False

    def _backing_off(self, key: object) -> bool:
        until = self._retry_at.get(key)
        if until is None:
            return False
        if time.monotonic() >= until:
            del self._retry_at[key]
            return False
        return True

    def _failed(
        self, key: object, exc: BaseException, workload: WorkloadInfo | None = None, what: str = ""
    ) -> float:
        """Back off this key, and wake the loop when its wait is over."""
        self.write_failures += 1
        delay = self._backoff.failed(key, getattr(exc, "retry_after", None))
        self._retry_at[key] = time.monotonic() + delay
        asyncio.get_running_loop().call_later(delay, self.wake)
        if workload is not None:
            log.warning(
                "%s/%s: %s (%s); retrying in %.1fs",
                workload.namespace,
                workload.name,
                what,
                exc,
                delay,
            )
            log.debug("%s/%s: %s", workload.namespace, workload.name, what, exc_info=True)
        return delay

    async def _try(self, workload: WorkloadInfo, cq: ClusterQueueInfo) -> bool:
        if self._tried_unchanged(workload):
            return False  # nothing that can let it in changed since it last did not fit
        marker = self.state.retry_marker(cq)  # as the decision reads the cluster
        with metrics.ADMISSION_LATENCY.time():
            decision = decide(self.state, workload, cq)
            if self.defrag.enabled:
                decision = self._defragment(workload, cq, decision)
        result = (
            "admitted"
            if decision.admitted
            else "invalid"
            if decision.invalid
            else "preempting"
            if decision.preemption
            else "pending"
        )
        metrics.ADMISSION_ATTEMPTS.labels(result).inc()
        self._cycle_tried = True
        if decision.preemption is None and self._holds.release(workload.key):
            self.wake()  # admitted, or no longer preempting: its room is not held any more
        held = decision.charge is not None and self._holds.blocks(
            self.state, workload.key, decision
        )
        if held:  # a waiting preemptor holds what this one needs
            # Not remembered in _tried: it is decided again once the hold ends.
            log.debug("pending %s/%s: %s", workload.namespace, workload.name, held)
            await self._pending(workload, held)
            return False
        if decision.admitted:
            return await self._admit(workload, decision)
        elif decision.preemption is not None:
            # Not remembered in _tried: while its victims leave it is decided again every
            # cycle, so that it holds its room against the workloads behind it.
            await self._preempt(workload, cq, decision)
            return False
        self._tried[workload.key] = (marker, workload.generation, decision.message)
        if decision.relax_at is not None:
            self._relax_later(workload.key, decision.relax_at)
        log.debug(
            "pending %s/%s at capacity generation %d: %s",
            workload.namespace,
            workload.name,
            self.state.generation,
            decision.message,
        )
        await self._pending(
            workload,
            decision.message,
            reason=REASON_INADMISSIBLE if decision.invalid else REASON_PENDING,
        )
        return False

    def _defragment(
        self, workload: WorkloadInfo, cq: ClusterQueueInfo, decision: Decision
    ) -> Decision:
        """The head of a queue that fits nowhere, and may preempt no one: a plan to move
        workloads that allow it (admission/moves.py), as a decision to preempt them."""
        if workload.movable_error:  # as a bad topology annotation: refused, naming it
            return Decision(False, workload.movable_error, invalid=True)
        if decision.admitted or decision.invalid or decision.preemption is not None:
            return decision
        if cq.name in self._planned:
            return decision
        self._planned.add(cq.name)
        now = datetime.now(UTC).replace(tzinfo=None)  # as the cache's timestamps
        found = moves.find(self.state, workload, cq, self._moves, self.defrag.limits, now)
        if isinstance(found, str):
            later = moves.seconds_until_more(self.state, self._moves, now)
            if later is not None:  # decided again then, though the cluster did not change
                self._decide_again_in(workload.key, later + 0.1)
            return replace(decision, message=f"{decision.message}. No defragmentation: {found}")
        return found

    def _relax_later(self, key: Key, at: datetime) -> None:
        """At `at` the workload's next relaxation stage begins (its request is another one then)."""
        now = datetime.now(UTC).replace(tzinfo=None)
        self._decide_again_in(key, max(0.0, (at - now).total_seconds()) + RELAX_MARGIN)

    def _decide_again_in(self, key: Key, delay: float) -> None:
        """Forget that the workload did not fit, and wake the loop, after `delay` seconds, though
        the cluster may not change meanwhile. One timer per workload, the earliest kept: a
        decision then sets the next one, so a gang re-decided on every capacity change never
        piles up timers."""
        loop = asyncio.get_running_loop()
        old = self._decide_timers.get(key)
        if old is not None:
            if old.when() <= loop.time() + delay:
                return
            old.cancel()

        def due() -> None:
            self._decide_timers.pop(key, None)
            self._tried.pop(key, None)
            self.wake()

        self._decide_timers[key] = loop.call_later(delay, due)

    async def _preempt(
        self, workload: WorkloadInfo, cq: ClusterQueueInfo, decision: Decision
    ) -> None:
        """Evict the victims not evicted yet, and hold the preemptor's room for the rest of
        the cycle. Its quota is reserved only once the victims' pods are gone and it fits."""
        preemption = decision.preemption
        assert preemption is not None, "called for a decision to preempt"
        self._holds.add(workload.key, decision)
        tree = self.state.quota_tree()
        errors: list[BaseException] = []
        stale: list[Target] = []  # moves refused: the workload changed since the plan
        slots = asyncio.Semaphore(PARALLEL_PREEMPTIONS)

        async def evict_one(target: Target) -> None:
            victim = target.workload
            victim_cq = victim.admission_cq or cq.name
            try:
                async with slots:
                    if moves.is_move(target):
                        text = moves.eviction_message(workload)
                        if await evict(self.writer, victim, text, target.reason):
                            self._moves.spend(victim_cq, datetime.now(UTC).replace(tzinfo=None))
                        else:
                            stale.append(target)
                        return
                    text = preemption_message(
                        workload, target.reason, tree.path(cq.name), tree.path(victim_cq)
                    )
                    if await preempt(self.writer, victim, target.reason, text):
                        metrics.workload_preempted(cq.name, target.reason)
            except Exception as exc:  # retried with the preemptor's own backoff
                errors.append(exc)

        # Victims already on their way out are not evicted again.
        await asyncio.gather(*(evict_one(t) for t in preemption.targets if not t.workload.evicted))
        if stale:  # the world changed under the plan: give it up, and plan again
            self._holds.release(workload.key)
            self.wake()
            await self._pending(
                workload,
                f"{decision.message}. The cluster changed under the defragmentation plan; "
                "planning again",
            )
            return
        failures, first_error = len(errors), (errors[0] if errors else None)
        count = len(preemption.targets) - failures
        if failures:
            assert first_error is not None
            self._failed(workload.key, first_error, workload, "preemption not written")
            message = f"{decision.message}. Preempting {failures} workload(s) failed, will retry."
        else:
            self._backoff.succeeded(workload.key)
            what = "move" if any(moves.is_move(t) for t in preemption.targets) else "preemption"
            message = f"{decision.message}. Pending the {what} of {count} workload(s)"
        await self._pending(workload, message)

    async def _replace(self, workload: WorkloadInfo) -> None:
        failed = needs_replacement(workload)
        tried = self._tried.get(workload.key)
        marker = (self.state.generation, workload.generation, ",".join(failed))
        if tried and tried == marker:
            return
        charge = self.state.charges().get(workload.key)
        if charge is None:
            return
        result = find_replacement(self.state, workload, charge, self.replacement)
        self._cycle_tried = True
        if result.failure is not None:
            self._tried[workload.key] = marker
            if evicts_without_replacement(workload, self.replacement):
                message = transitions.no_replacement_message(failed, result.failure)
                self._cycle_succeeded |= await evict(self.writer, workload, message)
            else:
                log.info(
                    "no replacement yet for %s/%s: %s",
                    workload.namespace,
                    workload.name,
                    result.failure,
                )
            return
        assert result.charge is not None and result.assignments is not None
        self.state.assume(workload, result.charge)
        try:
            written = await self.writer.write_status(
                workload, transitions.replaced(workload, result.assignments, result.remaining)
            )
        except asyncio.CancelledError:
            self.state.forget(workload)
            raise
        except Exception as exc:
            self._failed(workload.key, exc, workload, "replacement not written")
            # Beside the loop: reading back may wait for the API server to come back.
            self._spawn(self._release_unless_stored(workload, exc))
            return
        if not written:
            self.state.forget(workload)
            self.wake()
            return
        self._backoff.succeeded(workload.key)
        self._cycle_succeeded = True
        if not result.kept:
            metrics.NODE_REPLACEMENTS.inc()
        reason, message = result.event()
        log.info("%s/%s: %s", workload.namespace, workload.name, message)
        await self.writer.record_event(workload, "Normal", reason, message)

    async def _admit(self, workload: WorkloadInfo, decision: Decision) -> bool:
        assert decision.charge is not None and decision.admission is not None
        self.state.assume(workload, decision.charge)
        self.fair.assumed(workload)
        if decision.group is not None and decision.group.new_partitions:
            self.state.assumed_partitions[decision.group.key][workload.key] = dict(
                decision.group.new_partitions
            )
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "assumed %s/%s on %s: %s",
                workload.namespace,
                workload.name,
                workload.resource_version,
                sorted(
                    (d.values[-1], d.count)
                    for ps in decision.charge.pod_sets
                    if ps.assignment
                    for d in ps.assignment.domains
                ),
            )
        # The capacity is ours from here on (assumed); the write runs beside the loop, which
        # goes on deciding, as Kueue's scheduler does. A failed write gives the capacity back.
        status = transitions.admitted(workload, decision.admission, decision.message)
        self._spawn(self._write_admission(workload, decision, status))
        self._cycle_succeeded = True
        return True

    async def _write_admission(
        self, workload: WorkloadInfo, decision: Decision, status: dict[str, Any]
    ) -> None:
        try:
            async with self._write_slots:
                if decision.group is not None:
                    # The group first: a restart must find every partition the admission used.
                    await self._write_group(
                        decision.group.key, decision.group.spec, decision.group.flavor
                    )
                written = await self.writer.write_status(workload, status)
        except asyncio.CancelledError:  # the lease is lost: this process decides nothing more
            self.state.forget(workload)
            raise
        except Exception as exc:  # connection errors too: the capacity must come back
            self._failed(workload.key, exc, workload, "admission not written")
            await self._release_unless_stored(workload, exc)
            return
        if not written:
            self.state.forget(workload)
            self.wake()
            return
        self._backoff.succeeded(workload.key)
        self._tried.pop(workload.key, None)
        assert decision.admission is not None, "an admitted decision carries its admission"
        cq = decision.admission["clusterQueue"]
        self._count_admission(workload, cq)
        log.info("admitted %s/%s in %s", workload.namespace, workload.name, cq)
        await self.writer.record_event(workload, "Normal", REASON_QUOTA_RESERVED, decision.message)
        await self.writer.record_event(
            workload, "Normal", REASON_ADMITTED, "Admitted by ClusterQueue " + cq
        )

    def _count_admission(self, workload: WorkloadInfo, cq: str) -> None:
        """Kueue's admission metrics, with the wait since the workload was queued."""
        now = datetime.now(UTC).replace(tzinfo=None)  # as the cache's timestamps
        cohorts = [name for _, name in self.state.quota_tree().path_to_root(("cq", cq))]
        metrics.workload_admitted(
            cq,
            (workload.namespace, workload.queue_name),
            workload.priority_class,
            cohorts,
            waited=max(0.0, (now - workload.queued_at).total_seconds()),
        )

    async def _release_unless_stored(self, workload: WorkloadInfo, exc: BaseException) -> None:
        """A failed write gives its assumed capacity back, unless it may have been stored all
        the same (no answer after it was sent, or a server error): then the capacity stays
        assumed until a read, or the watch, shows the Workload after the write. Letting it go
        at once would hand the capacity of a stored admission to a second workload."""
        unsure = isinstance(exc, KubeError) and exc.may_have_landed
        failures = 0
        while unsure and self.state.assumed_on(workload.key) == workload.resource_version:
            try:
                await self.writer.settle(workload)
                break
            except KubeError as again:  # the API server is away: the capacity stays held
                failures += 1
                await asyncio.sleep(SETTLE_BACKOFF.delay(failures, again.retry_after))
        self.state.forget(workload)
        self.wake()

    def cancel_writes(self) -> None:
        """The lease is lost: another replica may be deciding now, so no write may land."""
        for task in list(self._writes):
            task.cancel()

    async def drain(self) -> None:
        """Wait for the admission writes in flight (tests, shutdown)."""
        while self._writes:  # a few at a time: waiting on 50,000 at once stalls the loop
            batch = list(itertools.islice(self._writes, DRAIN_BATCH))
            await asyncio.gather(*batch, return_exceptions=True)

    async def _pending(
        self, workload: WorkloadInfo, message: str, reason: str = REASON_PENDING
    ) -> None:
        """QuotaReserved=False with the reason; written (and evented) only when it changes.
        The write runs beside the loop, one at a time per workload: in a busy cluster most
        attempts are rejections, and the cycle must not wait on each one's round trip."""
        status = transitions.pending(workload, message, reason)
        if status is None or workload.key in self._pending_writes:
            return
        self._pending_writes.add(workload.key)
        self._spawn(self._write_pending(workload, status, reason, message))

    async def _write_pending(
        self, workload: WorkloadInfo, status: dict[str, Any], reason: str, message: str
    ) -> None:
        try:
            async with self._write_slots:
                written = await self.writer.write_status(workload, status)
            if written:
                await self.writer.record_event(workload, "Warning", reason, message)
            else:  # refused as stale: decided again (and written) on the version read back
                self._tried.pop(workload.key, None)
        except Exception as exc:
            self._tried.pop(workload.key, None)  # decided again, and written, after the backoff
            self._failed(workload.key, exc, workload, "pending status not written")
        finally:
            self._pending_writes.discard(workload.key)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def _write_lq_statuses(self) -> None:
        """Kueue's LocalQueue counts: pending, and reserving/admitted workloads."""
        state = self.state
        counts: dict[Key, list[int]] = {key: [0, 0] for key in state.local_queues}
        # Waiting: pending and not assumed; holding: every charge (admitted, or assumed).
        for column, keys in ((0, state.pending), (1, state.charges())):
            for wl_key in list(keys):
                await self._pacer.maybe_yield()
                workload = state.workloads.get(wl_key)
                if workload is None or (column == 0 and state.is_assumed(wl_key)):
                    continue
                key = (workload.namespace, workload.queue_name)
                if key in counts:
                    counts[key][column] += 1
        for key in self._lq_status.keys() - counts.keys():  # deleted: forget what was written
            del self._lq_status[key]
        for key, (pending, admitted) in counts.items():
            await self._pacer.maybe_yield()
            status: dict[str, Any] = {
                "pendingWorkloads": pending,
                "reservingWorkloads": admitted,
                "admittedWorkloads": admitted,
            }
            if (fair := self.fair.status(key)) is not None:
                status["fairSharing"] = fair
            if self._lq_status.get(key) == status or self._backing_off(("lq", key)):
                continue
            if await self._write_queue_status(
                ("lq", key), self.writer.write_local_queue_status, *key, status
            ):
                self._lq_status[key] = status

    async def _write_cq_statuses(
        self, by_cq: dict[str, list[WorkloadInfo]], problems: dict[str, tuple[str, str] | None]
    ) -> None:
        state = self.state
        admitted = Counter(charge.cluster_queue for charge in state.charges().values())
        for cq_name in sorted(problems):
            await self._pacer.maybe_yield()
            cq = state.cluster_queues.get(cq_name)
            if cq is not None:
                still_pending = await self._count_unassumed(by_cq[cq_name])
                await self._write_cq_status(cq, problems[cq_name], still_pending, admitted[cq_name])

    async def _count_unassumed(self, workloads: list[WorkloadInfo]) -> int:
        """How many of `workloads` no admission of this cycle took (yielding: 50,000 of them
        take tens of milliseconds)."""
        count = 0
        for index, workload in enumerate(workloads):
            if index % 1024 == 0:
                await self._pacer.maybe_yield()
            count += not self.state.is_assumed(workload.key)
        return count

    async def _write_cq_status(
        self, cq: ClusterQueueInfo, problem: tuple[str, str] | None, pending: int, admitted: int
    ) -> None:
        state = self.state
        usage = []
        tree = state.quota_tree()
        for group in cq.resource_groups:
            for fq in group.flavors:
                used = state.quota_usage(cq.name, fq.flavor)
                resources = []
                for r in sorted(group.covered):
                    borrowed = tree.borrowed(cq.name, (fq.flavor, r))
                    resources.append(
                        {
                            "name": r,
                            "total": format_milli(r, used.get(r, 0)),
                            "borrowed": format_milli(r, borrowed),
                        }
                    )
                usage.append({"name": fq.flavor, "resources": resources})
        metrics.PENDING.labels(cq.name).set(pending)
        metrics.ADMITTED.labels(cq.name).set(admitted)
        reason, message = problem or (REASON_READY, "Can admit new workloads")
        active = self._cq_status.get(cq.name, {}).get("conditions", [])
        status = {
            "pendingWorkloads": pending,
            "reservingWorkloads": admitted,
            "admittedWorkloads": admitted,
            "flavorsReservation": usage,
            "flavorsUsage": usage,
            "conditions": cond.set_condition(active, COND_ACTIVE, problem is None, reason, message),
            "fairSharing": fairshare.status(tree, ("cq", cq.name), state.fair_sharing is not None),
        }
        if self._cq_status.get(cq.name) == status or self._backing_off(("cq", cq.name)):
            return
        if await self._write_queue_status(
            ("cq", cq.name), self.writer.write_cluster_queue_status, cq.name, status
        ):
            self._cq_status[cq.name] = status

    async def _write_cohort_statuses(self) -> None:
        """status.fairSharing of each Cohort object (Kueue's cohort controller)."""
        tree = self.state.quota_tree()
        for name in sorted(self.state.cohorts):
            await self._pacer.maybe_yield()
            status = {"fairSharing": fairshare.status(tree, ("cohort", name), True)}
            key = ("cohort", name)
            if self._cohort_status.get(name) == status or self._backing_off(key):
                continue
            if await self._write_queue_status(key, self.writer.write_cohort_status, name, status):
                self._cohort_status[name] = status

    async def _write_group(self, key: Key, spec: GroupSpec, flavor: str) -> None:
        status = placementgroups.status_now(self.state, key, spec, flavor)
        await self.writer.write_placement_group(key[0], key[1], spec_to_object(spec), status)
        self._group_status[key] = status
        self._group_specs[key] = spec

    async def _write_group_statuses(self) -> None:
        """Each group's status as its members' charges give it (members come and go)."""
        state = self.state
        for key in state.placement_groups_deleted:  # made again while it has members
            self._group_status.pop(key, None)
        state.placement_groups_deleted.clear()
        for key in sorted({*state.group_members, *state.placement_groups, *self._group_status}):
            await self._pacer.maybe_yield()
            group = state.placement_groups.get(key)
            known = group is not None or key in self._group_status
            if not known and not state.group_members.get(key):
                continue
            spec = placementgroups.spec_of(
                state,
                key,
                placementgroups.annotated_spec(state, state.group_members.get(key, set())),
            ) or self._group_specs.get(key)
            if spec is None:
                continue
            try:
                status = placementgroups.status_now(state, key, spec)
            except PlacementGroupError:
                continue
            written = self._group_status.get(key)
            if written is None and group is not None:
                if placement_group_status_key(status) == group.written:
                    continue
            elif written == status:
                continue
            if not known and not status["members"]:
                continue  # nothing to make an object for
            if self._backing_off(("pg", key)):
                continue
            try:
                await self.writer.write_placement_group(
                    key[0], key[1], spec_to_object(spec), status
                )
            except Exception as exc:
                self._failed(("pg", key), exc)
                continue
            self._backoff.succeeded(("pg", key))
            self._group_status[key] = status
            self._group_specs[key] = spec
            if group is None and not status["members"]:  # emptied, and no object seen: done
                self._group_status.pop(key)
                self._group_specs.pop(key)

    async def _write_queue_status(
        self, key: tuple[str, object], write: Callable[..., Awaitable[None]], *args: Any
    ) -> bool:
        """A queue's status is remembered only once written; a failure backs off, and its
        timer wakes the loop to write it again (the status is computed afresh then)."""
        try:
            await write(*args)
        except Exception as exc:  # a bug here must not stop the cycle's other queues
            self._failed(key, exc)
            log.warning("%s %s: status not written (%s)", key[0], key[1], exc)
            return False
        self._backoff.succeeded(key)
        return True


def _is_queue_key(key: object) -> bool:
    """A backoff key of a ClusterQueue's or LocalQueue's status, ("cq", name) or ("lq", key)."""
    return isinstance(key, tuple) and key[0] in ("cq", "lq")
