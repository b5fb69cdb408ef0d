"""Once our webhooks are served with the trusted certificate, the writes the API server refused
meanwhile are retried at once: after a restart the first admitted Job's start goes through our
own Job webhook, which loads after the first admission."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from tas.handlers.operator import ready_when_trusted


class Runtime:
    def __init__(self) -> None:
        self.retried: list[str] = []

    async def synced(self) -> None:
        return None

    async def webhooks_served(self) -> None:
        self.retried.append("now")


class Server:
    def __init__(self) -> None:
        self.ready = False
        self.serving = asyncio.Event()

    def set_ready(self) -> None:
        self.ready = True


def test_refused_writes_are_retried_once_the_webhooks_listen_with_the_trusted_certificate():
    async def go() -> list[tuple[bool, list[str]]]:
        runtime, server = Runtime(), Server()
        certificates = SimpleNamespace(ready=asyncio.Event())
        task = asyncio.create_task(ready_when_trusted(runtime, certificates, server))
        seen = []
        await asyncio.sleep(0.01)
        seen.append((server.ready, list(runtime.retried)))  # provisional certificate
        certificates.ready.set()
        await asyncio.sleep(0.01)
        seen.append((server.ready, list(runtime.retried)))  # trusted, not listening yet
        server.serving.set()
        await task
        seen.append((server.ready, list(runtime.retried)))
        return seen

    assert asyncio.run(go()) == [(False, []), (True, []), (True, ["now"])]
