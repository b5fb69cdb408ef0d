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
FencedKube: just before it is sent, the lease must be held and inside its renew deadline, and
the request gets no longer than what is left of it. Reads, the lease's own writes and the
webhook certificate's (which every replica makes) use the plain client.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import aiohttp

from tas.kube import Kube, KubeError
from tas.kube.client import Decode


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
    """The leader's view of a Kube: the same sessions, credentials and counters, and every
    write fenced by `time_left` (seconds this replica may still lead: LeaderElector.time_left)
    at `_send`, the step that sends: after the credential is had (an exec plugin may take
    seconds) and each time a call is sent again after a 401."""

    def __init__(self, kube: Kube, time_left: Callable[[], float]) -> None:
        # Not Kube.__init__: the view owns no session. Whatever it does not define is the
        # wrapped client's (__getattr__); Kube's calls (get, patch, create, replace, delete,
        # event) run on the view and send through `_send` below.
        self.kube = kube
        self.time_left = time_left
        self.refused = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.kube, name)

    def session(self) -> aiohttp.ClientSession:
        return self.kube.session()

    def watch_session(self) -> aiohttp.ClientSession:
        return self.kube.watch_session()

    async def close(self) -> None:
        """The wrapped client is its owner's to close."""

    async def _send(
        self,
        method: str,
        path: str,
        data: str | None,
        content_type: str | None,
        authorization: str | None,
        params: Mapping[str, str] | None,
        timeout: float | None,
        *,
        decode: Decode | None = None,
    ) -> Any:
        if method != "GET":
            left = self.time_left()
            if left <= 0:
                self.refused += 1
                raise NotLeading(method, path)
            # One still waiting for a connection at the deadline is never sent after it.
            timeout = min(timeout or self.kube.timeout, left)
        return await self.kube._send(
            method, path, data, content_type, authorization, params, timeout, decode=decode
        )
