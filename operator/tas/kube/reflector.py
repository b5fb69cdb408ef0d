"""List-and-watch for one kind, on the event loop: what feeds the cache.

A paginated list records the collection's resourceVersion; a watch with bookmarks resumes from
the last one seen. When the watch is expired (410) or the list cannot be resumed, everything is
listed again and whatever vanished meanwhile is handed on as DELETED, so nothing that went away
during an outage stays in the cache. Start-up is one pass over the listed objects: O(objects).

The reflector keeps only the keys it has handed on (`known`: whatever the handler may hold),
never the objects: the handler owns the projections. A DELETED for a vanished object carries only its metadata (name, namespace).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import orjson

from tas.kube import Kube, KubeError
from tas.kube.client import Decode
from tas.kube.retry import Backoff
from tas.pacing import Pacer

log = logging.getLogger(__name__)

Handler = Callable[[str, Mapping[str, Any]], Awaitable[None]]
ObjectKey = tuple[str, str]

PAGE_SIZE = 1000  # fewer round trips; a page of pods is ~5 MB of JSON, parsed and dropped
WATCH_SECONDS = 300  # the server ends a watch after this; it is resumed from the last version
# A connection that dies without a word (a NAT or a node gone) would hold a watch for its whole
# 5.5 minutes. The API server sends a bookmark about once a minute (the watch cache's
# defaultBookmarkFrequency) while the kind changes anywhere in the cluster, so a watch silent for
# longer is given up and resumed from its version on a new connection: a dead one is left within
# ~2 minutes. A kind nothing changes gets no bookmark at all (the cache's version does not move
# past the watch's), so its watch is merely renewed every WATCH_IDLE_SECONDS, at no cost.
WATCH_IDLE_SECONDS = 90.0


def object_key(obj: Mapping[str, Any]) -> ObjectKey:
    meta = obj["metadata"]
    return meta.get("namespace") or "", meta["name"]


class Expired(Exception):
    """The watch's resourceVersion is too old: relist."""


class Reflector:
    def __init__(
        self,
        kube: Kube,
        path: str,
        handle: Handler,
        *,
        name: str,
        params: Mapping[str, str] | None = None,
        page_size: int = PAGE_SIZE,
        watch_seconds: int = WATCH_SECONDS,
        idle_seconds: float = WATCH_IDLE_SECONDS,
        backoff: Backoff | None = None,
        decode_list: Decode | None = None,
    ) -> None:
        self.kube = kube
        self.path = path
        self.handle = handle
        self.name = name
        self.params = dict(params or {})
        self.page_size = page_size
        self.watch_seconds = watch_seconds
        self.idle_seconds = idle_seconds
        self.backoff = backoff or Backoff(base=0.5, cap=30.0)
        self.decode_list = decode_list  # a list page's schema (None: the whole body)
        self.synced = asyncio.Event()  # set once the first full list has been handed on
        self.resource_version = ""
        self.known: set[ObjectKey] = set()
        self.lists = 0  # full lists done (1 + relists), for tests and logs
        self.failures = 0  # failed calls in a row
        self.events = 0

    async def run(self) -> None:
        need_list = True
        while True:
            try:
                if need_list:
                    await self.relist()
                    need_list = False
                await self.watch()  # returns when the server ends the watch normally
                self.failures = 0
            except Expired:
                log.info("%s: watch expired at %s; relisting", self.name, self.resource_version)
                need_list = True
            except KubeError as exc:
                if exc.status == 410:
                    need_list = True
                    continue
                # Counted until the server answers again (a listed page or a watch event), so
                # the wait grows over a long outage instead of hammering a server that is down.
                self.failures += 1
                delay = self.backoff.delay(self.failures, exc.retry_after)
                log.warning("%s: %s; retrying in %.1fs", self.name, exc, delay)
                await asyncio.sleep(delay)
                # A long outage may have outlived the watch cache's window: the next watch
                # answers 410 then, and the relist finds what vanished.

    async def relist(self) -> None:
        """List everything, page by page; what was known and is not listed was deleted.

        The next page is requested before this one is handed on, so the API server encodes it
        while we parse: on a restart the two overlap instead of taking turns.
        """
        listed: set[ObjectKey] = set()
        pacer = Pacer()  # a page of 1,000 pods, or 50,000 deletions after an outage, yields
        token = ""
        next_page: asyncio.Task | None = asyncio.ensure_future(self._page(token))
        try:
            while next_page is not None:
                try:
                    page = await next_page
                except KubeError as exc:
                    if exc.status == 410 and token:  # the continue token expired: start over
                        listed.clear()
                        token = ""
                        next_page = asyncio.ensure_future(self._page(token))
                        continue
                    raise
                self.failures = 0
                meta = page.get("metadata") or {}
                token = meta.get("continue") or ""
                next_page = asyncio.ensure_future(self._page(token)) if token else None
                for obj in page.get("items") or []:
                    await pacer.maybe_yield()
                    key = object_key(obj)
                    listed.add(key)
                    kind = "MODIFIED" if key in self.known else "ADDED"
                    # Known at once: if this list fails, the next one still deletes it.
                    self.known.add(key)
                    await self._hand_on(kind, obj)
                if next_page is None:
                    self.resource_version = meta.get("resourceVersion") or ""
        finally:
            if next_page is not None:  # cancelled or failed mid-list: leave no request behind
                next_page.cancel()
                with contextlib.suppress(BaseException):
                    await next_page
        for namespace, name in self.known - listed:
            await pacer.maybe_yield()
            await self._hand_on("DELETED", {"metadata": {"namespace": namespace, "name": name}})
        self.known = listed
        self.lists += 1
        if not self.synced.is_set():
            log.info("%s: listed %d", self.name, len(listed))
        self.synced.set()

    async def _page(self, token: str) -> Mapping[str, Any]:
        params = {**self.params, "limit": str(self.page_size)}
        if token:
            params["continue"] = token
        return await self.kube.request(
            "GET", self.path, params=params, timeout=120, decode=self.decode_list
        )

    async def _hand_on(self, kind: str, obj: Mapping[str, Any]) -> None:
        """One object the handler cannot take (a bug, hostile input) must not stop the watch."""
        try:
            await self.handle(kind, obj)
        except Exception:
            log.exception("%s: handling %s %s failed", self.name, kind, object_key(obj))

    async def watch(self) -> None:
        params = {
            **self.params,
            "watch": "1",
            "allowWatchBookmarks": "true",
            "resourceVersion": self.resource_version,
            "timeoutSeconds": str(self.watch_seconds),
        }
        lines = self.kube.stream_lines(
            self.path, params, self.watch_seconds + 30, idle=self.idle_seconds
        )
        async for line in lines:
            self.failures = 0
            event = orjson.loads(line)
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "ERROR":
                if obj.get("code") == 410:
                    raise Expired()
                raise KubeError(obj.get("code") or 500, obj.get("message") or "watch error")
            version = (obj.get("metadata") or {}).get("resourceVersion")
            if kind == "BOOKMARK":
                self.resource_version = version or self.resource_version
                continue
            key = object_key(obj)
            if kind == "DELETED":
                self.known.discard(key)
            else:
                self.known.add(key)
            self.events += 1
            await self._hand_on(kind, obj)
            self.resource_version = version or self.resource_version
