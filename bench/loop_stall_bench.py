"""How long one admission cycle keeps the event loop from anything else (lease renewal,
webhooks, the liveness probe all share it).

The real AdmissionLoop runs one cycle over N pending workloads that do not fit (each asks for
more of one rack than any rack has free, within its ClusterQueue's quota, so every one is
decided by the solver), on 512 nodes (4 blocks x 8 racks x 16 hosts) that other pods fill to
5-8 of their 8 cpu (seeded). Beside it a ticker task sleeps 1 ms
at a time and records the gaps between its wake-ups: the longest gap is the loop's stall. The
status writes go to an in-memory writer that answers at once. Then a pod ends on one of 16
nodes of another flavor, which another ClusterQueue (in no cohort) uses, and a second cycle
runs: how many of the N are decided again after that unrelated change (Kueue requeues none).

    PYTHONPATH=operator .venv/bin/python bench/loop_stall_bench.py [--sizes 1000,10000,50000]
        [--runs 3] [--no-gc] [--output bench/results/loop_stall.json]

Each timing is the median of the runs (each run kept in the result file).

Reported, never asserted: N, the cycle's wall time, the longest gap, and both per workload; the
longest gap in the loop thread's own CPU time, which a busy shared machine does not stretch
(while the operating system runs others, no time passes for it); the second cycle's time and
how many workloads it re-solved; and the cyclic garbage left once the cycles are done.
Python's cyclic garbage collector stops everything while it walks the heap (hundreds of ms with
25,000 workloads, unless the heap is settled: tas.pacing); `--no-gc` switches its automatic
collections off while the loop is measured, to tell those pauses apart from the loop's own.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import tas.admission.loop as loop_module
from tas import pacing
from tas.admission.loop import AdmissionLoop
from tas.cache import projections as proj
from tas.cache.state import ClusterState

BLOCK, RACK, HOST = "example.com/block", "example.com/rack", "kubernetes.io/hostname"
BLOCKS, RACKS, HOSTS = 4, 8, 16  # 512 nodes
OTHER_HOSTS = 16  # nodes of the other flavor, in block "other"
NODE_CPU = 8
MOST_FREE = 3  # cpu left on a node by the pods that fill it
FILL = ("5", "6", "7", "7500m", "8")
TICK = 0.001


class Writer:
    """Answers every write at once (after one turn of the loop, as a real answer needs)."""

    def __init__(self) -> None:
        self.writes = 0

    async def write_status(self, workload, status) -> bool:
        await asyncio.sleep(0)
        self.writes += 1
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


def node(block: int, rack: int, host: int, pool: str = "main") -> dict:
    name = f"h-{block}-{rack}-{host}" if pool == "main" else f"{pool}-{host}"
    labels = {BLOCK: f"b{block}", RACK: f"b{block}-r{rack}", HOST: name, "pool": pool}
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {},
        "status": {
            "allocatable": {"cpu": str(NODE_CPU), "memory": "64Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def filler(name: str, cpu: str) -> dict:
    """A running pod outside any queue, bound to the node."""
    return {
        "metadata": {"name": f"fill-{name}", "namespace": "other", "uid": f"fill-{name}"},
        "spec": {
            "nodeName": name,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
        },
        "status": {"phase": "Running"},
    }


def workload(i: int) -> dict:
    """More 1-cpu pods than any rack has free, required in one rack: never fits."""
    pods = HOSTS * MOST_FREE + 1 + i % 64
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
            "queueName": "lq",
            "priority": 0,
            "podSets": [
                {
                    "name": "main",
                    "count": pods,
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


def queue(name: str, flavor: str) -> dict:
    quota = [{"name": "cpu", "nominalQuota": "1000000"}]
    return {
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {"coveredResources": ["cpu"], "flavors": [{"name": flavor, "resources": quota}]}
            ],
        },
    }


def cluster(pending: int) -> ClusterState:
    state = ClusterState()
    state.upsert_topology("default", [BLOCK, RACK, HOST])
    for flavor in ("tas", "other"):
        spec = {
            "topologyName": "default",
            "nodeLabels": {"pool": "main" if flavor == "tas" else flavor},
        }
        state.upsert_flavor(proj.flavor_from_object({"metadata": {"name": flavor}, "spec": spec}))
    state.upsert_cluster_queue(proj.cluster_queue_from_object(queue("cq", "tas")))
    state.upsert_cluster_queue(proj.cluster_queue_from_object(queue("cq-other", "other")))
    state.upsert_local_queue("ns", "lq", "cq")
    state.upsert_namespace("ns", {})
    rng = random.Random(1)
    for b in range(BLOCKS):
        for r in range(RACKS):
            for h in range(HOSTS):
                obj = node(b, r, h)
                state.upsert_node(proj.node_from_object(obj))
                name = obj["metadata"]["name"]
                state.upsert_pod(proj.pod_from_object(filler(name, rng.choice(FILL))))
    for h in range(OTHER_HOSTS):
        state.upsert_node(proj.node_from_object(node(BLOCKS, 0, h, pool="other")))
        state.upsert_pod(proj.pod_from_object(filler(f"other-{h}", "1")))
    for i in range(pending):
        state.upsert_workload(proj.workload_from_object(workload(i)))
    return state


def unrelated_change(state: ClusterState) -> None:
    """A pod ends on a node of the other flavor: no pending workload here can use that."""
    state.delete_pod("other", "fill-other-0")


async def resolved_after(loop: AdmissionLoop, change: Callable[[], None]) -> tuple[int, float]:
    """How many workloads the next cycle decides after `change`, and its wall time."""
    decided = 0
    original = loop_module.decide

    def counted(*args):
        nonlocal decided
        decided += 1
        return original(*args)

    change()
    loop_module.decide = counted
    try:
        started = time.perf_counter()
        await loop.cycle()
        took = time.perf_counter() - started
    finally:
        loop_module.decide = original
    await loop.drain()
    return decided, took


def settle_heap() -> None:
    """As the runtime does once the initial lists are in (where this version has it)."""
    settle = getattr(pacing, "settle_heap", None)
    if settle is not None:
        settle(initial=True)


def cyclic_garbage() -> int:
    """Objects in reference cycles no collection freed (settle_heap's price), then freed."""
    if hasattr(gc, "unfreeze"):
        gc.unfreeze()
    return gc.collect()


async def measure(pending: int, collect: bool = True) -> dict:
    state = cluster(pending)
    for flavor in ("tas", "other"):
        state.snapshot(flavor)  # built once per capacity generation: not part of the stall
    settle_heap()
    loop = AdmissionLoop(state, Writer())
    gaps: list[tuple[float, float]] = []  # (wall, cpu) seconds between two ticks
    done = asyncio.Event()

    async def ticker() -> None:
        last = (time.perf_counter(), time.thread_time())
        while not done.is_set():
            await asyncio.sleep(TICK)
            now = (time.perf_counter(), time.thread_time())
            gaps.append((now[0] - last[0], now[1] - last[1]))
            last = now

    ticking = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    gaps.clear()
    if not collect:
        gc.disable()
    started = time.perf_counter()
    await loop.cycle()
    took = time.perf_counter() - started
    await loop.drain()  # the writes the cycle started: the ticker still measures
    done.set()
    await ticking
    gc.enable()
    resolved, second = await resolved_after(loop, lambda: unrelated_change(state))
    garbage = cyclic_garbage()
    stall = max((wall for wall, _ in gaps), default=0.0)
    stall_cpu = max((cpu for _, cpu in gaps), default=0.0)
    return {
        "pending": pending,
        "nodes": BLOCKS * RACKS * HOSTS,
        "cycleSeconds": round(took, 3),
        "cycleMsPerWorkload": round(took * 1000 / pending, 4),
        "longestGapMs": round(stall * 1000, 1),
        "longestGapMsPerWorkload": round(stall * 1000 / pending, 4),
        "longestGapCpuMs": round(stall_cpu * 1000, 1),
        "ticks": len(gaps),
        "garbageCollector": collect,
        "resolvedAfterUnrelatedChange": resolved,
        "secondCycleSeconds": round(second, 3),
        "cyclicGarbageObjects": garbage,
    }


MEDIAN_OF = ("cycleSeconds", "longestGapMs", "longestGapCpuMs", "secondCycleSeconds")


def median_row(pending: int, runs: int, collect: bool) -> dict:
    """One row per size: the median of each timing over the runs (each one kept in `runs`)."""
    measured = [asyncio.run(measure(pending, collect)) for _ in range(runs)]
    row = dict(measured[0])
    for field in MEDIAN_OF:
        row[field] = statistics.median(m[field] for m in measured)
    row["cycleMsPerWorkload"] = round(row["cycleSeconds"] * 1000 / pending, 4)
    row["longestGapMsPerWorkload"] = round(row["longestGapMs"] / pending, 4)
    row["resolvedAfterUnrelatedChange"] = max(m["resolvedAfterUnrelatedChange"] for m in measured)
    row["cyclicGarbageObjects"] = max(m["cyclicGarbageObjects"] for m in measured)
    row["runs"] = [{field: m[field] for field in MEDIAN_OF} for m in measured]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,50000")
    parser.add_argument("--no-gc", action="store_true", help="no garbage collector while measured")
    parser.add_argument("--runs", type=int, default=3, help="runs per size; the median is shown")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    rows = [median_row(int(n), args.runs, not args.no_gc) for n in args.sizes.split(",")]
    print(
        "| pending | cycle s | ms/workload | longest gap ms | per workload | cpu ms "
        "| re-solved after an unrelated change | second cycle s |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['pending']:,} | {r['cycleSeconds']} | {r['cycleMsPerWorkload']} "
            f"| {r['longestGapMs']} | {r['longestGapMsPerWorkload']} | {r['longestGapCpuMs']} "
            f"| {r['resolvedAfterUnrelatedChange']:,} | {r['secondCycleSeconds']} |"
        )
    if args.output:
        machine = {
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "loadavg": os.getloadavg(),
        }
        result = {"commit": measured_commit(), "machine": machine, "rows": rows}
        args.output.write_text(json.dumps(result, indent=2) + "\n")


def measured_commit() -> str:
    """The commit of the operator code measured (its checkout, as PYTHONPATH points to it)."""
    where = Path(loop_module.__file__).parent
    head = subprocess.run(
        ["git", "-C", str(where), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(where), "status", "--porcelain", "--", "."],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return (head + ("-dirty" if dirty else "")) if head else "unknown"


if __name__ == "__main__":
    main()
