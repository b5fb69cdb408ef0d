"""The operator's conversion webhook for the integration tests: the real server and conversion
code, in a thread of the test process, with its own certificate; the CRDs point at it by URL
(as `webhook.url` makes the chart do for an operator outside the cluster)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import json
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tas.api import crdgen
from tas.api.constants import CONVERTED_CRDS
from tas.webhooks import certs
from tas.webhooks.server import CONVERSION_PATH, WebhookServer

# The client config of the plain CRD files (crds/).
FILES = {**crdgen.DEFAULT_SERVICE, "path": "/" + crdgen.CONVERSION_PATH}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _no_admission(*_: Any, **__: Any) -> dict:
    raise RuntimeError("no admission webhooks here")


@contextlib.contextmanager
def conversion_webhook(cluster: Any) -> Iterator[str]:
    """Serve conversions until the block ends; yields the URL the CRDs were given."""
    directory = Path(tempfile.mkdtemp(prefix="tas-conversion-"))
    data = certs.plan({}, ["127.0.0.1"], datetime.datetime.now(datetime.UTC))
    certs.write_served(directory, data)
    port = _free_port()
    server = WebhookServer(
        addr="127.0.0.1",
        port=port,
        host="127.0.0.1",
        certfile=directory / certs.TLS_CRT,
        keyfile=directory / certs.TLS_KEY,
        cafile=directory / certs.CA_CRT,
    )
    loop = asyncio.new_event_loop()
    started = threading.Event()

    async def serve() -> None:
        async for _ in server(_no_admission):
            started.set()

    task = loop.create_task(serve())

    def run() -> None:
        with contextlib.suppress(asyncio.CancelledError):
            loop.run_until_complete(task)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    started.wait(30)
    url = f"https://127.0.0.1:{port}/{CONVERSION_PATH}"
    bundle = base64.b64encode(data[certs.CA_CRT]).decode()
    ours = {"url": url, "caBundle": bundle, "service": None}
    for name in CONVERTED_CRDS:
        _client_config(cluster, name, ours)
    try:
        yield url
    finally:
        for name in CONVERTED_CRDS:  # as the CRD files have it again
            _client_config(cluster, name, {"url": None, "caBundle": None, "service": FILES})
        loop.call_soon_threadsafe(task.cancel)
        thread.join(30)


def _client_config(cluster: Any, crd: str, config: dict) -> None:
    patch = {"spec": {"conversion": {"webhook": {"clientConfig": config}}}}
    cluster.kubectl("patch", "crd", crd, "--type=merge", "-p", json.dumps(patch))
