"""The admission cycle with Kueue's admission fair sharing on and off.

One AdmissionLoop cycle over N pending workloads (default 1,000) spread over 10 LocalQueues of
one ClusterQueue with the usage-based admissionScope, on 512 empty nodes (4 blocks x 8 racks x
16 hosts of 8 cpu). Each workload asks for 4 one-cpu pods in one rack; the queue's quota takes
3/4 of them (the others wait for quota). Each LocalQueue starts with a different stored usage.
With admission fair sharing on, every admission charges its LocalQueue's entry penalty and the
next workload is taken from the LocalQueue that used least at that moment; off, the queue is
walked in priority and age order. Status writes go to an in-memory writer that answers at once.

    PYTHONPATH=operator .venv/bin/python bench/admission_fair_sharing_bench.py [--pending 1000]
        [--repeat 3] [--output bench/results/admission_fair_sharing.json]

Reported, never asserted: the cycle's wall time (best and median of the repeats) on and off,
the workloads admitted, and the time spent in admission fair sharing's own bookkeeping (reading
LocalQueue usage, charging and settling penalties, status), median. The two orders differ, so
the solver's work differs too: the bookkeeping time is the feature's own cost.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from tas.admission.loop import AdmissionLoop
from tas.api.fairsharing import AdmissionFairSharing
from tas.cache import projections as proj
from tas.cache.state import ClusterState

BLOCK, RACK, HOST = "example.com/block", "example.com/rack", "kubernetes.io/hostname"
BLOCKS, RACKS, HOSTS = 4, 8, 16  # 512 nodes
NODE_CPU = 8
PODS = 4
QUEUES = 10
CONFIG = AdmissionFairSharing(usage_half_life_seconds=3600, usage_sampling_interval_seconds=300)


class Writer:
    """Answers every write at once (after one turn of the loop, as a real answer needs)."""

    def __init__(self) -> None:
        self.admitted = 0

    async def write_status(self, workload, status) -> bool:
        await asyncio.sleep(0)
        self.admitted += "admission" in status
        return True

    async def settle(self, workload) -> None:
        return None

    async def record_event(self, workload, type_, reason, message) -> None:
        return None

    async def write_cluster_queue_status(self, name, status) -> None:
        await asyncio.sleep(0)

    async def write_local_queue_status(self, namespace, name, status) -> None:
        await asyncio.sleep(0)

    async def write_placement_group(self, namespace, name, spec, status) -> None:
        await asyncio.sleep(0)


def node(block: int, rack: int, host: int) -> dict:
    name = f"h-{block}-{rack}-{host}"
    labels = {BLOCK: f"b{block}", RACK: f"b{block}-r{rack}", HOST: name}
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {},
        "status": {
            "allocatable": {"cpu": str(NODE_CPU), "memory": "64Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def workload(i: int) -> dict:
    return {
        "metadata": {
            "name": f"w{i}",
            "namespace": "ns",
            "uid": f"uid-{i}",
            "resourceVersion": str(1000 + i),
            "generation": 1,
            "creationTimestamp": f"2026-01-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z",
        },
        "spec": {
            "queueName": f"lq{i % QUEUES}",
            "priority": i % 3,
            "podSets": [
                {
                    "name": "main",
                    "count": PODS,
                    "topologyRequest": {"required": RACK},
                    "template": {
                        "spec": {
                            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]
                        }
                    },
                }
            ],
        },
    }


def cluster(pending: int) -> ClusterState:
    state = ClusterState()
    state.upsert_topology("default", [BLOCK, RACK, HOST])
    state.upsert_flavor(
        proj.flavor_from_object({"metadata": {"name": "tas"}, "spec": {"topologyName": "default"}})
    )
    quota = [{"name": "cpu", "nominalQuota": str(pending * PODS * 3 // 4)}]
    cq = {
        "metadata": {"name": "cq"},
        "spec": {
            "namespaceSelector": {},
            "admissionScope": {"admissionMode": "UsageBasedAdmissionFairSharing"},
            "resourceGroups": [
                {"coveredResources": ["cpu"], "flavors": [{"name": "tas", "resources": quota}]}
            ],
        },
    }
    state.upsert_cluster_queue(proj.cluster_queue_from_object(cq))
    for q in range(QUEUES):
        state.upsert_local_queue("ns", f"lq{q}", "cq")
    state.upsert_namespace("ns", {})
    for b in range(BLOCKS):
        for r in range(RACKS):
            for h in range(HOSTS):
                state.upsert_node(proj.node_from_object(node(b, r, h)))
    for i in range(pending):
        state.upsert_workload(proj.workload_from_object(workload(i)))
    return state


def timed(function, spent: list[float]):
    """`function`, adding the time each call takes to spent[0]."""

    def call(*args):
        started = time.perf_counter()
        try:
            return function(*args)
        finally:
            spent[0] += time.perf_counter() - started

    return call


async def one_cycle(pending: int, on: bool) -> tuple[float, int, float]:
    state = cluster(pending)
    state.snapshot("tas")  # built once per capacity generation: not part of the cycle
    writer = Writer()
    loop = AdmissionLoop(state, writer, admission_fair_sharing=CONFIG if on else None)
    for q in range(QUEUES):
        used = {"consumedResources": {"cpu": str(10 * (QUEUES - q))}}
        loop.fair.local_queue(
            ("ns", f"lq{q}"),
            {"spec": {}, "status": {"fairSharing": {"admissionFairSharingStatus": used}}},
        )
    spent = [0.0]  # in the bookkeeping: LocalQueue usage read, penalties charged and settled
    for name in ("usage", "assumed", "settle", "status"):
        setattr(loop.fair, name, timed(getattr(loop.fair, name), spent))
    started = time.perf_counter()
    await loop.cycle()
    took = time.perf_counter() - started
    await loop.drain()
    loop.fair.stop()
    return took, writer.admitted, spent[0]


def measure(pending: int, repeat: int) -> dict:
    row: dict = {"pending": pending, "nodes": BLOCKS * RACKS * HOSTS, "localQueues": QUEUES}
    for label, on in (("off", False), ("on", True)):
        runs = [asyncio.run(one_cycle(pending, on)) for _ in range(repeat)]
        times = [t for t, _, _ in runs]
        row[label] = {
            "cycleSecondsBest": round(min(times), 3),
            "cycleSecondsMedian": round(statistics.median(times), 3),
            "admitted": runs[0][1],
            "fairSharingSecondsMedian": round(statistics.median(s for _, _, s in runs), 3),
        }
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pending", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    row = measure(args.pending, args.repeat)
    print("| admission fair sharing | pending | admitted | cycle s (best) | (median) | in it s |")
    print("|---|---:|---:|---:|---:|---:|")
    for label in ("off", "on"):
        r = row[label]
        print(
            f"| {label} | {row['pending']:,} | {r['admitted']} | {r['cycleSecondsBest']} "
            f"| {r['cycleSecondsMedian']} | {r['fairSharingSecondsMedian']} |"
        )
    if args.output:
        machine = {
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "loadavg": os.getloadavg(),
        }
        args.output.write_text(json.dumps({"machine": machine, "row": row}, indent=2) + "\n")


if __name__ == "__main__":
    main()
