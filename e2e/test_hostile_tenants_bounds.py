"""A hostile tenant cannot take admission down with one object whose numbers are huge: a pod
group's total count, a LeaderWorkerSet's replicas.

For each: the webhook refuses the object, naming the field; made anyway while no operator
serves the webhooks (failurePolicy Ignore meanwhile, chart.webhooks_fail_open), the operator
that starts next lives (its process, its liveness endpoint, its memory under the chart's 1 GiB
limit), says on the object why it makes nothing of it, and another namespace's Job is still
admitted, with no node and no quota over-committed.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e import chart, integrations, jobs
from e2e.conftest import CLUSTER_QUEUE
from e2e.harness import Cluster, wait_for
from e2e.operator_process import OperatorProcess, free_port
from tas.api.quantity import parse_milli

pytestmark = pytest.mark.e2e

INT32_MAX = 2**31 - 1
MEMORY_LIMIT = 2**30  # the chart's resources.limits.memory
PREFIX = "kueue.x-k8s.io/"
TOTAL_COUNT = PREFIX + "pod-group-total-count"


class LiveOperator(OperatorProcess):
    """The operator with its liveness endpoint on, as the chart runs it."""

    def __init__(self, cluster: Cluster, session: OperatorProcess) -> None:
        self.liveness_port = free_port()
        super().__init__(
            cluster,
            kubeconfig=session.kubeconfig,
            gates=session.gates,
            extra=(f"--liveness=http://127.0.0.1:{self.liveness_port}/healthz",),
        )

    def live(self) -> bool:
        url = f"http://127.0.0.1:{self.liveness_port}/healthz"
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status == 200

    def rss(self) -> int:
        """The process's resident memory, in bytes."""
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS")


@pytest.fixture(scope="module")
def live_operator(cluster: Cluster, operator: OperatorProcess) -> Iterator[LiveOperator]:
    """The session's operator swapped for one with liveness on, for the module."""
    operator.stop()
    live = LiveOperator(cluster, operator)
    live.start()
    yield live
    live.stop()
    operator.start()


def created_behind_the_webhooks(
    cluster: Cluster, live: LiveOperator, namespace: str, *manifests: dict
) -> None:
    """`manifests` created while no operator serves the webhooks, then the operator started
    (which lists them, as every replica does at start and a standby taking over)."""
    live.stop()
    with chart.webhooks_fail_open(cluster):
        for manifest in manifests:
            cluster.apply(manifest, namespace)
    live.start()


def refused(cluster: Cluster, manifest: dict, namespace: str) -> str:
    result = cluster.kubectl(
        "create", "-n", namespace, "-f", "-", input=json.dumps(manifest), check=False
    )
    assert result.returncode != 0, f"accepted: {manifest['metadata']['name']}"
    return result.stderr


def events(cluster: Cluster, namespace: str, name: str) -> list[dict]:
    return [
        e
        for e in cluster.get_json("events", "-n", namespace)["items"]
        if e["involvedObject"]["name"] == name
    ]


def other_tenant_still_admitted(cluster: Cluster, live: LiveOperator) -> None:
    """A Job of another namespace is admitted and runs; nothing is over-committed."""
    other = cluster.create_namespace("other-tenant")
    try:
        cluster.apply(jobs.local_queue("q", CLUSTER_QUEUE), other)
        cluster.apply(jobs.job("victim", "q", pods=2, cpu="1"), other)
        jobs.wait_admitted(cluster, other, "victim", timeout=90)
        jobs.wait_running(cluster, other, "victim", 2)
        assert_nothing_over_committed(cluster)
        assert live.live()
        rss = live.rss()
        print(f"operator resident memory: {rss / 2**20:.0f} MiB")  # shown with -s
        assert rss < MEMORY_LIMIT / 2, f"{rss / 2**20:.0f} MiB"
    finally:
        cluster.delete_namespace(other)


def assert_nothing_over_committed(cluster: Cluster) -> None:
    allocatable = {
        n["metadata"]["name"]: parse_milli(n["status"]["allocatable"]["cpu"])
        for n in cluster.get_json("nodes")["items"]
    }
    used: dict[str, int] = {}
    for pod in cluster.get_json("pods", "-A")["items"]:
        node = pod["spec"].get("nodeName")
        if not node or pod["status"].get("phase") in ("Succeeded", "Failed"):
            continue
        for c in pod["spec"]["containers"]:
            cpu = ((c.get("resources") or {}).get("requests") or {}).get("cpu")
            used[node] = used.get(node, 0) + (parse_milli(cpu) if cpu else 0)
    over = {n: (u, allocatable.get(n)) for n, u in used.items() if u > allocatable.get(n, 0)}
    assert not over, f"nodes over-committed (milli-CPU used, allocatable): {over}"
    cq = cluster.get_json("clusterqueue", CLUSTER_QUEUE)
    for flavor in cq.get("status", {}).get("flavorsUsage") or []:
        for resource in flavor["resources"]:
            if resource["name"] == "cpu":
                assert parse_milli(resource["total"]) <= 100_000, cq["status"]


# ---- pod groups ----------------------------------------------------------------------------------


def group_pod(name: str, total: str, queue: str, *, gated: bool = False) -> dict:
    """A pod of a fast-admission group of `total`. `gated`: written as the operator's webhook
    would have made it (a tenant can write all of it), for a creation behind the webhooks."""
    labels = {PREFIX + "queue-name": queue, PREFIX + "pod-group-name": name}
    spec: dict = {
        "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "10m"}}}]
    }
    meta: dict = {
        "name": name,
        "labels": labels,
        "annotations": {TOTAL_COUNT: total, PREFIX + "pod-group-fast-admission": "true"},
    }
    if gated:
        labels[PREFIX + "managed"] = "true"
        meta["finalizers"] = [PREFIX + "managed"]
        spec["schedulingGates"] = [{"name": PREFIX + "admission"}, {"name": PREFIX + "topology"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def test_a_pod_group_of_a_huge_total_count(
    cluster: Cluster, namespace: str, live_operator: LiveOperator, user_queue: str
):
    # Past a pod set's count (int32): refused, naming the annotation and the bound.
    error = refused(cluster, group_pod("too-many", str(INT32_MAX + 1), user_queue), namespace)
    assert TOTAL_COUNT in error and str(INT32_MAX) in error
    error = refused(cluster, group_pod("arabic", "٣", user_queue), namespace)
    assert TOTAL_COUNT in error

    # Made anyway: the 7.5 GiB the old operator built for 999,999,999 (per replica, at every
    # start), and a count no pod set can have.
    created_behind_the_webhooks(
        cluster,
        live_operator,
        namespace,
        group_pod("huge", "999999999", user_queue, gated=True),
        group_pod("beyond", "99999999999", user_queue, gated=True),
    )

    def huge_pending():
        workload = cluster.get_json("workload", "-n", namespace, "huge")
        [ps] = workload["spec"]["podSets"]
        reserved = jobs.condition(workload, "QuotaReserved")
        return ps["count"] == 999_999_999 and reserved and reserved["status"] == "False"

    wait_for(huge_pending, timeout=60, what="the huge group's Workload, pending (no quota)")
    wait_for(
        lambda: any(
            e["reason"] == "ErrWorkloadCompose" and str(INT32_MAX) in e["message"]
            for e in events(cluster, namespace, "beyond")
        ),
        timeout=60,
        what="an event on the pod whose count no pod set can have",
    )
    other_tenant_still_admitted(cluster, live_operator)
    # Deleted, each lets go of the operator's finalizer (the webhook refuses no update for a
    # problem the pod already had), so its namespace can go too.
    cluster.kubectl("delete", "pod", "-n", namespace, "huge", "beyond", "--wait=false")
    wait_for(
        lambda: not cluster.get_json("pods", "-n", namespace)["items"],
        timeout=60,
        what="the hostile pods gone",
    )


# ---- LeaderWorkerSets ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lws_crd(cluster: Cluster, live_operator: LiveOperator) -> None:
    """The LeaderWorkerSet CRD (its controller is not needed: no pod is made here)."""
    integrations.install_crds(cluster, "lws")
    crd = "leaderworkersets.leaderworkerset.x-k8s.io"
    wait_for(
        lambda: f"leaderworkersets: CRD {crd} established" in live_operator.log(),
        timeout=60,
        what="the operator to handle LeaderWorkerSets",
    )


def leaderworkerset(name: str, replicas: int, queue: str) -> dict:
    template = {
        "spec": {
            "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "10m"}}}
            ]
        }
    }
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name, "labels": {PREFIX + "queue-name": queue}},
        "spec": {
            "replicas": replicas,
            "leaderWorkerTemplate": {"size": 2, "workerTemplate": template},
        },
    }


def test_a_leaderworkerset_of_the_most_replicas(
    cluster: Cluster, namespace: str, live_operator: LiveOperator, user_queue: str, lws_crd
):
    error = refused(cluster, leaderworkerset("huge", INT32_MAX, user_queue), namespace)
    assert "spec.replicas" in error and "1000" in error  # the field and the bound

    created_behind_the_webhooks(
        cluster, live_operator, namespace, leaderworkerset("huge", INT32_MAX, user_queue)
    )

    def refusal():
        found = [
            e for e in events(cluster, namespace, "huge") if e["reason"] == "ErrWorkloadCompose"
        ]
        return found and "spec.replicas" in found[0]["message"]

    wait_for(refusal, timeout=60, what="the LeaderWorkerSet's refusal event")
    workloads = cluster.get_json("workloads", "-n", namespace)["items"]
    assert not [
        w
        for w in workloads
        if any(o["kind"] == "LeaderWorkerSet" for o in w["metadata"].get("ownerReferences", []))
    ]
    other_tenant_still_admitted(cluster, live_operator)
    # Within the bound it is admitted as before: one Workload per group.
    cluster.apply(leaderworkerset("small", 3, user_queue), namespace)
    wait_for(
        lambda: (
            len(
                [
                    w
                    for w in cluster.get_json("workloads", "-n", namespace)["items"]
                    if any(o["name"] == "small" for o in w["metadata"].get("ownerReferences", []))
                ]
            )
            == 3
        ),
        timeout=60,
        what="three Workloads for a LeaderWorkerSet of three groups",
    )
