"""The keyed worker: bounded concurrency, folding, and a backoff no event can cut short."""

import asyncio
import itertools
import time

from tas.kube import KubeError
from tas.kube.retry import Backoff
from tas.runtime.serial import SerialWorker


def run(coro):
    return asyncio.run(coro)


def test_a_failing_key_is_not_retried_faster_than_its_backoff_however_busy_its_events() -> None:
    calls: list[float] = []

    async def handle(key):
        calls.append(time.monotonic())
        raise KubeError(500, "boom")

    async def go():
        worker = SerialWorker("w", handle, backoff=Backoff(base=0.2, cap=0.4))
        worker.started.set()
        task = asyncio.create_task(worker.run())
        end = time.monotonic() + 1.2
        while time.monotonic() < end:  # an event storm for the same key
            worker.submit("k")
            await asyncio.sleep(0.001)
        task.cancel()

    run(go())
    # 1.2 s at >= 0.1 s (half the first ceiling) between tries, at most 0.4 s later on.
    assert 3 <= len(calls) <= 13, len(calls)
    gaps = [b - a for a, b in itertools.pairwise(calls)]
    assert min(gaps) >= 0.09


def test_an_event_during_a_failing_call_does_not_skip_the_backoff() -> None:
    calls: list[float] = []

    async def handle(key):
        calls.append(time.monotonic())
        worker.submit(key)  # the object changes while its write is in flight
        await asyncio.sleep(0)
        raise KubeError(500, "boom")

    async def go():
        task = asyncio.create_task(worker.run())
        worker.submit("k")
        await asyncio.sleep(0.5)
        task.cancel()

    worker = SerialWorker("w", handle, backoff=Backoff(base=1.0, cap=2.0))
    worker.started.set()
    run(go())
    assert len(calls) == 1, [round(b - a, 3) for a, b in itertools.pairwise(calls)]


def test_retry_after_from_the_server_is_waited_out() -> None:
    calls: list[float] = []

    async def handle(key):
        calls.append(time.monotonic())
        if len(calls) == 1:
            raise KubeError(429, "slow down", retry_after=0.5)

    async def go():
        worker = SerialWorker("w", handle, backoff=Backoff(base=0.01, cap=0.02))
        worker.started.set()
        task = asyncio.create_task(worker.run())
        worker.submit("k")
        while len(calls) < 2:
            worker.submit("k")
            await asyncio.sleep(0.01)
        task.cancel()

    run(go())
    assert calls[1] - calls[0] >= 0.49


def test_the_same_key_never_runs_twice_at_once_and_a_change_meanwhile_is_not_lost() -> None:
    running: set[str] = set()
    overlaps = []
    seen: list[str] = []
    peak = 0

    async def handle(key):
        nonlocal peak
        if key in running:
            overlaps.append(key)
        running.add(key)
        peak = max(peak, len(running))
        seen.append(key)
        await asyncio.sleep(0.02)
        running.discard(key)

    async def go():
        worker = SerialWorker("w", handle, concurrency=3)
        worker.started.set()
        task = asyncio.create_task(worker.run())
        for key in "abcdef":
            worker.submit(key)
        await asyncio.sleep(0.005)
        worker.submit("a")  # while "a" runs: must run again afterwards
        while not worker.idle:
            await asyncio.sleep(0.01)
        task.cancel()

    run(go())
    assert not overlaps
    assert peak == 3
    assert sorted(seen) == sorted("abcdefa")


def test_a_bug_in_one_key_does_not_stop_the_others() -> None:
    done = []

    async def handle(key):
        if key == "bad":
            raise ValueError("bug")
        done.append(key)

    async def go():
        worker = SerialWorker("w", handle, backoff=Backoff(base=10, cap=10))
        worker.started.set()
        task = asyncio.create_task(worker.run())
        for key in ("bad", "x", "y"):
            worker.submit(key)
        while len(done) < 2:
            await asyncio.sleep(0.01)
        assert not task.done()  # the worker lives on
        task.cancel()
        return worker

    worker = run(go())
    assert done == ["x", "y"] and worker.failed == 1


def test_retry_now_hands_on_a_key_waiting_out_its_backoff_at_once() -> None:
    """After a restart our Job webhooks are served after the first admission: a Job's start
    refused meanwhile goes again as soon as they are, not after its backoff."""
    calls: list[str] = []

    async def handle(key):
        calls.append(key)
        if len(calls) == 1:
            raise KubeError(500, "failed calling webhook: connection refused")

    async def go():
        worker = SerialWorker("w", handle, backoff=Backoff(base=60.0, cap=60.0))
        worker.started.set()
        task = asyncio.create_task(worker.run())
        worker.submit("k")
        await asyncio.sleep(0.05)
        tried_once = list(calls)
        retried = worker.retry_now()
        await asyncio.wait_for(worker.through(retried), 5)
        task.cancel()
        return tried_once, retried, worker

    tried_once, retried, worker = run(go())
    assert tried_once == ["k"] and retried == ["k"]  # failed: waiting 30-60 s
    assert calls == ["k", "k"] and worker.idle
    assert "k" not in worker.retries.failures  # it succeeded: its backoff is forgotten


def test_through_returns_once_the_keys_are_handled_not_before() -> None:
    async def go():
        gate = asyncio.Event()
        handled: list[str] = []

        async def handle(key):
            if key == "slow":
                await gate.wait()
            handled.append(key)

        worker = SerialWorker("w", handle, concurrency=2)
        worker.started.set()
        task = asyncio.create_task(worker.run())
        worker.submit("slow")
        worker.submit("fast")
        waiting = asyncio.create_task(worker.through(["slow", "fast"]))
        await asyncio.sleep(0.05)
        before = (waiting.done(), list(handled))
        gate.set()
        await asyncio.wait_for(waiting, 5)
        task.cancel()
        return before, handled

    before, handled = run(go())
    assert before == (False, ["fast"])
    assert sorted(handled) == ["fast", "slow"]


def test_a_key_in_flight_at_retry_now_that_fails_goes_again_at_once() -> None:
    """Its request may have been refused by our webhooks just before they came up."""
    calls: list[str] = []
    gate = None

    async def handle(key):
        calls.append(key)
        if len(calls) == 1:
            await gate.wait()
            raise KubeError(500, "failed calling webhook: connection refused")

    async def go():
        nonlocal gate
        gate = asyncio.Event()
        worker = SerialWorker("w", handle, backoff=Backoff(base=60.0, cap=60.0))
        worker.started.set()
        task = asyncio.create_task(worker.run())
        worker.submit("k")
        await asyncio.sleep(0.05)
        retried = worker.retry_now()  # "k" is in flight
        gate.set()
        await asyncio.wait_for(worker.through(retried), 5)
        task.cancel()
        return retried, worker

    retried, worker = run(go())
    assert retried == ["k"]
    assert calls == ["k", "k"] and worker.idle and worker.failed == 1
