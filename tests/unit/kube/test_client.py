"""The client against a fake API server: a 401 logs in again once, watches never starve calls,
a silent watch is given up and resumed, tls-server-name, client certificates and proxy-url."""

from __future__ import annotations

import asyncio
import json
import stat
from collections import Counter
from pathlib import Path

import pytest
from aiohttp import web

from tas.kube import Kube, KubeError, client_session
from tas.kube.kubeconfig import Connection, Credentials, load_connection
from tas.kube.reflector import Reflector
from tas.kube.retry import Backoff

from .fakes import b64, kubeconfig, pki, serve, tls_app


def accepting(*tokens: str) -> tuple[web.Application, list[str | None]]:
    """An API server that answers /api/v1/namespaces for these bearer tokens only, and keeps
    the Authorization header of every request."""
    seen: list[str | None] = []

    async def namespaces(request: web.Request) -> web.Response:
        auth = request.headers.get("Authorization")
        seen.append(auth)
        if auth not in [f"Bearer {t}" for t in tokens]:
            return web.json_response({"kind": "Status", "message": "Unauthorized"}, status=401)
        return web.json_response({"kind": "NamespaceList", "items": []})

    app = web.Application()
    app.router.add_get("/api/v1/namespaces", namespaces)
    return app, seen


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 20))


async def call(connection: Connection) -> dict:
    kube = Kube(connection)
    try:
        return await kube.request("GET", "/api/v1/namespaces")
    finally:
        await kube.close()


# ---- 401 ------------------------------------------------------------------------------------


def test_a_401_rereads_a_rotated_token_file_and_retries_once(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("old")
    app, seen = accepting("new")

    async def go() -> dict:
        async with serve(app) as url:
            creds = Credentials(token_file=str(token))
            await creds.authorization()  # "old" is held, for up to a minute
            token.write_text("new")  # the kubelet rotates the bound token
            return await call(Connection(url, False, creds))

    assert run(go())["kind"] == "NamespaceList"
    assert seen == ["Bearer old", "Bearer new"]


def test_a_401_runs_the_exec_plugin_again(tmp_path: Path) -> None:
    script = tmp_path / "plugin.sh"
    script.write_text(
        f'#!/bin/sh\necho run >> "{tmp_path}/runs"\nN=$(wc -l < "{tmp_path}/runs" | tr -d " ")\n'
        'echo "{\\"kind\\":\\"ExecCredential\\",\\"status\\":{\\"token\\":\\"t$N\\"}}"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    app, seen = accepting("t2")

    async def go() -> dict:
        async with serve(app) as url:
            path = kubeconfig(
                tmp_path / "config",
                cluster={"server": url},
                user={"exec": {"command": str(script)}},
            )
            return await call(load_connection(path))

    assert run(go())["kind"] == "NamespaceList"
    assert seen == ["Bearer t1", "Bearer t2"]


@pytest.mark.parametrize("renewable", [True, False], ids=["token-file", "static-token"])
def test_a_second_401_or_a_static_token_is_not_retried_again(tmp_path, renewable) -> None:
    (tmp_path / "token").write_text("refused")
    creds = (
        Credentials(token_file=str(tmp_path / "token"))
        if renewable
        else Credentials(token="refused")
    )
    app, seen = accepting("other")

    async def go() -> None:
        async with serve(app) as url:
            await call(Connection(url, False, creds))

    with pytest.raises(KubeError) as error:
        run(go())
    assert error.value.status == 401
    assert len(seen) == (2 if renewable else 1)


# ---- watches and calls have their own budgets -----------------------------------------------


def test_many_open_watches_leave_calls_their_connections() -> None:
    """Each watch holds its connection for minutes. 40 of them (more than the 32 calls may
    use) all open, and writes still go through at once."""
    watches = 40
    open_watches = 0
    written = 0

    async def pods(request: web.Request) -> web.StreamResponse:
        nonlocal open_watches
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        open_watches += 1
        try:
            await asyncio.sleep(3600)
        finally:
            open_watches -= 1
        return response

    async def events(request: web.Request) -> web.Response:
        nonlocal written
        written += 1
        return web.json_response({"kind": "Event"}, status=201)

    app = web.Application()
    app.router.add_get("/api/v1/pods", pods)
    app.router.add_post("/api/v1/namespaces/ns/events", events)

    async def watch(kube: Kube) -> None:
        async for _ in kube.stream_lines("/api/v1/pods", {"watch": "1"}, 3600):
            pass

    async def go() -> tuple[int, list]:
        async with serve(app) as url:
            kube = Kube(Connection(url, False), timeout=3)
            tasks = [asyncio.create_task(watch(kube)) for _ in range(watches)]
            for _ in range(200):  # up to 2 s for every watch to be open
                if open_watches == watches:
                    break
                await asyncio.sleep(0.01)
            opened = open_watches
            writes = await asyncio.gather(
                *(kube.create("/api/v1/namespaces/ns/events", {}) for _ in range(10)),
                return_exceptions=True,
            )
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await kube.close()
            return opened, writes

    opened, writes = run(go())
    assert opened == watches
    assert writes == [{"kind": "Event"}] * 10 and written == 10


# ---- a watch that goes silent ---------------------------------------------------------------


def test_a_silent_watch_is_given_up_and_resumed_from_its_version() -> None:
    """The server sends one event, then nothing, not even a bookmark (a connection dropped
    without a FIN). The watch is given up after the idle time and resumed where it was, at
    once: a silence is not a failure to back off from."""
    asked: Counter[str] = Counter()
    resumed_from: list[str] = []

    async def pods(request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") != "1":
            asked["list"] += 1
            return web.json_response({"metadata": {"resourceVersion": "10"}, "items": []})
        resumed_from.append(request.query["resourceVersion"])
        rv = str(11 + len(resumed_from) - 1)
        response = web.StreamResponse()
        await response.prepare(request)
        obj = {"metadata": {"name": f"p{rv}", "namespace": "ns", "resourceVersion": rv}}
        await response.write(json.dumps({"type": "ADDED", "object": obj}).encode() + b"\n")
        await asyncio.sleep(3600)  # silent
        return response

    app = web.Application()
    app.router.add_get("/api/v1/pods", pods)
    seen: list[str] = []

    async def handle(kind: str, obj) -> None:
        seen.append(obj["metadata"]["name"])

    async def go() -> None:
        async with serve(app) as url:
            kube = Kube(Connection(url, False))
            reflector = Reflector(
                kube,
                "/api/v1/pods",
                handle,
                name="pods",
                idle_seconds=0.3,
                # Were a silence taken for a failure, the resume would wait 15 s or more.
                backoff=Backoff(30, 30),
            )
            task = asyncio.create_task(reflector.run())
            for _ in range(500):
                if len(seen) >= 2:
                    break
                await asyncio.sleep(0.01)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await kube.close()

    run(go())
    assert seen[:2] == ["p11", "p12"]
    assert resumed_from[:2] == ["10", "11"] and asked["list"] == 1  # resumed, not relisted


# ---- TLS: tls-server-name, CA and client certificate from memory ------------------------------


@pytest.mark.parametrize("server_name", [None, "api.internal"], ids=["url-host", "tls-server-name"])
def test_the_certificate_is_checked_against_tls_server_name(tmp_path, server_name) -> None:
    p = pki(["api.internal"])  # the certificate does not name 127.0.0.1
    cluster = {"certificate-authority-data": b64(p.ca)}
    if server_name:
        cluster["tls-server-name"] = server_name

    async def go() -> dict:
        async with serve(tls_app(), p.server_context(tmp_path)) as url:
            path = kubeconfig(tmp_path / "config", cluster={"server": url, **cluster})
            kube = Kube(load_connection(path), timeout=5)
            try:
                return await kube.request("GET", "/whoami")
            finally:
                await kube.close()

    if server_name:
        assert run(go()) == {"user": None}
    else:
        with pytest.raises(KubeError, match="certificate"):
            run(go())


def test_a_session_made_for_others_checks_tls_server_name_too(tmp_path: Path) -> None:
    """kopf's requests, on the session its login gets, pass no server name of their own."""
    p = pki(["api.internal"])

    async def go() -> dict:
        async with serve(tls_app(), p.server_context(tmp_path)) as url:
            cluster = {"server": url, "certificate-authority-data": b64(p.ca)}
            cluster["tls-server-name"] = "api.internal"
            connection = load_connection(kubeconfig(tmp_path / "config", cluster=cluster))
            async with client_session(connection, 0) as session, session.get(url + "/whoami") as r:
                return await r.json()

    assert run(go()) == {"user": None}


def test_an_inline_client_certificate_logs_in(tmp_path: Path) -> None:
    p = pki(["127.0.0.1"])
    cert, key = p.client_certificate("tas-operator")

    async def go() -> dict:
        async with serve(tls_app(), p.server_context(tmp_path, require_client_cert=True)) as url:
            path = kubeconfig(
                tmp_path / "config",
                cluster={"server": url, "certificate-authority-data": b64(p.ca)},
                user={"client-certificate-data": b64(cert), "client-key-data": b64(key)},
            )
            kube = Kube(load_connection(path), timeout=5)
            try:
                return await kube.request("GET", "/whoami")
            finally:
                await kube.close()

    assert run(go()) == {"user": "tas-operator"}


# ---- proxy-url ------------------------------------------------------------------------------


def test_calls_and_watches_go_through_proxy_url(tmp_path: Path) -> None:
    targets: list[str] = []

    async def proxy(request: web.Request) -> web.StreamResponse:
        targets.append(f"{request.method} {request.url.host} {request.path}")
        if request.query.get("watch"):
            response = web.StreamResponse()
            await response.prepare(request)
            await response.write(b'{"type":"ADDED","object":{}}\n')
            return response
        return web.json_response({"via": "proxy"})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", proxy)

    async def go() -> tuple[dict, list[bytes]]:
        async with serve(app) as proxy_url:
            cluster = {"server": "http://api.invalid:6443", "proxy-url": proxy_url}
            kube = Kube(load_connection(kubeconfig(tmp_path / "config", cluster=cluster)))
            try:
                answer = await kube.request("GET", "/api/v1/namespaces")
                lines = [x async for x in kube.stream_lines("/api/v1/pods", {"watch": "1"}, 5)]
                return answer, lines
            finally:
                await kube.close()

    answer, lines = run(go())
    assert answer == {"via": "proxy"} and len(lines) == 1
    assert targets == ["GET api.invalid /api/v1/namespaces", "GET api.invalid /api/v1/pods"]
