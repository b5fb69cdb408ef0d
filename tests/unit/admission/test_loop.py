import asyncio
import itertools

import tas.admission.loop as loop_module
from tas.admission.loop import AdmissionLoop
from tas.cache import projections as proj
from tas.kube import KubeError
from tas.kube.retry import Backoff
from tests.unit.admission.fixtures import RACK, cluster_queue, make_state, node, two_racks, workload


class FakeWriter:
    """Records writes; can be told to refuse the next one (a resourceVersion conflict)."""

    def __init__(self):
        self.statuses = []
        self.events = []
        self.cq = {}
        self.lq = {}
        self.refuse = 0
        self.raise_next: list[Exception] = []  # failures to raise, in order
        self.stored_then_raise: list[Exception] = []  # stored, but the answer is lost
        self.settle_raise: list[Exception] = []  # the read-back fails, in order
        self.settled = []
        self.on_stored = None  # (workload, status) -> None: what a read back would show

    async def write_status(self, wl, status):
        if self.raise_next:
            raise self.raise_next.pop(0)
        if self.stored_then_raise:
            self.statuses.append((wl.name, status))
            if self.on_stored:
                self.on_stored(wl, status)
            raise self.stored_then_raise.pop(0)
        if self.refuse:
            self.refuse -= 1
            return False
        self.statuses.append((wl.name, status))
        return True

    async def settle(self, wl):
        self.settled.append(wl.name)
        if self.settle_raise:
            raise self.settle_raise.pop(0)

    async def record_event(self, wl, type_, reason, message):
        self.events.append((wl.name, reason))

    async def write_cluster_queue_status(self, name, status):
        self.cq[name] = status

    async def write_local_queue_status(self, namespace, name, status):
        self.lq[(namespace, name)] = status


def admitted(writer):
    return [name for name, status in writer.statuses if "admission" in status]


_versions = itertools.count(100)


def add(state, obj):
    """A watched version of the Workload: the API server gives every version a new
    resourceVersion."""
    obj["metadata"]["resourceVersion"] = str(next(_versions))
    state.upsert_workload(proj.workload_from_object(obj))


def cycle(loop: AdmissionLoop) -> None:
    """One admission cycle, then the status writes it started."""

    async def go():
        await loop.cycle()
        await loop.drain()

    asyncio.run(go())


def test_higher_priority_first_then_older_and_capacity_is_never_given_twice():
    state = make_state(two_racks())
    add(
        state,
        workload(
            "old", pods=8, annotations_request={"required": RACK}, created="2026-01-01T00:00:00Z"
        ),
    )
    add(
        state,
        workload(
            "new", pods=8, annotations_request={"required": RACK}, created="2026-01-02T00:00:00Z"
        ),
    )
    add(
        state,
        workload(
            "vip",
            pods=8,
            annotations_request={"required": RACK},
            priority=10,
            created="2026-01-03T00:00:00Z",
        ),
    )
    writer = FakeWriter()
    cycle(AdmissionLoop(state, writer))
    assert admitted(writer) == ["vip", "old"]
    pending = [s for name, s in writer.statuses if name == "new"]
    assert pending and pending[0]["conditions"][0]["status"] == "False"
    assert writer.cq["cq"]["admittedWorkloads"] == 2 and writer.cq["cq"]["pendingWorkloads"] == 1
    assert writer.lq[("ns", "lq")] == {
        "pendingWorkloads": 1,
        "reservingWorkloads": 2,
        "admittedWorkloads": 2,
    }


def test_strict_fifo_does_not_let_a_later_workload_pass_the_head():
    state = make_state(two_racks(), cluster_queue(strict=True))
    add(state, workload("head", pods=20, created="2026-01-01T00:00:00Z"))  # never fits
    add(state, workload("small", pods=1, created="2026-01-02T00:00:00Z"))
    writer = FakeWriter()
    cycle(AdmissionLoop(state, writer))
    assert admitted(writer) == []
    state2 = make_state(two_racks())  # BestEffortFIFO lets it through
    add(state2, workload("head", pods=20, created="2026-01-01T00:00:00Z"))
    add(state2, workload("small", pods=1, created="2026-01-02T00:00:00Z"))
    writer2 = FakeWriter()
    cycle(AdmissionLoop(state2, writer2))
    assert admitted(writer2) == ["small"]


def test_a_failed_status_write_rolls_the_capacity_back():
    state = make_state(two_racks())
    add(state, workload("a", pods=16))
    writer = FakeWriter()
    writer.refuse = 1
    loop = AdmissionLoop(state, writer)
    cycle(loop)
    assert admitted(writer) == [] and not state.charges()
    cycle(loop)  # woken again: the next try succeeds, with the capacity still free
    assert admitted(writer) == ["a"]


def test_a_waiting_workload_is_retried_only_when_capacity_changes_and_written_once():
    state = make_state(two_racks())
    add(state, workload("big", pods=17))
    writer = FakeWriter()
    loop = AdmissionLoop(state, writer)
    cycle(loop)
    cycle(loop)
    assert len(writer.statuses) == 1  # the same message is not written again
    calls = []
    original = loop_module.decide
    loop_module.decide = lambda *a: calls.append(1) or original(*a)
    try:
        cycle(loop)
        assert calls == []  # nothing changed: not even tried
        state.upsert_node(proj.node_from_object(node("x5", "b1", "r3")))
        cycle(loop)
        assert calls == [1]
    finally:
        loop_module.decide = original
    assert admitted(writer) == ["big"]


def test_finished_workload_releases_its_capacity():
    state = make_state(two_racks())
    add(state, workload("a", pods=16))
    writer = FakeWriter()
    loop = AdmissionLoop(state, writer)
    cycle(loop)
    admitted_status = writer.statuses[-1][1]
    obj = workload("a", pods=16)
    obj["status"] = admitted_status
    add(state, obj)  # the watch shows the admission
    add(state, workload("b", pods=4))
    cycle(loop)
    assert admitted(writer) == ["a"]
    obj["status"]["conditions"].append({"type": "Finished", "status": "True"})
    add(state, obj)
    cycle(loop)
    assert admitted(writer) == ["a", "b"]


def test_an_admission_write_that_gets_no_answer_releases_its_capacity_and_backs_off():
    """A connection error or timeout is as much a failure as a refusal: once a read shows the
    write was not stored, the capacity assumed for the admission comes back, and the workload
    waits out its backoff."""
    state = make_state(two_racks())
    add(state, workload("a", pods=16))
    writer = FakeWriter()
    writer.raise_next = [KubeError(0, "connection reset"), KubeError(500, "etcd")]
    loop = AdmissionLoop(state, writer)
    cycle(loop)
    assert admitted(writer) == [] and not state.charges() and not state.is_assumed(("ns", "a"))
    assert writer.settled == ["a"]  # no answer: it was read back before the capacity went
    cycle(loop)  # at once: still backing off, so no second request
    assert len(writer.raise_next) == 1
    assert loop.write_failures == 1
    loop._retry_at.clear()  # the backoff is over (its timer would wake the loop)
    cycle(loop)
    assert admitted(writer) == [] and not state.charges() and loop.write_failures == 2
    loop._retry_at.clear()
    cycle(loop)
    assert admitted(writer) == ["a"]
    assert sum(state.quota_usage("cq", "tas").values()) > 0


def test_a_bug_during_an_admission_write_also_releases_the_capacity():
    state = make_state(two_racks())
    add(state, workload("a", pods=16))
    add(state, workload("b", pods=16))
    writer = FakeWriter()
    writer.raise_next = [RuntimeError("unexpected")]
    loop = AdmissionLoop(state, writer)
    cycle(loop)  # a is decided first and its write fails
    # a's capacity came back: b fits in it, in this cycle if the loop yielded after the
    # failed write (a busy machine stretches the cycle past a pacing slice), else in the next
    assert ("ns", "a") not in state.charges() and admitted(writer) in ([], ["b"])
    loop._retry_at.clear()
    cycle(loop)
    [landed] = admitted(writer)
    assert set(state.charges()) == {("ns", landed)}


def test_a_later_version_than_the_written_one_ends_the_assumption():
    """After a watch outage the relist may show a version after our write (here: admitted,
    then evicted, and the pods gone). The assumption must end there, or the workload would
    hold capacity twice and never be tried again."""
    state = make_state(two_racks())
    obj = workload("a", pods=16)
    add(state, obj)
    writer = FakeWriter()
    loop = AdmissionLoop(state, writer)

    async def go():
        await loop.cycle()  # assumed; the write is in flight
        assert state.is_assumed(("ns", "a"))
        await loop.drain()
        add(state, workload("a", pods=16))  # a later version, pending again, no admission
        assert not state.is_assumed(("ns", "a")) and not state.charges()
        add(state, workload("b", pods=16))
        await loop.cycle()
        await loop.drain()

    asyncio.run(go())
    assert len(admitted(writer)) == 2  # the freed capacity was given again, once


def test_the_same_version_seen_again_keeps_the_assumption():
    """A relist repeats the version the decision was made on: the write may still be in
    flight, so the capacity stays taken."""
    state = make_state(two_racks())
    obj = workload("a", pods=16)
    add(state, obj)
    loop = AdmissionLoop(state, FakeWriter())

    async def go():
        await loop.cycle()
        state.upsert_workload(proj.workload_from_object(obj))  # same resourceVersion
        return state.is_assumed(("ns", "a")), bool(state.charges())

    assert asyncio.run(go()) == (True, True)


def test_a_cluster_queue_deleted_during_a_cycle_does_not_stop_the_others():
    state = make_state(two_racks())
    state.upsert_cluster_queue(proj.cluster_queue_from_object(cluster_queue("other")))
    state.upsert_local_queue("ns", "lq-other", "other")
    add(state, workload("a", pods=4))
    other = workload("z", pods=4)
    other["spec"]["queueName"] = "lq-other"
    add(state, other)

    class DeletingWriter(FakeWriter):
        async def write_cluster_queue_status(self, name, status):
            await super().write_cluster_queue_status(name, status)
            state.delete_cluster_queue("other")  # gone while the first queue's write ran

    writer = DeletingWriter()
    loop = AdmissionLoop(state, writer)
    cycle(loop)
    # The queues' statuses are written after the decisions: the deleted queue's is skipped,
    # and the rest of the cycle goes on.
    assert "a" in admitted(writer) and ("ns", "lq") in writer.lq
    assert "cq" in writer.cq and "other" not in writer.cq


def test_writes_in_flight_are_cancelled_when_the_lease_is_lost_and_release_capacity():
    state = make_state(two_racks())
    add(state, workload("a", pods=4))

    class HangingWriter(FakeWriter):
        async def write_status(self, wl, status):
            await asyncio.sleep(3600)

    loop = AdmissionLoop(state, HangingWriter())

    async def go():
        await loop.cycle()
        await asyncio.sleep(0)  # the write has started and hangs
        assert state.is_assumed(("ns", "a"))
        loop.cancel_writes()
        await asyncio.wait_for(loop.drain(), 1)

    asyncio.run(go())
    assert not state.is_assumed(("ns", "a")) and not state.charges()


def test_bookkeeping_of_deleted_workloads_does_not_grow_without_bound():
    state = make_state(two_racks())
    loop = AdmissionLoop(state, FakeWriter())
    for i in range(600):  # none fits: each is remembered as tried, then deleted
        add(state, workload(f"w{i}", pods=100))
        cycle(loop)
        state.delete_workload("ns", f"w{i}")
    assert len(loop._tried) <= 2 * len(state.workloads) + 256 + 1


def test_a_failed_queue_status_write_is_retried_when_its_backoff_ends():
    """Queue statuses are remembered only once written, and a failure's timer wakes the loop."""
    state = make_state(two_racks())
    add(state, workload("a", pods=2))

    class FlakyQueues(FakeWriter):
        def __init__(self):
            super().__init__()
            self.fail = {"cq": 1, "lq": 1}

        async def write_cluster_queue_status(self, name, status):
            if self.fail["cq"]:
                self.fail["cq"] -= 1
                raise KubeError(0, "connection reset")
            await super().write_cluster_queue_status(name, status)

        async def write_local_queue_status(self, namespace, name, status):
            if self.fail["lq"]:
                self.fail["lq"] -= 1
                raise RuntimeError("a bug")  # not even a KubeError: the others still go out
            await super().write_local_queue_status(namespace, name, status)

    writer = FlakyQueues()
    loop = AdmissionLoop(state, writer)
    loop._backoff.backoff = Backoff(base=0.02, cap=0.05)

    async def go():
        loop.synced.set()
        runner = asyncio.create_task(loop.run())
        loop.wake()
        for _ in range(200):  # no further event: only the backoff timers can wake the loop
            await asyncio.sleep(0.01)
            if writer.cq and writer.lq:
                break
        runner.cancel()
        await loop.drain()

    asyncio.run(go())
    assert admitted(writer) == ["a"]
    assert writer.cq["cq"]["admittedWorkloads"] == 1
    assert writer.lq[("ns", "lq")]["admittedWorkloads"] == 1
    assert loop.write_failures == 2


def test_an_admission_stored_without_an_answer_never_gives_its_capacity_to_another():
    """The API server stored the admission, then the answer was lost (it restarted, or the
    wait timed out). Read back, the stored status charges the capacity; it is never given to
    a second workload meanwhile, even while the read itself keeps failing."""
    state = make_state(two_racks())
    obj = workload("a", pods=8)  # 8 of the cluster's 16 cpu
    add(state, obj)
    add(state, workload("b", pods=8))
    add(state, workload("c", pods=8))  # room for two of the three
    writer = FakeWriter()
    stored = {}

    def remember(wl, status):
        stored[wl.name] = status

    writer.on_stored = remember
    writer.stored_then_raise = [KubeError(0, "ServerDisconnectedError")]
    writer.settle_raise = [KubeError(0, "connection refused", sent=False)] * 3
    loop = AdmissionLoop(state, writer)
    loop_module.SETTLE_BACKOFF = Backoff(base=0.001, cap=0.001)

    async def go():
        await loop.cycle()  # a: stored, no answer; b: admitted beside it
        for _ in range(5):  # the reads fail meanwhile: cycles must not reuse a's capacity
            loop._retry_at.clear()
            await loop.cycle()
            await asyncio.sleep(0)
        assert state.is_assumed(("ns", "a"))
        await loop.drain()
        # The read back succeeded and found the stored admission: the watch's view of it.
        assert writer.settled == ["a"] * 4
        landed = dict(obj, status=stored["a"])
        add(state, landed)
        loop._retry_at.clear()
        await loop.cycle()
        await loop.drain()

    try:
        asyncio.run(go())
    finally:
        loop_module.SETTLE_BACKOFF = Backoff(base=0.5, cap=10.0)
    assert sorted(name for name in admitted(writer)) == ["a", "b"]  # never c: no room for it
    assert set(state.charges()) == {("ns", "a"), ("ns", "b")}


def test_a_write_refused_before_it_was_sent_releases_at_once():
    """Connection refused: nothing reached the API server, so nothing needs reading back."""
    state = make_state(two_racks())
    add(state, workload("a", pods=16))
    writer = FakeWriter()
    writer.raise_next = [KubeError(0, "connection refused", sent=False)]
    loop = AdmissionLoop(state, writer)
    cycle(loop)
    assert writer.settled == [] and not state.is_assumed(("ns", "a")) and not state.charges()


def test_a_watch_lagging_behind_a_version_read_after_a_conflict_never_frees_capacity_twice():
    """The chaos run's double booking: a pending-status write of `a` is refused (409) and `a`
    is read again, newer than the watch has shown. `a` is then admitted on that version and
    the write lands. The watch, lagging, now shows an older version of `a` (pending): taking it
    would end the assumption, free `a`'s capacity and admit `b` onto it."""
    state = make_state(two_racks())
    obj = workload("a", pods=16)  # the whole cluster
    add(state, obj)
    older = dict(obj, metadata=dict(obj["metadata"]))  # what the watch will show late
    # read after a 409: newer than any version the watch has shown (whatever ran before)
    read_again = str(next(_versions))
    newer = dict(obj, metadata=dict(obj["metadata"], resourceVersion=read_again))
    state.upsert_workload(proj.workload_from_object(newer))
    writer = FakeWriter()
    loop = AdmissionLoop(state, writer)

    async def go():
        await loop.cycle()
        await loop.drain()  # a's admission has landed; its watch event has not arrived yet
        assert state.assumed_on(("ns", "a")) == read_again
        state.upsert_workload(proj.workload_from_object(older))  # the lagging watch
        add(state, workload("b", pods=16))
        await loop.cycle()
        await loop.drain()

    asyncio.run(go())
    assert admitted(writer) == ["a"]
    assert state.workloads[("ns", "a")].resource_version == read_again
    assert state.is_assumed(("ns", "a"))


def test_a_pending_status_refused_as_stale_is_written_on_the_next_cycle():
    """Kueue marks every workload it cannot admit Pending. A refused write (409: the Workload
    changed meanwhile, e.g. a label) must not leave it without the condition while nothing
    else changes in the cluster."""
    state = make_state(two_racks())
    add(state, workload("big", pods=17))
    writer = FakeWriter()
    writer.refuse = 1
    loop = AdmissionLoop(state, writer)
    cycle(loop)
    assert writer.statuses == []  # refused as stale
    cycle(loop)
    assert [name for name, _ in writer.statuses] == ["big"]
    cycle(loop)
    assert len(writer.statuses) == 1  # written once, not again


def test_a_pending_status_that_failed_is_written_once_its_backoff_ends():
    state = make_state(two_racks())
    add(state, workload("big", pods=17))
    writer = FakeWriter()
    writer.raise_next = [KubeError(500, "boom")]
    loop = AdmissionLoop(state, writer)
    cycle(loop)
    assert writer.statuses == []
    loop._retry_at.clear()  # the backoff has ended
    cycle(loop)
    assert [name for name, _ in writer.statuses] == ["big"]


def test_the_first_decisions_are_known_once_the_first_cycles_writes_are_answered():
    """A restart loads what only later steps need after this: never before the first
    admission's write has its answer, and never while no cycle has run."""
    state = make_state(two_racks())
    add(state, workload("a", pods=2))
    answer = asyncio.Event()

    class SlowWriter(FakeWriter):
        async def write_status(self, wl, status):
            await answer.wait()
            return await super().write_status(wl, status)

    writer = SlowWriter()
    loop = AdmissionLoop(state, writer)

    async def go():
        first = asyncio.create_task(loop.first_decisions())
        loop.synced.set()
        await asyncio.sleep(0.05)
        before_cycle = first.done()
        runner = asyncio.create_task(loop.run())
        loop.wake()
        await asyncio.sleep(0.05)
        while_writing = first.done()
        answer.set()
        await asyncio.wait_for(first, 1)
        runner.cancel()
        await loop.drain()
        return before_cycle, while_writing

    assert asyncio.run(go()) == (False, False)
    assert admitted(writer) == ["a"]
