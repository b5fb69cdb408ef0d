"""Leader election logic against an in-memory Lease store with resourceVersion checks.

(The real thing, against a real API server, is e2e/test_control_loop.py's failover test.)
"""

import asyncio
import contextlib
import copy

from tas.kube import KubeError
from tas.runtime.leader import LeaderElector, LeaseSettings


class LeaseStore:
    """Just enough of the API: get, create, and update guarded by resourceVersion."""

    def __init__(self):
        self.lease = None
        self.version = 0
        self.down = False

    async def get(self, path):
        if self.down:
            raise KubeError(0, "connection refused")
        return copy.deepcopy(self.lease)

    async def create(self, path, body):
        if self.lease is not None:
            raise KubeError(409, "exists")
        self.version += 1
        self.lease = {
            **copy.deepcopy(body),
            "metadata": {**body["metadata"], "resourceVersion": str(self.version)},
        }
        return copy.deepcopy(self.lease)  # as a server answers: a copy, not the stored object

    async def replace(self, path, body):
        if self.down:
            raise KubeError(0, "connection refused")
        if body["metadata"]["resourceVersion"] != self.lease["metadata"]["resourceVersion"]:
            raise KubeError(409, "conflict")
        self.version += 1
        self.lease = copy.deepcopy(body)
        self.lease["metadata"]["resourceVersion"] = str(self.version)
        return copy.deepcopy(self.lease)


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


SETTINGS = LeaseSettings(namespace="tas-system")


def elector(store, name, clock, lost=None):
    return LeaderElector(store, SETTINGS, name, clock=clock, on_lost=lost)


def test_one_leader_the_other_waits_for_the_lease_to_expire_by_its_own_clock():
    async def go():
        store, clock = LeaseStore(), Clock()
        a, b = elector(store, "a", clock), elector(store, "b", clock)
        assert await a.try_acquire_or_renew()
        assert not await b.try_acquire_or_renew()
        clock.now += 10  # a renews in time: b sees a changed record and keeps waiting
        assert await a.try_acquire_or_renew()
        assert not await b.try_acquire_or_renew()
        clock.now += 14.9  # a is gone; not yet 15 s since b saw the record change
        assert not await b.try_acquire_or_renew()
        clock.now += 0.2
        assert await b.try_acquire_or_renew()
        assert store.lease["spec"]["holderIdentity"] == "b"
        assert store.lease["spec"]["leaseTransitions"] == 1
        # a comes back: it does not take the lease from b
        assert not await a.try_acquire_or_renew()
        return a, b

    _, b = asyncio.run(go())
    assert b.leading.is_set()


def test_two_candidates_racing_for_an_expired_lease_cannot_both_win():
    async def go():
        store, clock = LeaseStore(), Clock()
        old = elector(store, "old", clock)
        await old.try_acquire_or_renew()
        a, b = elector(store, "a", clock), elector(store, "b", clock)
        await a.try_acquire_or_renew()
        await b.try_acquire_or_renew()
        clock.now += 16
        results = await asyncio.gather(a.try_acquire_or_renew(), b.try_acquire_or_renew())
        return results

    assert sorted(asyncio.run(go())) == [False, True]


def test_a_leader_that_cannot_renew_within_the_deadline_steps_down():
    lost = []

    async def go():
        store, clock = LeaseStore(), Clock()
        fast = LeaseSettings(namespace="x", retry_period=0.01, renew_deadline=10)
        a = LeaderElector(store, fast, "a", clock=clock, on_lost=lambda: lost.append(1))
        task = asyncio.create_task(a.run())
        while not a.leading.is_set():
            await asyncio.sleep(0.01)
        store.down = True  # the API server goes away
        clock.now += 9
        await asyncio.sleep(0.05)
        assert a.leading.is_set() and not lost  # still within the renew deadline
        clock.now += 2
        await asyncio.wait_for(task, 1)
        return a

    a = asyncio.run(go())
    assert lost == [1] and not a.leading.is_set()


def test_a_leader_whose_renewal_hangs_steps_down_at_its_renew_deadline():
    """A call that never answers must not keep a leader admitting past the deadline."""
    lost = []

    class HangingStore(LeaseStore):
        hang = False

        async def get(self, path):
            if self.hang:
                await asyncio.sleep(3600)
            return await super().get(path)

        async def replace(self, path, body):
            if self.hang:
                await asyncio.sleep(3600)
            return await super().replace(path, body)

    async def go():
        store = HangingStore()
        fast = LeaseSettings(namespace="x", retry_period=0.01, renew_deadline=0.2)
        a = LeaderElector(store, fast, "a", on_lost=lambda: lost.append(1))
        task = asyncio.create_task(a.run())
        while not a.leading.is_set():
            await asyncio.sleep(0.01)
        store.hang = True
        await asyncio.wait_for(task, 2)  # returns once it has given up leading
        return a

    a = asyncio.run(go())
    assert lost == [1] and not a.leading.is_set()


def test_release_hands_the_lease_back_for_a_quick_takeover():
    async def go():
        store, clock = LeaseStore(), Clock()
        a, b = elector(store, "a", clock), elector(store, "b", clock)
        await a.try_acquire_or_renew()
        await b.try_acquire_or_renew()
        await a.release()
        clock.now += 1.5  # the released lease lasts 1 s
        return await b.try_acquire_or_renew()

    assert asyncio.run(go())


def test_a_hung_renewal_is_abandoned_in_time_to_retry_within_the_deadline():
    """One call that never answers (a dropped connection) must not cost the lease when the
    server is back before the deadline: the attempt gives up at half the deadline."""
    lost = []

    class OnceHangingStore(LeaseStore):
        hang_next = False

        async def get(self, path):
            if self.hang_next:
                self.hang_next = False
                await asyncio.sleep(3600)
            return await super().get(path)

    async def go():
        store = OnceHangingStore()
        fast = LeaseSettings(namespace="x", retry_period=0.05, renew_deadline=2.0)
        a = LeaderElector(store, fast, "a", on_lost=lambda: lost.append(1))
        task = asyncio.create_task(a.run())
        while not a.leading.is_set():
            await asyncio.sleep(0.01)
        store.hang_next = True
        await asyncio.sleep(2.5)  # past the deadline: it must have renewed after the hang
        task.cancel()
        return a

    a = asyncio.run(go())
    assert lost == [] and a.leading.is_set()


def test_a_restarted_container_of_the_same_pod_leads_again_after_a_short_grace(monkeypatch):
    """The identity is the pod's name when given: the Lease a crashed container held is found
    to be its own and taken after the grace (its last writes have had time to land), long
    before it would expire; a process of another pod must wait for the expiry."""
    from tas.runtime import leader

    monkeypatch.setenv("TAS_POD_NAME", "tas-operator-abc12")
    assert leader.default_identity() == "tas-operator-abc12"
    store, clock = LeaseStore(), Clock()

    async def go():
        crashed = LeaderElector(store, SETTINGS, clock=clock)
        assert await crashed.try_acquire_or_renew()
        restarted = LeaderElector(store, SETTINGS, clock=clock)  # same pod, new process
        other = LeaderElector(store, SETTINGS, identity="other-pod", clock=clock)
        assert not await restarted.try_acquire_or_renew()  # first sight: the grace starts
        assert not await other.try_acquire_or_renew()
        clock.now += SETTINGS.own_lease_grace - 0.1
        assert not await restarted.try_acquire_or_renew()
        clock.now += 0.2
        assert await restarted.try_acquire_or_renew()
        assert SETTINGS.own_lease_grace < SETTINGS.lease_duration
        assert not await other.try_acquire_or_renew()  # renewed: the other still waits

    asyncio.run(go())
    monkeypatch.delenv("TAS_POD_NAME")
    assert leader.default_identity() != leader.default_identity()  # random elsewhere


class CountingStore(LeaseStore):
    def __init__(self):
        super().__init__()
        self.reads = 0

    async def get(self, path):
        self.reads += 1
        return await super().get(path)


def test_the_leader_renews_without_reading_the_lease_first():
    """As client-go's leader: one write per renewal, guarded by the resourceVersion its last
    write returned; the acquire and holder stay as they were."""

    async def go():
        store, clock = CountingStore(), Clock()
        a = elector(store, "a", clock)
        assert await a.try_acquire_or_renew()
        reads, acquired = store.reads, store.lease["spec"]["acquireTime"]
        for _ in range(3):
            clock.now += 2
            assert await a.try_acquire_or_renew()
        assert store.reads == reads
        assert store.lease["spec"]["holderIdentity"] == "a"
        assert store.lease["spec"]["acquireTime"] == acquired
        assert a.time_left() == SETTINGS.renew_deadline

    asyncio.run(go())


def test_a_lease_written_by_another_since_is_read_and_not_overwritten():
    async def go():
        store, clock = CountingStore(), Clock()
        a = elector(store, "a", clock)
        assert await a.try_acquire_or_renew()
        store.lease["spec"]["holderIdentity"] = "b"  # b took it while a was stalled
        store.version += 1
        store.lease["metadata"]["resourceVersion"] = str(store.version)
        reads = store.reads
        assert not await a.try_acquire_or_renew()
        assert store.reads == reads + 1  # the conflict sent a back to reading the Lease
        assert store.lease["spec"]["holderIdentity"] == "b"
        assert a.time_left() < 0

    asyncio.run(go())


def test_a_failed_renewal_without_a_read_falls_back_to_reading():
    async def go():
        store, clock = CountingStore(), Clock()
        a = elector(store, "a", clock)
        assert await a.try_acquire_or_renew()
        store.down = True
        with contextlib.suppress(KubeError):  # the read that follows fails too
            await a.try_acquire_or_renew()
        store.down = False
        reads = store.reads
        clock.now += 2
        assert await a.try_acquire_or_renew()
        assert store.reads == reads + 1  # no written Lease kept from a failed write
        assert store.lease["spec"]["holderIdentity"] == "a"

    asyncio.run(go())


def test_a_write_answered_without_a_resource_version_is_not_reused_unguarded():
    """Only a reply naming a resourceVersion guards the next renewal; without one (a proxy,
    a fake), the next renewal reads the Lease first."""

    class NoVersionReplies(CountingStore):
        async def replace(self, path, body):
            written = await super().replace(path, body)
            del written["metadata"]["resourceVersion"]
            return written

    async def go():
        store, clock = NoVersionReplies(), Clock()
        a = elector(store, "a", clock)
        assert await a.try_acquire_or_renew()  # created: that reply has its version
        assert await a.try_acquire_or_renew()  # renewed without a read; the reply has none
        reads = store.reads
        assert await a.try_acquire_or_renew()
        assert store.reads == reads + 1

    asyncio.run(go())
