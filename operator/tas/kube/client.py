"""A thin async client for the API server: JSON dicts in and out, on the event loop (aiohttp).

Every call has a timeout, and every failure, connection errors and timeouts included, comes out
as one `KubeError` whose status says what to do: 409 re-read, 429 wait `retry_after`, 0 (no
answer) or 5xx back off. Every write goes through here, which keeps the count of API requests
easy to measure. Where the server is comes from kubeconfig.py (kubeconfig or in-cluster), how to
log in from credentials.py (a 401 logs in again once); the requests themselves never leave the
loop thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from tas import metrics
from tas.api.conditions import now_rfc3339
from tas.api.constants import KUEUE_API_VERSION
from tas.kube.credentials import KubeconfigError
from tas.kube.kubeconfig import Connection, without_system_ca_store

with without_system_ca_store():  # its import-time TLS contexts go unused (see there)
    import aiohttp

log = logging.getLogger(__name__)

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
KUEUE = "/apis/" + KUEUE_API_VERSION
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
REQUEST_TIMEOUT = 30.0  # seconds for any single non-watch call
MAX_CALL_CONNECTIONS = 32  # calls at once (watches have their own pool)
Decode = Callable[[bytes], Any]  # an answer's body to what the caller reads
# The cause the API server gives for a create in a namespace being deleted.
NAMESPACE_TERMINATING = "NamespaceTerminating"


class KubeError(Exception):
    """An API call that did not succeed. status 0 means no answer (connection, timeout);
    `sent` is False when the request never reached the server (the connection was refused)."""

    def __init__(
        self,
        status: int,
        message: str,
        retry_after: float | None = None,
        *,
        sent: bool = True,
        causes: tuple[str, ...] = (),
    ) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message
        self.retry_after = retry_after
        self.sent = sent
        self.causes = causes  # the types of the Status's details.causes

    @property
    def may_have_landed(self) -> bool:
        """A write that failed this way may still have been stored: no answer after it was
        sent (the server may have stored it before the connection or the wait broke), or a
        server error (a 504 is the API server giving up waiting, not the store)."""
        return self.sent and (self.status == 0 or self.status >= 500)

    @property
    def conflict(self) -> bool:
        return self.status == 409

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def gone_or_changed(self) -> bool:
        """The object is gone, or changed since it was read: the watch brings what is there."""
        return self.not_found or self.conflict

    @property
    def namespace_terminating(self) -> bool:
        """A create refused because its namespace is being deleted: it never will succeed."""
        return self.status == 403 and NAMESPACE_TERMINATING in self.causes


def client_session(
    connection: Connection, limit: int, headers: Mapping[str, str] | None = None
) -> aiohttp.ClientSession:
    """A session that reaches the server as the kubeconfig says (its TLS, tls-server-name and
    proxy), with at most `limit` connections (0: no limit). Created on the running loop."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(ssl=connection.ssl, limit=limit),
        headers=headers,
        json_serialize=json.dumps,
        proxy=connection.proxy_url,
        request_class=_request_class(connection.tls_server_name),
    )


def _request_class(server_name: str | None) -> type[aiohttp.ClientRequest]:
    """Requests that send `server_name` (tls-server-name) as SNI and check the server's
    certificate against it rather than against the URL's host. aiohttp takes the name only
    per request, and requests we do not make ourselves (kopf's) would not pass it."""
    if not server_name:
        return aiohttp.ClientRequest

    class ServerNamedRequest(aiohttp.ClientRequest):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["server_hostname"] = kwargs.get("server_hostname") or server_name
            super().__init__(*args, **kwargs)

    return ServerNamedRequest


@dataclass
class Ref:
    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str


class Kube:
    """Two connection pools, so that calls never wait behind watches: calls (reads and writes)
    share at most `max_connections`; each watch holds one connection of its own for minutes,
    from a pool as large as the number of watches open (every watched kind in every
    --namespace), which our configuration, not a tenant, decides."""

    def __init__(
        self,
        connection: Connection,
        component: str = "tas-operator",
        *,
        timeout: float = REQUEST_TIMEOUT,
        max_connections: int = MAX_CALL_CONNECTIONS,
    ) -> None:
        self.connection = connection
        self.component = component
        self.timeout = timeout
        self.max_connections = max_connections
        self._calls: aiohttp.ClientSession | None = None
        self._watches: aiohttp.ClientSession | None = None
        self.requests: Counter[str] = Counter()  # method -> count, for measurements
        self.writes: Counter[str] = Counter()  # write method -> count

    def session(self) -> aiohttp.ClientSession:
        """For calls. Created lazily: a session belongs to the running loop."""
        if self._calls is None or self._calls.closed:
            self._calls = client_session(self.connection, self.max_connections)
        return self._calls

    def watch_session(self) -> aiohttp.ClientSession:
        if self._watches is None or self._watches.closed:
            self._watches = client_session(self.connection, 0)  # one connection per open watch
        return self._watches

    async def close(self) -> None:
        for session in (self._calls, self._watches):
            if session is not None:
                await session.close()

    def _headers(self, content_type: str | None, authorization: str | None) -> dict[str, str]:
        # Uncompressed: compressing a 50,000-pod list costs the API server and us more CPU
        # than the bytes cost the network (and nothing at all on a loopback link).
        headers = {
            "Accept": "application/json",
            "Accept-Encoding": "identity",
            "User-Agent": self.component,
        }
        if content_type:
            headers["Content-Type"] = content_type
        if authorization:
            headers["Authorization"] = authorization
        return headers

    async def _authorization(self, what: str) -> str | None:
        """A credential that cannot be had (a failing exec plugin) is a call not sent."""
        try:
            return await self.connection.authorization()
        except KubeconfigError as exc:
            raise KubeError(0, f"{what}: {exc}", sent=False) from None

    async def request(
        self,
        method: str,
        path: str,
        body: object = None,
        content_type: str | None = None,
        *,
        params: Mapping[str, str] | None = None,
        timeout: float | None = None,
        decode: Decode | None = None,
    ) -> Any:
        """One call. Refused with 401 while holding a credential that can be renewed (a token
        file rotates, an exec plugin runs again), it logs in again and is sent once more.
        `decode` reads the answer's body (a schema that skips fields; default: all of it)."""
        data = None if body is None else json.dumps(body)
        what = f"{method} {path}"
        authorization = await self._authorization(what)
        try:
            return await self._send(
                method, path, data, content_type, authorization, params, timeout, decode=decode
            )
        except KubeError as exc:
            if exc.status != 401 or not self.connection.credentials.rejected(authorization):
                raise
        log.info("%s: 401 Unauthorized; logging in again", what)
        authorization = await self._authorization(what)
        return await self._send(
            method, path, data, content_type, authorization, params, timeout, decode=decode
        )

    async def _send(
        self,
        method: str,
        path: str,
        data: str | None,
        content_type: str | None,
        authorization: str | None,
        params: Mapping[str, str] | None,
        timeout: float | None,
        *,
        decode: Decode | None = None,
    ) -> Any:
        self.requests[method] += 1
        if method != "GET":
            self.writes[method] += 1
            log.debug("api-write %s %s", method, path)
        try:
            async with self.session().request(
                method,
                self.connection.server + path,
                data=data,
                params=params,
                headers=self._headers(content_type, authorization),
                timeout=aiohttp.ClientTimeout(total=timeout or self.timeout),
            ) as response:
                raw = await response.read()
                metrics.API_REQUESTS.labels(method, str(response.status)).inc()
                if not 200 <= response.status < 300:
                    raise error_from(response.status, raw, response.headers.get("Retry-After"))
        except aiohttp.ClientConnectorError as exc:  # no connection: nothing was sent
            metrics.API_REQUESTS.labels(method, "0").inc()
            raise KubeError(
                0, f"{method} {path}: {type(exc).__name__}: {exc}", sent=False
            ) from None
        except (aiohttp.ClientError, TimeoutError, ConnectionError) as exc:
            metrics.API_REQUESTS.labels(method, "0").inc()
            raise KubeError(0, f"{method} {path}: {type(exc).__name__}: {exc}") from None
        return decode_body(raw, decode or orjson.loads, f"{method} {path}")

    async def stream_lines(
        self,
        path: str,
        params: Mapping[str, str],
        timeout: float,
        *,
        idle: float | None = None,
    ) -> AsyncIterator[bytes]:
        """A watch: one JSON event per line until the server ends it or `timeout` passes.
        If nothing at all arrives for `idle` seconds, the connection may be dead: the watch
        ends as if the server had ended it, and the caller resumes it on a new connection."""
        self.requests["WATCH"] += 1
        authorization = await self._authorization(f"watch {path}")
        try:
            async with self.watch_session().get(
                self.connection.server + path,
                params=params,
                headers=self._headers(None, authorization),
                timeout=aiohttp.ClientTimeout(
                    total=timeout, sock_connect=self.timeout, sock_read=idle
                ),
            ) as response:
                metrics.API_REQUESTS.labels("WATCH", str(response.status)).inc()
                if response.status != 200:
                    raw = await response.read()
                    if response.status == 401:  # the next watch logs in again
                        self.connection.credentials.rejected(authorization)
                    raise error_from(response.status, raw, response.headers.get("Retry-After"))
                buffer = b""
                async for chunk in response.content.iter_any():
                    buffer += chunk
                    *lines, buffer = buffer.split(b"\n")
                    for line in lines:
                        if line.strip():
                            yield line
        except aiohttp.SocketTimeoutError:
            log.debug("watch %s: nothing received for %gs; ending it", path, idle)
        except (aiohttp.ClientError, TimeoutError, ConnectionError) as exc:
            raise KubeError(0, f"watch {path}: {type(exc).__name__}: {exc}") from None

    async def get(self, path: str) -> dict | None:
        try:
            return await self.request("GET", path)
        except KubeError as exc:
            if exc.not_found:
                return None
            raise

    async def patch(self, path: str, body: object, content_type: str = MERGE) -> dict:
        return await self.request("PATCH", path, body, content_type)

    async def create(self, path: str, body: Mapping) -> dict:
        return await self.request("POST", path, body, "application/json")

    async def replace(self, path: str, body: Mapping) -> dict:
        return await self.request("PUT", path, body, "application/json")

    async def delete(
        self, path: str, *, grace_seconds: int | None = None, uid: str | None = None
    ) -> bool:
        """Delete, dependents in the background; False when there was nothing to do: it is
        gone. `grace_seconds` 0 removes a pod no kubelet will confirm; `uid` deletes only that
        object (another of the same name, made since, answers 409: nothing to do either)."""
        options: dict = {"propagationPolicy": "Background"}
        if grace_seconds is not None:
            options["gracePeriodSeconds"] = grace_seconds
        if uid:
            options["preconditions"] = {"uid": uid}
        try:
            await self.request("DELETE", path, options, "application/json")
        except KubeError as exc:
            if not (exc.not_found or (uid and exc.conflict)):
                raise
            return False
        return True

    async def event(self, ref: Ref, type_: str, reason: str, message: str) -> None:
        """A core/v1 Event, so `kubectl describe` shows it; never fails the caller."""
        now = now_rfc3339()
        body = {
            "metadata": {"generateName": ref.name + ".", "namespace": ref.namespace},
            "involvedObject": {
                "apiVersion": ref.api_version,
                "kind": ref.kind,
                "name": ref.name,
                "namespace": ref.namespace,
                "uid": ref.uid,
            },
            "type": type_,
            "reason": reason,
            "message": message[:1024],
            "source": {"component": self.component},
            "reportingComponent": self.component,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        try:
            await self.create(f"/api/v1/namespaces/{ref.namespace}/events", body)
        except KubeError as exc:
            log.warning(
                "could not record event %s on %s/%s: %s", reason, ref.namespace, ref.name, exc
            )


def decode_body(raw: bytes, decode: Decode, what: str) -> Any:
    """A body that is not the JSON expected is a failed call naming where it broke, never an
    exception the caller does not know (orjson is several times faster than json)."""
    if not raw:
        return None
    try:
        return decode(raw)
    # orjson's and msgspec's decode errors are ValueErrors; msgspec's nesting limit a
    # RecursionError
    except (ValueError, RecursionError) as exc:
        raise KubeError(0, f"{what}: malformed answer: {exc}") from None


def error_from(status: int, raw: bytes, retry_after: str | None) -> KubeError:
    message = raw.decode(errors="replace")
    causes: tuple[str, ...] = ()
    with contextlib.suppress(ValueError, AttributeError, TypeError):  # a Status names the cause
        answer = json.loads(message)
        message = answer.get("message", message)
        causes = tuple(str(c.get("type")) for c in (answer.get("details") or {}).get("causes", ()))
    seconds = None
    if retry_after:
        try:
            seconds = float(retry_after)
        except ValueError:
            seconds = None
    return KubeError(status, message, seconds, causes=causes)


NODES = "/api/v1/nodes"


def kueue_path(plural: str, namespace: str | None = None, name: str | None = None) -> str:
    """A Kueue collection (all namespaces, or one) or one object of it, at the version we speak."""
    collection = f"{KUEUE}/namespaces/{namespace}/{plural}" if namespace else f"{KUEUE}/{plural}"
    return f"{collection}/{name}" if name else collection


def workload_path(namespace: str, name: str) -> str:
    return kueue_path("workloads", namespace, name)


def job_path(namespace: str, name: str) -> str:
    return f"/apis/batch/v1/namespaces/{namespace}/jobs/{name}"


def pod_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{namespace}/pods/{name}"


def node_path(name: str) -> str:
    return f"{NODES}/{name}"


async def gather_bounded(limit: int, coros: list) -> list:
    """Run coroutines concurrently, at most `limit` at once; results (or exceptions) in order."""
    slots = asyncio.Semaphore(limit)

    async def one(coro):
        async with slots:
            return await coro

    return await asyncio.gather(*(one(c) for c in coros), return_exceptions=True)
