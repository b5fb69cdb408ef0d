"""How a request logs in: a bearer token (static, from a file, or from an exec credential plugin)
or basic auth, or nothing (client certificates are in the SSL context).

Nothing here blocks the event loop: an exec plugin (as cloud kubeconfigs use, and which may take
seconds) runs as a child process the loop awaits, at most EXEC_TIMEOUT_SECONDS, one at a time.
Its token is kept until its expirationTimestamp, or, without one, until the server refuses it;
a token file is read again every TOKEN_REREAD_SECONDS (bound service-account tokens rotate).
After a 401, `rejected` forgets the refused token, so the next call reads or runs it again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

TOKEN_REREAD_SECONDS = 60.0
EXEC_TIMEOUT_SECONDS = 60.0
EXPIRY_MARGIN_SECONDS = 10.0  # renew an exec token this long before it expires
EXEC_API_VERSION = "client.authentication.k8s.io/v1"


class KubeconfigError(Exception):
    pass


@dataclass
class Credentials:
    token: str | None = field(default=None, repr=False)
    token_file: str | None = None
    exec_config: Mapping[str, Any] | None = None
    basic: str | None = field(default=None, repr=False)
    # What an exec plugin asking for it (provideClusterInfo) is told about the cluster.
    exec_cluster: Mapping[str, Any] | None = None
    _cached: str | None = field(default=None, repr=False)
    _expires: float = 0.0  # monotonic
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)

    @property
    def renewable(self) -> bool:
        """A refused credential can be replaced by a new one (a file or a plugin)."""
        return not (self.basic or self.token) and bool(self.token_file or self.exec_config)

    async def authorization(self) -> str | None:
        """The Authorization header's value, or None."""
        if self.basic:
            return "Basic " + self.basic
        if self.token:
            return "Bearer " + self.token
        if not self.renewable:
            return None
        async with self._lock:  # one plugin run for all the calls that find the token expired
            if self._cached is None or time.monotonic() >= self._expires:
                self._cached, self._expires = await self._fetch()
            return self._cached

    async def _fetch(self) -> tuple[str, float]:
        if self.token_file:
            try:
                token = Path(self.token_file).read_text().strip()
            except OSError as exc:
                raise KubeconfigError(f"kubeconfig tokenFile: {exc}") from None
            return "Bearer " + token, time.monotonic() + TOKEN_REREAD_SECONDS
        assert self.exec_config is not None
        token, expires = await run_exec_plugin(self.exec_config, self.exec_cluster)
        return "Bearer " + token, expires

    def rejected(self, authorization: str | None) -> bool:
        """The server answered 401 to `authorization`. Forget it if it is still the one held
        (a concurrent call may have renewed it already); True if a retry may log in with
        another."""
        if not self.renewable:
            return False
        if self._cached == authorization:
            self._cached = None
        return True


async def run_exec_plugin(
    spec: Mapping[str, Any], cluster: Mapping[str, Any] | None = None
) -> tuple[str, float]:
    """Run a client-go credential plugin off the loop; (token, monotonic expiry)."""
    command = spec.get("command")
    if not command or not isinstance(command, str):
        raise KubeconfigError("kubeconfig exec: no command")
    name = f"kubeconfig exec plugin {command!r}"
    try:
        process = await asyncio.create_subprocess_exec(
            command,
            *[str(a) for a in spec.get("args") or []],
            env=_exec_env(spec, cluster),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except (OSError, ValueError, TypeError) as exc:
        raise KubeconfigError(f"{name}: {exc}") from None
    try:
        out, err = await asyncio.wait_for(process.communicate(), EXEC_TIMEOUT_SECONDS)
    except TimeoutError:
        raise KubeconfigError(f"{name}: no answer in {EXEC_TIMEOUT_SECONDS:g}s") from None
    finally:
        if process.returncode is None:  # timed out or cancelled: leave no plugin running
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await asyncio.shield(process.wait())
    if process.returncode != 0:
        detail = err.decode(errors="replace").strip().splitlines()[-1:] or [""]
        raise KubeconfigError(f"{name}: exit status {process.returncode}: {detail[0]}")
    return parse_exec_credential(out, name)


def _exec_env(spec: Mapping[str, Any], cluster: Mapping[str, Any] | None) -> dict[str, str]:
    env = dict(os.environ)
    for entry in spec.get("env") or []:
        try:
            env[str(entry["name"])] = str(entry["value"])
        except (KeyError, TypeError):
            raise KubeconfigError(
                f"kubeconfig exec env: {entry!r} needs a name and a value"
            ) from None
    info: dict[str, Any] = {
        "apiVersion": spec.get("apiVersion", EXEC_API_VERSION),
        "kind": "ExecCredential",
        "spec": {"interactive": False},
    }
    if spec.get("provideClusterInfo") and cluster is not None:
        info["spec"]["cluster"] = dict(cluster)
    env["KUBERNETES_EXEC_INFO"] = json.dumps(info)
    return env


def parse_exec_credential(out: bytes, name: str) -> tuple[str, float]:
    """(token, monotonic expiry) from an ExecCredential; without an expirationTimestamp the
    token is kept until the server refuses it, as client-go does."""
    try:
        status = json.loads(out)["status"]
        token = status["token"]
    except (ValueError, KeyError, TypeError):
        raise KubeconfigError(
            f"{name}: the output is not an ExecCredential with status.token "
            "(client certificates from a plugin are not supported)"
        ) from None
    if not isinstance(token, str) or not token:
        raise KubeconfigError(f"{name}: status.token is empty")
    stamp = status.get("expirationTimestamp")
    if not stamp:
        return token, math.inf
    try:
        at = datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise KubeconfigError(
            f"{name}: status.expirationTimestamp {stamp!r} is not a time"
        ) from None
    return token, time.monotonic() + max(0.0, at - time.time() - EXPIRY_MARGIN_SECONDS)
