"""kopf logs in with our connection: the same credentials, namespace and tls-server-name."""

from __future__ import annotations

import asyncio
from pathlib import Path

import kopf

from tas.config import Settings
from tas.handlers import operator

from .fakes import b64, kubeconfig, pki, serve, tls_app


def test_kopfs_session_reaches_the_server_as_ours_does(tmp_path: Path) -> None:
    p = pki(["api.internal"])

    async def go() -> tuple[kopf.AiohttpSession, dict]:
        async with serve(tls_app(), p.server_context(tmp_path)) as url:
            cluster = {"server": url, "certificate-authority-data": b64(p.ca)}
            cluster["tls-server-name"] = "api.internal"
            path = kubeconfig(
                tmp_path / "config", cluster=cluster, user={"token": "t"}, namespace="team"
            )
            memo = kopf.Memo(settings=Settings(kubeconfig=path))
            info = await operator.login(memo=memo)
            async with info.aiohttp_session as session, session.get(url + "/whoami") as r:
                return info, {**await r.json(), "auth": session.headers.get("Authorization")}

    info, answer = asyncio.run(go())
    assert isinstance(info, kopf.AiohttpSession)
    assert info.default_namespace == "team"
    assert answer == {"user": None, "auth": "Bearer t"}
