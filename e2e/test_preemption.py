"""Priorities and preemption end to end: a high-priority Job evicts a low-priority one to get
a block, with Kueue's conditions and events, and the evicted Job runs again once room appears.

The cluster is Kueue's e2e topology (2 blocks x 2 racks x 2 hosts of 8 cpu); block b2 is filled
by pods outside any queue, so that b1 is the only block either Job can have.
"""

from __future__ import annotations

import pytest

from e2e import jobs
from e2e.harness import Cluster, wait_for
from e2e.topology import BLOCK_LABEL

pytestmark = pytest.mark.e2e

REQUIRED = jobs.PREFIX + "podset-required-topology"
PRIORITY_CLASS_LABEL = jobs.PREFIX + "priority-class"
CLUSTER_QUEUE = "preemption-cq"


def priority_class(name: str, value: int) -> dict:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": name},
        "value": value,
        "description": "e2e",
    }


@pytest.fixture
def preempting_queue(cluster: Cluster, namespace: str, operator):
    """A ClusterQueue that preempts lower priorities, with quota for everything (only the
    topology is short), two WorkloadPriorityClasses, and a LocalQueue in the namespace."""
    cq = jobs.cluster_queue(CLUSTER_QUEUE, {"cpu": 1000, "memory": "1Ti"})
    cq["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority"}
    cluster.apply(cq)
    cluster.apply(priority_class("e2e-low", 100))
    cluster.apply(priority_class("e2e-high", 1000))
    cluster.apply(jobs.local_queue("lq", CLUSTER_QUEUE), namespace)
    yield "lq"
    cluster.kubectl("delete", "jobs", "--all", "-n", namespace, "--wait=true", check=False)
    cluster.kubectl("delete", "clusterqueue", CLUSTER_QUEUE, "--wait=false", check=False)
    for name in ("e2e-low", "e2e-high"):
        cluster.kubectl("delete", "workloadpriorityclass", name, check=False)


def block_job(name: str, queue: str, pods: int, priority: str) -> dict:
    job = jobs.job(name, queue, pods=pods, cpu="600m", annotations={REQUIRED: BLOCK_LABEL})
    job["metadata"]["labels"][PRIORITY_CLASS_LABEL] = priority
    return job


def blocks_of(cluster: Cluster, pods: list[dict]) -> set[str]:
    labels = jobs.node_labels(cluster)
    return {labels[p["spec"]["nodeName"]][BLOCK_LABEL] for p in pods}


def test_high_priority_job_preempts_low_priority_job_for_a_block(
    cluster: Cluster, namespace: str, preempting_queue: str, topology_nodes
):
    b2 = [n for n in topology_nodes if n.startswith("b2-")]
    for node in b2:  # 1 cpu left on each b2 host: room for 4 pods of 600m in the block
        cluster.apply(jobs.bound_pod(f"fill-{node}", node, "7"), namespace)

    # 48 pods of 600m: b1 (4 hosts, 13 pods each) is the only block with room.
    cluster.apply(block_job("low", preempting_queue, 48, "e2e-low"), namespace)
    low = jobs.wait_admitted(cluster, namespace, "low", timeout=90)
    assert low["spec"]["priority"] == 100
    assert low["spec"]["priorityClassName"] == "e2e-low"
    assert low["spec"]["priorityClassSource"] == "kueue.x-k8s.io/workloadpriorityclass"
    low_pods = jobs.wait_running(cluster, namespace, "low", 48, timeout=120)
    assert blocks_of(cluster, low_pods) == {"b1"}

    # 40 pods fit no block beside it: the low-priority Job must go.
    cluster.apply(block_job("high", preempting_queue, 40, "e2e-high"), namespace)

    def evicted():
        wl = jobs.workload_of(cluster, namespace, "low")
        cond = jobs.condition(wl, "Evicted")
        return wl if cond and cond["status"] == "True" else None

    low = wait_for(evicted, timeout=60, what="low evicted")
    high = jobs.workload_of(cluster, namespace, "high")
    assert high is not None and high["spec"]["priority"] == 1000
    evicted_cond = jobs.condition(low, "Evicted")
    preempted_cond = jobs.condition(low, "Preempted")
    expected = (
        f"Preempted to accommodate a workload (UID: {high['metadata']['uid']}, "
        f"JobUID: {high['metadata']['labels']['kueue.x-k8s.io/job-uid']}) due to "
        f"prioritization in the ClusterQueue; preemptor path: /{CLUSTER_QUEUE}; "
        f"preemptee path: /{CLUSTER_QUEUE}"
    )
    assert (evicted_cond["reason"], evicted_cond["message"]) == ("Preempted", expected)
    assert preempted_cond["status"] == "True"
    assert (preempted_cond["reason"], preempted_cond["message"]) == ("InClusterQueue", expected)
    reasons = {
        e["reason"]: e["message"]
        for e in jobs.events_of(cluster, namespace, low["metadata"]["name"])
    }
    assert reasons.get("Preempted") == expected
    assert reasons.get("EvictedDueToPreempted") == expected

    # The high-priority Job waits for the pods to go, then runs in b1.
    high = jobs.wait_admitted(cluster, namespace, "high", timeout=120)
    high_events = jobs.events_of(cluster, namespace, high["metadata"]["name"])
    assert any("Pending the preemption of 1 workload(s)" in e["message"] for e in high_events), [
        e["message"] for e in high_events
    ]
    assert not [
        p
        for p in jobs.pods_of(cluster, namespace, "low")
        if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
    ]
    high_pods = jobs.wait_running(cluster, namespace, "high", 40, timeout=120)
    assert blocks_of(cluster, high_pods) == {"b1"}

    # The low-priority Job is requeued: no block has room for 48 pods until b2 is emptied.
    low = jobs.wait_pending_message(cluster, namespace, "low", "fit", timeout=60)
    requeued = jobs.condition(low, "Requeued")
    assert requeued and requeued["status"] == "True"
    assert "admission" not in low["status"]
    for node in b2:
        cluster.kubectl(
            "delete", "pod", "-n", namespace, f"fill-{node}", "--grace-period=0", "--force"
        )
    low = jobs.wait_admitted(cluster, namespace, "low", timeout=120)
    low_pods = jobs.wait_running(cluster, namespace, "low", 48, timeout=120)
    assert blocks_of(cluster, low_pods) == {"b2"}
    assert jobs.condition(low, "Evicted")["status"] == "False"
    # The high-priority Job was never disturbed.
    assert (
        jobs.condition(jobs.workload_of(cluster, namespace, "high"), "Admitted")["status"] == "True"
    )


def cq_usage(cluster: Cluster, name: str) -> dict[str, tuple[str, str]]:
    """resource -> (total, borrowed) in the ClusterQueue's status.flavorsUsage."""
    status = cluster.get_json("clusterqueue", name).get("status") or {}
    return {
        r["name"]: (r["total"], r.get("borrowed", "0"))
        for f in status.get("flavorsUsage") or []
        for r in f["resources"]
    }


@pytest.fixture
def cohort_queues(cluster: Cluster, namespace: str, operator):
    """Two ClusterQueues of 8 cpu in one cohort; team-a reclaims what it lends."""
    names = ("e2e-team-a", "e2e-team-b")
    for name in names:
        cq = jobs.cluster_queue(name, {"cpu": 8, "memory": "64Gi"})
        cq["spec"]["cohort"] = "e2e-team"
        cq["spec"]["preemption"] = {"reclaimWithinCohort": "Any"}
        cluster.apply(cq)
        cluster.apply(jobs.local_queue(name, name), namespace)
    yield names
    cluster.kubectl("delete", "jobs", "--all", "-n", namespace, "--wait=true", check=False)
    for name in names:
        cluster.kubectl("delete", "clusterqueue", name, "--wait=false", check=False)


def test_owner_reclaims_quota_lent_to_its_cohort(cluster: Cluster, namespace: str, cohort_queues):
    team_a, team_b = cohort_queues
    # team-b takes 12 cpu: its 8, and 4 borrowed from team-a's idle quota.
    cluster.apply(jobs.job("borrower", team_b, pods=12, cpu="1"), namespace)
    jobs.wait_admitted(cluster, namespace, "borrower", timeout=90)
    wait_for(
        lambda: (
            cq_usage(cluster, team_b).get("cpu") == ("12", "4")
            and cq_usage(cluster, team_a).get("cpu") == ("0", "0")
        ),
        timeout=30,
        what="team-b borrows 4 cpu",
    )
    jobs.wait_running(cluster, namespace, "borrower", 12, timeout=120)

    # team-a's own 8 cpu are wanted back: the borrowing Job is reclaimed.
    cluster.apply(jobs.job("owner", team_a, pods=8, cpu="1"), namespace)

    def reclaimed():
        wl = jobs.workload_of(cluster, namespace, "borrower")
        cond = jobs.condition(wl, "Preempted")
        return wl if cond and cond["status"] == "True" else None

    borrower = wait_for(reclaimed, timeout=60, what="borrower reclaimed")
    assert jobs.condition(borrower, "Preempted")["reason"] == "InCohortReclamation"
    assert jobs.condition(borrower, "Evicted")["reason"] == "Preempted"
    assert (
        "due to reclamation within the cohort; preemptor path: /e2e-team/e2e-team-a; "
        "preemptee path: /e2e-team/e2e-team-b" in jobs.condition(borrower, "Evicted")["message"]
    )
    # Until the borrower's pods are gone its quota stays charged, and the owner waits.
    assert (
        cq_usage(cluster, team_a).get("cpu", ("0", "0"))[0] == "0"
        or jobs.condition(jobs.workload_of(cluster, namespace, "borrower"), "QuotaReserved")[
            "status"
        ]
        == "False"
    )

    jobs.wait_admitted(cluster, namespace, "owner", timeout=120)
    jobs.wait_running(cluster, namespace, "owner", 8, timeout=120)
    # The borrower is back in its queue: 12 cpu do not fit beside the owner's 8.
    jobs.wait_pending_message(
        cluster, namespace, "borrower", "insufficient unused quota", timeout=60
    )
    wait_for(
        lambda: (
            cq_usage(cluster, team_a).get("cpu") == ("8", "0")
            and cq_usage(cluster, team_b).get("cpu") == ("0", "0")
        ),
        timeout=30,
        what="team-a uses its own 8 cpu, team-b nothing",
    )

    # The owner finishes (deleted): team-b may borrow again.
    cluster.kubectl("delete", "job", "-n", namespace, "owner", "--wait=true")
    jobs.wait_admitted(cluster, namespace, "borrower", timeout=120)
    wait_for(
        lambda: (
            cq_usage(cluster, team_b).get("cpu") == ("12", "4")
            and cq_usage(cluster, team_a).get("cpu") == ("0", "0")
        ),
        timeout=30,
        what="team-b borrows again",
    )
