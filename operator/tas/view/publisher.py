"""The live view and its viewers: rebuilt shortly after the cache changes, pushed as the parts
of the page that changed.

The cache calls `changed()` on every change (ClusterState.listeners). The first call arms a
short timer (`DELAY`); when it fires the view is rebuilt once for everything that changed
meanwhile, parts whose model data differ are rendered, and each viewer's queue gets them as
one server-sent event. A viewer whose queue is full is dropped (its page reconnects and
catches up), so a slow one never holds the loop or the others. Everything runs on the
operator's loop; nothing here writes to the API server.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from tas.view import html
from tas.view.model import ClusterView

log = logging.getLogger(__name__)

DELAY = 0.2  # seconds from the first change to the rebuild: a burst costs one
QUEUE_SIZE = 8  # updates a viewer may fall behind before it is dropped

Build = Callable[[], Awaitable[ClusterView]]


@dataclass(frozen=True)
class Update:
    version: int
    html: str  # the changed parts, each marked hx-swap-oob


@dataclass(eq=False)
class Viewer:
    """One connected page: what it has not been sent yet."""

    queue: asyncio.Queue[Update | None] = field(default_factory=lambda: asyncio.Queue(QUEUE_SIZE))
    dropped: bool = False


class Publisher:
    def __init__(
        self, build: Build, renderer: html.Renderer | None = None, *, delay: float = DELAY
    ) -> None:
        self.build = build
        self.renderer = renderer or html.Renderer()
        self.delay = delay
        self.view = ClusterView(flavors=(), workloads=())
        self.version = 0
        self.parts: dict[str, html.Part] = html.parts(self.view)
        self.changed_at: dict[str, int] = dict.fromkeys(self.parts, 0)  # part id -> version
        self.viewers: set[Viewer] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._running: asyncio.Task | None = None
        self._again = False  # a change came while a rebuild ran
        self.last_update_seconds = 0.0  # the last rebuild's duration, build to queues

    # ---- from the cache ------------------------------------------------------------------------

    def changed(self) -> None:
        """The cache changed (called synchronously from its mutators: must stay cheap)."""
        if self._running is not None:
            self._again = True
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.delay, self._fire)

    def _fire(self) -> None:
        self._timer = None
        self._running = asyncio.create_task(self.refresh(), name="view-refresh")
        self._running.add_done_callback(self._done)

    def _done(self, task: asyncio.Task) -> None:
        self._running = None
        if not task.cancelled() and task.exception() is not None:
            log.warning("view not rebuilt: %r", task.exception())
        if self._again:
            self._again = False
            self.changed()

    async def refresh(self) -> Update | None:
        """Rebuild the view and send what changed; None when nothing on the page did."""
        started = time.monotonic()
        view = await self.build()
        fresh = html.parts(view)
        changed = [pid for pid, part in fresh.items() if self.parts.get(pid) != part]
        self.view = view
        if not changed:
            self.parts = fresh
            return None
        self.version += 1
        update = Update(self.version, self._render(view, fresh, changed))
        for pid in changed:
            self.changed_at[pid] = self.version
        for pid in set(self.changed_at) - set(fresh):
            del self.changed_at[pid]
        self.parts = fresh
        self._send(update)
        self.last_update_seconds = time.monotonic() - started
        return update

    def _render(self, view: ClusterView, fresh: dict[str, html.Part], ids: list[str]) -> str:
        if html.TOPOLOGY_ID in ids:  # parts came or went: their ids are in the whole of it
            ids = [pid for pid in ids if not pid.startswith(("dom/", "head/", "free/"))]
        out = []
        for pid in ids:
            if pid == html.TOPOLOGY_ID:
                out.append(self.renderer.render_topology(view))
            else:
                out.append(self.renderer.render_part(fresh[pid]))
        return "".join(out)

    def _send(self, update: Update) -> None:
        for viewer in list(self.viewers):
            try:
                viewer.queue.put_nowait(update)
            except asyncio.QueueFull:
                self.drop(viewer)

    # ---- to the viewers ------------------------------------------------------------------------

    def subscribe(self) -> Viewer:
        viewer = Viewer()
        self.viewers.add(viewer)
        return viewer

    def drop(self, viewer: Viewer) -> None:
        """Stop sending to a viewer; its stream ends (a full queue is emptied to say so)."""
        self.viewers.discard(viewer)
        if viewer.dropped:
            return
        viewer.dropped = True
        while not viewer.queue.empty():
            viewer.queue.get_nowait()
        viewer.queue.put_nowait(None)

    def catch_up(self, since: int) -> Update | None:
        """What a page drawn at version `since` has missed (all of it if it is from another
        run of the process, or from the future); None if nothing."""
        if since == self.version:
            return None
        if since > self.version:
            since = -1
        ids = [pid for pid, at in self.changed_at.items() if at > since]
        return Update(self.version, self._render(self.view, self.parts, ids))

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._running is not None:
            self._running.cancel()
        for viewer in list(self.viewers):
            self.drop(viewer)
