"""The API client against the real API server: a KUBECONFIG list merged as kubectl merges it
(the context's namespace used), a rotated token taken after a 401, an exec plugin, and the
bookmarks a quiet watch relies on to tell a live connection from a dead one."""

from __future__ import annotations

import asyncio
import json
import stat
import time
from pathlib import Path

import pytest
import yaml

from e2e import jobs
from e2e.harness import Cluster
from tas.kube import Kube
from tas.kube.kubeconfig import load_connection
from tas.kube.reflector import WATCH_IDLE_SECONDS, Reflector

pytestmark = pytest.mark.e2e


def first_file(path: Path, namespace: str, cluster_name: str, user: dict) -> str:
    """A kubeconfig naming the real cluster only by name: its server is in the second file."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "mine",
        "contexts": [
            {
                "name": "mine",
                "context": {"cluster": cluster_name, "user": "me", "namespace": namespace},
            }
        ],
        "users": [{"name": "me", "user": user}],
    }
    path.write_text(yaml.safe_dump(config))
    return str(path)


def real(cluster: Cluster) -> tuple[dict, str]:
    """The real kubeconfig, and its token."""
    config = yaml.safe_load(Path(cluster.kubeconfig).read_text())
    return config, config["users"][0]["user"]["token"]


def test_a_merged_kubeconfig_list_reaches_the_cluster_and_a_rotated_token_is_taken(
    cluster: Cluster, namespace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config, token = real(cluster)
    cluster.kubectl("create", "configmap", "marker", "-n", namespace)
    (tmp_path / "token").write_text("not-yet-rotated")
    first = first_file(
        tmp_path / "first", namespace, config["clusters"][0]["name"], {"tokenFile": "token"}
    )
    monkeypatch.setenv("KUBECONFIG", f"{first}:{cluster.kubeconfig}")

    async def go() -> tuple[list[str], int]:
        connection = load_connection()
        assert connection.namespace == namespace
        await connection.authorization()  # the stale token is held
        (tmp_path / "token").write_text(token)
        kube = Kube(connection)
        try:
            listed = await kube.request(
                "GET", f"/api/v1/namespaces/{connection.namespace}/configmaps"
            )
            return [c["metadata"]["name"] for c in listed["items"]], kube.requests["GET"]
        finally:
            await kube.close()

    names, sent = asyncio.run(go())
    assert "marker" in names
    assert sent == 2  # refused with the stale token, then read again and accepted


def test_an_exec_plugin_logs_in(cluster: Cluster, namespace: str, tmp_path: Path, monkeypatch):
    config, token = real(cluster)
    plugin = tmp_path / "plugin.sh"
    credential = {"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential"}
    credential["status"] = {"token": token}
    plugin.write_text(f"#!/bin/sh\nsleep 1\necho '{json.dumps(credential)}'\n")
    plugin.chmod(plugin.stat().st_mode | stat.S_IEXEC)
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "./plugin.sh"}}
    first = first_file(tmp_path / "first", namespace, config["clusters"][0]["name"], user)
    monkeypatch.setenv("KUBECONFIG", f"{first}:{cluster.kubeconfig}")

    async def go() -> dict:
        kube = Kube(load_connection())
        try:
            return await kube.request("GET", f"/api/v1/namespaces/{namespace}")
        finally:
            await kube.close()

    assert asyncio.run(go())["metadata"]["name"] == namespace


def test_a_watch_given_up_for_silence_resumes_and_misses_nothing(
    cluster: Cluster, namespace: str
) -> None:
    """Nothing changes in the namespace: its watch is given up every idle period and resumed
    from its version, without a relist; what is created afterwards is seen."""
    seen: list[tuple[str, str]] = []

    async def handle(kind: str, obj) -> None:
        seen.append((kind, obj["metadata"]["name"]))

    async def go() -> tuple[Reflector, int]:
        kube = Kube(load_connection(cluster.kubeconfig))
        path = f"/api/v1/namespaces/{namespace}/configmaps"
        reflector = Reflector(kube, path, handle, name="configmaps", idle_seconds=2)
        task = asyncio.create_task(reflector.run())
        try:
            await asyncio.sleep(7)  # three idle periods, or so
            watches = kube.requests["WATCH"]
            await asyncio.to_thread(cluster.kubectl, "create", "configmap", "late", "-n", namespace)
            for _ in range(100):
                if ("ADDED", "late") in seen:
                    break
                await asyncio.sleep(0.1)
            return reflector, watches
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await kube.close()

    reflector, watches = asyncio.run(go())
    assert ("ADDED", "late") in seen
    assert watches >= 3 and reflector.lists == 1


def test_a_watch_gets_bookmarks_before_it_would_be_given_up_while_its_kind_changes(
    cluster: Cluster, namespace: str
) -> None:
    """Nothing changes in the watched namespace, but configmaps change elsewhere: the server
    sends a bookmark within the idle time, so a live watch is not taken for a dead one."""
    elsewhere = cluster.create_namespace(prefix="bookmarks-elsewhere")
    path = f"/api/v1/namespaces/{namespace}/configmaps"

    async def churn(kube: Kube) -> None:
        body = {"metadata": {"name": "churn"}, "data": {"n": "0"}}
        await kube.create(f"/api/v1/namespaces/{elsewhere}/configmaps", body)
        for n in range(1, 1000):
            await asyncio.sleep(5)
            await kube.patch(
                f"/api/v1/namespaces/{elsewhere}/configmaps/churn", {"data": {"n": str(n)}}
            )

    async def first_bookmark(kube: Kube) -> float:
        listed = await kube.request("GET", path)
        params = {
            "watch": "1",
            "allowWatchBookmarks": "true",
            "resourceVersion": listed["metadata"]["resourceVersion"],
            "timeoutSeconds": "300",
        }
        started = time.monotonic()
        async for line in kube.stream_lines(path, params, 330, idle=WATCH_IDLE_SECONDS):
            if json.loads(line)["type"] == "BOOKMARK":
                return time.monotonic() - started
        raise AssertionError(f"no bookmark in {WATCH_IDLE_SECONDS:g}s")

    async def go() -> float:
        kube = Kube(load_connection(cluster.kubeconfig))
        churning = asyncio.create_task(churn(kube))
        try:
            return await first_bookmark(kube)
        finally:
            churning.cancel()
            await asyncio.gather(churning, return_exceptions=True)
            await kube.close()

    try:
        assert asyncio.run(go()) < WATCH_IDLE_SECONDS
    finally:
        cluster.delete_namespace(elsewhere)


def test_the_operator_logs_in_through_an_exec_plugin_and_admits(
    cluster: Cluster, namespace: str, operator, operator_swap, user_queue: str, tmp_path: Path
) -> None:
    """The operator's own client and kopf's (whose discovery the webhooks wait for) both log
    in with the token a slow exec plugin gives, from a kubeconfig that names the plugin by a
    path relative to itself. The Job's create passes the webhooks (failurePolicy Fail)."""
    config = yaml.safe_load(Path(operator.kubeconfig).read_text())
    token = config["users"][0]["user"]["token"]
    credential = {"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential"}
    credential["status"] = {"token": token}
    (tmp_path / "bin").mkdir()
    plugin = tmp_path / "bin" / "plugin.sh"
    plugin.write_text(f"#!/bin/sh\nsleep 2\necho '{json.dumps(credential)}'\n")
    plugin.chmod(plugin.stat().st_mode | stat.S_IEXEC)
    exec_spec = {"apiVersion": "client.authentication.k8s.io/v1", "command": "bin/plugin.sh"}
    config["users"][0]["user"] = {"exec": exec_spec}
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))

    operator_swap(kubeconfig=str(path))  # returns once synced and serving webhooks
    cluster.apply(jobs.job("via-exec", user_queue, pods=2, cpu="1"), namespace)
    workload = jobs.wait_admitted(cluster, namespace, "via-exec")
    assert workload["status"]["admission"]["clusterQueue"] == "tas-cluster-queue"
