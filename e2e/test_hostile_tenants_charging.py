"""Hostile tenants, on the local cluster: every pod is charged what it really asks for, a zone
annotation written by anyone takes no NUMA zone, and exclusive placement groups need an
administrator's grant. Each test also shows that other namespaces' Jobs keep being admitted
and that no node is over-committed.

Each test has its own Topology, ResourceFlavor (its own node group), ClusterQueue and nodes;
the gates' tests upgrade the chart for their RBAC and put it back afterwards.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from e2e import jobs, topology
from e2e.harness import Cluster, wait_for
from e2e.test_hotswap import install_hotswap_queue, ready
from e2e.test_numa import GROUP as NUMA_GROUP
from e2e.test_numa import ZONE_ANNOTATION, guaranteed_job, numa_cluster  # noqa: F401 (fixture)
from e2e.test_placement_groups import BLOCK, TAS, pool  # noqa: F401 (fixture)
from e2e.test_placement_groups import GROUP as PG_GROUP
from tas.api.podrequests import pod_requests

pytestmark = pytest.mark.e2e

ALLOW_EXCLUSIVE = TAS + "allow-exclusive-placement-groups"


def requested_cpu(pods: list[dict]) -> int:
    """Milli-CPUs the pods ask for, as the scheduler and kubelet count them."""
    return sum(pod_requests(p["spec"]).get("cpu", 0) for p in pods)


@contextmanager
def other_namespace(cluster: Cluster, queue: str) -> Iterator[str]:
    """Another tenant's namespace, with a LocalQueue `q` on `queue`."""
    name = cluster.create_namespace(prefix="bystander")
    try:
        cluster.apply(jobs.local_queue("q", queue), name)
        yield name
    finally:
        cluster.delete_namespace(name)


# -- every pod is charged what it really asks for ----------------------------------------------


@pytest.fixture
def one_node(cluster: Cluster, operator) -> Iterator[tuple[str, str]]:
    """One kwok node of 4 CPUs in a node group of its own, its queue, and a RuntimeClass with
    a 250m overhead: (node, RuntimeClass)."""
    group = f"ch{uuid.uuid4().hex[:5]}"
    node = f"{group}-h1"
    runtime_class = f"{group}-kata"
    install_hotswap_queue(cluster, group, group, {"cpu": 100})
    manifest = topology.node_manifest(
        node, f"{group}-b1", f"{group}-r1", {"cpu": "4", "memory": "16Gi", "pods": "110"}
    )
    manifest["metadata"]["labels"][topology.NODE_GROUP_LABEL] = group
    cluster.apply(manifest)
    cluster.apply(
        {
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {"name": runtime_class},
            "handler": "kata",
            "overhead": {"podFixed": {"cpu": "250m"}},
        }
    )
    try:
        wait_for(lambda: ready(cluster, node), timeout=90, what=f"{node} Ready")
        yield node, runtime_class
    finally:
        cluster.kubectl("delete", "node", node, "--wait=false", check=False)
        cluster.kubectl("delete", "runtimeclass", runtime_class, "--wait=false", check=False)


def no_request_job(name: str, runtime_class: str) -> dict:
    manifest = jobs.job(name, "q", pods=1)
    spec = manifest["spec"]["template"]["spec"]
    spec["containers"][0].pop("resources")  # the LimitRange gives it its requests
    spec["runtimeClassName"] = runtime_class
    return manifest


def test_a_limit_range_namespace_job_is_charged_its_pods_requests_and_a_second_one_waits(
    cluster: Cluster, namespace: str, one_node: tuple[str, str]
) -> None:
    node, runtime_class = one_node
    queue = node.removesuffix("-h1")
    cluster.apply(jobs.local_queue("q", queue), namespace)
    cluster.apply(
        {
            "apiVersion": "v1",
            "kind": "LimitRange",
            "metadata": {"name": "defaults"},
            "spec": {
                "limits": [
                    {"type": "Container", "defaultRequest": {"cpu": "2"}, "default": {"cpu": "2"}}
                ]
            },
        },
        namespace,
    )
    # A LimitRange reaches the operator through its watch: wait for the first Job's Workload
    # to ask for it, as its pods will (2 CPUs and the RuntimeClass's 250m).
    cluster.apply(no_request_job("first", runtime_class), namespace)
    workload = jobs.wait_admitted(cluster, namespace, "first", timeout=90)
    (pod_set,) = workload["status"]["admission"]["podSetAssignments"]
    assert pod_set["resourceUsage"]["cpu"] == "2250m", pod_set
    first = jobs.wait_running(cluster, namespace, "first", 1)
    assert requested_cpu(first) == 2250

    # The node has 1750m left: a second such Job waits.
    cluster.apply(no_request_job("second", runtime_class), namespace)
    pending = jobs.wait_pending_message(cluster, namespace, "second", "pod(s)", timeout=60)
    message = jobs.condition(pending, "QuotaReserved")["message"]
    assert "doesn't allow to fit any of 1 pod(s)" in message, message

    # Another namespace's Job that fits in what is left is admitted.
    with other_namespace(cluster, queue) as other:
        small = jobs.job("small", "q", pods=1, cpu="1")
        small["spec"]["template"]["spec"]["runtimeClassName"] = runtime_class
        cluster.apply(small, other)
        jobs.wait_admitted(cluster, other, "small", timeout=90)
        running = jobs.wait_running(cluster, other, "small", 1)
        on_node = [
            p
            for p in cluster.get_json("pods", "-A", "--field-selector", f"spec.nodeName={node}")[
                "items"
            ]
            if p["status"].get("phase") in ("Pending", "Running")
        ]
        assert requested_cpu(running) == 1250
        assert requested_cpu(on_node) <= 4000, "the node is over-committed"
    assert jobs.condition(jobs.workload_of(cluster, namespace, "second"), "Admitted") is None


# -- a zone annotation written by anyone takes no NUMA zone ------------------------------------


def squatter(name: str, node: str, zone: str) -> dict:
    """A Guaranteed pod naming a node's zone, held Pending by a scheduling gate of its own."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": {ZONE_ANNOTATION: zone}},
        "spec": {
            "nodeSelector": {topology.HOSTNAME_LABEL: node},
            "schedulingGates": [{"name": "example.com/never"}],
            "containers": [
                {
                    "name": "c",
                    "image": "busybox",
                    "resources": {"limits": {"cpu": "3", "memory": "1Gi"}},
                }
            ],
        },
    }


def test_pending_pods_naming_zones_in_another_namespace_do_not_block_a_guaranteed_workload(
    cluster: Cluster,
    namespace: str,
    numa_cluster: list[str],  # noqa: F811
) -> None:
    nodes = numa_cluster
    hostile = cluster.create_namespace(prefix="squatter")
    try:
        # Four pods pinned by a hostname nodeSelector only, never bound, naming both zones of
        # two nodes: had they counted, each of those nodes would hold no 3-CPU pod.
        for i in range(4):
            cluster.apply(squatter(f"s{i}", nodes[i // 2], f"node-{i % 2}"), hostile)
        cluster.apply(jobs.local_queue("q", NUMA_GROUP), namespace)
        cluster.apply(guaranteed_job("train", "q", 8), namespace)
        workload = jobs.wait_admitted(cluster, namespace, "train", timeout=90)
        assert sorted(jobs.assignment_counts(workload).values()) == [2, 2, 2, 2]
        pods = jobs.wait_running(cluster, namespace, "train", 8, timeout=120)
        zones = Counter(
            (p["spec"]["nodeName"], p["metadata"]["annotations"].get(ZONE_ANNOTATION)) for p in pods
        )
        assert set(zones.values()) == {1}, zones  # one pod per zone: none over-committed
        squatters = cluster.get_json("pods", "-n", hostile)["items"]
        assert {p["status"]["phase"] for p in squatters} == {"Pending"}
    finally:
        cluster.delete_namespace(hostile)


# -- exclusive placement groups need an administrator's grant ----------------------------------


def test_a_tenant_without_the_grant_cannot_hold_blocks_exclusively(
    cluster: Cluster,
    namespace: str,
    pool,  # noqa: F811
) -> None:
    """A tenant's 2-CPU ClusterQueue, two one-pod Jobs in exclusive groups: neither holds a
    block, and another namespace's Job that needs a whole block is admitted. Granted, the
    tenant's queue still cannot pay for a block (32 CPUs)."""
    tenant_queue = f"tenant-{uuid.uuid4().hex[:5]}"
    cluster.apply(jobs.cluster_queue(tenant_queue, {"cpu": 2}, flavor=PG_GROUP))
    try:
        cluster.apply(jobs.local_queue("q", tenant_queue), namespace)
        exclusive = {TAS + "placement-group-exclusive-topology": BLOCK}
        for name in ("t1", "t2"):
            annotations = {TAS + "placement-group": name, **exclusive}
            cluster.apply(jobs.job(name, "q", pods=1, annotations=annotations), namespace)
        for name in ("t1", "t2"):
            pending = jobs.wait_pending_message(cluster, namespace, name, ALLOW_EXCLUSIVE, 60)
            assert jobs.condition(pending, "QuotaReserved")["reason"] == "Inadmissible"

        with other_namespace(cluster, PG_GROUP) as other:
            whole_block = {jobs.PREFIX + "podset-required-topology": BLOCK}
            cluster.apply(jobs.job("block", "q", pods=32, annotations=whole_block), other)
            jobs.wait_admitted(cluster, other, "block", timeout=90)
            jobs.wait_running(cluster, other, "block", 32, timeout=120)

        # The grant alone does not let a 2-CPU queue take a 32-CPU block.
        cluster.kubectl(
            "annotate", "--overwrite", "clusterqueue", tenant_queue, f"{ALLOW_EXCLUSIVE}=true"
        )
        pending = jobs.wait_pending_message(
            cluster, namespace, "t1", f"counts against ClusterQueue {tenant_queue}", 60
        )
        message = jobs.condition(pending, "QuotaReserved")["message"]
        assert "insufficient unused quota for cpu" in message, message
        assert jobs.condition(jobs.workload_of(cluster, namespace, "t2"), "Admitted") is None
    finally:
        cluster.kubectl("delete", "clusterqueue", tenant_queue, "--wait=false", check=False)
