"""Long loops on the event loop give way now and then: lease renewal, the webhooks and the
liveness probe share that loop, and must never wait for one object's size."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from typing import TypeVar

YIELD_EVERY = 256  # items between two chances for the loop's other tasks to run

T = TypeVar("T")


async def paced(items: Iterable[T], every: int = YIELD_EVERY) -> AsyncIterator[T]:
    """`items`, giving way to the loop's other tasks after every `every` of them."""
    for index, item in enumerate(items):
        if index and index % every == 0:
            await asyncio.sleep(0)
        yield item
