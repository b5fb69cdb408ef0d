"""The fault-injecting proxy of e2e/faultproxy.py, against a fake apiserver in a thread."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import threading
import time
import urllib.error
import urllib.request

import aiohttp
import pytest
from aiohttp import web
from e2e.faultproxy import FaultProxy


async def pods(request: web.Request) -> web.StreamResponse:
    if request.query.get("watch") not in ("true", "1"):
        return web.json_response({"kind": "PodList", "items": []})
    response = web.StreamResponse(headers={"Content-Type": "application/json"})
    await response.prepare(request)
    n = 0
    while True:  # until the proxy hangs up (the write fails or the handler is cancelled)
        line = {"type": "ADDED", "object": {"kind": "Pod", "metadata": {"name": f"p{n}"}}}
        await response.write(json.dumps(line).encode() + b"\n")
        n += 1
        await asyncio.sleep(0.1)


async def echo(request: web.Request) -> web.Response:
    return web.json_response(
        {
            "method": request.method,
            "query": request.query_string,
            "authorization": request.headers.get("Authorization"),
            "body": (await request.read()).decode(),
        },
        status=int(request.query.get("status", 200)),
    )


@pytest.fixture(scope="module")
def upstream():
    """A fake apiserver on its own event loop in a thread; yields its URL."""
    loop = asyncio.new_event_loop()
    app = web.Application()
    app.router.add_get("/api/v1/pods", pods)
    app.router.add_route("*", "/echo", echo)
    runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=1)
    loop.run_until_complete(runner.setup())
    loop.run_until_complete(web.TCPSite(runner, "127.0.0.1", 0).start())
    port = runner.addresses[0][1]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{port}"
    asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=5)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=5)
    loop.close()


@pytest.fixture(scope="module")
def module_proxy(upstream):
    with FaultProxy(upstream) as proxy:
        yield proxy
    assert proxy.proc.returncode is not None


@pytest.fixture
def proxy(module_proxy):
    module_proxy.clear_rules()
    module_proxy.reset_stats()
    return module_proxy


def get(url: str, method: str = "GET", body: bytes | None = None, headers=None):
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


@contextlib.contextmanager
def watch(url: str):
    with urllib.request.urlopen(url + "/api/v1/pods?watch=true", timeout=5) as response:
        yield response


def test_forwards_requests_and_counts_them(proxy):
    status, _, body = get(proxy.url + "/api/v1/pods")
    assert status == 200 and json.loads(body)["kind"] == "PodList"
    status, _, body = get(
        proxy.url + "/echo?a=b%3Dc&status=201",
        method="PATCH",
        body=b'{"x": 1}',
        headers={"Authorization": "Bearer t0ken", "Content-Type": "application/json"},
    )
    assert status == 201
    assert json.loads(body) == {
        "method": "PATCH",
        "query": "a=b%3Dc&status=201",
        "authorization": "Bearer t0ken",
        "body": '{"x": 1}',
    }
    assert get(proxy.url + "/echo?status=404")[0] == 404
    get(proxy.url + "/api/v1/pods")
    stats = proxy.stats()
    assert stats["counts"] == {"GET /api/v1/pods": 2, "PATCH /echo": 1, "GET /echo": 1}
    assert stats["total"] == 4
    assert stats["by_status"] == {"200": 2, "201": 1, "404": 1}
    assert stats["arrived"] == stats["counts"]
    proxy.reset_stats()
    assert proxy.stats()["total"] == 0


def test_status_rule_is_spent_after_times_and_429_sets_retry_after(proxy):
    conflict = {"method": "GET", "path": "^/api/v1/pods$", "action": "status", "status": 409}
    proxy.set_rules([conflict | {"times": 2}])
    answers = [get(proxy.url + "/api/v1/pods") for _ in range(3)]
    assert [a[0] for a in answers] == [409, 409, 200]
    status = json.loads(answers[0][2])
    assert status["kind"] == "Status" and status["reason"] == "Conflict" and status["code"] == 409
    assert proxy.rules()[0]["times"] == 0
    assert proxy.stats()["by_status"] == {"409": 2, "200": 1}

    proxy.set_rules([{"path": "/echo", "action": "status", "status": 429, "retry_after": 3}])
    status, headers, body = get(proxy.url + "/echo", method="POST", body=b"{}")
    assert status == 429 and headers["Retry-After"] == "3"
    assert json.loads(body)["reason"] == "TooManyRequests"
    assert get(proxy.url + "/api/v1/pods")[0] == 200  # the path does not match

    with pytest.raises(urllib.error.HTTPError, match="400"):
        proxy.set_rules([{"action": "status"}])  # no status: refused, the old rules stay
    assert proxy.rules()[0]["status"] == 429


def test_delay_holds_a_request_then_forwards_it(proxy):
    proxy.set_rules([{"method": "PATCH", "path": "/echo", "action": "delay", "seconds": 0.5}])
    started = time.monotonic()
    status, _, body = get(proxy.url + "/echo", method="PATCH", body=b"{}")
    held = time.monotonic() - started
    assert status == 200 and json.loads(body)["method"] == "PATCH" and held >= 0.5
    started = time.monotonic()
    assert get(proxy.url + "/echo")[0] == 200 and time.monotonic() - started < 0.5  # a GET
    proxy.reset_stats()
    with pytest.raises((TimeoutError, urllib.error.URLError)):  # the client gives up first
        urllib.request.urlopen(
            urllib.request.Request(proxy.url + "/echo", data=b"{}", method="PATCH"), timeout=0.2
        )
    time.sleep(0.5)
    stats = proxy.stats()
    assert stats["arrived"] == {"PATCH /echo": 1} and stats["counts"] == {}  # never answered
    with pytest.raises(urllib.error.HTTPError, match="400"):
        proxy.set_rules([{"action": "delay"}])  # no seconds


def test_drop_closes_the_connection(proxy):
    proxy.set_rules([{"path": "pods", "action": "drop"}])
    with pytest.raises((ConnectionError, http.client.HTTPException, urllib.error.URLError)):
        get(proxy.url + "/api/v1/pods")
    assert proxy.stats()["by_status"] == {"dropped": 1}


def test_expire_answers_a_watch_with_410(proxy):
    proxy.set_rules([{"watch": True, "action": "expire", "times": 1}])
    assert get(proxy.url + "/api/v1/pods")[0] == 200  # not a watch: the rule does not apply
    with watch(proxy.url) as stream:
        event = json.loads(stream.readline())
        assert stream.readline() == b""
    assert event["type"] == "ERROR" and event["object"]["code"] == 410
    assert event["object"]["reason"] == "Expired"
    with watch(proxy.url) as stream:  # spent: the next watch reaches the upstream
        assert json.loads(stream.readline())["type"] == "ADDED"


def test_drop_watches_ends_open_streams(proxy):
    # aiohttp, like kopf: it tells a broken chunked stream (an error) from a finished one (b"").
    async def watch_then_drop():
        async with (
            aiohttp.ClientSession() as session,
            session.get(proxy.url + "/api/v1/pods?watch=true") as response,
        ):
            lines = [json.loads(await response.content.readline()) for _ in range(2)]
            assert [e["object"]["metadata"]["name"] for e in lines] == ["p0", "p1"]  # unbuffered
            assert await asyncio.to_thread(proxy.drop_watches) == 1
            with pytest.raises(aiohttp.ClientPayloadError):
                async with asyncio.timeout(2):
                    while await response.content.readline():  # lines in flight, then the break
                        pass

    asyncio.run(watch_then_drop())
    assert proxy.drop_watches() == 0
    assert get(proxy.url + "/api/v1/pods")[0] == 200  # the proxy still serves
