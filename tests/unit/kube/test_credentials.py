"""Credentials: an exec plugin runs off the event loop, once for concurrent callers, its token
kept until its expirationTimestamp (or until refused); a refused token is fetched again."""

from __future__ import annotations

import asyncio
import json
import stat
import time
from pathlib import Path

import pytest

from tas.kube import credentials
from tas.kube.credentials import Credentials, KubeconfigError


def plugin(tmp_path: Path, body: str) -> str:
    """A plugin script; each run appends a line to `runs` and may read its number as $N."""
    script = tmp_path / "plugin.sh"
    script.write_text(
        "#!/bin/sh\n"
        f'echo run >> "{tmp_path}/runs"\n'
        f'N=$(wc -l < "{tmp_path}/runs" | tr -d " ")\n' + body
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def credential(token: str, expires: str | None = None) -> str:
    """Shell that prints an ExecCredential ($N in the token is the run's number)."""
    status = f'"token":"{token}"' + (f',"expirationTimestamp":"{expires}"' if expires else "")
    return (
        'cat <<EOF\n{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",'
        f'"status":{{{status}}}}}\nEOF\n'
    )


def runs(tmp_path: Path) -> int:
    path = tmp_path / "runs"
    return len(path.read_text().splitlines()) if path.exists() else 0


def exec_credentials(command: str, **extra) -> Credentials:
    return Credentials(
        exec_config={"apiVersion": "client.authentication.k8s.io/v1", "command": command, **extra}
    )


def test_a_slow_plugin_does_not_stop_the_event_loop(tmp_path: Path) -> None:
    creds = exec_credentials(plugin(tmp_path, "sleep 1\n" + credential("slow")))

    async def go() -> tuple[str | None, int]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.02)
                ticks += 1

        task = asyncio.create_task(ticker())
        token = await creds.authorization()
        task.cancel()
        return token, ticks

    token, ticks = asyncio.run(go())
    assert token == "Bearer slow"
    assert ticks >= 20  # ~50 in the second the plugin sleeps; 0 if it blocked the loop


def test_concurrent_callers_share_one_run_and_the_token_is_kept_until_it_expires(
    tmp_path: Path,
) -> None:
    creds = exec_credentials(plugin(tmp_path, credential("t$N", "2999-01-01T00:00:00Z")))

    async def go() -> list[str | None]:
        first = await asyncio.gather(*(creds.authorization() for _ in range(5)))
        return [*first, await creds.authorization()]

    assert asyncio.run(go()) == ["Bearer t1"] * 6
    assert runs(tmp_path) == 1


def test_an_expired_token_runs_the_plugin_again(tmp_path: Path) -> None:
    past = "2000-01-01T00:00:00Z"
    creds = exec_credentials(plugin(tmp_path, credential("t$N", past)))

    async def go() -> list[str | None]:
        return [await creds.authorization(), await creds.authorization()]

    assert asyncio.run(go()) == ["Bearer t1", "Bearer t2"]


def test_without_an_expiry_the_token_is_kept_until_the_server_refuses_it(tmp_path) -> None:
    creds = exec_credentials(plugin(tmp_path, credential("t$N")))

    async def go() -> list[str | None]:
        first = await creds.authorization()
        again = await creds.authorization()
        assert creds.rejected("Bearer some-older-token")  # not the one held: kept
        kept = await creds.authorization()
        assert creds.rejected(first)
        return [first, again, kept, await creds.authorization()]

    assert asyncio.run(go()) == ["Bearer t1", "Bearer t1", "Bearer t1", "Bearer t2"]


def test_a_rotated_token_file_is_read_again_after_a_refusal(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("old\n")
    creds = Credentials(token_file=str(token))

    async def go() -> list[str | None]:
        first = await creds.authorization()
        token.write_text("new\n")
        cached = await creds.authorization()  # within the re-read period: not read
        creds.rejected(first)
        return [first, cached, await creds.authorization()]

    assert asyncio.run(go()) == ["Bearer old", "Bearer old", "Bearer new"]


def test_a_static_token_cannot_be_renewed() -> None:
    creds = Credentials(token="fixed")
    assert not creds.rejected("Bearer fixed")
    assert asyncio.run(creds.authorization()) == "Bearer fixed"


def test_a_plugin_that_hangs_is_killed_at_the_timeout(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(credentials, "EXEC_TIMEOUT_SECONDS", 0.3)
    pid_file = tmp_path / "pid"
    creds = exec_credentials(plugin(tmp_path, f'echo $$ > "{pid_file}"\nexec sleep 30\n'))
    started = time.monotonic()
    with pytest.raises(KubeconfigError, match=r"no answer in 0\.3s"):
        asyncio.run(creds.authorization())
    assert time.monotonic() - started < 5
    pid = int(pid_file.read_text())
    assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("echo oops >&2\nexit 3\n", "exit status 3: oops"),
        ("echo not-json\n", "not an ExecCredential"),
        (credential("x", "yesterday"), "expirationTimestamp 'yesterday'"),
        (credential(""), "status.token is empty"),
    ],
    ids=["fails", "not-json", "bad-expiry", "empty-token"],
)
def test_a_broken_plugin_is_a_clear_error(tmp_path: Path, body: str, message: str) -> None:
    creds = exec_credentials(plugin(tmp_path, body))
    with pytest.raises(KubeconfigError, match=message):
        asyncio.run(creds.authorization())


def test_the_plugin_is_told_about_the_cluster_only_when_it_asks(tmp_path: Path) -> None:
    command = plugin(
        tmp_path, f'echo "$KUBERNETES_EXEC_INFO" > "{tmp_path}/info"\n' + credential("x")
    )
    cluster = {"server": "https://h:6443", "tls-server-name": "api"}
    for provide in (False, True):
        creds = exec_credentials(command, provideClusterInfo=provide)
        creds.exec_cluster = cluster
        asyncio.run(creds.authorization())
        info = json.loads((tmp_path / "info").read_text())
        assert info["spec"].get("cluster") == (cluster if provide else None)
        assert info["spec"]["interactive"] is False
