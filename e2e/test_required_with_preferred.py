"""Required at one level, preferred at a lower one, end to end (gate TASRequiredWithPreferred):
a Job required in one block and preferred in one rack lands in the block where one rack holds
it, where Kueue's required-only BestFit takes the block with the least room and spans two racks.

Own Topology, ResourceFlavor (node-group `reqpref`), ClusterQueue and 1-cpu nodes: block 1 is
two racks of two hosts (4 free: Kueue's BestFit choice for 4 pods, over two racks), block 2 a
rack of four and a rack of one (5 free: one rack holds all 4).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator

import pytest

from e2e import jobs, topology
from e2e.harness import Cluster
from e2e.test_hotswap import add_racks, install_hotswap_queue

pytestmark = pytest.mark.e2e

GROUP = "reqpref"
BLOCK, RACK = topology.BLOCK_LABEL, topology.RACK_LABEL


@pytest.fixture
def pool(cluster: Cluster, operator_swap) -> Iterator[str]:
    """The nodes and queue, and the operator with the gate; the prefix of the nodes' names."""
    prefix = f"rp{uuid.uuid4().hex[:4]}"
    racks = {f"{prefix}-b1-r1": 2, f"{prefix}-b1-r2": 2, f"{prefix}-b2-r1": 4, f"{prefix}-b2-r2": 1}
    names: list[str] = []
    try:
        install_hotswap_queue(cluster, GROUP, GROUP, {"cpu": 1000})
        add_racks(cluster, racks, "1", GROUP, names)
        operator_swap(gates="TASRequiredWithPreferred=true")
        yield prefix
    finally:
        for name in names:
            cluster.kubectl("delete", "node", name, "--wait=false", check=False)


def test_the_block_where_one_rack_holds_the_job_is_chosen(cluster: Cluster, namespace: str, pool):
    cluster.apply(jobs.local_queue("q", GROUP), namespace)
    annotations = {
        "kueue.x-k8s.io/podset-required-topology": BLOCK,
        "tas-operator.io/podset-preferred-topology": RACK,
    }
    cluster.apply(jobs.job("train", "q", pods=4, cpu="1", annotations=annotations), namespace)
    wl = jobs.wait_admitted(cluster, namespace, "train")
    labels = jobs.node_labels(cluster)
    racks: Counter = Counter()
    for host, count in jobs.assignment_counts(wl).items():
        racks[(labels[host][BLOCK], labels[host][RACK])] += count
    assert racks == {(f"{pool}-b2", f"{pool}-b2-r1"): 4}
