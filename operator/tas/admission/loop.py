"""The single serial admission loop.

Every decision happens here, one at a time, so two workloads can never be given the same
capacity. The loop sleeps until something wakes it (a watch event that may change a decision)
and never runs on a timer. A cycle walks the ClusterQueues; in each it tries the pending
workloads in queue order (StrictFIFO stops at the first that does not fit). A workload that did
not fit is tried again only when the cache's capacity generation or its own spec changed.

Per admission: decide on the snapshot, assume the charge in the cache, write the status with the
workload's resourceVersion; if the write fails, forget the charge and try again next cycle.
"""

from __future__ import annotations

import asyncio
import logging

from tas import metrics
from tas.admission.decide import Decision, decide, pending_order
from tas.admission.ports import WorkloadStatusWriter
from tas.api import conditions as cond
from tas.api.constants import (
    COND_ADMITTED,
    COND_EVICTED,
    COND_QUOTA_RESERVED,
    REASON_ADMITTED,
    REASON_PENDING,
    REASON_QUOTA_RESERVED,
)
from tas.api.format import format_milli
from tas.cache.projections import ClusterQueueInfo, Key, WorkloadInfo
from tas.cache.state import ClusterState
from tas.hotswap.replace import (
    evicted_status,
    find_replacement,
    needs_replacement,
    no_replacement_message,
    replaced_status,
)

log = logging.getLogger(__name__)


class AdmissionLoop:
    def __init__(
        self,
        state: ClusterState,
        writer: WorkloadStatusWriter,
        *,
        replacement_fail_fast: bool = True,
    ) -> None:
        self.state = state
        self.writer = writer
        self.replacement_fail_fast = replacement_fail_fast
        self.synced = asyncio.Event()  # set once every watched kind has been listed
        self._wake = asyncio.Event()
        self._tried: dict[
            Key, tuple[int, int, str]
        ] = {}  # key -> (generation, spec generation, message)
        self._cq_status: dict[str, dict] = {}
        self._lq_status: dict[Key, dict] = {}
        self._writes: set[asyncio.Task] = set()
        self._write_slots = asyncio.Semaphore(16)  # admission writes in flight at once
        self.cycles = 0

    def wake(self) -> None:
        self._wake.set()

    async def run(self) -> None:
        await self.synced.wait()
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self.cycle()
            except Exception:  # one bad cycle must not stop admission for good
                log.exception("admission cycle failed; retrying on the next event")

    async def cycle(self) -> None:
        self.cycles += 1
        state = self.state
        # Second pass first: admitted workloads that lost a node get their replacement before
        # anyone else can take the capacity around their surviving pods.
        for workload in list(state.workloads.values()):
            if (
                workload.has_quota
                and not state.is_assumed(workload.key)
                and needs_replacement(workload)
            ):
                await self._guarded(self._replace(workload), workload)
        by_cq: dict[str, list[WorkloadInfo]] = {name: [] for name in state.cluster_queues}
        for workload in list(state.workloads.values()):
            if not workload.pending or state.is_assumed(workload.key):
                continue
            cq_name = state.cluster_queue_of(workload)
            if cq_name is None:
                await self._pending(workload, f"LocalQueue {workload.queue_name} doesn't exist")
            elif cq_name not in state.cluster_queues:
                await self._pending(workload, f"ClusterQueue {cq_name} doesn't exist")
            else:
                by_cq[cq_name].append(workload)

        for cq_name in sorted(by_cq):
            cq = state.cluster_queues[cq_name]
            problem = state.cluster_queue_problem(cq)
            for workload in pending_order(by_cq[cq_name]):
                if problem:
                    await self._pending(workload, f"ClusterQueue {cq_name} is inactive")
                    continue
                if not state.namespace_allowed(cq, workload.namespace):
                    await self._pending(
                        workload, "Workload namespace doesn't match ClusterQueue selector"
                    )
                    continue
                admitted = await self._guarded(self._try(workload, cq), workload)
                if not admitted and cq.strict_fifo:
                    break
            still_pending = sum(1 for w in by_cq[cq_name] if not state.is_assumed(w.key))
            await self._write_cq_status(cq, problem, still_pending)
        await self._write_lq_statuses()

    async def _guarded(self, step, workload: WorkloadInfo) -> bool:
        """One workload's trouble (a bug, an API error) must not stop the others' admission."""
        try:
            return bool(await step)
        except Exception:
            log.exception(
                "admission of %s/%s failed; retrying on the next event",
                workload.namespace,
                workload.name,
            )
            return False

    async def _try(self, workload: WorkloadInfo, cq: ClusterQueueInfo) -> bool:
        tried = self._tried.get(workload.key)
        if tried and tried[:2] == (self.state.generation, workload.generation):
            return False  # nothing changed since it last did not fit
        with metrics.ADMISSION_LATENCY.time():
            decision = decide(self.state, workload, cq)
        result = "admitted" if decision.admitted else "invalid" if decision.invalid else "pending"
        metrics.ADMISSION_ATTEMPTS.labels(result).inc()
        if decision.admitted:
            return await self._admit(workload, decision)
        self._tried[workload.key] = (self.state.generation, workload.generation, decision.message)
        await self._pending(
            workload,
            decision.message,
            reason="Inadmissible" if decision.invalid else REASON_PENDING,
        )
        return False

    async def _replace(self, workload: WorkloadInfo) -> None:
        failed = needs_replacement(workload)
        tried = self._tried.get(workload.key)
        marker = (self.state.generation, workload.generation, ",".join(failed))
        if tried and tried == marker:
            return
        charge = self.state.charges().get(workload.key)
        if charge is None:
            return
        result = find_replacement(self.state, workload, charge)
        if result.failure is not None:
            self._tried[workload.key] = marker
            if self.replacement_fail_fast:
                await self.evict(workload, no_replacement_message(failed, result.failure))
            else:
                log.info(
                    "no replacement yet for %s/%s: %s",
                    workload.namespace,
                    workload.name,
                    result.failure,
                )
            return
        assert result.charge is not None and result.assignments is not None
        self.state.assume(workload.key, result.charge)
        if not await self.writer.write_workload_status(
            workload, replaced_status(workload, result.assignments)
        ):
            self.state.forget(workload.key)
            self.wake()
            return
        metrics.NODE_REPLACEMENTS.inc(len(failed))
        message = f"Replaced unhealthy node(s) {', '.join(failed)} in the topology assignment"
        log.info("%s/%s: %s", workload.namespace, workload.name, message)
        await self.writer.record_event(workload, "Normal", "NodeReplaced", message)

    async def evict(self, workload: WorkloadInfo, message: str) -> bool:
        """Release the workload's quota and put it back in its queue (its Job is suspended)."""
        if not await self.writer.write_workload_status(workload, evicted_status(workload, message)):
            return False
        metrics.EVICTIONS.labels("NodeFailures").inc()
        log.info("evicted %s/%s: %s", workload.namespace, workload.name, message)
        await self.writer.record_event(workload, "Warning", "EvictedDueToNodeFailures", message)
        return True

    async def _admit(self, workload: WorkloadInfo, decision: Decision) -> bool:
        assert decision.charge is not None and decision.admission is not None
        self.state.assume(workload.key, decision.charge)
        conditions = cond.set_condition(
            workload.conditions,
            COND_QUOTA_RESERVED,
            True,
            REASON_QUOTA_RESERVED,
            decision.message,
            generation=workload.generation,
        )
        conditions = cond.set_condition(
            conditions,
            COND_ADMITTED,
            True,
            REASON_ADMITTED,
            "The workload is admitted",
            generation=workload.generation,
        )
        if workload.evicted:  # admitted again after an eviction
            conditions = cond.set_condition(
                conditions,
                COND_EVICTED,
                False,
                REASON_QUOTA_RESERVED,
                "Previously: "
                + (workload.condition(COND_EVICTED) or {}).get("message", ""),  # as Kueue
                generation=workload.generation,
            )
        # The capacity is ours from here on (assumed); the write runs beside the loop, which
        # goes on deciding, as Kueue's scheduler does. A failed write gives the capacity back.
        status = {"admission": decision.admission, "conditions": conditions}
        task = asyncio.create_task(self._write_admission(workload, decision, status))
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)
        return True

    async def _write_admission(
        self, workload: WorkloadInfo, decision: Decision, status: dict
    ) -> None:
        async with self._write_slots:
            ok = await self.writer.write_workload_status(workload, status)
        if not ok:
            self.state.forget(workload.key)
            self.wake()  # the watch brings the newer object; decide again with it
            return
        self._tried.pop(workload.key, None)
        cq = decision.admission["clusterQueue"]
        log.info("admitted %s/%s in %s", workload.namespace, workload.name, cq)
        await self.writer.record_event(workload, "Normal", REASON_QUOTA_RESERVED, decision.message)
        await self.writer.record_event(
            workload, "Normal", REASON_ADMITTED, "Admitted by ClusterQueue " + cq
        )

    async def drain(self) -> None:
        """Wait for the admission writes in flight (tests, shutdown)."""
        while self._writes:
            await asyncio.gather(*list(self._writes), return_exceptions=True)

    async def _pending(
        self, workload: WorkloadInfo, message: str, reason: str = REASON_PENDING
    ) -> None:
        """QuotaReserved=False with the reason; written (and evented) only when it changes."""
        current = workload.condition(COND_QUOTA_RESERVED)
        if current and current.get("status") == "False" and current.get("message") == message:
            return
        conditions = cond.set_condition(
            workload.conditions,
            COND_QUOTA_RESERVED,
            False,
            reason,
            message,
            generation=workload.generation,
        )
        if await self.writer.write_workload_status(workload, {"conditions": conditions}):
            await self.writer.record_event(workload, "Warning", reason, message)

    async def _write_lq_statuses(self) -> None:
        """Kueue's LocalQueue counts: pending, and reserving/admitted workloads."""
        counts: dict[Key, list[int]] = {key: [0, 0] for key in self.state.local_queues}
        for workload in self.state.workloads.values():
            key = (workload.namespace, workload.queue_name)
            if key in counts and not workload.finished:
                waiting = workload.pending and not self.state.is_assumed(workload.key)
                counts[key][0 if waiting else 1] += 1
        for key, (pending, admitted) in counts.items():
            status = {
                "pendingWorkloads": pending,
                "reservingWorkloads": admitted,
                "admittedWorkloads": admitted,
            }
            if self._lq_status.get(key) != status:
                self._lq_status[key] = status
                await self.writer.write_local_queue_status(*key, status)

    async def _write_cq_status(
        self, cq: ClusterQueueInfo, problem: tuple[str, str] | None, pending: int
    ) -> None:
        state = self.state
        admitted = sum(1 for c in state.charges().values() if c.cluster_queue == cq.name)
        usage = []
        for group in cq.resource_groups:
            for fq in group.flavors:
                used = state.quota_usage(cq.name, fq.flavor)
                usage.append(
                    {
                        "name": fq.flavor,
                        "resources": [
                            {"name": r, "total": format_milli(r, used.get(r, 0))}
                            for r in sorted(group.covered)
                        ],
                    }
                )
        metrics.PENDING.labels(cq.name).set(pending)
        metrics.ADMITTED.labels(cq.name).set(admitted)
        reason, message = problem or ("Ready", "Can admit new workloads")
        active = self._cq_status.get(cq.name, {}).get("conditions", [])
        status = {
            "pendingWorkloads": pending,
            "reservingWorkloads": admitted,
            "admittedWorkloads": admitted,
            "flavorsReservation": usage,
            "flavorsUsage": usage,
            "conditions": cond.set_condition(active, "Active", problem is None, reason, message),
        }
        if self._cq_status.get(cq.name) == status:
            return
        self._cq_status[cq.name] = status
        await self.writer.write_cluster_queue_status(cq.name, status)
