"""The leader's writes are fenced by its lease: refused before they reach the client once the
lease is not held or its renew deadline has passed (by a fake clock), while reads, the lease's
own writes and the webhook certificate's go through."""

from __future__ import annotations

import asyncio

import pytest

from tas.config import Settings
from tas.kube import Connection, Kube, Ref
from tas.runtime.fence import FencedKube, NotLeading
from tas.runtime.leader import LeaderElector, LeaseSettings
from tas.runtime.runtime import Runtime
from tests.unit.runtime.test_leader_election import Clock, LeaseStore

SETTINGS = LeaseSettings(namespace="tas-system")  # renew deadline 10 s, lease 15 s


class Recorder(Kube):
    """A client that records what reaches it instead of sending it."""

    def __init__(self) -> None:
        super().__init__(Connection(server="http://127.0.0.1:9", ssl=False))
        self.sent: list[tuple[str, str, float | None]] = []

    async def _send(
        self, method, path, data, content_type, authorization, params, timeout, decode=None
    ):
        self.sent.append((method, path, timeout))
        return {}


WRITES = {
    "patch": lambda k: k.patch("/api/v1/namespaces/ns/pods/p", {}),
    "create": lambda k: k.create("/api/v1/namespaces/ns/pods", {}),
    "replace": lambda k: k.replace("/api/v1/namespaces/ns/pods/p", {}),
    "delete": lambda k: k.delete("/api/v1/namespaces/ns/pods/p"),
    "request POST": lambda k: k.request("POST", "/api/v1/namespaces/ns/pods", {}),
}


async def leader(clock: Clock) -> LeaderElector:
    elector = LeaderElector(LeaseStore(), SETTINGS, "a", clock=clock)
    assert await elector.try_acquire_or_renew()
    return elector


@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES.keys())
def test_a_write_after_the_renew_deadline_is_refused_before_it_reaches_the_client(write):
    async def go():
        clock, inner = Clock(), Recorder()
        fenced = FencedKube(inner, (await leader(clock)).time_left)
        clock.now += 9.5  # half a second left
        await write(fenced)
        in_time = list(inner.sent)
        clock.now += 0.6  # not renewed: the deadline has passed
        with pytest.raises(NotLeading):
            await write(fenced)
        await fenced.get("/api/v1/namespaces/ns/pods/p")  # reads are not fenced
        return in_time, inner.sent[len(in_time) :]

    in_time, late = asyncio.run(go())
    assert len(in_time) == 1 and in_time[0][2] <= 0.5  # no longer than the lease has left
    assert [method for method, _, _ in late] == ["GET"]


class SlowCredentials(Connection):
    """An exec credential plugin that takes a second, by the fake clock."""

    def __init__(self, clock: Clock) -> None:
        super().__init__(server="http://127.0.0.1:9", ssl=False)
        self.clock = clock

    async def authorization(self) -> str | None:
        self.clock.now += 1.0
        return "Bearer from-a-plugin"


def test_the_fence_is_checked_after_the_credential_is_had_just_before_sending():
    async def go():
        clock, inner = Clock(), Recorder()
        inner.connection = SlowCredentials(clock)
        fenced = FencedKube(inner, (await leader(clock)).time_left)
        clock.now += 9.5  # in time when the call is made, not when it would be sent
        with pytest.raises(NotLeading):
            await fenced.patch("/api/v1/namespaces/ns/pods/p", {})
        return inner.sent

    assert asyncio.run(go()) == []


def test_an_event_after_the_deadline_is_dropped_not_sent():
    async def go():
        clock, inner = Clock(), Recorder()
        fenced = FencedKube(inner, (await leader(clock)).time_left)
        clock.now += 11
        await fenced.event(Ref("v1", "Pod", "ns", "p", "uid"), "Normal", "Why", "what")
        return inner.sent

    assert asyncio.run(go()) == []


def test_a_lease_taken_by_another_replica_fences_at_once():
    async def go():
        clock, inner, store = Clock(), Recorder(), LeaseStore()
        a = LeaderElector(store, SETTINGS, "a", clock=clock)
        assert await a.try_acquire_or_renew()
        b = LeaderElector(store, SETTINGS, "b", clock=clock)
        await b.try_acquire_or_renew()
        store.lease["spec"]["holderIdentity"] = "b"  # b took it (a missed 15 s of renewals)
        store.lease["spec"]["renewTime"] = "later"
        store.version += 1  # as every write does
        store.lease["metadata"]["resourceVersion"] = str(store.version)
        await a.try_acquire_or_renew()  # a sees it, well inside its own renew deadline
        with pytest.raises(NotLeading):
            await FencedKube(inner, a.time_left).patch("/x", {})
        return inner.sent

    assert asyncio.run(go()) == []


def test_the_runtimes_writers_are_fenced_and_its_lease_and_watches_are_not():
    async def go():
        inner = Recorder()
        rt = Runtime(Settings(leader_elect=True), kube=inner)  # not leading yet
        writers = {
            "workload writer": rt.writer.kube,
            **{name: g.reconciler.kube for name, g in rt.generic_jobs.items()},
            "pods": rt.pod_groups.kube,
            "leaderworkersets": rt.leaderworkersets.kube,
            "ungater": rt.ungater.kube,
            "hotswap": rt.node_health.kube,
        }
        refused = []
        for name, kube in writers.items():
            try:
                await kube.patch("/x", {})
            except NotLeading:
                refused.append(name)
        assert rt.elector is not None
        for kube in (rt.elector.kube, *(r.kube for r in rt.reflectors)):
            await kube.patch("/lease-or-watched", {})
        return refused, list(writers), len(inner.sent), 1 + len(rt.reflectors)

    refused, writers, sent, unfenced = asyncio.run(go())
    assert refused == writers
    assert sent == unfenced
