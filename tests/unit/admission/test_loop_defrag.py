"""The admission loop's side of defragmentation (gate TASDefragmentation): the planned
workloads evicted with reason Defragmented and requeued, the gang's room held until their
pods are gone, and nothing moved that did not opt in."""

from __future__ import annotations

import asyncio

import pytest

from tas.admission.loop import AdmissionLoop
from tas.admission.moves import DefragRules
from tas.api.movable import Movable
from tests.unit.admission.fixtures import RACK, cluster_queue, workload
from tests.unit.admission.test_loop import add, admitted
from tests.unit.admission.test_loop_preemption import Cluster

MOVABLE = {"tas-operator.io/movable": "true", "tas-operator.io/movable-after": "0s"}


def job(name: str, pods: int, annotations: dict | None = None, rack: bool = True) -> dict:
    obj = workload(name, pods=pods, annotations_request={"required": RACK} if rack else None)
    if annotations:
        obj["metadata"]["annotations"] = dict(annotations)
    return obj


def scattered(enabled: bool = True, small: dict | None = MOVABLE) -> Cluster:
    """Rack r1 holds `big` (6 of 8 pods), rack r2 the 1-pod `small` alone: a gang of 8 that
    requires a rack fits nowhere, but would once `small` moved to r1."""
    c = Cluster(cluster_queue())
    c.loop = AdmissionLoop(c.state, c.writer, defrag=DefragRules(enabled=enabled))
    c.submit(job("big", 6))
    c.cycle()
    c.submit(job("filler", 7))
    c.cycle()
    c.submit(job("small", 1, small, rack=False))
    c.cycle()
    assert sorted(admitted(c.writer)) == ["big", "filler", "small"]
    c.state.delete_workload("ns", "filler")
    return c


def hosts(c: Cluster, name: str) -> set[str]:
    assignment = c.state.charges()[("ns", name)].pod_sets[0].assignment
    return {d.values[-1] for d in assignment.domains}


def test_the_movable_workload_moves_and_the_gang_gets_a_whole_rack() -> None:
    c = scattered()
    assert hosts(c, "small") <= {"x3", "x4"}
    c.submit(job("gang", 8))
    c.cycle()
    evicted = c.condition("small", "Evicted")
    assert (evicted["status"], evicted["reason"]) == ("True", "Defragmented")
    assert ("small", "EvictedDueToDefragmented") in c.writer.events
    assert c.condition("big", "Evicted") is None  # did not opt in
    pending = c.condition("gang", "QuotaReserved")["message"]
    assert pending.endswith("Pending the move of 1 workload(s)")
    assert "gang" not in admitted(c.writer)

    writes = len(c.writer.statuses)
    c.cycle()  # its pods are still there: not evicted twice, the room still held
    assert [n for n, _ in c.writer.statuses[writes:] if n == "small"] == []

    c.release("small")
    c.cycle()
    c.cycle()
    c.cycle()
    assert "gang" in admitted(c.writer)
    assert hosts(c, "gang") == {"x3", "x4"}
    requeued = c.condition("small", "Requeued")
    assert requeued["status"] == "True" and requeued["reason"] == "Defragmented"
    placed = [n for n, status in c.writer.statuses if status.get("admission")]
    assert placed.count("small") == 2  # admitted again, on the other rack
    assert hosts(c, "small") <= {"x1", "x2"}


@pytest.mark.parametrize(
    ("enabled", "small", "why"),
    [
        pytest.param(False, MOVABLE, None, id="gate-off"),
        pytest.param(True, None, "No defragmentation", id="not-movable"),
        pytest.param(
            True, {"tas-operator.io/movable": "true"}, "No defragmentation", id="too-young"
        ),
    ],
)
def test_nothing_moves(enabled: bool, small: dict | None, why: str | None) -> None:
    c = scattered(enabled, small)
    c.submit(job("gang", 8))
    c.cycle()
    assert c.condition("small", "Evicted") is None and c.condition("big", "Evicted") is None
    message = c.condition("gang", "QuotaReserved")["message"]
    assert (why in message) if why else ("defragmentation" not in message)


def test_a_bad_annotation_is_refused_naming_it() -> None:
    c = Cluster(cluster_queue())
    c.loop = AdmissionLoop(c.state, c.writer, defrag=DefragRules(enabled=True))
    c.submit(job("odd", 1, {"tas-operator.io/movable-after": "soon"}))
    c.cycle()
    reserved = c.condition("odd", "QuotaReserved")
    assert reserved["reason"] == "Inadmissible"
    assert "tas-operator.io/movable-after" in reserved["message"]


def test_a_local_queue_default_makes_its_workloads_movable() -> None:
    c = scattered(small=None)
    c.state.upsert_local_queue("ns", "lq", "cq", Movable(True, 0.0))
    c.submit(job("gang", 8))
    c.cycle()
    assert c.condition("small", "Evicted")["reason"] == "Defragmented"
    assert c.condition("big", "Evicted") is None  # movable too, but one move is enough


def test_a_plan_whose_workload_changed_is_given_up_and_made_again() -> None:
    c = scattered()
    c.submit(job("gang", 8))
    c.writer.refuse = 1  # the move's write: the workload changed since the plan (409)
    c.cycle()
    assert c.condition("small", "Evicted") is None
    message = c.condition("gang", "QuotaReserved")["message"]
    assert "changed under the defragmentation plan" in message
    # the gang holds no room until a plan is made again
    assert not c.loop._holds._holds
    c.cycle()  # planned again on the world as it is now
    assert c.condition("small", "Evicted")["reason"] == "Defragmented"


def test_a_gang_is_planned_for_again_once_a_workload_may_move() -> None:
    young = {"tas-operator.io/movable": "true", "tas-operator.io/movable-after": "2s"}
    c = scattered(small=young)
    c.submit(job("gang", 8))

    async def cycle() -> None:
        await c.loop.cycle()
        await c.loop.drain()
        for name, status in c.writer.statuses[c.seen :]:
            obj = c.objects[name]
            obj["status"] = {**obj.get("status", {}), **status}
            add(c.state, obj)
        c.seen = len(c.writer.statuses)

    async def go() -> None:
        await cycle()  # too young: nothing moves, and nothing in the cluster changes after
        assert c.condition("small", "Evicted") is None
        assert ("ns", "gang") in c.loop._tried  # not decided again unless something says so
        c.loop._wake.clear()
        await asyncio.wait_for(c.loop._wake.wait(), timeout=4)  # the timer for movable-after
        assert ("ns", "gang") not in c.loop._tried
        await cycle()

    asyncio.run(go())
    assert c.condition("small", "Evicted")["reason"] == "Defragmented"


def test_a_gang_decided_again_and_again_keeps_one_timer_the_earliest() -> None:
    """Every capacity change decides a waiting gang again; its retry timers must not pile up."""
    c = scattered(small={"tas-operator.io/movable": "true", "tas-operator.io/movable-after": "5s"})
    c.submit(job("gang", 8))

    async def go() -> tuple[int, float, int]:
        loop = asyncio.get_running_loop()
        for _ in range(20):
            c.loop._tried.pop(("ns", "gang"), None)  # as a capacity change does
            c.loop._planned.clear()  # a new cycle
            await c.loop.cycle()
            await c.loop.drain()
        timers = [t for t in c.loop._decide_timers.values() if not t.cancelled()]
        c.loop._decide_again_in(("ns", "gang"), 60.0)  # a later deadline: the earlier stays
        kept = c.loop._decide_timers[("ns", "gang")].when() - loop.time()
        c.loop._decide_again_in(("ns", "gang"), 0.5)  # an earlier one replaces it
        earlier = c.loop._decide_timers[("ns", "gang")].when() - loop.time()
        for timer in c.loop._decide_timers.values():
            timer.cancel()
        return len(timers), kept, int(earlier < 1.0)

    count, kept, earlier = asyncio.run(go())
    assert count == 1
    assert kept < 6.0 and earlier == 1
