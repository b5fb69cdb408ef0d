"""A cycle hands the event loop back between decisions: lease renewal, the webhooks and the
liveness probe share it, and a cycle over tens of thousands of pending workloads would
otherwise outlast the lease. What a watch event changes meanwhile is seen by the decisions
that follow."""

from __future__ import annotations

import asyncio

from tas.admission.loop import AdmissionLoop
from tests.unit.admission.fixtures import RACK, make_state, two_racks, workload
from tests.unit.admission.test_loop import FakeWriter, add, admitted

# Enough workloads that do not fit for the cycle to run far longer than one slice of the loop.
NOT_FITTING = 3000


class VersionedWriter(FakeWriter):
    """Records which version of each workload a status was written on."""

    def __init__(self):
        super().__init__()
        self.versions = []

    async def write_status(self, wl, status):
        self.versions.append(((wl.name, wl.resource_version), status))
        return await super().write_status(wl, status)


def late_fitting() -> dict:
    return workload(
        "late", pods=4, annotations_request={"required": RACK}, created="2026-02-01T00:00:00Z"
    )


def crowded(late: dict | None = None):
    """Thousands of old workloads that never fit (20 pods on 16 cpu), then `late`."""
    state = make_state(two_racks())
    for i in range(NOT_FITTING):
        created = f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}Z"
        add(state, workload(f"big{i}", pods=20, created=created))
    if late is not None:
        add(state, late)
    return state


def test_other_tasks_run_during_a_cycle_over_thousands_of_pending_workloads():
    async def go():
        loop = AdmissionLoop(crowded(), FakeWriter())
        ticks = 0
        cycling = True

        async def lease_renewal():  # stands for the lease, a webhook, the probe
            nonlocal ticks
            while cycling:
                ticks += 1
                await asyncio.sleep(0)

        other = asyncio.create_task(lease_renewal())
        await asyncio.sleep(0)
        before = ticks
        await loop.cycle()
        during = ticks - before
        cycling = False
        await other
        await loop.drain()
        return during

    assert asyncio.run(go()) >= 3


def test_a_workload_deleted_while_the_cycle_yields_is_not_admitted():
    state = crowded(late_fitting())
    writer = FakeWriter()

    async def go():
        loop = AdmissionLoop(state, writer)

        async def watch_delivers_the_deletion():
            state.delete_workload("ns", "late")

        cycle = asyncio.create_task(loop.cycle())
        await asyncio.sleep(0)  # the cycle has begun: "late" is in its queue
        await watch_delivers_the_deletion()
        await cycle
        await loop.drain()

    asyncio.run(go())
    assert "late" not in admitted(writer)
    assert not state.charges()


def test_a_workload_changed_while_the_cycle_yields_is_decided_on_its_new_version():
    state = crowded(late_fitting())
    writer = VersionedWriter()

    async def go():
        loop = AdmissionLoop(state, writer)
        cycle = asyncio.create_task(loop.cycle())
        await asyncio.sleep(0)
        add(state, late_fitting())  # a new resourceVersion (a label changed, say)
        await cycle
        await loop.drain()

    asyncio.run(go())
    written = [key for key, status in writer.versions if "admission" in status]
    assert written == [("late", state.workloads[("ns", "late")].resource_version)]
