"""One TLS server for the admission webhooks (kopf's handlers) and the CRD conversion webhook.

kopf takes any object with its server protocol as `settings.admission.server`: called with
kopf's review function, it serves until cancelled and yields the client config. We serve:

- `POST /convert`: a ConversionReview, answered by `tas.api.conversion` in a worker thread
  (the conversion is pure: parsing and converting a list of 10,000 Workloads must not hold the
  event loop that admits and renews the lease). A list converts in one request, so its body
  may be large.
- `POST /<handler id>`: an AdmissionReview for kopf's handler of that id, with a small body
  limit (a review is one object).

A renewed certificate is loaded into the same TLS context (`reload`): connections made after
it use the new certificate, open ones keep theirs, and the port never closes.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web

from tas.api import conversion

log = logging.getLogger(__name__)

CONVERSION_PATH = "convert"
MAX_REVIEW_BYTES = 1 << 20  # an AdmissionReview carries one object (the API server caps it)
MAX_CONVERSION_BYTES = 512 << 20  # a ConversionReview carries a whole list

ReviewFn = Callable[..., Awaitable[Any]]


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
        self.reload()

    def reload(self) -> None:
        """Serve the certificate now in the files (new connections get it)."""
        self.context.load_cert_chain(str(self.certfile), str(self.keyfile))

    async def __call__(self, fn: ReviewFn) -> AsyncIterator[dict[str, str]]:
        app = web.Application(client_max_size=self.max_conversion_bytes)
        app.add_routes(
            [
                web.post(f"/{CONVERSION_PATH}", self._convert),
                web.post("/{id:.*}", lambda request: self._admit(fn, request)),
            ]
        )
        runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await runner.setup()
        try:
            # SO_REUSEPORT: replicas on one host (the project's tests) share the port.
            site = web.TCPSite(
                runner, self.addr, self.port, ssl_context=self.context, reuse_port=True
            )
            await site.start()
            log.info("serving webhooks on https://%s:%d", self.addr, self.port)
            ca = base64.b64encode(self.cafile.read_bytes()).decode()
            yield {"url": f"https://{self.host}:{self.port}", "caBundle": ca}
            await asyncio.Event().wait()  # until cancelled
        finally:
            await runner.cleanup()

    async def _convert(self, request: web.Request) -> web.Response:
        raw = await request.read()
        loop = asyncio.get_running_loop()
        try:
            answer = await loop.run_in_executor(None, convert_review, raw)
        except (ValueError, conversion.ConversionError) as exc:
            raise web.HTTPBadRequest(reason=_one_line(exc)) from None
        return web.Response(body=answer, content_type="application/json")

    async def _admit(self, fn: ReviewFn, request: web.Request) -> web.Response:
        if (request.content_length or 0) > self.max_review_bytes:
            raise web.HTTPRequestEntityTooLarge(
                max_size=self.max_review_bytes, actual_size=request.content_length
            )
        raw = await request.content.read(self.max_review_bytes + 1)
        if len(raw) > self.max_review_bytes:
            raise web.HTTPRequestEntityTooLarge(
                max_size=self.max_review_bytes, actual_size=len(raw)
            )
        try:
            data = orjson.loads(raw)
            peer = request.transport.get_extra_info("peercert") if request.transport else None
            answer = await fn(
                data, webhook=request.match_info["id"], sslpeer=peer, headers=dict(request.headers)
            )
        except Exception as exc:  # a malformed review: kopf's own errors included
            raise web.HTTPBadRequest(reason=_one_line(exc)) from None
        return web.json_response(answer, dumps=lambda v: orjson.dumps(v).decode())


def convert_review(raw: bytes) -> bytes:
    """A ConversionReview's bytes in, the answer's out (run in a worker thread: pure)."""
    return orjson.dumps(conversion.review(orjson.loads(raw)))


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())[:500] or type(exc).__name__
