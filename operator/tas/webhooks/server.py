"""One TLS server for the admission webhooks (kopf's handlers) and the CRD conversion webhook,
on a thread of its own.

Anyone who can reach the port can send reviews, and a large one costs tens of milliseconds of
pure Python (decoding it, kopf copying and diffing the object). So the server runs its own
event loop on its own thread: the operator's loop, which admits and renews the lease, never
reads, decodes or answers a review. kopf gives us its review function (`settings.admission.
server` protocol); it runs on the server's loop (see `tas.handlers.operator.OffLoopReviews`
for why that is safe), and a handler that needs the operator's cache reads the frozen copy the
operator's loop publishes (`tas.webhooks.view`), so no review waits for that loop (`call_on`
remains for a TrainJob naming a runtime not in the copy yet). The server's thread takes its
share of the interpreter lock, but the operator's loop gets it back within the switch interval
instead of waiting behind every queued review.

- `POST /<handler id>`: an AdmissionReview for kopf's handler of that id. Its body is capped
  (`max_review_bytes`): a larger one is refused with 413 before it is read, and the connection
  closed, so the bytes are never read at all. At most REVIEWS_AT_ONCE are read and answered at
  once, which bounds the memory a flood can take.
- `POST /convert`: a ConversionReview, answered by `tas.api.conversion` in a worker thread (a
  list of 10,000 Workloads converts in one request, so its cap is large and its work must not
  hold even this loop).
- `GET /readyz`: the readiness probe. 200 once `set_ready` was called: the operator calls it
  once the certificate served is the one the webhook configurations trust and its caches are
  synced; 503 before.

While it serves, the interpreter hands the lock over every SWITCH_INTERVAL instead of every
5 ms: a review waits for the lock at each of its reads and writes while the operator's loop
computes (with the loop computing, reviews one at a time took 11 ms at p99 with 5 ms, 5 ms
with 1 ms). The switch happens only while the server's thread wants the lock (it waits for
the network without it).

Each review is counted as controller-runtime counts Kueue's (`controller_runtime_webhook_*`,
labelled with the path; at most MAX_LABELS paths, the rest as OTHER_LABEL, since anyone may
send any path), so the two can be compared from their metrics.

A renewed certificate is loaded into the same TLS context (`reload`), on the server's thread
(the TLS context is used there): connections made after it use the new certificate, open ones
keep theirs, and the port never closes.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import logging
import ssl
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web
from prometheus_client import Counter, Histogram

from tas.api import conversion
from tas.config import MAX_REVIEW_BYTES

log = logging.getLogger(__name__)

CONVERSION_PATH = "convert"
READY_PATH = "readyz"
MAX_CONVERSION_BYTES = 512 << 20  # a ConversionReview carries a whole list
REVIEWS_AT_ONCE = 8
STOP_SECONDS = 5.0
MAX_LABELS = 64  # paths labelled in the metrics; the chart's webhooks use about 40
OTHER_LABEL = "/other"
SWITCH_INTERVAL = 0.001  # seconds (sys.setswitchinterval) while serving

# controller-runtime's names and labels (pkg/webhook/internal/metrics), as Kueue exports them.
REVIEW_LATENCY = Histogram(
    "controller_runtime_webhook_latency_seconds",
    "Histogram of the latency of processing admission requests",
    ["webhook"],
)
REVIEWS = Counter(
    "controller_runtime_webhook_requests",  # exported with the _total suffix
    "Total number of admission requests by HTTP status code.",
    ["webhook", "code"],
)

ReviewFn = Callable[..., Awaitable[Any]]

__all__ = ["MAX_REVIEW_BYTES", "WebhookServer", "call_on"]


class WebhookServer:
    def __init__(
        self,
        *,
        addr: str,
        port: int,
        host: str,
        certfile: Path,
        keyfile: Path,
        cafile: Path,
        max_review_bytes: int = MAX_REVIEW_BYTES,
        max_conversion_bytes: int = MAX_CONVERSION_BYTES,
    ) -> None:
        self.addr, self.port, self.host = addr, port, host
        self.certfile, self.keyfile, self.cafile = certfile, keyfile, cafile
        self.max_review_bytes = max_review_bytes
        self.max_conversion_bytes = max_conversion_bytes
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.ready = False  # read and written on the server's thread once it runs
        self.serving = asyncio.Event()  # the operator's loop's: set while the port listens
        self._loop: asyncio.AbstractEventLoop | None = None  # the server's, while it runs
        self._lock = threading.Lock()  # guards _loop: who may touch the context and `ready`
        self._labels: set[str] = set()  # the server's thread's only
        self._load_certificate()

    # ---- called from the operator's loop ----------------------------------------------------------

    def reload(self) -> None:
        """Serve the certificate now in the files (new connections get it)."""
        self._on_server_thread(self._load_certificate)

    def set_ready(self) -> None:
        """Readiness passes from now on. Called after `reload` of the trusted certificate, it
        takes effect after it: both run on the server's thread in the order called."""
        self._on_server_thread(lambda: setattr(self, "ready", True))

    def _on_server_thread(self, fn: Callable[[], None]) -> None:
        with self._lock:
            if self._loop is None:  # not serving: nothing else uses the context
                fn()
            else:
                self._loop.call_soon_threadsafe(fn)

    def _load_certificate(self) -> None:
        self.context.load_cert_chain(str(self.certfile), str(self.keyfile))

    async def __call__(self, fn: ReviewFn) -> AsyncIterator[dict[str, str]]:
        """kopf's server protocol, on the operator's loop: start the server's thread, yield the
        client config once it listens, stop the thread when cancelled."""
        started: concurrent.futures.Future[None] = concurrent.futures.Future()
        stop = threading.Event()
        thread = threading.Thread(
            target=asyncio.run, args=(self._serve(fn, started, stop),), name="webhooks", daemon=True
        )
        switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(min(switch_interval, SWITCH_INTERVAL))
        thread.start()
        try:
            await asyncio.wrap_future(started)
            log.info("serving webhooks on https://%s:%d", self.addr, self.port)
            self.serving.set()
            ca = base64.b64encode(self.cafile.read_bytes()).decode()
            yield {"url": f"https://{self.host}:{self.port}", "caBundle": ca}
            await asyncio.Event().wait()  # until cancelled
        finally:
            self.serving.clear()
            stop.set()
            with self._lock:
                if self._loop is not None:
                    self._loop.call_soon_threadsafe(lambda: None)  # wake it to see `stop`
            await asyncio.get_running_loop().run_in_executor(None, thread.join, STOP_SECONDS)
            sys.setswitchinterval(switch_interval)

    # ---- the server's thread --------------------------------------------------------------------

    async def _serve(
        self, fn: ReviewFn, started: concurrent.futures.Future, stop: threading.Event
    ) -> None:
        slots = asyncio.Semaphore(REVIEWS_AT_ONCE)

        async def admit(request: web.Request) -> web.Response:
            return await self._admit(fn, slots, request)

        app = web.Application(client_max_size=self.max_conversion_bytes)
        app.add_routes(
            [
                web.get(f"/{READY_PATH}", self._readiness),
                web.post(f"/{CONVERSION_PATH}", self._convert),
                web.post("/{id:.*}", admit),
            ]
        )
        # lingering_time=0: the unread body of a refused review is not read, the connection
        # is closed instead.
        runner = web.AppRunner(app, handle_signals=False, access_log=None, lingering_time=0)
        await runner.setup()
        try:
            with self._lock:
                self._loop = asyncio.get_running_loop()
            # SO_REUSEPORT: replicas on one host (the project's tests) share the port.
            site = web.TCPSite(
                runner, self.addr, self.port, ssl_context=self.context, reuse_port=True
            )
            await site.start()
        except BaseException as exc:
            started.set_exception(exc)
            await self._close(runner)
            return
        started.set_result(None)
        try:
            while not stop.is_set():
                await asyncio.sleep(0.2)
        finally:
            await self._close(runner)

    async def _close(self, runner: web.AppRunner) -> None:
        with self._lock:
            self._loop = None
        await runner.cleanup()

    async def _readiness(self, request: web.Request) -> web.Response:
        if not self.ready:
            raise web.HTTPServiceUnavailable(reason="not ready")
        return web.Response(text="ok")

    async def _convert(self, request: web.Request) -> web.Response:
        raw = await request.read()
        loop = asyncio.get_running_loop()
        try:
            answer = await loop.run_in_executor(None, convert_review, raw)
        except (ValueError, conversion.ConversionError) as exc:
            raise web.HTTPBadRequest(reason=_one_line(exc)) from None
        return web.Response(body=answer, content_type="application/json")

    async def _admit(
        self, fn: ReviewFn, slots: asyncio.Semaphore, request: web.Request
    ) -> web.Response:
        path = self._label(request.match_info["id"])
        start = time.perf_counter()
        code = 500
        try:
            response = await self._answer(fn, slots, request)
            code = response.status
            return response
        except web.HTTPException as exc:
            code = exc.status
            raise
        finally:
            REVIEW_LATENCY.labels(path).observe(time.perf_counter() - start)
            REVIEWS.labels(path, str(code)).inc()

    def _label(self, handler_id: str) -> str:
        """The metrics' label: the path, but a bounded number of them (anyone may send any)."""
        path = f"/{handler_id}"
        if path not in self._labels:
            if len(self._labels) >= MAX_LABELS:
                return OTHER_LABEL
            self._labels.add(path)
        return path

    async def _answer(
        self, fn: ReviewFn, slots: asyncio.Semaphore, request: web.Request
    ) -> web.Response:
        declared = request.content_length or 0
        if declared > self.max_review_bytes:
            raise self._too_large(declared)
        async with slots:
            raw = await self._read_review(request)
            try:
                data = orjson.loads(raw)
                transport = request.transport
                peer = transport.get_extra_info("peercert") if transport else None
                answer = await fn(
                    data,
                    webhook=request.match_info["id"],
                    sslpeer=peer,
                    headers=dict(request.headers),
                )
            except Exception as exc:  # a malformed review: kopf's own errors included
                # Debug: anyone who reaches the port can send these.
                log.debug("review for %s refused: %r", request.match_info["id"], exc)
                raise web.HTTPBadRequest(reason=_one_line(exc)) from None
        return web.json_response(answer, dumps=lambda v: orjson.dumps(v).decode())

    async def _read_review(self, request: web.Request) -> bytes:
        """The whole body, refused as soon as it passes the cap (one read returns only what
        has arrived so far)."""
        chunks, size = [], 0
        async for chunk in request.content.iter_any():
            size += len(chunk)
            if size > self.max_review_bytes:
                raise self._too_large(size)
            chunks.append(chunk)
        return b"".join(chunks)

    def _too_large(self, size: int) -> web.HTTPRequestEntityTooLarge:
        return web.HTTPRequestEntityTooLarge(max_size=self.max_review_bytes, actual_size=size)


async def call_on(loop: asyncio.AbstractEventLoop, fn: Callable[..., Any], *args: Any) -> Any:
    """fn(*args) run on `loop` (the operator's, which owns the cache), awaited from any loop."""
    if asyncio.get_running_loop() is loop:
        return fn(*args)
    future: concurrent.futures.Future = concurrent.futures.Future()

    def run() -> None:
        try:
            future.set_result(fn(*args))
        except BaseException as exc:  # handed to the caller
            future.set_exception(exc)

    loop.call_soon_threadsafe(run)
    return await asyncio.wrap_future(future)


def convert_review(raw: bytes) -> bytes:
    """A ConversionReview's bytes in, the answer's out (run in a worker thread: pure)."""
    return orjson.dumps(conversion.review(orjson.loads(raw)))


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())[:500] or type(exc).__name__
