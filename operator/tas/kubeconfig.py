"""Where the API server is and how to log in: in-cluster, or from a kubeconfig.

Our own reader, not the `kubernetes` package's: that package costs most of a second to import
(kopf imports it too whenever it is installed), and restart time matters. Covered: in-cluster
service account (its token file is re-read, since bound tokens rotate); kubeconfig clusters with
certificate-authority(-data) or insecure-skip-tls-verify; users with token, tokenFile,
client-certificate(-data) and client-key(-data), username and password, or an exec credential
plugin (client.authentication.k8s.io, as cloud kubeconfigs use).
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
TOKEN_REREAD_SECONDS = 60.0


class KubeconfigError(Exception):
    pass


@dataclass
class Credentials:
    """A bearer token (static, from a file, or from an exec plugin) or basic auth, or nothing
    (client certificates are in the SSL context)."""

    token: str | None = None
    token_file: str | None = None
    exec_config: Mapping[str, Any] | None = None
    basic: str | None = None
    _cached: str | None = None
    _expires: float = 0.0

    def authorization(self) -> str | None:
        if self.basic:
            return "Basic " + self.basic
        if self.token:
            return "Bearer " + self.token
        if self._cached and time.monotonic() < self._expires:
            return self._cached
        if self.token_file:
            token = Path(self.token_file).read_text().strip()
            self._cached, self._expires = "Bearer " + token, time.monotonic() + TOKEN_REREAD_SECONDS
        elif self.exec_config:
            token, expires = run_exec_plugin(self.exec_config)
            self._cached, self._expires = "Bearer " + token, expires
        return self._cached


@dataclass(frozen=True)
class Connection:
    server: str
    ssl: ssl.SSLContext | bool
    credentials: Credentials = field(default_factory=Credentials)
    ca_file: str | None = None  # for kopf's login
    insecure: bool = False
    cert_file: str | None = None
    key_file: str | None = None

    def authorization(self) -> str | None:
        return self.credentials.authorization()


def load_connection(kubeconfig: str | None = None) -> Connection:
    """In-cluster when running in a pod (and no kubeconfig is given), else the kubeconfig:
    the given path, else $KUBECONFIG, else ~/.kube/config."""
    host, port = (
        os.environ.get("KUBERNETES_SERVICE_HOST"),
        os.environ.get("KUBERNETES_SERVICE_PORT"),
    )
    if kubeconfig is None and host and port and (SERVICE_ACCOUNT / "token").exists():
        ca = str(SERVICE_ACCOUNT / "ca.crt")
        return Connection(
            server=f"https://{host}:{port}",
            ssl=ssl.create_default_context(cafile=ca),
            credentials=Credentials(token_file=str(SERVICE_ACCOUNT / "token")),
            ca_file=ca,
        )
    path = kubeconfig or (os.environ.get("KUBECONFIG") or "").split(os.pathsep)[0]
    path = os.path.expanduser(path or "~/.kube/config")
    try:
        config = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise KubeconfigError(f"kubeconfig {path}: {exc}") from None
    return _from_kubeconfig(config, Path(path).parent)


def _named(config: Mapping, kind: str, name: str) -> Mapping:
    for item in config.get(kind + "s") or []:
        if item.get("name") == name:
            return item.get(kind) or {}
    raise KubeconfigError(f"kubeconfig: no {kind} named {name!r}")


def _file(base: Path, path: str | None, data: str | None, suffix: str) -> str | None:
    """A path for ssl: the given file (relative to the kubeconfig), or the inline data written
    to a private temporary file."""
    if path:
        return str(base / path)
    if not data:
        return None
    fd, name = tempfile.mkstemp(prefix="tas-kube-", suffix=suffix)
    with os.fdopen(fd, "wb") as f:
        f.write(base64.b64decode(data))
    return name


def _from_kubeconfig(config: Mapping, base: Path) -> Connection:
    context_name = config.get("current-context")
    if not context_name:
        raise KubeconfigError("kubeconfig: no current-context")
    context = _named(config, "context", context_name)
    cluster = _named(config, "cluster", context.get("cluster", ""))
    user = _named(config, "user", context.get("user", "")) if context.get("user") else {}
    server = (cluster.get("server") or "").rstrip("/")
    if not server:
        raise KubeconfigError(f"kubeconfig: cluster of context {context_name!r} has no server")
    insecure = bool(cluster.get("insecure-skip-tls-verify"))
    ca = _file(
        base,
        cluster.get("certificate-authority"),
        cluster.get("certificate-authority-data"),
        ".crt",
    )
    cert = _file(base, user.get("client-certificate"), user.get("client-certificate-data"), ".crt")
    key = _file(base, user.get("client-key"), user.get("client-key-data"), ".key")
    context_ssl: ssl.SSLContext | bool = False
    if server.startswith("https"):
        context_ssl = ssl.create_default_context(cafile=None if insecure else ca)
        if insecure:
            context_ssl.check_hostname = False
            context_ssl.verify_mode = ssl.CERT_NONE
        if cert and key:
            context_ssl.load_cert_chain(cert, key)
    basic = None
    if user.get("username"):
        basic = base64.b64encode(f"{user['username']}:{user.get('password', '')}".encode()).decode()
    credentials = Credentials(
        token=user.get("token"),
        token_file=str(base / user["tokenFile"]) if user.get("tokenFile") else None,
        exec_config=user.get("exec"),
        basic=basic,
    )
    return Connection(server, context_ssl, credentials, ca, insecure, cert, key)


def run_exec_plugin(spec: Mapping[str, Any]) -> tuple[str, float]:
    """Run a client-go credential plugin; (token, monotonic expiry)."""
    env = {**os.environ, **{e["name"]: e["value"] for e in spec.get("env") or []}}
    env["KUBERNETES_EXEC_INFO"] = json.dumps(
        {
            "apiVersion": spec.get("apiVersion", "client.authentication.k8s.io/v1"),
            "kind": "ExecCredential",
            "spec": {"interactive": False},
        }
    )
    try:
        out = subprocess.run(
            [spec["command"], *(spec.get("args") or [])],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
        status = json.loads(out)["status"]
    except (OSError, subprocess.SubprocessError, ValueError, KeyError) as exc:
        raise KubeconfigError(f"kubeconfig exec plugin {spec.get('command')!r}: {exc}") from None
    expires = time.monotonic() + 300
    if status.get("expirationTimestamp"):
        at = datetime.fromisoformat(status["expirationTimestamp"].replace("Z", "+00:00"))
        expires = time.monotonic() + max(0.0, at.timestamp() - time.time() - 10)
    return status["token"], expires
