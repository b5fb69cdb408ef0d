"""The webhook server: its own thread and loop, a small body cap, readiness, certificate reload.

Anyone who reaches the webhook port can send reviews, so none of them may hold the loop that
admits and renews the lease, and an oversized one is refused before it is read. Each test runs
a real TLS server on 127.0.0.1 and talks to it with aiohttp.
"""

from __future__ import annotations

import asyncio
import datetime
import socket
import ssl
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from tas.webhooks import certs
from tas.webhooks.server import MAX_REVIEW_BYTES, READY_PATH, WebhookServer, call_on


def serving_files(directory: Path) -> tuple[Path, Path, Path]:
    now = datetime.datetime.now(datetime.UTC)
    certs.write_served(directory, certs.plan({}, ["127.0.0.1"], now))
    return tuple(directory / name for name in certs.SERVED)  # type: ignore[return-value]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_server(directory: Path, **kwargs: Any) -> WebhookServer:
    certfile, keyfile, cafile = serving_files(directory)
    return WebhookServer(
        addr="127.0.0.1",
        port=free_port(),
        host="127.0.0.1",
        certfile=certfile,
        keyfile=keyfile,
        cafile=cafile,
        **kwargs,
    )


def insecure() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    return context


async def serving(server: WebhookServer, fn) -> AsyncIterator[dict]:
    """Start the server as kopf does; the caller closes the generator."""
    agen = server(fn)
    await agen.__anext__()
    return agen


def run(server: WebhookServer, fn, body: Callable[[str], Awaitable[Any]]) -> Any:
    """Serve with `fn` as kopf's review function and run `body(url)` on this loop."""

    async def go():
        agen = await serving(server, fn)
        try:
            return await body(f"https://127.0.0.1:{server.port}")
        finally:
            await agen.aclose()

    return asyncio.run(go())


def review(size: int = 0) -> bytes:
    """An AdmissionReview of at least `size` bytes."""

    def of(padding: str) -> bytes:
        return orjson.dumps(
            {
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "request": {"uid": "u1", "object": {"metadata": {"annotations": {"a": padding}}}},
            }
        )

    return of("x" * max(0, size - len(of(""))))


async def post(url: str, data, **kwargs) -> tuple[int, bytes]:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=insecure())) as session:
        try:
            async with session.post(url, data=data, **kwargs) as response:
                return response.status, await response.read()
        except (aiohttp.ClientOSError, aiohttp.ServerDisconnectedError):
            return -1, b""  # the server closed the connection while we were still sending


async def get(url: str) -> int:
    connector = aiohttp.TCPConnector(ssl=insecure())
    async with aiohttp.ClientSession(connector=connector) as session, session.get(url) as response:
        return response.status


class Recorder:
    """kopf's review function, recording where it ran and what it got."""

    def __init__(self, work: Callable[[], None] = lambda: None) -> None:
        self.calls: list[dict] = []
        self.threads: list[threading.Thread] = []
        self.loops: list[asyncio.AbstractEventLoop] = []
        self.work = work

    async def __call__(self, request: dict, **kwargs: Any) -> dict:
        self.threads.append(threading.current_thread())
        self.loops.append(asyncio.get_running_loop())
        self.calls.append(request)
        self.work()
        return {"response": {"uid": request["request"]["uid"], "allowed": True}}


# ---- the body cap ------------------------------------------------------------------------------


def test_the_cap_is_far_below_what_the_api_server_would_send() -> None:
    """A review is one object (two for an UPDATE); the API server sends up to ~3 MiB."""
    assert 64 << 10 <= MAX_REVIEW_BYTES <= 256 << 10


def test_a_review_over_the_cap_is_refused_before_it_reaches_kopf(tmp_path: Path) -> None:
    fn = Recorder()
    server = make_server(tmp_path)  # the default cap

    async def body(url):
        return await post(f"{url}/suspend-queued-jobs", review(MAX_REVIEW_BYTES + 1))

    status, _ = run(server, fn, body)
    assert status in (413, -1)  # refused (or cut off while still sending)
    assert fn.calls == []


def test_a_review_over_the_cap_without_a_length_is_refused_as_it_arrives(tmp_path: Path) -> None:
    fn = Recorder()
    server = make_server(tmp_path, max_review_bytes=64 << 10)

    async def chunks():
        for _ in range(64):  # 128 KiB in all, no Content-Length
            yield b" " * 2048
            await asyncio.sleep(0)

    status, _ = run(server, fn, lambda url: post(f"{url}/x", chunks()))
    assert status in (413, -1)
    assert fn.calls == []


def test_a_review_under_the_cap_is_read_whole_however_it_arrives(tmp_path: Path) -> None:
    """One read returns what has arrived so far: a review sent in pieces is still whole."""
    fn = Recorder()
    server = make_server(tmp_path)
    raw = review(MAX_REVIEW_BYTES - 1024)

    async def pieces():
        for start in range(0, len(raw), 4096):
            yield raw[start : start + 4096]
            await asyncio.sleep(0.001)

    status, answer = run(server, fn, lambda url: post(f"{url}/x", pieces()))
    assert status == 200, answer
    assert orjson.dumps(fn.calls[0]) == raw
    assert orjson.loads(answer)["response"]["allowed"] is True


# ---- off the operator's loop ------------------------------------------------------------------


def test_reviews_are_answered_on_the_servers_own_thread_and_loop(tmp_path: Path) -> None:
    fn = Recorder()
    server = make_server(tmp_path)

    async def body(url):
        status, _ = await post(f"{url}/x", review())
        return status, asyncio.get_running_loop(), threading.current_thread()

    status, operator_loop, operator_thread = run(server, fn, body)
    assert status == 200
    assert fn.loops[0] is not operator_loop
    assert fn.threads[0] is not operator_thread


def test_the_operator_loop_keeps_ticking_while_reviews_take_long(tmp_path: Path) -> None:
    """Each review spins 300 ms of pure Python: on the operator's loop that would stall it."""

    def spin():
        end = time.perf_counter() + 0.3
        while time.perf_counter() < end:
            pass

    fn = Recorder(spin)
    server = make_server(tmp_path)

    async def body(url):
        lags = []

        async def tick():
            while True:
                start = time.perf_counter()
                await asyncio.sleep(0.01)
                lags.append(time.perf_counter() - start - 0.01)

        async def send():
            return await asyncio.gather(*(post(f"{url}/x", review()) for _ in range(4)))

        ticker = asyncio.create_task(tick())
        # The client on a thread of its own too: only the server could stall this loop.
        answers = await asyncio.to_thread(asyncio.run, send())
        ticker.cancel()
        return answers, lags

    answers, lags = run(server, fn, body)
    assert [status for status, _ in answers] == [200] * 4
    assert len(fn.calls) == 4
    assert max(lags) < 0.15, f"the operator's loop stalled {max(lags):.3f}s"


def test_call_on_runs_on_the_given_loop_and_returns_or_raises(tmp_path: Path) -> None:
    async def go():
        operator_loop = asyncio.get_running_loop()
        seen = []

        def where(value):
            seen.append(asyncio.get_running_loop())
            if value is None:
                raise LookupError("nothing")
            return value * 2

        def elsewhere():
            async def inner():
                doubled = await call_on(operator_loop, where, 21)
                with pytest.raises(LookupError):
                    await call_on(operator_loop, where, None)
                return doubled

            return asyncio.run(inner())

        doubled = await asyncio.to_thread(elsewhere)
        same = await call_on(operator_loop, where, 1)  # on its own loop: called directly
        return doubled, same, seen, operator_loop

    doubled, same, seen, operator_loop = asyncio.run(go())
    assert (doubled, same) == (42, 2)
    assert seen == [operator_loop] * 3


# ---- readiness and the certificate ------------------------------------------------------------


def test_readiness_fails_until_set_ready(tmp_path: Path) -> None:
    server = make_server(tmp_path)

    async def body(url):
        before = await get(f"{url}/{READY_PATH}")
        server.set_ready()
        for _ in range(50):
            after = await get(f"{url}/{READY_PATH}")
            if after == 200:
                break
            await asyncio.sleep(0.01)
        return before, after

    assert run(server, Recorder(), body) == (503, 200)


def served_certificate(port: int) -> bytes:
    with (
        socket.create_connection(("127.0.0.1", port)) as raw,
        insecure().wrap_socket(raw) as tls,
    ):
        return tls.getpeercert(binary_form=True)


def test_ready_after_reload_means_the_new_certificate_is_served(tmp_path: Path) -> None:
    """The operator reloads the Secret's certificate, then sets ready: once readiness passes,
    every new connection gets the new certificate."""
    server = make_server(tmp_path)

    async def body(url):
        first = await asyncio.to_thread(served_certificate, server.port)
        later = certs.plan({}, ["127.0.0.1"], datetime.datetime.now(datetime.UTC))
        certs.write_served(tmp_path, later)
        server.reload()
        server.set_ready()
        while await get(f"{url}/{READY_PATH}") != 200:
            await asyncio.sleep(0.01)
        second = await asyncio.to_thread(served_certificate, server.port)
        return first, second, later

    first, second, later = run(server, Recorder(), body)
    assert first != second
    expected = ssl.PEM_cert_to_DER_cert(later[certs.TLS_CRT].decode().split("\n\n")[0] + "\n")
    assert second == expected


def test_stopping_the_server_ends_its_thread(tmp_path: Path) -> None:
    server = make_server(tmp_path)
    before = {t.name for t in threading.enumerate()}
    run(server, Recorder(), lambda url: post(f"{url}/x", review()))
    assert "webhooks" not in {t.name for t in threading.enumerate()} - before
