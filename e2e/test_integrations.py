"""Integrations beyond batch/v1 Job that need no controller of their own: plain pods, pod groups,
StatefulSets (the controller manager's), and a JobSet's queueing with only its CRD installed.
Kueue's documented examples are applied unchanged. The real JobSet and LeaderWorkerSet
controllers are in test_integration_controllers.py (`make e2e-integrations`)."""

from __future__ import annotations

import json
import time

import pytest
import yaml

from e2e import integrations, jobs, kueue_examples
from e2e.harness import Cluster, wait_for
from e2e.topology import HOSTNAME_LABEL, RACK_LABEL

pytestmark = pytest.mark.e2e

GATES = {"kueue.x-k8s.io/admission", "kueue.x-k8s.io/topology"}
FINALIZER = "kueue.x-k8s.io/managed"


def workload(cluster: Cluster, namespace: str, name: str) -> dict | None:
    found = cluster.kubectl(
        "get", jobs.WORKLOADS_V1BETA1, "-n", namespace, name, "-o", "json", check=False
    )
    return json.loads(found.stdout) if found.returncode == 0 else None


def workload_owned_by(cluster: Cluster, namespace: str, owner: str) -> dict | None:
    return jobs.workload_of(cluster, namespace, owner)


def wait_admitted(cluster: Cluster, namespace: str, find, what: str, timeout: float = 90) -> dict:
    def admitted():
        wl = find()
        c = jobs.condition(wl, "Admitted")
        return wl if c and c["status"] == "True" else None

    return wait_for(admitted, timeout=timeout, what=f"{what} admitted")


def pods(cluster: Cluster, namespace: str, selector: str | None = None) -> list[dict]:
    args = ["pods", "-n", namespace] + (["-l", selector] if selector else [])
    return cluster.get_json(*args)["items"]


def wait_running(
    cluster: Cluster, namespace: str, names: list[str], timeout: float = 90
) -> list[dict]:
    def running():
        found = {p["metadata"]["name"]: p for p in pods(cluster, namespace)}
        ready = [found.get(n) for n in names]
        ok = all(p and p["status"].get("phase") == "Running" for p in ready)
        return ready if ok else None

    return wait_for(running, timeout=timeout, what=f"{names} Running")


def assert_on_assigned_hosts(workload_obj: dict, running: list[dict]) -> None:
    """Each pod on a host of its pod set's assignment, pinned there by the ungater, ungated."""
    by_set = {}
    for ps in workload_obj["status"]["admission"]["podSetAssignments"]:
        ta = ps["topologyAssignment"]
        assert ta["levels"] == [HOSTNAME_LABEL]
        by_set[ps["name"]] = {d["values"][0]: d["count"] for d in ta["domains"]}
    placed: dict[str, dict[str, int]] = {}
    for p in running:
        pod_set = p["metadata"]["labels"]["kueue.x-k8s.io/podset"]
        host = p["spec"]["nodeName"]
        assert p["spec"]["nodeSelector"][HOSTNAME_LABEL] == host
        assert not {g["name"] for g in p["spec"].get("schedulingGates") or []} & GATES
        assert (
            p["metadata"]["annotations"]["kueue.x-k8s.io/workload"]
            == workload_obj["metadata"]["name"]
        )
        placed.setdefault(pod_set, {}).setdefault(host, 0)
        placed[pod_set][host] += 1
    assert placed == by_set


def set_phase(cluster: Cluster, namespace: str, name: str, phase: str) -> None:
    cluster.kubectl(
        "patch", "pod", "-n", namespace, name, "--subresource=status", "--type=merge",
        "-p", json.dumps({"status": {"phase": phase}}),
    )  # fmt: skip


def create(cluster: Cluster, namespace: str, text: str) -> list[str]:
    out = cluster.kubectl("create", "-n", namespace, "-o", "name", "-f", "-", input=text).stdout
    return [line.split("/")[-1] for line in out.split()]


# ---- plain pods ----------------------------------------------------------------------------------


def test_kueue_pod_example_is_a_workload_of_one_and_finishes_with_it(
    cluster: Cluster, namespace: str, user_queue: str
):
    [name] = create(cluster, namespace, kueue_examples.POD)
    wl = wait_admitted(
        cluster,
        namespace,
        lambda: workload_owned_by(cluster, namespace, name),
        "the pod's workload",
    )
    assert wl["metadata"]["name"].startswith(f"pod-{name}-")
    [ps] = wl["status"]["admission"]["podSetAssignments"]
    assert ps["name"] == "main" and ps["count"] == 1
    [running] = wait_running(cluster, namespace, [name])
    assert_on_assigned_hosts(wl, [running])
    assert FINALIZER in running["metadata"]["finalizers"]
    set_phase(cluster, namespace, name, "Succeeded")

    def finished():
        c = jobs.condition(workload_owned_by(cluster, namespace, name), "Finished")
        return c if c and c["status"] == "True" else None

    assert wait_for(finished, timeout=60, what="Finished")["reason"] == "Succeeded"
    wait_for(
        lambda: (
            FINALIZER
            not in (
                cluster.get_json("pod", "-n", namespace, name)["metadata"].get("finalizers") or []
            )
        ),
        timeout=60,
        what="the finalizer removed",
    )


def test_an_invalid_topology_annotation_on_a_pod_is_refused(
    cluster: Cluster, namespace: str, user_queue: str
):
    bad = yaml.safe_load(kueue_examples.POD)
    bad["metadata"]["annotations"] = {"kueue.x-k8s.io/podset-required-topology": "not a label!"}
    out = cluster.kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(bad), check=False)
    assert out.returncode != 0
    assert (
        "kueue.x-k8s.io/podset-required-topology" in out.stderr
        and "must be a label key" in out.stderr
    )
    assert not pods(cluster, namespace)


# ---- pod groups ----------------------------------------------------------------------------------


def test_kueue_pod_group_example_is_admitted_whole(
    cluster: Cluster, namespace: str, user_queue: str
):
    names = create(cluster, namespace, kueue_examples.POD_GROUP)
    wl = wait_admitted(
        cluster, namespace, lambda: workload(cluster, namespace, "sample-group"), "sample-group"
    )
    assert wl["metadata"]["annotations"]["kueue.x-k8s.io/is-group-workload"] == "true"
    assert {o["name"] for o in wl["metadata"]["ownerReferences"]} == set(names)
    assert sum(ps["count"] for ps in wl["status"]["admission"]["podSetAssignments"]) == 2
    assert_on_assigned_hosts(wl, wait_running(cluster, namespace, names))
    for name in names:
        set_phase(cluster, namespace, name, "Succeeded")

    def finished():
        c = jobs.condition(workload(cluster, namespace, "sample-group"), "Finished")
        return c if c and c["status"] == "True" else None

    assert wait_for(finished, timeout=60, what="Finished")["message"] == "Pods succeeded: 2/2."


def group_pod(name: str, group: str, total: int, cpu: str = "1", queue: str = "user-queue") -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {"kueue.x-k8s.io/queue-name": queue, "kueue.x-k8s.io/pod-group-name": group},
            "annotations": {"kueue.x-k8s.io/pod-group-total-count": str(total)},
        },
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
            ],
        },
    }


def test_a_pod_group_with_a_pod_missing_waits_and_is_admitted_when_it_arrives(
    cluster: Cluster, namespace: str, user_queue: str
):
    cluster.apply(group_pod("a", "trio", 3), namespace)
    cluster.apply(group_pod("b", "trio", 3), namespace)
    time.sleep(5)  # time enough for the operator to have acted, if it were to
    assert workload(cluster, namespace, "trio") is None
    for p in pods(cluster, namespace):
        assert {g["name"] for g in p["spec"]["schedulingGates"]} >= GATES
    events = cluster.get_json("events", "-n", namespace)["items"]
    assert any("fewer runnable pods than expected" in e.get("message", "") for e in events)
    cluster.apply(group_pod("c", "trio", 3), namespace)
    wl = wait_admitted(cluster, namespace, lambda: workload(cluster, namespace, "trio"), "trio")
    assert_on_assigned_hosts(wl, wait_running(cluster, namespace, ["a", "b", "c"]))


def test_a_failed_member_is_replaced_within_its_admitted_group(
    cluster: Cluster, namespace: str, user_queue: str
):
    for name in ("a", "b"):
        cluster.apply(group_pod(name, "duo", 2), namespace)
    wait_admitted(cluster, namespace, lambda: workload(cluster, namespace, "duo"), "duo")
    wait_running(cluster, namespace, ["a", "b"])
    set_phase(cluster, namespace, "b", "Failed")

    def waiting():
        c = jobs.condition(workload(cluster, namespace, "duo"), "WaitingForReplacementPods")
        return c if c and c["status"] == "True" else None

    wait_for(waiting, timeout=60, what="WaitingForReplacementPods")
    cluster.apply(group_pod("b2", "duo", 2), namespace)
    running = wait_running(cluster, namespace, ["a", "b2"])
    wl = workload(cluster, namespace, "duo")
    assert (jobs.condition(wl, "Admitted") or {}).get("status") == "True"  # the same admission
    assert_on_assigned_hosts(wl, running)
    wait_for(
        lambda: (
            FINALIZER
            not in (
                cluster.get_json("pod", "-n", namespace, "b")["metadata"].get("finalizers") or []
            )
        ),
        timeout=60,
        what="the failed member let go",
    )


def test_deleting_a_pod_groups_pods_releases_its_quota(cluster: Cluster, namespace: str, operator):
    """Two groups need 6 cpu each; the queue's quota holds one. Deleting the first group's pods
    (its owners) deletes its Workload, and the second is admitted."""
    cq = f"six-{namespace}"
    cluster.apply(jobs.cluster_queue(cq, {"cpu": 6}))
    try:
        cluster.apply(jobs.local_queue("six", cq), namespace)
        for name in ("a0", "a1"):
            cluster.apply(group_pod(name, "first", 2, cpu="3", queue="six"), namespace)
        wait_admitted(cluster, namespace, lambda: workload(cluster, namespace, "first"), "first")
        for name in ("b0", "b1"):
            cluster.apply(group_pod(name, "second", 2, cpu="3", queue="six"), namespace)

        def pending():
            c = jobs.condition(workload(cluster, namespace, "second"), "QuotaReserved")
            return (
                c
                if c and c["status"] == "False" and "insufficient unused quota" in c["message"]
                else None
            )

        wait_for(pending, timeout=60, what="the second group pending for quota")
        cluster.kubectl("delete", "pod", "-n", namespace, "a0", "a1", "--wait=false")
        wait_for(
            lambda: workload(cluster, namespace, "first") is None,
            timeout=60,
            what="the first group's workload deleted",
        )
        wait_admitted(cluster, namespace, lambda: workload(cluster, namespace, "second"), "second")
    finally:
        cluster.kubectl("delete", "clusterqueue", cq, "--wait=false", check=False)


# ---- StatefulSet ---------------------------------------------------------------------------------


def statefulset(name: str, replicas: int, cpu: str = "1") -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {
                    "labels": {"app": name},
                    "annotations": {"kueue.x-k8s.io/podset-required-topology": RACK_LABEL},
                },
                "spec": {
                    "containers": [
                        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
                    ]
                },
            },
        },
    }


def test_a_statefulset_is_one_pod_group_in_index_order_and_scaling_to_zero_releases_it(
    cluster: Cluster, namespace: str, user_queue: str
):
    cluster.apply(statefulset("web", 3), namespace)
    name = "statefulset-web-ac922"  # Kueue's name for it (GetWorkloadName; checked in Go)
    wl = wait_admitted(
        cluster, namespace, lambda: workload(cluster, namespace, name), "the StatefulSet's workload"
    )
    [ps] = wl["status"]["admission"]["podSetAssignments"]
    assert ps["count"] == 3
    running = wait_running(cluster, namespace, ["web-0", "web-1", "web-2"])
    assert_on_assigned_hosts(wl, running)
    labels = jobs.node_labels(cluster)
    assert len({labels[p["spec"]["nodeName"]][RACK_LABEL] for p in running}) == 1
    # rank order: pod index i in the i-th slot of the assignment
    slots = [d["values"][0] for d in ps["topologyAssignment"]["domains"] for _ in range(d["count"])]
    assert [p["spec"]["nodeName"] for p in running] == slots
    out = jobs.scale(cluster, "statefulset", namespace, "web", 4, check=False)
    assert out.returncode != 0 and "spec.replicas" in out.stderr  # only to and from zero
    jobs.scale(cluster, "statefulset", namespace, "web", 0)
    wait_for(
        lambda: workload(cluster, namespace, name) is None, timeout=90, what="the workload deleted"
    )
    wait_for(lambda: not pods(cluster, namespace, "app=web"), timeout=90, what="the pods gone")


# ---- a JobSet, with only its CRD -----------------------------------------------------------------


@pytest.fixture(scope="module")
def jobset_crd(cluster: Cluster, operator) -> None:
    """JobSet's CRD from its Go module (no controller: nothing makes its Jobs here)."""
    names = integrations.install_crds(cluster, "jobset")
    assert names == ["jobsets.jobset.x-k8s.io"]

    def handled():
        return "jobsets: CRD jobsets.jobset.x-k8s.io established" in operator.log()

    wait_for(handled, timeout=60, what="the operator to pick up the JobSet CRD")

    # kopf finds the new resource on its own watch of CRDs, a moment after ours: until then
    # the API server's calls to the JobSet webhooks get 404. A server-side dry run goes
    # through the webhooks without creating anything.
    def webhooks_answer():
        out = cluster.kubectl(
            "create",
            "-n",
            "default",
            "--dry-run=server",
            "-f",
            "-",
            input=kueue_examples.JOBSET_REQUIRED,
            check=False,
        )
        if out.returncode != 0:  # shown by wait_for when it gives up
            raise AssertionError(out.stderr.strip()[-400:])
        return True

    wait_for(webhooks_answer, timeout=60, what="the JobSet webhooks to answer")


def test_a_queued_jobset_is_suspended_and_gets_one_workload(
    cluster: Cluster, namespace: str, user_queue: str, jobset_crd
):
    create(cluster, namespace, kueue_examples.JOBSET_REQUIRED)
    # Admitted (the operator starts it: no controller here runs its Jobs).
    wl = wait_admitted(
        cluster,
        namespace,
        lambda: workload_owned_by(cluster, namespace, "jobset-tas-required"),
        "the JobSet's workload",
    )
    assert wl["metadata"]["name"].startswith("jobset-jobset-tas-required-")
    [ps] = wl["spec"]["podSets"]
    assert (ps["name"], ps["count"]) == ("workers", 4)
    assert ps["topologyRequest"] == {
        "required": RACK_LABEL,
        "podIndexLabel": "batch.kubernetes.io/job-completion-index",
        "subGroupIndexLabel": "jobset.sigs.k8s.io/job-index",
        "subGroupCount": 1,
    }
    [assignment] = wl["status"]["admission"]["podSetAssignments"]
    hosts = [d["values"][0] for d in assignment["topologyAssignment"]["domains"]]
    assert len({jobs.node_labels(cluster)[h][RACK_LABEL] for h in hosts}) == 1
    js = cluster.get_json("jobset", "-n", namespace, "jobset-tas-required")
    template = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    assert js["spec"]["suspend"] is False
    assert {"name": "kueue.x-k8s.io/topology"} in template["spec"]["schedulingGates"]
    assert template["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "workers"
    # Deleting the owner releases the quota: its Workload goes with it.
    cluster.kubectl("delete", "jobset", "-n", namespace, "jobset-tas-required")
    wait_for(
        lambda: workload(cluster, namespace, wl["metadata"]["name"]) is None,
        timeout=90,
        what="the workload deleted",
    )


def test_a_jobset_created_while_no_queue_exists_waits_suspended(
    cluster: Cluster, namespace: str, jobset_crd, operator
):
    create(cluster, namespace, kueue_examples.JOBSET_SLICED)  # no LocalQueue user-queue here
    js = cluster.get_json("jobset", "-n", namespace, "jobset-tas-sliced")
    assert js["spec"]["suspend"] is True  # the webhook suspended it at creation

    def pending():
        c = jobs.condition(
            workload_owned_by(cluster, namespace, "jobset-tas-sliced"), "QuotaReserved"
        )
        return c if c and c["status"] == "False" else None

    assert (
        "LocalQueue user-queue doesn't exist"
        in wait_for(pending, timeout=60, what="pending")["message"]
    )


def test_an_invalid_annotation_on_a_replicated_job_is_refused_naming_both(
    cluster: Cluster, namespace: str, jobset_crd
):
    bad = yaml.safe_load(kueue_examples.JOBSET_SLICED)
    bad["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]["annotations"][
        "kueue.x-k8s.io/podset-slice-size"
    ] = "3"  # 8 pods: 3 does not divide them
    out = cluster.kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(bad), check=False)
    assert out.returncode != 0
    assert "validate-jobsets" in out.stderr
    assert "replicatedJob 'workers'" in out.stderr
    assert "spec.replicatedJobs[0].template.spec.template.metadata.annotations" in out.stderr
    assert '"kueue.x-k8s.io/podset-slice-size": "3" must divide the pod set count 8' in out.stderr
