"""Long loops on the event loop give way now and then: lease renewal, the webhooks and the
liveness probe share that loop, and must never wait for one object's size, nor for the number
of objects (a cycle over 25,000 pending workloads would outlast the lease).

Two ways, one for each kind of loop:
- `paced(items)`: items of one small, even cost (a name hashed per replica) give way after
  every `YIELD_EVERY` of them;
- `Pacer.maybe_yield()` between items whose cost varies (a key handed to a worker takes a
  microsecond, an admission decision that searches for preemption victims tens of
  milliseconds): it gives way whenever the loop has held it for `SLICE` seconds.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterable
from typing import TypeVar

YIELD_EVERY = 256  # items between two chances for the loop's other tasks to run
SLICE = 0.005  # seconds a loop may hold the event loop before the others run

T = TypeVar("T")


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
        await asyncio.sleep(0)
        self.yields += 1
        self._since = self.clock()
