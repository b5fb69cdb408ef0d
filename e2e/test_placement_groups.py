"""Placement groups end to end (gate TASPlacementGroups): Jobs that name one group through our
pod-template annotations are placed together over time, across separate Jobs.

Own Topology, ResourceFlavor (node-group `pgroups`), ClusterQueue and nodes: two blocks of
four racks of two hosts of 4 CPUs (a rack holds 8 one-CPU pods, a block 32). The chart is
upgraded with the gate for its RBAC and put back afterwards.
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

GROUP = "pgroups"
GATE = "TASPlacementGroups=true"
TAS = "tas-operator.io/"
PG = TAS + "placement-group"
PARTITION_LABEL = TAS + "placement-group-partition"
RACK = topology.RACK_LABEL
BLOCK = topology.BLOCK_LABEL
HOST = topology.HOSTNAME_LABEL


@pytest.fixture
def pool(cluster: Cluster, operator_swap) -> Iterator[dict[str, dict[str, list[str]]]]:
    """block -> rack -> hosts, with the gate on in the chart and the operator."""
    prefix = f"pg{uuid.uuid4().hex[:4]}"
    layout: dict[str, dict[str, list[str]]] = {}
    names: list[str] = []
    chart.upgrade(
        cluster,
        "--set",
        "featureGates[0].name=TASPlacementGroups",
        "--set",
        "featureGates[0].enabled=true",
    )
    try:
        install_hotswap_queue(cluster, GROUP, GROUP, {"cpu": 1000})
        # The administrator's grant for exclusive groups (the tenant test takes a block).
        cluster.kubectl(
            "annotate",
            "--overwrite",
            "clusterqueue",
            GROUP,
            f"{TAS}allow-exclusive-placement-groups=true",
        )
        for b in (1, 2):
            block = f"{prefix}-b{b}"
            for r in range(1, 5):
                rack = f"{block}-r{r}"
                for h in (1, 2):
                    name = f"{rack}-h{h}"
                    manifest = topology.node_manifest(
                        name, block, rack, {"cpu": "4", "memory": "16Gi", "pods": "110"}
                    )
                    manifest["metadata"]["labels"][topology.NODE_GROUP_LABEL] = GROUP
                    cluster.apply(manifest)
                    layout.setdefault(block, {}).setdefault(rack, []).append(name)
                    names.append(name)
        wait_for(lambda: all(ready(cluster, n) for n in names), timeout=120, what="nodes Ready")
        operator_swap(gates=GATE)
        yield layout
    finally:
        for name in names:
            cluster.kubectl("delete", "node", name, "--wait=false", check=False)
        chart.upgrade(cluster)


def member(name: str, pods: int, group: str, **constraints: str) -> dict:
    annotations = {PG: group}
    annotations.update({TAS + key: value for key, value in constraints.items()})
    return jobs.job(name, "q", pods=pods, annotations=annotations)


def where(cluster: Cluster, pods: list[dict], level: str) -> Counter:
    labels = jobs.node_labels(cluster)
    return Counter(labels[p["spec"]["nodeName"]][level] for p in pods)


def group_status(cluster: Cluster, namespace: str, name: str) -> dict:
    return cluster.get_json("placementgroups", name, "-n", namespace).get("status") or {}


def test_an_affinity_group_stays_in_one_rack_across_jobs_and_a_restart(
    cluster: Cluster, namespace: str, pool, operator_swap
) -> None:
    cluster.apply(jobs.local_queue("q", GROUP), namespace)
    affinity = {"placement-group-affinity-topology": RACK}
    cluster.apply(member("svc-1", 3, "svc", **affinity), namespace)
    jobs.wait_admitted(cluster, namespace, "svc-1", timeout=90)
    first = jobs.wait_running(cluster, namespace, "svc-1", 3)
    (rack,) = where(cluster, first, RACK)

    # The operator made the group from the first member's annotations, and shows its rack.
    status = wait_for(
        lambda: (s := group_status(cluster, namespace, "svc")).get("affinityDomain") and s,
        timeout=60,
        what="the group's status",
    )
    assert status["affinityDomain"][-1] == rack and status["pods"] == 3

    cluster.apply(member("svc-2", 3, "svc", **affinity), namespace)
    jobs.wait_admitted(cluster, namespace, "svc-2", timeout=90)
    second = jobs.wait_running(cluster, namespace, "svc-2", 3)
    assert where(cluster, second, RACK) == {rack: 3}

    # A restart between members: the group's rack is read back, not chosen afresh.
    operator_swap(gates=GATE)
    cluster.apply(member("svc-3", 4, "svc", **affinity), namespace)
    pending = jobs.wait_pending_message(cluster, namespace, "svc-3", "placement group", 90)
    message = jobs.condition(pending, "QuotaReserved")["message"]
    assert rack in message, message  # 2 CPUs left in the rack; other racks are empty

    cluster.kubectl("delete", "job", "svc-1", "-n", namespace, "--wait=false")
    jobs.wait_admitted(cluster, namespace, "svc-3", timeout=120)
    third = jobs.wait_running(cluster, namespace, "svc-3", 4, timeout=120)
    assert where(cluster, third, RACK) == {rack: 4}


def test_an_anti_affinity_group_of_four_jobs_takes_four_racks(
    cluster: Cluster, namespace: str, pool
) -> None:
    cluster.apply(jobs.local_queue("q", GROUP), namespace)
    names = [f"ha-{i}" for i in range(4)]
    for name in names:
        anti = {"placement-group-anti-affinity-topology": RACK}
        cluster.apply(member(name, 1, "ha", **anti), namespace)
    racks = Counter()
    for name in names:
        jobs.wait_admitted(cluster, namespace, name, timeout=90)
        racks += where(cluster, jobs.wait_running(cluster, namespace, name, 1), RACK)
    assert len(racks) == 4 and set(racks.values()) == {1}, racks


def test_an_exclusive_tenant_keeps_everyone_else_out_of_its_block(
    cluster: Cluster, namespace: str, pool
) -> None:
    cluster.apply(jobs.local_queue("q", GROUP), namespace)
    cluster.apply(
        member("tenant", 2, "tenant", **{"placement-group-exclusive-topology": BLOCK}), namespace
    )
    jobs.wait_admitted(cluster, namespace, "tenant", timeout=90)
    (tenant_block,) = where(cluster, jobs.wait_running(cluster, namespace, "tenant", 2), BLOCK)

    # 28 pods in one block: BestFit alone would take the tenant's block (30 CPUs free against
    # 32); the group keeps them out of it.
    required_block = {jobs.PREFIX + "podset-required-topology": BLOCK}
    cluster.apply(jobs.job("other", "q", pods=28, annotations=required_block), namespace)
    jobs.wait_admitted(cluster, namespace, "other", timeout=90)
    other = where(cluster, jobs.wait_running(cluster, namespace, "other", 28, timeout=120), BLOCK)
    assert tenant_block not in other, other

    # 8 more pods fit only in the tenant's block: they wait.
    cluster.apply(jobs.job("more", "q", pods=8, annotations=required_block), namespace)
    pending = jobs.wait_pending_message(cluster, namespace, "more", "pod(s)", timeout=60)
    message = jobs.condition(pending, "QuotaReserved")["message"]
    assert "exclusive placement group: 8" in message, message  # the tenant block's 8 nodes


def test_a_partitioned_group_labels_each_pod_with_its_partition(
    cluster: Cluster, namespace: str, pool
) -> None:
    cluster.apply(jobs.local_queue("q", GROUP), namespace)
    partitions = {
        "placement-group-partitions": "2",
        "placement-group-partition-topology": RACK,
    }
    cluster.apply(member("shards", 5, "shards", **partitions), namespace)
    jobs.wait_admitted(cluster, namespace, "shards", timeout=90)
    pods = jobs.wait_running(cluster, namespace, "shards", 5)
    labels = jobs.node_labels(cluster)
    by_partition: dict[str, set[str]] = {}
    for pod in pods:
        partition = pod["metadata"]["labels"][PARTITION_LABEL]
        by_partition.setdefault(partition, set()).add(labels[pod["spec"]["nodeName"]][RACK])
    assert sorted(by_partition) == ["1", "2"]
    assert not by_partition["1"] & by_partition["2"], by_partition  # no rack holds both
    sizes = Counter(p["metadata"]["labels"][PARTITION_LABEL] for p in pods)
    assert sorted(sizes.values()) == [2, 3]


def test_an_invalid_group_annotation_is_refused_naming_it(
    cluster: Cluster, namespace: str, pool
) -> None:
    cluster.apply(jobs.local_queue("q", GROUP), namespace)
    with pytest.raises(AssertionError) as refused:
        cluster.apply(member("bad", 1, "bad", **{"placement-group-partitions": "zero"}), namespace)
    assert PG + "-partitions" in str(refused.value) and "whole number" in str(refused.value)
    assert not cluster.get_json("jobs", "-n", namespace)["items"]
    # others keep being admitted
    cluster.apply(jobs.job("fine", "q", pods=1), namespace)
    jobs.wait_admitted(cluster, namespace, "fine", timeout=60)
