"""A keyed worker: keys in, an async handler call per key, duplicates folded.

Events for a key that arrive while it waits are folded into one call; a key that arrives while
it is being handled is handled again afterwards, so no change is missed. Up to `concurrency`
different keys are handled at once, never the same key twice at once: handlers read the newest
state from the cache when they run, so folding loses nothing.

A key whose handler fails waits out a capped, jittered backoff (or the server's Retry-After)
before it is handled again; events for it meanwhile do not cut the wait short, so a failing
object cannot storm the API server however busy its watch is. Only `retry_now` does, once what
the keys failed on is known to be back (our own webhooks, served after a restart).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

from tas.kube.retry import Backoff, PerKeyBackoff

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)  # what one handler call is for: a name, a (namespace, name)


class SerialWorker(Generic[K]):
    def __init__(
        self,
        name: str,
        handle: Callable[[K], Awaitable[None]],
        *,
        concurrency: int = 1,
        backoff: Backoff | None = None,
    ) -> None:
        self.name = name
        self._handle = handle
        self.concurrency = concurrency
        self._pending: dict[K, None] = {}  # insertion-ordered set
        self._running: set[K] = set()
        self._waiting: dict[K, asyncio.TimerHandle] = {}  # backing off: each one's retry
        self._again_at_once: set[K] = set()  # being handled when retry_now was called
        self._wake = asyncio.Event()
        self._finished = asyncio.Event()  # set each time a handler call ends
        self.started = asyncio.Event()  # handling begins once the caches are synced (and leading)
        self.retries = PerKeyBackoff(backoff or Backoff(base=0.5, cap=30.0))
        self.handled = 0
        self.failed = 0

    def submit(self, key: K) -> None:
        if key in self._waiting:
            return  # its retry is already scheduled and will read the newest state
        self._pending[key] = None
        self._wake.set()

    async def run(self) -> None:
        await self.started.wait()
        await asyncio.gather(*(self._consume() for _ in range(self.concurrency)))

    async def _next(self) -> K:
        while True:
            for key in self._pending:
                if key not in self._running:
                    del self._pending[key]
                    return key
            self._wake.clear()
            await self._wake.wait()

    async def _consume(self) -> None:
        while True:
            key = await self._next()
            self._running.add(key)
            try:
                await self._handle(key)
                self.retries.succeeded(key)
                self.handled += 1
            except Exception as exc:  # one bad object must not stop the others
                self._failed(key, exc)
            finally:
                self._again_at_once.discard(key)
                self._running.discard(key)
                self._finished.set()
                if key in self._pending:
                    self._wake.set()

    def _failed(self, key: K, exc: Exception) -> None:
        self.failed += 1
        delay = self.retries.failed(key, getattr(exc, "retry_after", None))
        # Being handled when retry_now was called: it may have failed on what is back now.
        if key in self._again_at_once:
            delay = 0.0
        log.warning("%s: handling %s failed (%s); retrying in %.1fs", self.name, key, exc, delay)
        log.debug("%s: %s failure", self.name, key, exc_info=True)
        self._pending.pop(key, None)  # an event during the call must not skip the wait
        if delay:
            self._waiting[key] = asyncio.get_running_loop().call_later(delay, self._retry, key)
        else:
            self._pending[key] = None

    def _retry(self, key: K) -> None:
        self._waiting.pop(key, None)
        self.submit(key)

    def retry_now(self) -> list[K]:
        """Every key waiting out a backoff is handled again now, and one being handled is
        handled again at once if it fails (its backoff grows as before if it fails again).
        Returns those keys."""
        waiting = list(self._waiting)
        for key in waiting:
            self._waiting.pop(key).cancel()
            self.submit(key)
        self._again_at_once.update(self._running)
        return [*waiting, *self._running]

    async def through(self, keys: list[K]) -> None:
        """Returns once none of `keys` is queued or being handled: each was handled (or failed
        into a backoff) since they were submitted."""
        while any(key in self._pending or key in self._running for key in keys):
            self._finished.clear()
            await self._finished.wait()

    @property
    def idle(self) -> bool:
        return not self._pending and not self._running
