"""`tas view`'s web server: the page, its server-sent events, the model as JSON, the gang query.

Read-only and unauthenticated: it listens on localhost unless told otherwise, and nothing it
serves writes anywhere. It runs on the operator's loop and reads only the publisher's view and
the cache through `largest_gangs` (on that same loop).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from importlib import resources

import orjson
from aiohttp import web

from tas.api.quantity import parse_milli
from tas.config import DEFAULT_VIEW_ADDRESS
from tas.view import codec
from tas.view.address import parse_address
from tas.view.publisher import Publisher, Update

log = logging.getLogger(__name__)

KEEPALIVE_SECONDS = 15.0  # an SSE comment this often: a closed page is noticed
GANG_RESOURCES = ("cpu", "memory", "nvidia.com/gpu")
MODES = ("required", "preferred")

# (per-pod requests in milli-units, level, mode) -> largest gang per flavor
LargestGangs = Callable[[Mapping[str, int], str, str], Mapping[str, int]]


class ViewServer:
    def __init__(
        self, publisher: Publisher, largest_gangs: LargestGangs, address: str = DEFAULT_VIEW_ADDRESS
    ) -> None:
        self.publisher = publisher
        self.largest_gangs = largest_gangs
        self.host, self.port = parse_address(address)
        self._runner: web.AppRunner | None = None
        self.app = self._app()

    def _app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/", self.page)
        app.router.add_get("/events", self.events)
        app.router.add_get("/model.json", self.model)
        app.router.add_get("/gang", self.gang)
        app.router.add_static("/static", str(resources.files("tas.view") / "static"))
        return app

    async def start(self) -> bool:
        """Listen; a bind failure is logged on one line and the caller carries on (False)."""
        runner = web.AppRunner(self.app, access_log=None, handler_cancellation=True)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.host, self.port)
            await site.start()
        except OSError as exc:
            log.warning("topology view not served on %s:%d: %s", self.host, self.port, exc)
            await runner.cleanup()
            return False
        self._runner = runner
        log.info("topology view on http://%s:%d/", self.host, self.bound_port())
        return True

    def bound_port(self) -> int:
        """The port listened on (the one asked for, or the one given for port 0)."""
        addresses = self._runner.addresses if self._runner else []
        return addresses[0][1] if addresses else self.port

    async def stop(self) -> None:
        self.publisher.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # ---- routes --------------------------------------------------------------------------------

    async def page(self, request: web.Request) -> web.Response:
        view = await self.publisher.current()
        body = self.publisher.renderer.page(view, self.publisher.version)
        return web.Response(text=body, content_type="text/html")

    async def model(self, request: web.Request) -> web.Response:
        return web.Response(
            body=orjson.dumps(codec.to_data(await self.publisher.current())),
            content_type="application/json",
        )

    async def gang(self, request: web.Request) -> web.Response:
        try:
            per_pod, level, mode = gang_query(request.query)
        except ValueError as exc:
            return web.json_response({"error": str(exc)}, status=400)
        largest = dict(self.largest_gangs(per_pod, level, mode))
        if request.headers.get("HX-Request"):  # the page's form: a table to swap in
            body = self.publisher.renderer.gang(largest, level, mode)
            return web.Response(text=str(body), content_type="text/html")
        return web.json_response({"level": level, "mode": mode, "largest": largest})

    async def events(self, request: web.Request) -> web.StreamResponse:
        """Server-sent events: each `update` carries the parts that changed, for htmx to swap
        by id. A page first gets what changed since the version it was drawn at."""
        since = _since(request)
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        viewer = self.publisher.subscribe()
        try:
            missed = self.publisher.catch_up(since)
            if missed is not None:
                await response.write(sse(missed))
            while True:
                try:
                    update = await asyncio.wait_for(viewer.queue.get(), KEEPALIVE_SECONDS)
                except TimeoutError:
                    await response.write(b": keepalive\n\n")
                    continue
                if update is None:  # dropped: too far behind; the page reconnects
                    break
                await response.write(sse(update))
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self.publisher.drop(viewer)
        with contextlib.suppress(ConnectionResetError):
            await response.write_eof()
        return response


def sse(update: Update) -> bytes:
    """One `update` event; its id lets a reconnecting page say what it has (Last-Event-ID)."""
    lines = update.html.splitlines() or [""]
    data = "".join(f"data: {line}\n" for line in lines)
    return f"id: {update.version}\nevent: update\n{data}\n".encode()


def _since(request: web.Request) -> int:
    text = request.headers.get("Last-Event-ID") or request.query.get("since") or "-1"
    try:
        return int(text)
    except ValueError:
        return -1


def gang_query(query: Mapping[str, str]) -> tuple[dict[str, int], str, str]:
    """/gang's parameters: a pod's requests, the level and the mode; a ValueError names the
    parameter that is wrong."""
    level = query.get("level", "")
    if not level:
        raise ValueError("level: required (a topology level's node label)")
    mode = query.get("mode", "required")
    if mode not in MODES:
        raise ValueError(f"mode: {mode!r} is not one of {', '.join(MODES)}")
    per_pod = {}
    for name in GANG_RESOURCES:
        text = query.get(name, "").strip()
        if not text:
            continue
        try:
            milli = parse_milli(text)
        except ValueError:
            raise ValueError(f"{name}: {text!r} is not a quantity") from None
        if milli < 0:
            raise ValueError(f"{name}: {text!r} must not be negative")
        if milli:
            per_pod[name] = milli
    if not per_pod:
        raise ValueError(f"a pod must request one of {', '.join(GANG_RESOURCES)}")
    return per_pod, level, mode
