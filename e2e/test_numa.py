"""NUMA zones end to end (gate TASNUMAZones): NodeResourceTopology objects for kwok nodes, two
zones of 4 CPUs each with the single-numa-node policy, under nodes whose totals are 32 CPUs.

By node totals a Job of 8 Guaranteed pods of 3 CPUs fits on one node; by zones each node holds
two, one per zone. The chart installs the NodeResourceTopology CRD with the gate (the operator
may not create CRDs), the operator reads the objects, refuses what the zones cannot hold with
the zone reason, and admits it once the objects report room.

Own Topology, ResourceFlavor (node-group `numa`), ClusterQueue and nodes; the chart is upgraded
with the gate for its RBAC and the CRD, and put back afterwards (the CRD stays, as helm keeps it).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator

import pytest

from e2e import chart, jobs, topology
from e2e.harness import Cluster, wait_for
from e2e.test_hotswap import install_hotswap_queue, ready

pytestmark = pytest.mark.e2e

GROUP = "numa"
GATE = "TASNUMAZones=true"
NRT = "noderesourcetopologies.topology.node.k8s.io"
ZONE_ANNOTATION = jobs.PREFIX + "numa-zone"
REQUIRED_RACK = {jobs.PREFIX + "podset-required-topology": topology.RACK_LABEL}


def report(node: str, cpus_per_zone: tuple[int, ...], available=None) -> dict:
    zones = []
    for index, cpus in enumerate(cpus_per_zone):
        free = cpus if available is None else available[index]
        zones.append(
            {
                "name": f"node-{index}",
                "type": "Node",
                "resources": [
                    {
                        "name": "cpu",
                        "capacity": str(cpus),
                        "allocatable": str(cpus),
                        "available": str(free),
                    }
                ],
            }
        )
    return {
        "apiVersion": "topology.node.k8s.io/v1alpha2",
        "kind": "NodeResourceTopology",
        "metadata": {"name": node},
        "attributes": [
            {"name": "topologyManagerPolicy", "value": "single-numa-node"},
            {"name": "topologyManagerScope", "value": "container"},
        ],
        "zones": zones,
    }


def guaranteed_job(name: str, queue: str, pods: int) -> dict:
    manifest = jobs.job(name, queue, pods=pods, cpu="3", annotations=REQUIRED_RACK)
    container = manifest["spec"]["template"]["spec"]["containers"][0]
    container["resources"] = {"limits": {"cpu": "3", "memory": "1Gi"}}  # Guaranteed
    return manifest


@pytest.fixture
def numa_cluster(cluster: Cluster, operator_swap) -> Iterator[list[str]]:
    """The chart with the gate (RBAC), an operator with it, and 4 nodes of one rack whose
    reports say 2 zones of 4 CPUs each."""
    block = f"nu{uuid.uuid4().hex[:5]}"
    names = [f"{block}-r1-h{h}" for h in range(1, 5)]
    chart.upgrade(
        cluster,
        "--set",
        "featureGates[0].name=TASNUMAZones",
        "--set",
        "featureGates[0].enabled=true",
    )
    try:
        install_hotswap_queue(cluster, GROUP, GROUP, {"cpu": 1000, "memory": "1000Gi"})
        for name in names:
            manifest = topology.node_manifest(
                name, block, f"{block}-r1", {"cpu": "32", "memory": "64Gi", "pods": "110"}
            )
            manifest["metadata"]["labels"][topology.NODE_GROUP_LABEL] = GROUP
            cluster.apply(manifest)
        wait_for(lambda: all(ready(cluster, n) for n in names), timeout=90, what="numa nodes Ready")
        operator_swap(gates=GATE)
        # The chart installed the CRD with the gate.
        wait_for(
            lambda: cluster.kubectl("get", "crd", NRT, check=False).returncode == 0,
            timeout=60,
            what="the NodeResourceTopology CRD installed by the chart",
        )
        cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", NRT)
        for name in names:
            cluster.apply(report(name, (4, 4)))
        yield names
    finally:
        for name in names:
            cluster.kubectl("delete", "noderesourcetopology", name, "--wait=false", check=False)
            cluster.kubectl("delete", "node", name, "--wait=false", check=False)
        chart.upgrade(cluster)


def zones_of(pods: list[dict]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for pod in pods:
        node = pod["spec"]["nodeName"]
        out.setdefault(node, []).append(pod["metadata"]["annotations"].get(ZONE_ANNOTATION))
    return {node: sorted(zones) for node, zones in out.items()}


def test_a_gang_takes_one_pod_per_zone_and_waits_for_zones_with_the_zone_reason(
    cluster: Cluster, namespace: str, numa_cluster: list[str]
) -> None:
    nodes = numa_cluster
    cluster.apply(jobs.local_queue("q", GROUP), namespace)

    # 8 pods of 3 CPUs: one per zone, two per node, on all four nodes.
    cluster.apply(guaranteed_job("train", "q", 8), namespace)
    workload = jobs.wait_admitted(cluster, namespace, "train", timeout=90)
    assert sorted(jobs.assignment_counts(workload).values()) == [2, 2, 2, 2]
    pods = jobs.wait_running(cluster, namespace, "train", 8, timeout=120)
    assert Counter(p["spec"]["nodeName"] for p in pods) == {n: 2 for n in nodes}
    assert zones_of(pods) == {n: ["node-0", "node-1"] for n in nodes}

    # Every zone holds a pod the reports do not show yet: a ninth pod has no zone, although
    # node totals (26 CPUs free on each node) would take it.
    cluster.apply(guaranteed_job("more", "q", 4), namespace)
    pending = jobs.wait_pending_message(cluster, namespace, "more", "NUMA zones", timeout=60)
    message = jobs.condition(pending, "QuotaReserved")["message"]
    assert "doesn't allow to fit any of 4 pod(s): NUMA zones" in message, message

    # The node agents report again: each zone now has 4 of 8 CPUs left with the pods running
    # (the zones grew). The operator picks the update up and admits the second Job.
    for name in nodes:
        cluster.apply(report(name, (8, 8), available=(4, 4)))
    workload = jobs.wait_admitted(cluster, namespace, "more", timeout=90)
    assert sum(jobs.assignment_counts(workload).values()) == 4
    pods = jobs.wait_running(cluster, namespace, "more", 4, timeout=120)
    for zones in zones_of(pods).values():
        assert set(zones) <= {"node-0", "node-1"}


def test_an_unreadable_report_falls_back_to_node_totals_with_an_event(
    cluster: Cluster, namespace: str, numa_cluster: list[str]
) -> None:
    nodes = numa_cluster
    # The CRD's schema refuses a quantity that does not parse, so the unreadable report that
    # can be stored is one without zones of type Node.
    bad = report(nodes[0], (4, 4))
    bad["zones"] = [{"name": "socket-0", "type": "Socket", "resources": []}]
    cluster.apply(bad)

    def event() -> dict | None:
        items = cluster.get_json("events", "-n", "default")["items"]
        return next(
            (
                e
                for e in items
                if e["reason"] == "NUMAZonesIgnored" and e["involvedObject"]["name"] == nodes[0]
            ),
            None,
        )

    found = wait_for(event, timeout=60, what="a NUMAZonesIgnored event")
    assert "counted by its totals" in found["message"], found["message"]
    assert found["type"] == "Warning"

    # That node takes 8 pods of 3 CPUs by its totals; the others would take 2 each.
    cluster.apply(jobs.local_queue("q", GROUP), namespace)
    job = guaranteed_job("train", "q", 8)
    job["spec"]["template"]["metadata"]["annotations"] = {
        jobs.PREFIX + "podset-required-topology": topology.HOSTNAME_LABEL
    }
    cluster.apply(job, namespace)
    workload = jobs.wait_admitted(cluster, namespace, "train", timeout=90)
    assert dict(jobs.assignment_counts(workload)) == {nodes[0]: 8}
