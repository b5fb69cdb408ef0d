"""Wait, then relax (gate TASTopologyRelaxation), end to end: a Job required in one rack that
no rack can hold, with `tas-operator.io/podset-topology-relaxation: "<block> after 5s"`, waits
at the rack stage (its condition says so and when the block stage begins), then is admitted
within one block once the 5 s have passed: woken by its timer, nothing else changes.

Own Topology, ResourceFlavor (node-group `relaxing`), ClusterQueue and one block of two racks
of one 4-CPU node each.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from e2e import jobs, topology
from e2e.harness import Cluster, wait_for
from e2e.test_hotswap import install_hotswap_queue, ready

pytestmark = pytest.mark.e2e

GROUP = "relaxing"
GATE = "TASTopologyRelaxation=true"
RELAXATION = "tas-operator.io/podset-topology-relaxation"
REQUIRED = "kueue.x-k8s.io/podset-required-topology"


@pytest.fixture
def block(cluster: Cluster, operator_swap) -> Iterator[list[str]]:
    """The block's hosts, with the gate on in the operator."""
    name = f"rx{uuid.uuid4().hex[:4]}-b1"
    hosts = [f"{name}-r{r}-h1" for r in (1, 2)]
    try:
        install_hotswap_queue(cluster, GROUP, GROUP, {"cpu": 1000})
        for r, host in enumerate(hosts, start=1):
            manifest = topology.node_manifest(
                host, name, f"{name}-r{r}", {"cpu": "4", "memory": "16Gi", "pods": "110"}
            )
            manifest["metadata"]["labels"][topology.NODE_GROUP_LABEL] = GROUP
            cluster.apply(manifest)
        wait_for(lambda: all(ready(cluster, n) for n in hosts), timeout=120, what="nodes Ready")
        operator_swap(gates=GATE)
        yield hosts
    finally:
        for host in hosts:
            cluster.kubectl("delete", "node", host, "--wait=false", check=False)


def test_a_job_no_rack_can_hold_is_admitted_in_its_block_after_the_wait(
    cluster: Cluster, namespace: str, block
) -> None:
    cluster.apply(jobs.local_queue("q", GROUP), namespace)
    annotations = {
        REQUIRED: topology.RACK_LABEL,
        RELAXATION: f"{topology.BLOCK_LABEL} after 5s",
    }
    started = time.monotonic()
    cluster.apply(jobs.job("six", "q", pods=6, annotations=annotations), namespace)
    waiting = jobs.wait_pending_message(cluster, namespace, "six", "stage 1 of 2", 30)
    message = jobs.condition(waiting, "QuotaReserved")["message"]
    assert f"stage 2 (required {topology.BLOCK_LABEL}) begins at" in message

    admitted = jobs.wait_admitted(cluster, namespace, "six", timeout=30)
    assert time.monotonic() - started >= 4  # not before its wait (1 s of timestamp rounding)
    assert set(jobs.assignment_counts(admitted)) == set(block)  # both racks of the block
