"""Failover with the leader stalled past its lease: no write of the deposed leader is sent
after the lease moved, and no capacity is given twice.

Each replica reaches the API server through its own fault proxy. A's holds each Workload status
write for a few seconds, so that a burst of admissions leaves some of A's writes decided and
waiting for a write slot; A is then stopped (SIGSTOP), as a stalled process is. While it is
stopped, higher-priority Workloads are queued for the same quota and standby B takes the lease
and decides: the higher-priority ones fill what is left of the quota. B's status writes are
held a few seconds by its proxy, and A is continued (SIGCONT) as soon as B leads: a write A
still sent would carry its old decision past B's, guarded only by its own Workload's
resourceVersion, which B has not changed yet. A's proxy must see no write that only the leader
makes from then on, and the ClusterQueue's quota must hold what is admitted.

Standalone Workloads (no Job) keep the admission webhooks, half of whose connections would
reach the stopped process, out of the way.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from e2e import jobs
from e2e.faultproxy import FaultProxy
from e2e.harness import Cluster, wait_for
from e2e.operator_process import OperatorProcess

pytestmark = pytest.mark.e2e

CLUSTER_QUEUE = "fencing-cq"
QUOTA_CPU = 24
LOW = 24  # 1-cpu Workloads that fill the quota, decided by A before it stalls
HIGH = 8  # higher-priority ones queued while A is stopped
HOLD = {"a": 3.0, "b": 5.0}  # seconds each replica's proxy holds its Workload status writes
STATUS_WRITE = r"/workloads/[^/]+/status$"
# Writes every replica makes, leader or not: the lease, the webhook certificate and CA bundles.
EVERY_REPLICA = ("/leases", "/secrets", "webhookconfigurations", "customresourcedefinitions")


def workload(name: str, priority: int) -> dict:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name},
        "spec": {
            "queueName": "lq",
            "priority": priority,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {
                            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]
                        }
                    },
                }
            ],
        },
    }


def workloads(prefix: str, count: int, priority: int) -> dict:
    items = [workload(f"{prefix}-{i}", priority) for i in range(count)]
    return {"apiVersion": "v1", "kind": "List", "items": items}


@pytest.fixture
def proxies(cluster: Cluster):
    server = cluster.kubectl(
        "config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"
    ).stdout
    with FaultProxy(server) as a, FaultProxy(server) as b:
        for proxy, name in ((a, "a"), (b, "b")):
            hold = {"method": "PATCH", "path": STATUS_WRITE, "action": "delay"}
            proxy.set_rules([{**hold, "seconds": HOLD[name]}])
        yield a, b


@pytest.fixture
def fencing_queue(cluster: Cluster, namespace: str, operator):
    cluster.apply(jobs.cluster_queue(CLUSTER_QUEUE, {"cpu": QUOTA_CPU, "memory": "100Gi"}))
    cluster.apply(jobs.local_queue("lq", CLUSTER_QUEUE), namespace)
    yield "lq"
    cluster.kubectl("delete", "clusterqueue", CLUSTER_QUEUE, "--wait=false", check=False)


def leaders_writes(proxy: FaultProxy) -> dict[str, int]:
    """Writes that reached the proxy (answered or not), but those every replica makes."""
    return {
        request: n
        for request, n in proxy.stats()["arrived"].items()
        if not request.startswith("GET ") and not any(path in request for path in EVERY_REPLICA)
    }


def admitted_cpu(cluster: Cluster, namespace: str) -> tuple[int, dict[str, int]]:
    """Pods (1 cpu each) admitted in the namespace, in all and per host."""
    total, per_host = 0, {}
    for wl in cluster.get_json(jobs.WORKLOADS_V1BETA1, "-n", namespace)["items"]:
        if (wl.get("status") or {}).get("admission"):
            for host, count in jobs.assignment_counts(wl).items():
                per_host[host] = per_host.get(host, 0) + count
                total += count
    return total, per_host


def settled(cluster: Cluster, namespace: str) -> bool:
    """Every Workload admitted or told why not."""
    items = cluster.get_json(jobs.WORKLOADS_V1BETA1, "-n", namespace)["items"]
    return len(items) == LOW + HIGH and all(
        jobs.condition(wl, "QuotaReserved") is not None for wl in items
    )


def test_a_stalled_leader_sends_no_write_once_the_lease_has_moved(
    cluster: Cluster,
    namespace: str,
    fencing_queue: str,
    operator: OperatorProcess,
    operator_swap,
    proxies: tuple[FaultProxy, FaultProxy],
    tmp_path: Path,
):
    to_a, to_b = proxies
    leader = operator_swap(kubeconfig=to_a.kubeconfig(operator.kubeconfig, tmp_path))
    standby = OperatorProcess(cluster, kubeconfig=to_b.kubeconfig(operator.kubeconfig, tmp_path))
    standby.start()
    stopped = False
    try:
        wait_for(lambda: "standing by" in standby.log(), timeout=30, what="B to stand by")
        cluster.apply(workloads("low", LOW, priority=0), namespace)
        wait_for(
            lambda: leader.log().count(f"assumed {namespace}/") >= LOW,
            timeout=60,
            what="A to decide every low-priority Workload",
        )
        os.kill(leader.proc.pid, signal.SIGSTOP)
        stopped = True
        mark = len(leader.log())
        acknowledged = leader.log().count(f"admitted {namespace}/")
        to_a.clear_rules()  # from here on, whatever A sends reaches the API server at once
        cluster.apply(workloads("high", HIGH, priority=1000), namespace)
        wait_for(lambda: "admitting (leader)" in standby.log(), timeout=60, what="B to lead")
        to_a.reset_stats()
        os.kill(leader.proc.pid, signal.SIGCONT)
        stopped = False
        wait_for(lambda: leader.proc.poll() is not None, timeout=60, what="A to step down")
        after = leader.log()[mark:]
        sent_after = leaders_writes(to_a)
        refused = after.count("not sent: this replica does not hold the lease")
        wait_for(lambda: settled(cluster, namespace), timeout=90, what="B to decide on all")
        total, per_host = admitted_cpu(cluster, namespace)
        print(
            f"A stopped with {LOW} admissions decided, {acknowledged} answered; after SIGCONT "
            f"its fence refused {refused} writes and {sum(sent_after.values())} reached the "
            f"API server; {total} cpu admitted on a quota of {QUOTA_CPU}"
        )
        assert "lost the lease" in after
        assert sent_after == {}, sent_after
        assert total <= QUOTA_CPU and max(per_host.values(), default=0) <= 8, per_host
    finally:
        if stopped:
            os.kill(leader.proc.pid, signal.SIGCONT)
        standby.stop()
