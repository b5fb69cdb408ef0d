"""Defragmentation end to end (gate TASDefragmentation): a gang that requires a whole block
waits behind four small movable Jobs scattered over both blocks; the operator moves the ones
in one block (Evicted, reason Defragmented), holds the block for the gang, and the small Jobs
run again in the other block.

Own Topology, ResourceFlavor (node-group `defrag`), ClusterQueue and nodes: two blocks of two
racks of two hosts of 4 CPUs (a block holds 16 one-CPU pods).
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Iterator

import pytest

from e2e import jobs, topology
from e2e.harness import Cluster, wait_for
from e2e.test_hotswap import install_hotswap_queue, ready

pytestmark = pytest.mark.e2e

GROUP = "defrag"
GATE = "TASDefragmentation=true"
REQUIRED = jobs.PREFIX + "podset-required-topology"
MOVABLE = {"tas-operator.io/movable": "true", "tas-operator.io/movable-after": "0s"}
BLOCK = topology.BLOCK_LABEL
RACK = topology.RACK_LABEL


@pytest.fixture
def pool(cluster: Cluster, operator_swap) -> Iterator[dict[str, list[str]]]:
    """block -> hosts, with the gate on in the operator."""
    prefix = f"df{uuid.uuid4().hex[:4]}"
    layout: dict[str, list[str]] = {}
    try:
        install_hotswap_queue(cluster, GROUP, GROUP, {"cpu": 1000})
        for b in (1, 2):
            block = f"{prefix}-b{b}"
            for r in (1, 2):
                for h in (1, 2):
                    name = f"{block}-r{r}-h{h}"
                    manifest = topology.node_manifest(
                        name, block, f"{block}-r{r}", {"cpu": "4", "memory": "16Gi", "pods": "110"}
                    )
                    manifest["metadata"]["labels"][topology.NODE_GROUP_LABEL] = GROUP
                    cluster.apply(manifest)
                    layout.setdefault(block, []).append(name)
        names = [n for hosts in layout.values() for n in hosts]
        wait_for(lambda: all(ready(cluster, n) for n in names), timeout=120, what="nodes Ready")
        operator_swap(gates=GATE)
        yield layout
    finally:
        for hosts in layout.values():
            for name in hosts:
                cluster.kubectl("delete", "node", name, "--wait=false", check=False)


def small(name: str) -> dict:
    job = jobs.job(name, "q", pods=2, annotations={REQUIRED: RACK})
    job["metadata"]["annotations"] = dict(MOVABLE)
    return job


def blocks(cluster: Cluster, pods: list[dict]) -> Counter:
    labels = jobs.node_labels(cluster)
    return Counter(labels[p["spec"]["nodeName"]][BLOCK] for p in pods)


def test_small_movable_jobs_make_room_for_a_block_gang(
    cluster: Cluster, namespace: str, pool: dict[str, list[str]]
) -> None:
    cluster.apply(jobs.local_queue("q", GROUP), namespace)
    # Scatter: pods outside any queue leave one free host per block while the small Jobs land.
    fillers = [h for hosts in pool.values() for h in hosts[1:]]
    for host in fillers:
        cluster.apply(jobs.bound_pod(f"fill-{host}", host, "4"), namespace)
    names = ["small-1", "small-2", "small-3", "small-4"]
    for name in names:
        cluster.apply(small(name), namespace)
    for name in names:
        jobs.wait_admitted(cluster, namespace, name, timeout=60)
    placed = Counter()
    for name in names:
        placed += blocks(cluster, jobs.wait_running(cluster, namespace, name, 2))
    assert sorted(placed.values()) == [4, 4], placed  # two Jobs on one host of each block
    for host in fillers:
        cluster.kubectl("delete", "pod", f"fill-{host}", "-n", namespace, "--wait=true")

    started = time.monotonic()
    gang = jobs.job("gang", "q", pods=16, annotations={REQUIRED: BLOCK})
    cluster.apply(gang, namespace)
    try:
        jobs.wait_admitted(cluster, namespace, "gang", timeout=60)
    except Exception as exc:
        states = {
            n: (jobs.workload_of(cluster, namespace, n) or {}).get("status", {}).get("conditions")
            for n in ["gang", *names]
        }
        raise AssertionError(f"{exc}: {states}") from None
    gang_blocks = blocks(cluster, jobs.wait_running(cluster, namespace, "gang", 16, timeout=60))
    assert len(gang_blocks) == 1, gang_blocks
    for name in names:
        jobs.wait_admitted(cluster, namespace, name, timeout=60)
        jobs.wait_running(cluster, namespace, name, 2, timeout=60)
    elapsed = time.monotonic() - started
    assert elapsed < 60, elapsed

    moved = []
    for name in names:
        requeued = jobs.condition(jobs.workload_of(cluster, namespace, name), "Requeued")
        if requeued is not None:  # moved: requeued after its eviction, with our reason
            assert requeued["reason"] == "Defragmented", requeued
            moved.append(name)
    assert len(moved) == 2, moved  # the two in the gang's block, no more
    (gang_block,) = gang_blocks
    for name in names:  # every small Job runs outside the gang's block now
        pods = jobs.wait_running(cluster, namespace, name, 2)
        assert gang_block not in blocks(cluster, pods), (name, gang_block)
