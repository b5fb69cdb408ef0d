"""Long loops on the event loop hand it back now and then.

Everything runs on one asyncio loop: the admission cycle, the watches, lease renewal, the
webhooks and the liveness probe. A loop over thousands of objects that awaits nothing that
suspends keeps all of them waiting: a cycle over 25,000 pending workloads would outlast the
lease. Such a loop calls `await pacer.maybe_yield()` between items; whenever it has held the
loop for a slice, the others run once before it goes on. Time, not a count of items, decides:
an item may cost a microsecond (a key handed to a worker) or tens of milliseconds (a decision
that searches for preemption victims).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

SLICE = 0.005  # seconds a loop may hold the event loop before it lets the others run


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
