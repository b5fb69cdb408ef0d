"""A serial worker: keys in, one async handler call at a time, duplicates folded.

Events for the same key that arrive while it waits are folded into one call; a key that
arrives while it is being handled is handled again afterwards, so no change is missed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable

log = logging.getLogger(__name__)


class SerialWorker:
    def __init__(self, name: str, handle: Callable[[Hashable], Awaitable[None]]) -> None:
        self.name = name
        self._handle = handle
        self._pending: dict[Hashable, None] = {}  # insertion-ordered set
        self._wake = asyncio.Event()
        self.started = asyncio.Event()  # handling begins once the caches are synced
        self._failures: dict[Hashable, int] = {}

    def submit(self, key: Hashable) -> None:
        self._pending[key] = None
        self._wake.set()

    async def run(self) -> None:
        await self.started.wait()
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                key = next(iter(self._pending))
                del self._pending[key]
                try:
                    await self._handle(key)
                    self._failures.pop(key, None)
                except Exception:  # one bad object must not stop the others
                    failures = self._failures[key] = self._failures.get(key, 0) + 1
                    delay = min(30.0, 0.5 * 2**failures)
                    log.exception(
                        "%s: handling %s failed; retrying in %.1fs", self.name, key, delay
                    )
                    asyncio.get_running_loop().call_later(delay, self.submit, key)

    @property
    def idle(self) -> bool:
        return not self._pending
