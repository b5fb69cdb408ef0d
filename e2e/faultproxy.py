"""A fault-injecting reverse proxy in front of a kube-apiserver, for resilience tests.

The operator talks to the proxy (plain HTTP on 127.0.0.1) instead of the apiserver; a test
drives faults through the reserved `/_faults/` control API: canned error statuses (409, 429,
500, ...), dropped connections, expired watches, requests held for a while before they are
forwarded (`delay`, seconds), and killing every open watch stream at once.
Everything else is forwarded untouched and streamed back, so watches keep working.

    python -m e2e.faultproxy --upstream https://127.0.0.1:17443 --port 18080

`FaultProxy` runs it as a subprocess and wraps the control API for tests.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import select
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path

import aiohttp
from aiohttp import web
from yarl import URL

ROOT = Path(__file__).resolve().parent.parent
CONTROL = "/_faults/"
# Per-connection headers that must not cross the proxy (RFC 9110 7.6.1), plus those aiohttp
# recomputes itself for the new connection and body.
HOP_BY_HOP = {
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
    "transfer-encoding", "upgrade", "host", "content-length",
}  # fmt: skip
REASONS = {409: "Conflict", 429: "TooManyRequests", 500: "InternalError", 410: "Expired"}


def k8s_status(code: int, message: str = "injected by faultproxy") -> dict:
    reason = REASONS.get(code, "Unknown")
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
            "reason": reason, "code": code}  # fmt: skip


EXPIRED_LINE = {"type": "ERROR", "object": k8s_status(410, "too old resource version: injected")}


def rules_error(rules) -> str | None:
    """Why the rules are unusable, checked on POST rather than failing every later request."""
    if not isinstance(rules, list) or not all(isinstance(r, dict) for r in rules):
        return "want a JSON list of rule objects"
    for r in rules:
        if r.get("action") not in ("status", "drop", "expire", "delay"):
            return f"action must be status, drop, expire or delay: {r}"
        if r["action"] == "delay" and not isinstance(r.get("seconds"), int | float):
            return f"action delay needs its seconds: {r}"
        if r["action"] == "status" and not isinstance(r.get("status"), int):
            return f"action status needs an integer status: {r}"
        try:
            re.compile(r.get("path", ""))
        except re.error as e:
            return f"bad path regex in {r}: {e}"
    return None


class Proxy:
    def __init__(self, upstream: str):
        self.upstream = upstream.rstrip("/")
        self.rules: list[dict] = []
        self.counts: Counter[str] = Counter()
        self.by_status: Counter[str] = Counter()
        # Counted on arrival: a request whose client goes away before the answer is in here,
        # not in counts.
        self.arrived: Counter[str] = Counter()
        self.watches: dict[int, tuple] = {}  # id -> (request, upstream response); not hashable
        self.session = None

    def count(self, request, status: int | str) -> None:
        self.counts[f"{request.method} {request.path}"] += 1
        self.by_status[str(status)] += 1

    def match(self, request, watch: bool) -> dict | None:
        for rule in self.rules:
            if rule.get("times") is not None and rule["times"] <= 0:
                continue  # spent
            if rule.get("method", request.method).upper() != request.method:
                continue
            if "path" in rule and not re.search(rule["path"], request.path):
                continue
            if rule.get("watch", watch) != watch or (rule["action"] == "expire" and not watch):
                continue
            if random.random() >= rule.get("probability", 1):
                continue
            if rule.get("times") is not None:
                rule["times"] -= 1
            return rule
        return None

    async def control(self, request):
        op = (request.method, request.path[len(CONTROL) :].strip("/"))
        if op == ("GET", "stats"):
            total = sum(self.counts.values())
            return web.json_response(
                {
                    "counts": self.counts,
                    "total": total,
                    "by_status": self.by_status,
                    "arrived": self.arrived,
                }
            )
        if op == ("POST", "reset-stats"):
            self.counts.clear()
            self.by_status.clear()
            self.arrived.clear()
            return web.json_response({})
        if op == ("GET", "rules"):
            return web.json_response(self.rules)
        if op == ("DELETE", "rules"):
            self.rules = []
            return web.json_response([])
        if op == ("POST", "rules"):
            try:
                rules = await request.json()
            except ValueError:
                rules = None
            if error := rules_error(rules):
                return web.json_response({"error": error}, status=400)
            self.rules = rules
            return web.json_response(rules)
        if op == ("POST", "drop-watches"):
            return web.json_response({"dropped": self.drop_watches()})
        return web.json_response({"error": f"unknown control call {op}"}, status=404)

    def drop_watches(self) -> int:
        dropped = list(self.watches.values())
        for request, upstream in dropped:
            # Close downstream first: a clean write_eof would let the client think it ended normally.
            if request.transport is not None:
                request.transport.close()
            upstream.close()
        self.watches.clear()
        return len(dropped)

    async def handle(self, request):
        if request.path.startswith(CONTROL):
            return await self.control(request)
        self.arrived[f"{request.method} {request.path}"] += 1
        watch = request.query.get("watch") in ("true", "1") or "/watch/" in request.path
        rule = self.match(request, watch)
        if rule is not None and rule["action"] == "delay":
            await asyncio.sleep(rule["seconds"])  # then forwarded as any other request
            rule = None
        if rule is not None:
            self.count(request, "dropped" if rule["action"] == "drop" else rule.get("status", 200))
            if rule["action"] == "drop":
                # aiohttp swallows the ConnectionError of answering on a closed transport.
                request.transport.close()
                return web.Response()
            if rule["action"] == "expire":
                return web.json_response(text=json.dumps(EXPIRED_LINE) + "\n")
            code = int(rule["status"])
            headers = {"Retry-After": str(rule["retry_after"])} if "retry_after" in rule else {}
            return web.json_response(k8s_status(code), status=code, headers=headers)

        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        body = await request.read() if request.body_exists else None
        url = URL(self.upstream + request.raw_path, encoded=True)
        try:
            upstream = await self.session.request(
                request.method, url, headers=headers, data=body, allow_redirects=False,
                skip_auto_headers=("Accept-Encoding", "User-Agent"),
            )  # fmt: skip
        except (aiohttp.ClientError, OSError) as e:
            self.count(request, 502)
            status = k8s_status(502, f"faultproxy: upstream unreachable: {e}")
            return web.json_response(status, status=502)
        self.count(request, upstream.status)
        async with upstream:
            out = {k: v for k, v in upstream.headers.items() if k.lower() not in HOP_BY_HOP}
            response = web.StreamResponse(status=upstream.status, headers=out)
            if not watch and upstream.content_length is not None:
                response.content_length = upstream.content_length
            await response.prepare(request)
            if watch:
                self.watches[id(request)] = (request, upstream)
            try:
                async for chunk in upstream.content.iter_any():
                    await response.write(chunk)
                await response.write_eof()
            except (aiohttp.ClientError, ConnectionError):
                if request.transport is not None:  # upstream broke: break downstream too
                    request.transport.close()
            finally:
                self.watches.pop(id(request), None)
        return response


async def serve(upstream: str, port: int) -> None:
    proxy = Proxy(upstream)
    # No total timeout: watches stay open for minutes. Upstream TLS is self-signed.
    proxy.session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(ssl=False),
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
        auto_decompress=False,
    )
    server = web.Server(proxy.handle, handler_cancellation=True)
    runner = web.ServerRunner(server, shutdown_timeout=2)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    print(f"listening on 127.0.0.1:{port}", flush=True)
    await stop.wait()
    proxy.drop_watches()  # or shutdown waits for them
    await runner.cleanup()
    await proxy.session.close()


class FaultProxy:
    """The proxy as a subprocess on a free port, with the control API as methods."""

    def __init__(self, upstream: str):
        self.upstream = upstream
        self.port = 0
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 15) -> FaultProxy:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        cmd = [sys.executable, "-m", "e2e.faultproxy", "--upstream", self.upstream]
        self.proc = subprocess.Popen(
            [*cmd, "--port", str(self.port)], cwd=ROOT, stdout=subprocess.PIPE
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if select.select([self.proc.stdout], [], [], max(0, deadline - time.monotonic()))[0]:
                line = self.proc.stdout.readline().decode()
                if line.startswith("listening on"):
                    return self
                if not line:
                    break  # exited
        self.stop()
        raise RuntimeError(f"faultproxy did not start (exit code {self.proc.returncode})")

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _call(self, method: str, op: str, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + CONTROL + op, data=data, method=method,
            headers={"Content-Type": "application/json"},
        )  # fmt: skip
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)

    def set_rules(self, rules: list[dict]) -> None:
        self._call("POST", "rules", rules)

    def rules(self) -> list[dict]:
        return self._call("GET", "rules")

    def clear_rules(self) -> None:
        self._call("DELETE", "rules")

    def stats(self) -> dict:
        return self._call("GET", "stats")

    def reset_stats(self) -> None:
        self._call("POST", "reset-stats")

    def drop_watches(self) -> int:
        return self._call("POST", "drop-watches")["dropped"]

    def kubeconfig(self, token_kubeconfig_path: str, directory) -> str:
        """A copy of the kubeconfig whose every cluster points at the proxy."""
        import yaml

        config = yaml.safe_load(Path(token_kubeconfig_path).read_text())
        for entry in config.get("clusters", []):
            cluster = entry["cluster"]
            cluster["server"] = self.url
            for key in ("certificate-authority", "certificate-authority-data"):
                cluster.pop(key, None)  # plain HTTP: a CA would only confuse clients
        path = Path(directory) / f"faultproxy-{self.port}.kubeconfig"
        path.write_text(yaml.safe_dump(config))
        return str(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True, help="https://host:port of the apiserver")
    parser.add_argument("--port", type=int, required=True, help="plain HTTP port on 127.0.0.1")
    args = parser.parse_args()
    asyncio.run(serve(args.upstream, args.port))


if __name__ == "__main__":
    main()
