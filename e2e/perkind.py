"""Preemption and hot swap for the kinds whose controllers the CRD-only e2e files play
(test_training_jobs.py, test_ray.py, test_trainjob_appwrapper.py): one body each, given a kind's
hooks (its pod templates, its suspend field, its controller's part).

The kinds share the reconciler and the ungater, so each file runs these for one kind per suspend
mechanism; batch Jobs have the full scenarios in test_preemption.py and test_hotswap.py."""

from __future__ import annotations

import copy
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from e2e import jobs
from e2e.harness import Cluster, wait_for
from e2e.test_hotswap import NOT_READY, REQUIRED_RACK, install_hotswap_queue
from e2e.test_preemption import PRIORITY_CLASS_LABEL, priority_class

PREEMPTING_CQ = "perkind-preempting"
HOTSWAP_CQ = "perkind-hotswap"
PRIORITIES = {"perkind-low": 100, "perkind-high": 1000}
# The low-priority object holds 2 cpu: the high-priority Job's 2 fit beside it only if it goes.
QUOTA = {"cpu": 3, "memory": "1Ti"}
HIGH_JOB = "high"


@dataclass(frozen=True)
class Played:
    """A kind as its controller is played here."""

    resource: str  # kubectl's name for it
    templates: Callable[[dict], list[dict]]  # its pod templates (references into the object)
    suspended: Callable[[dict], bool]  # its own suspend field
    run: Callable[[Cluster, str, dict], object]  # its pods, as its controller makes them
    # What a start changes and a stop restores, when not its pod templates (an AppWrapper's
    # podSetInfos).
    started_part: Callable[[dict], list[dict]] | None = None

    def restored(self, obj: dict) -> list[dict]:
        """What a stop restores, without an empty `metadata`, which a typed client (Kueue's)
        writes as {}."""
        part = (self.started_part or self.templates)(obj)
        return [{k: v for k, v in t.items() if v or k != "metadata"} for t in part]

    def as_kueue_restores(self, obj: dict) -> list[dict]:
        """`restored` of the object as created, its empty restorable maps gone: Kueue's typed
        write omits an empty map, so a user's `labels: {}` does not come back."""
        obj = copy.deepcopy(obj)
        if self.started_part is None:
            for template in self.templates(obj):
                for part, key in (("metadata", "labels"), ("metadata", "annotations"),
                                  ("spec", "nodeSelector")):  # fmt: skip
                    if template.get(part, {}).get(key) == {}:
                        del template[part][key]
        return self.restored(obj)


@pytest.fixture
def preempting_queue(cluster: Cluster, namespace: str, operator):
    """`lq`, on a ClusterQueue of 3 cpu that preempts lower priorities, and two priorities."""
    cq = jobs.cluster_queue(PREEMPTING_CQ, QUOTA)
    cq["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority"}
    cluster.apply(cq)
    for name, value in PRIORITIES.items():
        cluster.apply(priority_class(name, value))
    cluster.apply(jobs.local_queue("lq", PREEMPTING_CQ), namespace)
    yield "lq"
    cluster.kubectl("delete", "jobs", "--all", "-n", namespace, "--wait=true", check=False)
    cluster.kubectl("delete", "clusterqueue", PREEMPTING_CQ, "--wait=false", check=False)
    for name in PRIORITIES:
        cluster.kubectl("delete", "workloadpriorityclass", name, check=False)


@pytest.fixture
def hotswap_lq(cluster: Cluster, namespace: str, operator):
    """`q`, on a ClusterQueue of test_hotswap.py's node group (its nodes: `rack_nodes`)."""
    install_hotswap_queue(cluster, HOTSWAP_CQ, quota={"cpu": 1000, "memory": "1Ti"})
    cluster.apply(jobs.local_queue("q", HOTSWAP_CQ), namespace)
    yield "q"
    for kind in ("clusterqueue", "resourceflavor", "topology"):
        cluster.kubectl("delete", kind, HOTSWAP_CQ, "--wait=false", check=False)


def created(cluster: Cluster, namespace: str, obj: dict) -> dict:
    out = cluster.kubectl("create", "-n", namespace, "-o", "json", "-f", "-", input=json.dumps(obj))
    return json.loads(out.stdout)


def queued(obj: dict, queue: str, priority: str | None = None) -> dict:
    obj = copy.deepcopy(obj)
    labels = obj["metadata"].setdefault("labels", {})
    labels[jobs.QUEUE_LABEL] = queue
    if priority:
        labels[PRIORITY_CLASS_LABEL] = priority
    return obj


def with_pods_of(obj: dict, kind: Played, cpu: str, annotations: dict) -> dict:
    """`obj` with every container asking for `cpu` (and little memory), and `annotations` on
    every pod template."""
    obj = copy.deepcopy(obj)
    for template in kind.templates(obj):
        if annotations:
            template.setdefault("metadata", {}).setdefault("annotations", {}).update(annotations)
        for container in template["spec"]["containers"]:
            amounts = {"cpu": cpu, "memory": "100Mi"}
            container["resources"] = {"requests": dict(amounts), "limits": dict(amounts)}
    return obj


def own_pods(cluster: Cluster, namespace: str) -> list[dict]:
    """The object's pods: those of no batch Job (the high-priority Job's are)."""
    return cluster.get_json("pods", "-n", namespace, "-l", "!batch.kubernetes.io/job-name")["items"]


def start_and_run(cluster: Cluster, namespace: str, kind: Played, obj: dict) -> tuple[dict, dict]:
    """Create `obj`, wait for it to be admitted and started, play its controller; the object
    as created, and its Workload."""
    name = obj["metadata"]["name"]
    made = created(cluster, namespace, obj)
    wl = jobs.wait_admitted(cluster, namespace, name, timeout=60)

    def started():
        got = cluster.get_json(kind.resource, "-n", namespace, name)
        return None if kind.suspended(got) else got

    kind.run(cluster, namespace, wait_for(started, timeout=30, what=f"{name} started"))
    count = sum(ps["count"] for ps in wl["spec"]["podSets"])

    def running():
        pods = own_pods(cluster, namespace)
        return len(pods) == count and all(p["status"].get("phase") == "Running" for p in pods)

    wait_for(running, timeout=60, what=f"{count} pods of {name} Running")
    return made, wl


def check_preempted_and_requeued(
    cluster: Cluster, namespace: str, queue: str, kind: Played, obj: dict
) -> None:
    obj = with_pods_of(queued(obj, queue, "perkind-low"), kind, "1", {})
    name = obj["metadata"]["name"]
    made, _ = start_and_run(cluster, namespace, kind, obj)

    high = queued(jobs.job(HIGH_JOB, None, pods=1, cpu="2"), queue, "perkind-high")
    cluster.apply(high, namespace)

    def evicted():
        cond = jobs.condition(jobs.workload_of(cluster, namespace, name), "Evicted")
        return cond if cond and cond["status"] == "True" else None

    assert wait_for(evicted, timeout=60, what=f"{name} evicted")["reason"] == "Preempted"

    def stopped_as_created():
        # The operator suspends, then restores in a second write (Kueue does both in one).
        got = cluster.get_json(kind.resource, "-n", namespace, name)
        now, before = kind.restored(got), kind.as_kueue_restores(made)
        if not (kind.suspended(got) and now == before):
            raise AssertionError(now, before)  # shown on timeout
        return True

    wait_for(stopped_as_created, timeout=30, what=f"{name} suspended, its templates restored")
    # Its controller's part once it is suspended: its pods go.
    cluster.kubectl("delete", "pods", "-n", namespace, "-l", "!batch.kubernetes.io/job-name")

    jobs.wait_admitted(cluster, namespace, HIGH_JOB, timeout=60)
    low = jobs.wait_pending_message(
        cluster, namespace, name, "insufficient unused quota", timeout=60
    )
    assert jobs.condition(low, "Requeued")["status"] == "True"
    assert "admission" not in low["status"]
    assert kind.suspended(cluster.get_json(kind.resource, "-n", namespace, name))


def check_failed_node_replaced(
    cluster: Cluster, namespace: str, queue: str, kind: Played, obj: dict, rack: list[str]
) -> None:
    """Two pods of 4 cpu each, in a rack of three hosts of 4 cpu: one host is spare."""
    obj = with_pods_of(queued(obj, queue), kind, "4", REQUIRED_RACK)
    name = obj["metadata"]["name"]
    before = jobs.assignment_counts(start_and_run(cluster, namespace, kind, obj)[1])
    [spare] = set(rack) - set(before)
    failed = sorted(before)[0]
    cluster.kubectl("label", "node", failed, f"{NOT_READY}=true")

    def replaced():
        wl = jobs.workload_of(cluster, namespace, name)
        counts = jobs.assignment_counts(wl)
        return wl if failed not in counts and not wl["status"].get("unhealthyNodes") else None

    wl = wait_for(replaced, timeout=120, what="the assignment to drop the failed node")
    after = jobs.assignment_counts(wl)
    assert after == before - Counter({failed: before[failed]}) + Counter({spare: before[failed]})
    assert (jobs.condition(wl, "Evicted") or {}).get("status") != "True"
    assert not kind.suspended(cluster.get_json(kind.resource, "-n", namespace, name))
