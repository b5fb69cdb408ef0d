"""Builders and checks for queued Jobs in end-to-end tests."""

from __future__ import annotations

import json
from collections import Counter

from e2e.harness import Cluster, wait_for
from e2e.topology import BLOCK_LABEL, HOSTNAME_LABEL, RACK_LABEL

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PREFIX = "kueue.x-k8s.io/"


def job(
    name: str,
    queue: str | None,
    *,
    pods: int,
    cpu: str = "1",
    annotations: dict | None = None,
    indexed: bool = True,
    completions: int | None = None,
) -> dict:
    labels = {QUEUE_LABEL: queue} if queue else {}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "parallelism": pods,
            "completions": completions or pods,
            "completionMode": "Indexed" if indexed else "NonIndexed",
            "backoffLimit": 100,
            "template": {
                "metadata": {"annotations": annotations or {}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
                    ],
                },
            },
        },
    }


def bound_pod(name: str, node: str, cpu: str = "10m") -> dict:
    """A pod outside any queue, bound straight to a node (no scheduler): usage the operator
    must count, and that kwok runs cheaply."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeName": node,
            "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
            ],
            "tolerations": [{"operator": "Exists"}],
        },
    }


def cluster_queue(name: str, quota: dict[str, object], flavor: str = "tas-flavor") -> dict:
    """A ClusterQueue for every namespace with one flavor's nominal quota, resource -> amount."""
    resources = [{"name": r, "nominalQuota": q} for r, q in quota.items()]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": list(quota),
                    "flavors": [{"name": flavor, "resources": resources}],
                }
            ],
        },
    }


def scale(
    cluster: Cluster, kind: str, namespace: str, name: str, replicas: int, check: bool = True
):
    """Set spec.replicas through the object (not its scale subresource: the webhooks see it)."""
    patch = json.dumps({"spec": {"replicas": replicas}})
    return cluster.kubectl(
        "patch", kind, "-n", namespace, name, "--type=merge", "-p", patch, check=check
    )


def local_queue(name: str, cluster_queue: str) -> dict:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "LocalQueue",
        "metadata": {"name": name},
        "spec": {"clusterQueue": cluster_queue},
    }


# The tests read Workloads as a v1beta1 client does: through the operator's conversion webhook
# (the operator itself reads and writes v1beta2, the stored version).
WORKLOADS_V1BETA1 = "workloads.v1beta1.kueue.x-k8s.io"


def workload_of(cluster: Cluster, namespace: str, job_name: str) -> dict | None:
    items = cluster.get_json(WORKLOADS_V1BETA1, "-n", namespace)["items"]
    return next(
        (
            w
            for w in items
            if any(o["name"] == job_name for o in w["metadata"].get("ownerReferences", []))
        ),
        None,
    )


def condition(obj: dict | None, type_: str) -> dict | None:
    if not obj:
        return None
    return next(
        (c for c in obj.get("status", {}).get("conditions", []) if c["type"] == type_), None
    )


def wait_admitted(cluster: Cluster, namespace: str, job_name: str, timeout: float = 60) -> dict:
    def admitted():
        wl = workload_of(cluster, namespace, job_name)
        c = condition(wl, "Admitted")
        return wl if c and c["status"] == "True" else None

    return wait_for(admitted, timeout=timeout, what=f"workload of {job_name} admitted")


def wait_pending_message(
    cluster: Cluster, namespace: str, job_name: str, contains: str, timeout: float = 60
) -> dict:
    def pending():
        wl = workload_of(cluster, namespace, job_name)
        c = condition(wl, "QuotaReserved")
        return wl if c and c["status"] == "False" and contains in c["message"] else None

    return wait_for(
        pending, timeout=timeout, what=f"workload of {job_name} pending with {contains!r}"
    )


def pods_of(cluster: Cluster, namespace: str, job_name: str) -> list[dict]:
    return cluster.get_json("pods", "-n", namespace, "-l", f"job-name={job_name}")["items"]


def events_of(cluster: Cluster, namespace: str, name: str) -> list[dict]:
    """The events about the object `name` (kept after the object itself is gone)."""
    return cluster.get_json(
        "events", "-n", namespace, "--field-selector", f"involvedObject.name={name}"
    )["items"]


def wait_running(
    cluster: Cluster, namespace: str, job_name: str, count: int, timeout: float = 90
) -> list[dict]:
    def running():
        pods = [
            p
            for p in pods_of(cluster, namespace, job_name)
            if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
        ]
        return pods if len(pods) == count else None

    return wait_for(running, timeout=timeout, what=f"{count} pods of {job_name} Running")


def assignment_counts(workload: dict) -> Counter:
    """Host -> assigned pod count, from status.admission (hostname is the lowest level here)."""
    counts: Counter = Counter()
    for ps in workload["status"]["admission"]["podSetAssignments"]:
        ta = ps["topologyAssignment"]
        assert ta["levels"] == [HOSTNAME_LABEL], ta["levels"]
        for d in ta["domains"]:
            counts[d["values"][0]] += d["count"]
    return counts


def node_labels(cluster: Cluster) -> dict[str, dict]:
    return {
        n["metadata"]["name"]: n["metadata"]["labels"] for n in cluster.get_json("nodes")["items"]
    }


def placement(pods: list[dict]) -> Counter:
    return Counter(p["spec"]["nodeName"] for p in pods)


def racks_and_blocks(cluster: Cluster, hosts) -> tuple[set, set]:
    labels = node_labels(cluster)
    return {labels[h][RACK_LABEL] for h in hosts}, {labels[h][BLOCK_LABEL] for h in hosts}
