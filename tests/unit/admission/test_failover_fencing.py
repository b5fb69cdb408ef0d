"""Failover under a long admission cycle, with the real loop and Workload writer on both
replicas and one in-memory API server (e2e/test_failover_fencing.py does it for real).

Leader A decides to admit x; its cycle then runs on long enough (a fake clock) that its renew
deadline passes and standby B takes the lease. B, whose cache has not seen any write of A's,
admits y, a higher-priority workload created meanwhile, onto the same capacity. A's write for x,
guarded only by x's own resourceVersion, would land beside it: the fence must refuse it.
Unfenced, the same scenario books the capacity twice (the control case).
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections import Counter

import pytest

import tas.admission.loop as loop_module
from tas.admission.loop import AdmissionLoop
from tas.cache import projections as proj
from tas.kube import Connection, Kube, KubeError
from tas.runtime.fence import FencedKube
from tas.runtime.leader import LeaderElector, LeaseSettings
from tas.workload.writer import WorkloadWriter
from tests.unit.admission.fixtures import make_state, two_racks, workload
from tests.unit.admission.test_loop_races import merge
from tests.unit.runtime.test_leader_election import Clock, LeaseStore

SETTINGS = LeaseSettings(namespace="tas-system")  # renew deadline 10 s, lease 15 s
CPU_PER_NODE = 4  # two_racks(): 4 nodes of 4 cpu; x and y each need all 16


class Api(Kube):
    """Workloads in memory, their status writes guarded by resourceVersion; anything else (queue
    statuses, events) accepted and dropped. What it fakes is the sending (`_send`), after the
    client's own steps, so that a FencedKube over it fences as over the real one."""

    def __init__(self) -> None:
        super().__init__(Connection(server="http://127.0.0.1:9", ssl=False))
        self.version = 1000
        self.objects: dict[str, dict] = {}

    def store(self, obj: dict) -> dict:
        self.version += 1
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = str(self.version)
        self.objects[obj["metadata"]["name"]] = obj
        return copy.deepcopy(obj)

    async def _send(
        self, method, path, data, content_type, authorization, params, timeout, decode=None
    ):
        await asyncio.sleep(0)  # an answer takes a turn of the loop
        if "/workloads/" not in path:
            return {}
        held = self.objects.get(path.removesuffix("/status").rsplit("/", 1)[-1])
        if held is None:
            raise KubeError(404, "not found")
        if method == "GET":
            return copy.deepcopy(held)
        body = json.loads(data or "{}")
        if body["metadata"]["resourceVersion"] != held["metadata"]["resourceVersion"]:
            raise KubeError(409, "conflict")
        return self.store(merge(held, {"status": body["status"]}))


def booked(api: Api) -> Counter:
    """cpu per node in the stored assignments of admitted Workloads."""
    out: Counter = Counter()
    for obj in api.objects.values():
        info = proj.workload_from_object(obj)
        for a in info.admissions if info.has_quota else ():
            for d in a.assignment.domains if a.assignment else ():
                out[d.values[-1]] += d.count  # 1 cpu a pod
    return out


def replica(api: Api, elector: LeaderElector, fenced: bool, *seen: dict) -> AdmissionLoop:
    """A replica's loop, its cache holding the Workloads its watch has delivered."""
    state = make_state(two_racks())
    for obj in seen:
        state.upsert_workload(proj.workload_from_object(obj))
    kube = FencedKube(api, elector.time_left) if fenced else api
    return AdmissionLoop(state, WorkloadWriter(kube))


async def failover(fenced: bool, monkeypatch) -> Api:
    api, clock, store = Api(), Clock(), LeaseStore()
    a = LeaderElector(store, SETTINGS, "a", clock=clock)
    b = LeaderElector(store, SETTINGS, "b", clock=clock)
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()  # b stands by, watching the lease
    x = api.store(workload("x", pods=16))
    leader = replica(api, a, fenced, x)

    def slow_decide(*args):
        decision = decide(*args)
        clock.now += 16  # the cycle runs on past A's deadline, and B's wait
        return decision

    decide = loop_module.decide
    monkeypatch.setattr(loop_module, "decide", slow_decide)
    deciding = asyncio.create_task(leader.cycle())
    while not leader.state.is_assumed(("ns", "x")):  # A has decided x; its write is on its way
        await asyncio.sleep(0)
    monkeypatch.setattr(loop_module, "decide", decide)

    assert await b.try_acquire_or_renew()  # the lease moved
    y = api.store(workload("y", pods=16, priority=10))
    standby = replica(api, b, fenced, x, y)  # its watch has not brought any write of A's
    await standby.cycle()
    await standby.drain()
    await deciding
    await leader.drain()
    return api


@pytest.mark.parametrize("fenced", [True, False], ids=["fenced", "unfenced (control)"])
def test_a_deposed_leaders_admission_never_lands_beside_the_new_leaders(fenced, monkeypatch):
    api = asyncio.run(failover(fenced, monkeypatch))
    admitted = sorted(n for n, o in api.objects.items() if proj.workload_from_object(o).has_quota)
    over = {node: cpu for node, cpu in booked(api).items() if cpu > CPU_PER_NODE}
    if fenced:
        assert admitted == ["y"] and not over
    else:  # the scenario does double-book without the fence
        assert admitted == ["x", "y"] and over
