"""A deposed leader sends no write: the leader's writers use a client fenced by the lease.

Leader election alone does not stop a deposed leader from writing: client-go's says so itself
("does not guarantee that only one client is acting as a leader (a.k.a. fencing)"), and
controller-runtime (Kueue's) relies on exiting once the lease is lost, with the renewal on its
own goroutine. Here the renewal shares one event loop with everything else, so a write decided
while this replica led can wait (a long admission cycle, a stopped process, a full connection
pool) and be sent after a standby has taken over. Guarded only by its own object's
resourceVersion, it would land beside the new leader's decisions and give the same capacity
twice.

So every write of the leader's workers (Workload status, Jobs, pods, events, ...) goes through a
FencedKube: just before the request is handed to the client, the lease must be held and inside
its renew deadline, and the request gets no longer than what is left of it. Reads, the lease's
own writes and the webhook certificate's (which every replica makes) use the plain client.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import aiohttp

from tas.kube import Kube, KubeError


class NotLeading(KubeError):
    """A write refused before it was sent: this replica may no longer lead. Nothing was sent,
    so what the write would have decided can be given back at once."""

    def __init__(self, method: str, path: str) -> None:
        super().__init__(
            0,
            f"{method} {path}: not sent: this replica does not hold the lease "
            "or its renewal is overdue",
            sent=False,
        )


class FencedKube(Kube):
    """The leader's view of a Kube: the same session and counters, every write fenced by
    `time_left` (seconds this replica may still lead: LeaderElector.time_left)."""

    def __init__(self, kube: Kube, time_left: Callable[[], float]) -> None:
        # Not Kube.__init__: the view owns no session. Whatever it does not define is the
        # wrapped client's (__getattr__), and each of Kube's calls (get, patch, create,
        # replace, delete, event) goes through `request` below.
        self.kube = kube
        self.time_left = time_left
        self.refused = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.kube, name)

    def session(self) -> aiohttp.ClientSession:
        return self.kube.session()

    async def close(self) -> None:
        """The wrapped client is its owner's to close."""

    def stream_lines(
        self, path: str, params: Mapping[str, str], timeout: float
    ) -> AsyncIterator[bytes]:
        return self.kube.stream_lines(path, params, timeout)

    async def request(
        self,
        method: str,
        path: str,
        body: object = None,
        content_type: str | None = None,
        *,
        params: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> Any:
        if method != "GET":
            left = self.time_left()
            if left <= 0:
                self.refused += 1
                raise NotLeading(method, path)
            # One still waiting for a connection at the deadline is never sent after it.
            timeout = min(timeout or self.kube.timeout, left)
        return await self.kube.request(
            method, path, body, content_type, params=params, timeout=timeout
        )
