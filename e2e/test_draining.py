"""Draining a rack at admission (gate TASDrainingDomains), end to end: a Job that fits only in
a rack whose nodes carry tas-operator.io/draining=true waits, its condition saying it would fit
there; once the admin removes the label it is admitted into that rack.

Own Topology, ResourceFlavor (node-group `draining`), ClusterQueue and three nodes of 4 CPUs:
rack r1 of two nodes (8 CPUs) and rack r2 of one (4 CPUs).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from e2e import jobs, topology
from e2e.harness import Cluster, wait_for
from e2e.test_hotswap import install_hotswap_queue, ready

pytestmark = pytest.mark.e2e

GROUP = "draining"
GATE = "TASDrainingDomains=true"
DRAINING = "tas-operator.io/draining"
REQUIRED = "kueue.x-k8s.io/podset-required-topology"


@pytest.fixture
def racks(cluster: Cluster, operator_swap) -> Iterator[dict[str, list[str]]]:
    """rack -> hosts, with the gate on in the operator."""
    block = f"dr{uuid.uuid4().hex[:4]}-b1"
    layout = {f"{block}-r1": ["h1", "h2"], f"{block}-r2": ["h1"]}
    names = []
    try:
        install_hotswap_queue(cluster, GROUP, GROUP, {"cpu": 1000})
        for rack, hosts in layout.items():
            for h in hosts:
                name = f"{rack}-{h}"
                manifest = topology.node_manifest(
                    name, block, rack, {"cpu": "4", "memory": "16Gi", "pods": "110"}
                )
                manifest["metadata"]["labels"][topology.NODE_GROUP_LABEL] = GROUP
                cluster.apply(manifest)
                names.append(name)
        wait_for(lambda: all(ready(cluster, n) for n in names), timeout=120, what="nodes Ready")
        operator_swap(gates=GATE)
        yield {rack: [f"{rack}-{h}" for h in hosts] for rack, hosts in layout.items()}
    finally:
        for name in names:
            cluster.kubectl("delete", "node", name, "--wait=false", check=False)


def test_a_job_that_fits_only_in_a_draining_rack_waits_until_the_label_goes(
    cluster: Cluster, namespace: str, racks
) -> None:
    big_rack = next(iter(racks))
    for host in racks[big_rack]:
        cluster.kubectl("label", "node", host, f"{DRAINING}=true", "--overwrite")
    cluster.apply(jobs.local_queue("q", GROUP), namespace)
    cluster.apply(
        jobs.job("six", "q", pods=6, annotations={REQUIRED: topology.RACK_LABEL}), namespace
    )
    waiting = jobs.wait_pending_message(cluster, namespace, "six", "marked draining", 30)
    message = jobs.condition(waiting, "QuotaReserved")["message"]
    assert "draining: 2" in message and DRAINING in message

    for host in racks[big_rack]:
        cluster.kubectl("label", "node", host, f"{DRAINING}-")
    admitted = jobs.wait_admitted(cluster, namespace, "six", timeout=30)
    assert set(jobs.assignment_counts(admitted)) <= set(racks[big_rack])
