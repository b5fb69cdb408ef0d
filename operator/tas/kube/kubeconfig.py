"""Where the API server is and how to reach it: in-cluster, or from kubeconfig files.

Our own reader, not the `kubernetes` package's: that package costs most of a second to import
(kopf imports it too whenever it is installed), and restart time matters. Read as kubectl
reads them:
- `KUBECONFIG` may list several files: the first file to name a cluster, user or context wins
  that entry whole, and the first to set current-context wins; missing files are skipped;
  relative paths are read from the directory of the file that holds them. `--kubeconfig`
  names one file.
- clusters: server, certificate-authority(-data), insecure-skip-tls-verify, tls-server-name
  (the name sent as SNI and checked in the server's certificate), proxy-url (http or https).
- users: token, tokenFile, client-certificate(-data) and client-key(-data), username and
  password, or an exec credential plugin (credentials.py says how they log in).
- the current context's namespace: `default_namespace`.
Certificates and keys are loaded into the SSL context from memory; no copy of a key is left on
disk (see `_private_pem_file`).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import os
import ssl
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from tas.kube.credentials import Credentials, KubeconfigError

__all__ = [
    "Connection",
    "Credentials",
    "KubeconfigError",
    "default_namespace",
    "load_connection",
    "without_system_ca_store",
]

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
DEFAULT_NAMESPACE = "tas-system"
KINDS = ("cluster", "user", "context")
# Fields naming a file, read relative to the kubeconfig that holds them (as client-go does).
FILE_FIELDS = {
    "cluster": ("certificate-authority",),
    "user": ("client-certificate", "client-key", "tokenFile"),
    "context": (),
}
EXEC_EXTENSION = "client.authentication.k8s.io/exec"  # a cluster's config for exec plugins
CA_FILE_ENV = "SSL_CERT_FILE"  # OpenSSL reads it each time it loads the default CA store


@contextlib.contextmanager
def without_system_ca_store() -> Iterator[None]:
    """OpenSSL's default CA file is empty while in it (a CA directory, if one is set, is still
    searched, certificate by certificate, only when a peer is verified). For importing aiohttp:
    it builds two default TLS contexts at import, each loading the system's file (0.05-0.1 s of
    CPU here, on the path to the first admission after a restart), and the operator uses
    neither: our client and kopf's build their own contexts (`_ssl_context`), after it. Only
    on the main thread, before any other starts: the environment is the process's."""
    before = os.environ.get(CA_FILE_ENV)
    os.environ[CA_FILE_ENV] = os.devnull
    try:
        yield
    finally:
        if before is None:
            del os.environ[CA_FILE_ENV]
        else:
            os.environ[CA_FILE_ENV] = before


@dataclass(frozen=True)
class Connection:
    server: str
    ssl: ssl.SSLContext | bool
    credentials: Credentials = field(default_factory=Credentials)
    namespace: str | None = None  # the current context's (the pod's, in a cluster)
    tls_server_name: str | None = None
    proxy_url: str | None = None
    insecure: bool = False

    async def authorization(self) -> str | None:
        return await self.credentials.authorization()


def load_connection(kubeconfig: str | None = None) -> Connection:
    """In-cluster when running in a pod (and no kubeconfig is given), else the kubeconfig:
    the given path, else the files $KUBECONFIG lists, else ~/.kube/config."""
    host, port = (
        os.environ.get("KUBERNETES_SERVICE_HOST"),
        os.environ.get("KUBERNETES_SERVICE_PORT"),
    )
    if kubeconfig is None and host and port and (SERVICE_ACCOUNT / "token").exists():
        return _in_cluster(host, port)
    return _from_kubeconfig(load_kubeconfig(kubeconfig))


def default_namespace(kubeconfig: str | None = None) -> str:
    """Where a namespace is needed and none is given: the pod's in a cluster, else
    TAS_POD_NAMESPACE, else the namespace of the kubeconfig's current context, else
    tas-system."""
    pod_namespace = _pod_namespace()
    if pod_namespace:
        return pod_namespace
    if os.environ.get("TAS_POD_NAMESPACE"):
        return os.environ["TAS_POD_NAMESPACE"]
    try:
        config = load_kubeconfig(kubeconfig)
    except KubeconfigError:  # load_connection reports it
        return DEFAULT_NAMESPACE
    context = config["contexts"].get(config["current-context"]) or {}
    return str(context.get("namespace") or DEFAULT_NAMESPACE)


def _pod_namespace() -> str | None:
    path = SERVICE_ACCOUNT / "namespace"
    return path.read_text().strip() if path.exists() else None


def _in_cluster(host: str, port: str) -> Connection:
    ca = (SERVICE_ACCOUNT / "ca.crt").read_bytes()
    host = f"[{host}]" if ":" in host else host  # an IPv6 address
    return Connection(
        server=f"https://{host}:{port}",
        ssl=ssl.create_default_context(cadata=ca.decode()),
        credentials=Credentials(token_file=str(SERVICE_ACCOUNT / "token")),
        namespace=_pod_namespace(),
    )


# ---- reading and merging the files ----------------------------------------------------------


def kubeconfig_paths(kubeconfig: str | None) -> list[str]:
    if kubeconfig:
        return [kubeconfig]
    listed = [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    return listed or [os.path.expanduser("~/.kube/config")]


def load_kubeconfig(kubeconfig: str | None = None) -> dict[str, Any]:
    """The merged kubeconfig: its current-context, and its clusters, users and contexts by
    name, with the paths in them made absolute."""
    paths = kubeconfig_paths(kubeconfig)
    merged: dict[str, Any] = {"current-context": "", **{kind + "s": {} for kind in KINDS}}
    read = 0
    for path in paths:
        config = _read(path)
        if config is None:
            continue
        read += 1
        merged["current-context"] = merged["current-context"] or str(
            config.get("current-context") or ""
        )
        for kind in KINDS:
            for name, entry in _entries(config, kind, path).items():
                merged[kind + "s"].setdefault(name, entry)  # the first file wins
    if not read:
        raise KubeconfigError(f"kubeconfig: no such file: {os.pathsep.join(paths)}")
    return merged


def _read(path: str) -> Mapping[str, Any] | None:
    """A kubeconfig file's content, or None if there is no such file."""
    try:
        config = yaml.safe_load(Path(path).read_text()) or {}
    except FileNotFoundError:
        return None
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as exc:
        raise KubeconfigError(f"kubeconfig {path}: {exc}") from None
    if not isinstance(config, Mapping):
        raise KubeconfigError(f"kubeconfig {path}: not a mapping")
    return config


def _entries(config: Mapping[str, Any], kind: str, path: str) -> dict[str, dict[str, Any]]:
    items = config.get(kind + "s") or []
    if not isinstance(items, list):
        raise KubeconfigError(f"kubeconfig {path}: {kind}s is not a list")
    base = os.path.dirname(os.path.abspath(path))
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        name = item.get("name") if isinstance(item, Mapping) else None
        if not isinstance(name, str) or not name:
            raise KubeconfigError(f"kubeconfig {path}: a {kind} without a name")
        if name in out:
            raise KubeconfigError(f"kubeconfig {path}: two {kind}s named {name!r}")
        entry = item.get(kind) or {}
        if not isinstance(entry, Mapping):
            raise KubeconfigError(f"kubeconfig {path}: {kind} {name!r} is not a mapping")
        out[name] = _absolute_paths(kind, dict(entry), base)
    return out


def _absolute_paths(kind: str, entry: dict[str, Any], base: str) -> dict[str, Any]:
    for key in FILE_FIELDS[kind]:
        if entry.get(key):
            entry[key] = os.path.join(base, str(entry[key]))  # an absolute one stays as it is
    plugin = entry.get("exec") if kind == "user" else None
    # A plugin's command with a slash is a path; without one it is looked up in PATH.
    if isinstance(plugin, Mapping) and os.sep in str(plugin.get("command") or ""):
        entry["exec"] = {**plugin, "command": os.path.join(base, str(plugin["command"]))}
    return entry


def _named(config: Mapping[str, Any], kind: str, name: str) -> Mapping[str, Any]:
    entry = config[kind + "s"].get(name)
    if entry is None:
        raise KubeconfigError(f"kubeconfig: no {kind} named {name!r}")
    return entry


# ---- the connection -------------------------------------------------------------------------


def _from_kubeconfig(config: Mapping[str, Any]) -> Connection:
    context_name = config.get("current-context")
    if not context_name:
        raise KubeconfigError("kubeconfig: no current-context")
    context = _named(config, "context", context_name)
    cluster_name = str(context.get("cluster") or "")
    cluster = _named(config, "cluster", cluster_name)
    user = _named(config, "user", str(context["user"])) if context.get("user") else {}
    server = str(cluster.get("server") or "").rstrip("/")
    if not server:
        raise KubeconfigError(f"kubeconfig: cluster of context {context_name!r} has no server")
    insecure = bool(cluster.get("insecure-skip-tls-verify"))
    ca = _pem(cluster, "certificate-authority", f"cluster {cluster_name!r}")
    cert = _pem(user, "client-certificate", f"user {context.get('user')!r}")
    key = _pem(user, "client-key", f"user {context.get('user')!r}")
    return Connection(
        server=server,
        ssl=_ssl_context(server, ca, cert, key, insecure),
        credentials=_credentials(user, _exec_cluster(cluster, server, ca)),
        namespace=str(context.get("namespace") or "") or None,
        tls_server_name=str(cluster.get("tls-server-name") or "") or None,
        proxy_url=_proxy_url(cluster, cluster_name),
        insecure=insecure,
    )


def _pem(entry: Mapping[str, Any], name: str, where: str) -> bytes | None:
    """`name` (a file) or `name`-data (base64), as bytes."""
    path, data = entry.get(name), entry.get(name + "-data")
    try:
        if path:
            return Path(path).read_bytes()
        return base64.b64decode("".join(str(data).split()), validate=True) if data else None
    except (OSError, binascii.Error) as exc:
        raise KubeconfigError(
            f"kubeconfig {where} {name}{'' if path else '-data'}: {exc}"
        ) from None


# Shared by every client made from the same kubeconfig (the runtime's, kopf's login, a login
# again on a 401): each context costs a CA parse and, with a client key, a private file.
# Keyed by the bytes, so a rotated certificate gets a new context; errors are not cached.
@functools.lru_cache(maxsize=8)
def _ssl_context(
    server: str, ca: bytes | None, cert: bytes | None, key: bytes | None, insecure: bool
) -> ssl.SSLContext | bool:
    if not server.startswith("https:"):
        return False
    if insecure:  # not even the system's CAs are loaded: nothing is checked
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        try:
            context = ssl.create_default_context(cadata=ca.decode() if ca else None)
        except (ssl.SSLError, ValueError) as exc:
            raise KubeconfigError(f"kubeconfig certificate-authority: {exc}") from None
    if bool(cert) != bool(key):
        raise KubeconfigError("kubeconfig: client-certificate and client-key go together")
    if cert and key:
        with _private_pem_file(cert.rstrip(b"\n") + b"\n" + key) as path:
            try:
                context.load_cert_chain(path, password=lambda: b"")  # never a prompt
            except ssl.SSLError as exc:
                raise KubeconfigError(f"kubeconfig client-certificate/client-key: {exc}") from None
    return context


@contextlib.contextmanager
def _private_pem_file(content: bytes) -> Iterator[str]:
    """A name for `content`, since ssl loads a client key only from a file: an anonymous
    in-memory file (Linux), so the key never reaches a disk; elsewhere a temporary file only we
    may read (0600), removed as soon as the key is loaded."""
    fd = _memory_file()
    if fd is None:
        with tempfile.NamedTemporaryFile(prefix="tas-kube-", suffix=".pem") as file:
            file.write(content)
            file.flush()
            yield file.name
        return
    try:
        with os.fdopen(os.dup(fd), "wb") as file:
            file.write(content)
        yield f"/proc/self/fd/{fd}"
    finally:
        os.close(fd)


def _memory_file() -> int | None:
    create = getattr(os, "memfd_create", None)
    if create is None or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        return create("tas-kube-client-key", os.MFD_CLOEXEC)
    except OSError:
        return None


def _proxy_url(cluster: Mapping[str, Any], name: str) -> str | None:
    url = str(cluster.get("proxy-url") or "")
    if not url:
        return None
    scheme = urlsplit(url).scheme
    if scheme not in ("http", "https"):
        raise KubeconfigError(
            f"kubeconfig cluster {name!r} proxy-url: {scheme or 'no'} scheme "
            "(http and https proxies are supported)"
        )
    return url


def _credentials(user: Mapping[str, Any], exec_cluster: dict[str, Any]) -> Credentials:
    plugin = user.get("exec")
    if plugin is not None and not isinstance(plugin, Mapping):
        raise KubeconfigError("kubeconfig user exec: not a mapping")
    basic = None
    if user.get("username"):
        basic = base64.b64encode(f"{user['username']}:{user.get('password', '')}".encode()).decode()
    return Credentials(
        token=str(user.get("token") or "") or None,
        token_file=str(user.get("tokenFile") or "") or None,
        exec_config=plugin,
        basic=basic,
        exec_cluster=exec_cluster,
    )


def _exec_cluster(cluster: Mapping[str, Any], server: str, ca: bytes | None) -> dict[str, Any]:
    """What a plugin with provideClusterInfo is told (client-go's ExecCredential Cluster)."""
    info: dict[str, Any] = {"server": server}
    for key in ("tls-server-name", "insecure-skip-tls-verify", "proxy-url", "disable-compression"):
        if cluster.get(key):
            info[key] = cluster[key]
    if ca:
        info["certificate-authority-data"] = base64.b64encode(ca).decode()
    for extension in cluster.get("extensions") or []:
        if isinstance(extension, Mapping) and extension.get("name") == EXEC_EXTENSION:
            info["config"] = extension.get("extension")
    return info
