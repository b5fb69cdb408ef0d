"""Pod-set groups of more than two roles end to end (gate TASMultiRolePodSetGroups): a JobSet of
three replicatedJobs (trainer, rollout, reward) in one podset-group-name group, required in one
block, is admitted with every pod of the three in one block, the trainer in whole rack slices.

Own Topology, ResourceFlavor (node-group `roles`), ClusterQueue and nodes: block 1 is one rack
of two 2-CPU hosts (room for the trainer alone), block 2 two racks of two and a rack of one
(room for all three). The JobSet's CRD only: the assignment is read from the Workload.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator

import pytest
import yaml

from e2e import integrations, jobs, topology
from e2e.harness import Cluster, wait_for
from e2e.test_hotswap import add_racks, install_hotswap_queue
from e2e.test_integrations import create, wait_admitted, workload_owned_by

pytestmark = pytest.mark.e2e

GROUP = "roles"
BLOCK = topology.BLOCK_LABEL
RACK = topology.RACK_LABEL


@pytest.fixture
def pool(cluster: Cluster, operator_swap) -> Iterator[str]:
    """The nodes and queue, the JobSet CRD, and the operator with the gate; the prefix of the
    nodes' names."""
    prefix = f"mr{uuid.uuid4().hex[:4]}"
    racks = {f"{prefix}-b1-r1": 2, f"{prefix}-b2-r1": 2, f"{prefix}-b2-r2": 2, f"{prefix}-b2-r3": 1}
    names: list[str] = []
    try:
        install_hotswap_queue(cluster, GROUP, GROUP, {"cpu": 1000})
        add_racks(cluster, racks, "2", GROUP, names)
        integrations.install_crds(cluster, "jobset")
        operator_swap(gates="TASMultiRolePodSetGroups=true")
        yield prefix
    finally:
        for name in names:
            cluster.kubectl("delete", "node", name, "--wait=false", check=False)


def replicated_job(name: str, pods: int, cpu: str, slices: int = 0) -> dict:
    annotations = {
        "kueue.x-k8s.io/podset-required-topology": BLOCK,
        "kueue.x-k8s.io/podset-group-name": "rl",
    }
    if slices:
        annotations["kueue.x-k8s.io/podset-slice-required-topology"] = RACK
        annotations["kueue.x-k8s.io/podset-slice-size"] = str(slices)
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
    return {
        "name": name,
        "replicas": 1,
        "template": {
            "spec": {
                "parallelism": pods,
                "completions": pods,
                "template": {
                    "metadata": {"annotations": annotations},
                    "spec": {"restartPolicy": "Never", "containers": [container]},
                },
            }
        },
    }


def rl_jobset() -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {"name": "rl", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
            "spec": {
                "replicatedJobs": [
                    replicated_job("trainer", 4, "1", slices=2),
                    replicated_job("rollout", 3, "1"),
                    replicated_job("reward", 1, "2"),
                ]
            },
        }
    )


def test_a_jobset_of_three_roles_lands_in_one_block(cluster: Cluster, namespace: str, pool):
    cluster.apply(jobs.local_queue("q", GROUP), namespace)

    def created() -> bool:  # the webhooks answer once the operator has the CRD
        return create(cluster, namespace, rl_jobset()) == ["rl"]

    wait_for(created, timeout=30, what="the JobSet created")
    wl = wait_admitted(
        cluster, namespace, lambda: workload_owned_by(cluster, namespace, "rl"), "the workload"
    )
    labels = jobs.node_labels(cluster)
    blocks: Counter = Counter()
    for assignment in wl["status"]["admission"]["podSetAssignments"]:
        racks: Counter = Counter()
        for domain in assignment["topologyAssignment"]["domains"]:
            host = labels[domain["values"][-1]]
            blocks[host[BLOCK]] += domain["count"]
            racks[host[RACK]] += domain["count"]
        if assignment["name"] == "trainer":
            assert all(count % 2 == 0 for count in racks.values()), racks
    assert blocks == {f"{pool}-b2": 8}
