"""A 409 that is not a version conflict (the Workload read back still has the version the write
was guarded by: an admission webhook's refusal, say) would be refused again however often it
is sent: the write backs off instead of being decided and sent again at once."""

from __future__ import annotations

import asyncio
import copy

import pytest

from tas.admission.loop import AdmissionLoop
from tas.cache import projections as proj
from tas.kube import Connection, Kube, KubeError
from tas.workload.writer import WorkloadWriter
from tests.unit.admission.fixtures import make_state, two_racks, workload

STORED = {**workload("a", pods=4), "status": {}}


class RefusingApi(Kube):
    """Refuses every write with 409; a read shows `reread` (None: gone)."""

    def __init__(self, reread: dict | None) -> None:
        super().__init__(Connection(server="http://127.0.0.1:9", ssl=False))
        self.reread = reread
        self.sent: list[tuple[str, str]] = []

    async def request(
        self, method, path, body=None, content_type=None, *, params=None, timeout=None
    ):
        await asyncio.sleep(0)
        self.sent.append((method, path))
        if method == "GET":
            if self.reread is None:
                raise KubeError(404, "not found")
            return copy.deepcopy(self.reread)
        if "/workloads/" in path:
            raise KubeError(409, "refused by a webhook")
        return {}


def with_version(rv: str) -> dict:
    obj = copy.deepcopy(STORED)
    obj["metadata"]["resourceVersion"] = rv
    return obj


def info():
    return proj.workload_from_object(with_version("1"))


@pytest.mark.parametrize(
    ("reread", "outcome", "refreshed"),
    [
        (with_version("1"), "raises 409", False),  # same version: the write itself is refused
        (with_version("2"), "stale", True),  # moved on: decide again on the newer object
        (None, "stale", False),  # gone: the watch brings the deletion
    ],
    ids=["same version", "newer version", "gone"],
)
def test_the_writer_tells_a_version_conflict_from_a_refusal(reread, outcome, refreshed):
    refreshes = []

    async def refresh(obj, refused_version):
        refreshes.append((obj["metadata"]["resourceVersion"], refused_version))

    async def go():
        writer = WorkloadWriter(RefusingApi(reread), refresh=refresh)
        try:
            return "written" if await writer.write_status(info(), {}) else "stale"
        except KubeError as exc:
            return f"raises {exc.status}"

    assert asyncio.run(go()) == outcome
    assert bool(refreshes) == refreshed


def test_a_refused_admission_backs_off_instead_of_retrying_in_a_hot_loop():
    api = RefusingApi(with_version("1"))
    state = make_state(two_racks())
    state.upsert_workload(info())

    async def go():
        loop = AdmissionLoop(state, WorkloadWriter(api))
        loop.synced.set()
        loop.wake()
        running = asyncio.create_task(loop.run())
        await asyncio.sleep(0.6)
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        loop.cancel_writes()
        await loop.drain()

    asyncio.run(go())
    # The first write and a few retries, 0.1-0.2 s, then 0.2-0.4 s apart; in a hot loop,
    # thousands.
    admissions = [path for method, path in api.sent if method == "PATCH" and "/workloads/" in path]
    assert 1 <= len(admissions) <= 4
    assert not state.is_assumed(("ns", "a"))  # the capacity came back after each refusal
