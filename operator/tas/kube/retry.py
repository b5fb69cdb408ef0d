"""Capped exponential backoff with jitter: how long to wait before trying a failed call again.

The exponent is capped before it is raised, so no count of failures can overflow; the jitter
keeps many failing objects from retrying in lock step against a struggling API server.
"""

from __future__ import annotations

import random
from collections.abc import Hashable
from dataclasses import dataclass, field

MAX_EXPONENT = 16  # 2**16 times the base is far past any cap; keeps the float finite
MAX_RETRY_AFTER = 300.0  # a server (or a proxy) cannot park an object for longer than this


@dataclass
class Backoff:
    base: float = 0.2
    cap: float = 30.0
    rng: random.Random = field(default_factory=random.Random)

    def delay(self, failures: int, retry_after: float | None = None) -> float:
        """Seconds to wait after the `failures`-th failure in a row (1 = first), never below a
        server's Retry-After and never above the cap (unless Retry-After says longer)."""
        ceiling = min(self.cap, self.base * 2 ** min(max(failures - 1, 0), MAX_EXPONENT))
        delay = ceiling / 2 + self.rng.uniform(0, ceiling / 2)  # "equal jitter"
        if retry_after is not None:
            delay = max(delay, min(retry_after, MAX_RETRY_AFTER))
        return delay


class PerKeyBackoff:
    """Failure counts per object: each object backs off on its own, success forgets it."""

    def __init__(self, backoff: Backoff | None = None) -> None:
        self.backoff = backoff or Backoff()
        self.failures: dict[Hashable, int] = {}

    def failed(self, key: Hashable, retry_after: float | None = None) -> float:
        count = self.failures[key] = min(self.failures.get(key, 0) + 1, 1_000_000)
        return self.backoff.delay(count, retry_after)

    def succeeded(self, key: Hashable) -> None:
        self.failures.pop(key, None)
