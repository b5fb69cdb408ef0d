"""What the webhooks read of the operator's cache, handed to their thread as a frozen copy.

The cache belongs to the operator's event loop: only that loop may touch it. The webhook
server answers on its own thread, so that no admission cycle holds a review. A review that
needs the cache (is a pod's controller admitted through a parent? which runtime does a
TrainJob name?) reads the latest `CacheView` instead: immutable, built on the operator's loop,
and published by one reference assignment, which a reader on any thread sees whole.

A view is rebuilt on the loop soon after the cache changes (`ViewPublisher.changed`, one of
the cache's listeners), and at least every BACKSTOP_SECONDS for what changes without telling
the listeners (owner links, looked-up objects). A rebuild copies every managed owner (about
2 ms for 50,000), so rebuilds are spaced to take at most BUDGET of the loop's time: with a
small cache that is at once, with 50,000 workloads about every 20 ms. Pods are created only
after their owner's Workload is admitted, long after the view has that owner.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

BUDGET = 0.1  # the largest share of the loop's time rebuilds may take
BACKSTOP_SECONDS = 1.0

_EMPTY: Mapping = MappingProxyType({})


@dataclass(frozen=True)
class CacheView:
    """The webhooks' read-only copy: owner uids whose pods are admitted with their owner (a
    Workload's controlling owner, or a child of an object we watch), and per GenericJob kind
    the objects its pod sets are built from (a TrainJob's runtimes)."""

    managed_owners: frozenset[str] = frozenset()
    looked_up: Mapping[str, Mapping[Any, Mapping]] = field(default_factory=lambda: _EMPTY)

    @classmethod
    def of(cls, owners: Iterable[str], looked_up: Mapping[str, Mapping[Any, Mapping]]) -> CacheView:
        """A frozen copy (the mappings given may be the cache's own, read on its loop)."""
        copies = {kind: MappingProxyType(dict(objects)) for kind, objects in looked_up.items()}
        return cls(frozenset(owners), MappingProxyType(copies))

    def managed_owner(self, uid: str | None) -> bool:
        return bool(uid) and uid in self.managed_owners

    def lookup(self, kind: str, ref: Hashable) -> Mapping | None:
        return self.looked_up.get(kind, _EMPTY).get(ref)


class ViewPublisher:
    """Keeps `current` (read from any thread) a recent copy of the cache, built by `build` on
    the operator's loop, the only place `build` may run."""

    def __init__(self, build: Callable[[], CacheView]) -> None:
        self._build = build
        self.current = CacheView()
        self._scheduled: asyncio.Handle | None = None
        self._next_at = 0.0  # monotonic: no rebuild before, to keep within BUDGET

    def publish(self) -> None:
        """Rebuild now (on the operator's loop)."""
        self._scheduled = None
        start = time.monotonic()
        self.current = self._build()  # one reference assignment: readers see old or new
        took = time.monotonic() - start
        self._next_at = start + took / BUDGET

    def changed(self) -> None:
        """The cache changed (a listener, on the loop): rebuild soon, once for many changes."""
        if self._scheduled is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # the cache changed outside a loop (a test, a CLI): build now
            self.publish()
            return
        delay = max(0.0, self._next_at - time.monotonic())
        self._scheduled = loop.call_later(delay, self.publish)

    async def run(self) -> None:
        """Publish now, then at least every BACKSTOP_SECONDS, until cancelled."""
        try:
            while True:
                self.publish()
                await asyncio.sleep(BACKSTOP_SECONDS)
        finally:
            if self._scheduled is not None:
                self._scheduled.cancel()
                self._scheduled = None
