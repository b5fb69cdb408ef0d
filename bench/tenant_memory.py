"""Memory and time one hostile tenant object costs the operator's controllers (a measure, not a
test): a pod group whose total count is large, and a LeaderWorkerSet with many replicas.

    PYTHONPATH=operator .venv/bin/python bench/tenant_memory.py [--counts 1000,100000,...]

Each object is synced once by its controller against a fake API client that counts writes;
tracemalloc gives the peak memory of that sync. Run it with another tree on PYTHONPATH to
compare (the controllers' constructors take the same arguments).
"""

from __future__ import annotations

import argparse
import asyncio
import time
import tracemalloc

from tas.cache.state import ClusterState
from tas.integrations.leaderworkerset.controller import LeaderWorkerSetController
from tas.integrations.pod.controller import PodController
from tas.solver.types import SolverOptions

NS = "tenant"


class CountingKube:
    """The API calls the controllers make, counted, each answered at once."""

    def __init__(self) -> None:
        self.creates = self.events = 0

    async def create(self, path, body):
        self.creates += 1
        return body

    async def event(self, ref, type_, reason, message):
        self.events += 1

    async def patch(self, *args, **kwargs):
        return {}

    async def delete(self, *args, **kwargs):
        return None


def state() -> ClusterState:
    out = ClusterState(SolverOptions())
    out.upsert_namespace(NS, {"kubernetes.io/metadata.name": NS})
    return out


def group_pod(total: int) -> dict:
    return {
        "metadata": {
            "name": "p0",
            "namespace": NS,
            "uid": "u0",
            "resourceVersion": "1",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {
                "kueue.x-k8s.io/queue-name": "q",
                "kueue.x-k8s.io/managed": "true",
                "kueue.x-k8s.io/pod-group-name": "g",
            },
            "annotations": {
                "kueue.x-k8s.io/pod-group-total-count": str(total),
                "kueue.x-k8s.io/pod-group-fast-admission": "true",
            },
            "finalizers": ["kueue.x-k8s.io/managed"],
        },
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
            "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
        },
    }


def leaderworkerset(replicas: int) -> dict:
    template = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
    return {
        "metadata": {
            "name": "lws",
            "namespace": NS,
            "uid": "lws-uid",
            "labels": {"kueue.x-k8s.io/queue-name": "q"},
        },
        "spec": {
            "replicas": replicas,
            "leaderWorkerTemplate": {"size": 2, "workerTemplate": template},
        },
    }


async def sync_pod_group(total: int) -> CountingKube:
    kube = CountingKube()
    controller = PodController(state(), kube, writer=None)
    for key in controller.upsert(group_pod(total)):
        await controller.sync(key)
    return kube


async def sync_leaderworkerset(replicas: int) -> CountingKube:
    kube = CountingKube()
    controller = LeaderWorkerSetController(state(), kube, {})
    for key in controller.upsert(leaderworkerset(replicas)):
        await controller.sync(key)
    return kube


def measure(what: str, count: int, run) -> None:
    tracemalloc.start()
    started = time.perf_counter()
    kube = asyncio.run(run(count))
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        f"| {what} | {count:,} | {peak / 2**20:,.2f} MiB | {seconds:,.3f} s "
        f"| {kube.creates:,} creates, {kube.events} events |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="1000,100000,1000000")
    parser.add_argument("--only", choices=("pods", "lws"))
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    print("| object | its number | peak memory | time | API calls |")
    print("|---|---:|---:|---:|---|")
    for count in counts:
        if args.only in (None, "pods"):
            measure("pod group, total count", count, sync_pod_group)
        if args.only in (None, "lws"):
            measure("LeaderWorkerSet, replicas", count, sync_leaderworkerset)


if __name__ == "__main__":
    main()
