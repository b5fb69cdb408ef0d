"""Long loops on the event loop give way now and then: lease renewal, the webhooks and the
liveness probe share that loop, and must never wait for one object's size, nor for the number
of objects (a cycle over 25,000 pending workloads would outlast the lease).

Two ways, one for each kind of loop:
- `paced(items)`: items of one small, even cost (a name hashed per replica) give way after
  every `YIELD_EVERY` of them;
- `Pacer.maybe_yield()` between items whose cost varies (a key handed to a worker takes a
  microsecond, an admission decision that searches for preemption victims tens of
  milliseconds): it gives way whenever the loop has held it for `SLICE` seconds.

The garbage collector stops the loop too: a full collection walks every object the process
holds (400 ms with 50,000 workloads cached). `settle_heap()` collects the young objects and
moves all that survive to the collector's permanent generation, so full collections walk only
what was made since. A pacer settles the heap when it yields, at most every `SETTLE_EVERY`
seconds; the runtime once the initial lists are in. The price: a reference cycle among settled
objects that later becomes garbage is not freed by those (refcounting frees all else). So once
the process's peak memory has grown `FULL_COLLECTION_GROWTH` times since the last full
collection, one runs over all of it: memory held by such cycles stays within a few times the
live heap, and the pause that walks the whole heap comes once per such growth (the collector's
own rule runs one per 25% of growth of the objects), never while the heap stays the same size.
(Counting the settled objects instead walks them all: 100 ms at 50,000 workloads.) bench/loop_stall_bench.py
reports the cycles left after its runs (none).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import heapq
import resource
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import Any, TypeVar

YIELD_EVERY = 256  # items between two chances for the loop's other tasks to run
SLICE = 0.005  # seconds a loop may hold the event loop before the others run
SORT_RUN = 2048  # items sorted in one step of sorted_paced
SETTLE_EVERY = 0.25  # seconds between two settlings of the heap by the pacers
# Growth of the peak memory that runs a full collection. Above what one cycle holds in flight:
# a status write per pending workload decided takes about 1.5 times what the cache holds for it.
FULL_COLLECTION_GROWTH = 4

T = TypeVar("T")

_settled_at = float("-inf")  # monotonic time of the last settle_heap()
_peak_after_full: int | None = None  # the process's peak memory after the last full collection


def settle_heap(initial: bool = False) -> None:
    """Free the young objects' reference cycles, then exempt every surviving object from the
    collector's full walks (see the module's docstring). Costs what the young objects cost,
    but for a full collection each time the peak memory has grown FULL_COLLECTION_GROWTH
    times. `initial`: memory as the initial lists left it, from which growth is counted."""
    global _settled_at, _peak_after_full
    gc.collect(1)
    gc.freeze()
    peak = _peak_memory()
    if initial or _peak_after_full is None:
        _peak_after_full = peak
    elif peak > FULL_COLLECTION_GROWTH * _peak_after_full:
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        _peak_after_full = peak
    _settled_at = time.monotonic()


@contextlib.contextmanager
def imports_uncollected(*, set_aside: bool = False) -> Iterator[None]:
    """No collection while the modules imported inside load, and (`set_aside`, once a process
    has loaded what it runs on) every object made so far kept out of later full walks. An
    import's objects live as long as the process: walking them only costs (about a tenth of
    the operator's start-up CPU before its first list)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
        if set_aside:
            gc.freeze()
    finally:
        if collecting:
            gc.enable()


def _peak_memory() -> int:
    """The process's peak resident memory (a system call; never walks the heap)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def settle_heap_now_and_then() -> None:
    """settle_heap() if the last one is `SETTLE_EVERY` seconds old."""
    if time.monotonic() - _settled_at >= SETTLE_EVERY:
        settle_heap()


async def paced(items: Iterable[T], every: int = YIELD_EVERY) -> AsyncIterator[T]:
    """`items`, giving way to the loop's other tasks after every `every` of them."""
    for index, item in enumerate(items):
        if index and index % every == 0:
            await asyncio.sleep(0)
        yield item


class Pacer:
    def __init__(self, slice_seconds: float = SLICE, clock: Callable[[], float] = time.monotonic):
        self.slice = slice_seconds
        self.clock = clock
        self._since = clock()
        self.yields = 0

    async def maybe_yield(self) -> None:
        """Let the loop's other tasks run once if this one has held it for a slice."""
        if self.clock() - self._since < self.slice:
            return
        settle_heap_now_and_then()
        await asyncio.sleep(0)
        self.yields += 1
        self._since = self.clock()


async def sorted_paced(items: list[T], key: Callable[[T], Any], pacer: Pacer) -> list[T]:
    """sorted(items, key=key), in steps between which the pacer may yield: runs of SORT_RUN
    items sorted one at a time, then merged (stable, as one sort is). One sort of 50,000
    pending workloads would hold the loop for 60 ms or more."""
    if len(items) <= SORT_RUN:
        return sorted(items, key=key)
    runs = []
    for start in range(0, len(items), SORT_RUN):
        await pacer.maybe_yield()
        runs.append(sorted(items[start : start + SORT_RUN], key=key))
    merged: list[T] = []
    for index, item in enumerate(heapq.merge(*runs, key=key)):
        if index % SORT_RUN == 0:
            await pacer.maybe_yield()
        merged.append(item)
    return merged
