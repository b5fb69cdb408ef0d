"""The loop around the solver, on the real cluster: watches that survive outages and expiry,
writes that neither leak capacity nor storm the API server, leader failover, and SIGKILLs.

Faults are injected by e2e/faultproxy.py, a small proxy between the operator and the real
kube-apiserver that can drop connections, answer 409/429/500, end watches, and expire them.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from e2e import jobs
from e2e.faultproxy import FaultProxy
from e2e.harness import CLUSTER_SH, Cluster, wait_for
from e2e.operator_process import OperatorProcess
from e2e.topology import RACK_LABEL
from tas.kube import Kube
from tas.kube.kubeconfig import load_connection
from tas.kube.reflector import Reflector

pytestmark = pytest.mark.e2e

REQUIRED = jobs.PREFIX + "podset-required-topology"
NODE_CPU = 8


def api_server(cluster: Cluster) -> str:
    return cluster.kubectl(
        "config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"
    ).stdout


@pytest.fixture
def proxy(cluster: Cluster):
    with FaultProxy(api_server(cluster)) as p:
        yield p


@pytest.fixture
def operator_via(operator_swap, operator: OperatorProcess, tmp_path: Path):
    """The operator, reaching the API server through a fault proxy."""
    return lambda proxy: operator_swap(kubeconfig=proxy.kubeconfig(operator.kubeconfig, tmp_path))


def cpu_per_node(cluster: Cluster) -> Counter:
    """Requested cpu of every running or pending pod bound to a node, all namespaces."""
    used: Counter = Counter()
    for pod in cluster.get_json("pods", "-A")["items"]:
        node = pod["spec"].get("nodeName")
        if not node or pod["status"].get("phase") in ("Succeeded", "Failed"):
            continue
        for c in pod["spec"]["containers"]:
            cpu = (c.get("resources", {}).get("requests") or {}).get("cpu", "0")
            used[node] += int(cpu[:-1]) / 1000 if cpu.endswith("m") else float(cpu)
    return used


# ---- the reflector itself, against the real API server -----------------------------------------


def test_an_expired_watch_relists_and_hands_on_what_vanished_meanwhile(
    cluster: Cluster, namespace: str, proxy: FaultProxy, tmp_path: Path
):
    for i in range(3):
        cluster.kubectl("create", "configmap", f"cm-{i}", "-n", namespace)
    seen: list[tuple[str, str]] = []

    async def handle(kind: str, obj) -> None:
        seen.append((kind, obj["metadata"]["name"]))

    async def go() -> Reflector:
        kube = Kube(load_connection(proxy.kubeconfig(cluster.kubeconfig, tmp_path)))
        reflector = Reflector(
            kube, f"/api/v1/namespaces/{namespace}/configmaps", handle, name="configmaps"
        )
        task = asyncio.create_task(reflector.run())
        try:
            await asyncio.wait_for(reflector.synced.wait(), 30)
            assert {n for k, n in seen if k == "ADDED"} >= {"cm-0", "cm-1", "cm-2"}
            # An outage: every watch is cut, and new ones fail, while the cluster moves on.
            proxy.set_rules([{"watch": True, "action": "status", "status": 500}])
            proxy.drop_watches()
            await asyncio.to_thread(cluster.kubectl, "delete", "configmap", "cm-1", "-n", namespace)
            await asyncio.to_thread(cluster.kubectl, "create", "configmap", "cm-9", "-n", namespace)
            # The outage ends with the watch's resourceVersion gone from the server's window.
            proxy.set_rules([{"watch": True, "action": "expire", "times": 1}])
            deadline = time.monotonic() + 60
            while ("DELETED", "cm-1") not in seen or ("ADDED", "cm-9") not in seen:
                assert time.monotonic() < deadline, seen
                await asyncio.sleep(0.1)
            return reflector
        finally:
            task.cancel()
            await kube.close()

    reflector = asyncio.run(go())
    assert reflector.lists == 2  # the first list, and the relist after expiry
    assert reflector.known >= {(namespace, "cm-0"), (namespace, "cm-2"), (namespace, "cm-9")}
    assert (namespace, "cm-1") not in reflector.known


# ---- the operator under outages and faults -------------------------------------------------------


def test_pods_deleted_during_a_watch_outage_free_their_capacity(
    cluster: Cluster,
    namespace: str,
    user_queue: str,
    proxy: FaultProxy,
    operator_via,
    topology_nodes,
):
    op = operator_via(proxy)
    # Fill every node so that no rack has room for 4 pods of 2 cpu.
    for node in topology_nodes:
        cluster.apply(jobs.bound_pod(f"fill-{node}", node, "7"), namespace)
    cluster.apply(
        jobs.job("wait", user_queue, pods=4, cpu="2", annotations={REQUIRED: RACK_LABEL}), namespace
    )
    jobs.wait_pending_message(cluster, namespace, "wait", "fit", timeout=60)
    # The operator loses its watches; the fillers go away while it cannot see.
    proxy.set_rules([{"watch": True, "action": "status", "status": 500}])
    proxy.drop_watches()
    cluster.kubectl("delete", "pods", "--all", "-n", namespace, "--grace-period=0", "--force")
    time.sleep(3)
    assert jobs.condition(jobs.workload_of(cluster, namespace, "wait"), "Admitted") is None or (
        jobs.condition(jobs.workload_of(cluster, namespace, "wait"), "Admitted")["status"] != "True"
    )
    # Back, but too late to resume: the relist must find the pods gone.
    proxy.set_rules([{"watch": True, "action": "expire", "times": 20}])
    jobs.wait_admitted(cluster, namespace, "wait", timeout=90)
    assert "relisting" in op.log()


def test_api_faults_leak_no_capacity_and_cause_no_request_storm(
    cluster: Cluster, namespace: str, user_queue: str, proxy: FaultProxy, operator_via
):
    op = operator_via(proxy)
    status_writes = r"/workloads/[^/]+/status$"
    proxy.reset_stats()
    proxy.set_rules(
        [
            {"method": "PATCH", "path": status_writes, "action": "drop", "times": 3},
            {
                "method": "PATCH",
                "path": status_writes,
                "action": "status",
                "status": 409,
                "times": 3,
            },
            {
                "method": "PATCH",
                "path": status_writes,
                "action": "status",
                "status": 429,
                "retry_after": 1,
                "times": 2,
            },
            {
                "method": "PATCH",
                "path": status_writes,
                "action": "status",
                "status": 500,
                "times": 3,
            },
            {"method": "PATCH", "path": "/pods/", "action": "status", "status": 500, "times": 4},
            {"method": "PATCH", "path": "/jobs/", "action": "drop", "times": 2},
        ]
    )
    names = [f"j{i}" for i in range(6)]
    for name in names:
        cluster.apply(
            jobs.job(name, user_queue, pods=4, cpu="2", annotations={REQUIRED: RACK_LABEL}),
            namespace,
        )
    # 6 x 8 cpu on 64 cpu: every Job fits at once, so any capacity leaked by a failed write
    # would leave one waiting for good.
    for name in names:
        jobs.wait_running(cluster, namespace, name, 4, timeout=120)
    assert max(cpu_per_node(cluster).values()) <= NODE_CPU
    stats = proxy.stats()
    writes = sum(
        n for k, n in stats["counts"].items() if re.search(r"^PATCH .*/workloads/.*/status$", k)
    )
    # 6 admissions + 11 injected failures + queue and event writes would be far below this;
    # an unguarded retry loop sends thousands in seconds.
    assert writes < 60, stats["counts"]
    # The injected ones, and perhaps a real conflict with a concurrent change.
    assert stats["by_status"].get("409", 0) >= 3 and stats["by_status"].get("429", 0) == 2
    assert " ERROR tas." not in op.log()  # every failure was handled (warned, backed off)


def test_the_api_server_unreachable_for_a_while_then_back(
    cluster: Cluster, namespace: str, user_queue: str, proxy: FaultProxy, operator_via
):
    op = operator_via(proxy)
    proxy.reset_stats()
    proxy.set_rules([{"action": "drop"}])  # every request: no answer at all
    proxy.drop_watches()
    # Shorter than the lease's renew deadline (10 s) less one retry: the leader keeps it.
    time.sleep(5)
    proxy.clear_rules()
    cluster.apply(jobs.job("after", user_queue, pods=2, cpu="1"), namespace)
    jobs.wait_running(cluster, namespace, "after", 2, timeout=90)
    stats = proxy.stats()
    assert stats["by_status"].get("dropped", 0) > 0, stats  # the outage was seen
    # Each watch, the lease and kopf's own watches back off from 0.5 s: a handful of requests
    # per path in 5 s, however many kinds are watched. Without backoff, hundreds per path.
    busiest = max(stats["counts"].items(), key=lambda item: item[1])
    assert busiest[1] < 30, stats["counts"]
    assert op.proc.poll() is None and " ERROR tas." not in op.log()


# ---- leader election -----------------------------------------------------------------------------


def test_a_standby_takes_over_when_the_leader_is_killed(
    cluster: Cluster, namespace: str, user_queue: str, operator: OperatorProcess
):
    standby = OperatorProcess(cluster, kubeconfig=operator.kubeconfig)
    standby.start()
    try:
        wait_for(lambda: "standing by" in standby.log(), timeout=30, what="the standby to wait")
        cluster.apply(jobs.job("first", user_queue, pods=2, cpu="1"), namespace)
        jobs.wait_admitted(cluster, namespace, "first", timeout=60)
        assert "admitted " + namespace not in standby.log()  # the leader admitted it
        operator.kill()
        killed = time.monotonic()
        cluster.apply(jobs.job("second", user_queue, pods=2, cpu="1"), namespace)
        jobs.wait_admitted(cluster, namespace, "second", timeout=40)
        takeover = time.monotonic() - killed
        print(f"leader SIGKILLed: the standby admitted the next Job after {takeover:.1f} s")
        assert f"admitted {namespace}/" in standby.log()
        assert takeover < 30, takeover  # the lease is 15 s; the target is 20 s
    finally:
        standby.stop()
        operator.start()


# ---- SIGKILLs during a stream of admissions --------------------------------------------------------


def test_sigkills_during_admissions_never_double_book_or_ungate_twice(
    cluster: Cluster, namespace: str, user_queue: str, operator: OperatorProcess
):
    # 5 in `make test`; the chaos run sets TAS_CHAOS_KILLS=20 (see bench/README.md).
    kills = int(os.environ.get("TAS_CHAOS_KILLS", "5"))
    names = [f"k{i}" for i in range(8)]
    for i in range(max(kills, len(names))):
        if i < len(names):
            cluster.apply(
                jobs.job(names[i], user_queue, pods=3, cpu="2", annotations={REQUIRED: RACK_LABEL}),
                namespace,
            )
        if i < kills:
            operator.kill()
            operator.start()
    # 8 x 6 cpu on 64 cpu, 16 per rack: at most two per rack, so all fit at once.
    for name in names:
        jobs.wait_running(cluster, namespace, name, 3, timeout=120)
    assert max(cpu_per_node(cluster).values()) <= NODE_CPU
    ungated = Counter(re.findall(rf"ungated {namespace}/(\S+) onto", operator.log()))
    assert ungated and max(ungated.values()) == 1, ungated.most_common(3)


# ---- the API server restarted under a running operator (last: it takes the API server away) ------


def test_the_api_server_restarted_under_a_running_operator(
    cluster: Cluster, namespace: str, user_queue: str, operator: OperatorProcess
):
    if not cluster.local_dir:
        pytest.skip("restarts the local cluster's API server")
    cluster.apply(jobs.job("before", user_queue, pods=2, cpu="1"), namespace)
    jobs.wait_running(cluster, namespace, "before", 2, timeout=60)
    subprocess.run(
        ["bash", str(CLUSTER_SH), "restart-apiserver"],
        env={**os.environ, "TAS_CLUSTER_DIR": cluster.local_dir},
        check=True,
        capture_output=True,
        timeout=180,
    )
    if operator.proc.poll() is not None:
        # A leader that could not renew its lease for 10 s steps down and exits, as
        # controller-runtime's do; the kubelet would start it again.
        assert "lost the lease" in operator.log()
        operator.start()
    # Its watches resumed (or relisted) against the new API server: a new Job is admitted.
    cluster.apply(jobs.job("after", user_queue, pods=2, cpu="1"), namespace)
    jobs.wait_running(cluster, namespace, "after", 2, timeout=120)
    assert operator.proc.poll() is None
    assert max(cpu_per_node(cluster).values()) <= NODE_CPU
