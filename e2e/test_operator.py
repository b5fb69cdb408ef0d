"""The operator end to end: Kueue-style Jobs are admitted with a topology assignment and their
pods land exactly where the assignment says, on the real scheduler with kwok nodes."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from e2e import jobs, topology
from e2e.harness import ROOT, Cluster, wait_for
from e2e.topology import HOSTNAME_LABEL, RACK_LABEL

pytestmark = pytest.mark.e2e

REQUIRED = jobs.PREFIX + "podset-required-topology"
PREFERRED = jobs.PREFIX + "podset-preferred-topology"
UNCONSTRAINED = jobs.PREFIX + "podset-unconstrained-topology"


def assert_pods_follow_assignment(
    cluster: Cluster, namespace: str, job_name: str, workload: dict
) -> list[dict]:
    expected = jobs.assignment_counts(workload)
    pods = jobs.wait_running(cluster, namespace, job_name, sum(expected.values()))
    assert jobs.placement(pods) == expected
    for pod in pods:  # the ungater pinned each pod to its host
        assert pod["spec"]["nodeSelector"][HOSTNAME_LABEL] == pod["spec"]["nodeName"]
        assert not any(
            g["name"] == "kueue.x-k8s.io/topology" for g in pod["spec"].get("schedulingGates", [])
        )
    return pods


def assert_rank_order(workload: dict, pods: list[dict]) -> None:
    """Completion index i runs on the i-th slot of the assignment."""
    ta = workload["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
    slots = [d["values"][0] for d in ta["domains"] for _ in range(d["count"])]
    by_index = {
        int(p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"]): p for p in pods
    }
    assert [by_index[i]["spec"]["nodeName"] for i in sorted(by_index)] == slots


def test_kueue_example_job_is_admitted_and_every_pod_runs_in_its_domain(cluster: Cluster, operator):
    created = cluster.kubectl(
        "create",
        "-n",
        "default",
        "-o",
        "name",
        "-f",
        str(ROOT / "examples" / "kueue-tas" / "sample-job.yaml"),
    ).stdout.strip()
    name = created.split("/")[-1]
    try:
        workload = jobs.wait_admitted(cluster, "default", name)
        assert workload["status"]["admission"]["clusterQueue"] == "tas-cluster-queue"
        assert sum(jobs.assignment_counts(workload).values()) == 40
        pods = assert_pods_follow_assignment(cluster, "default", name, workload)
        assert_rank_order(workload, pods)
        # 40 one-cpu pods cannot fit one 32-cpu block: preferred spreads over both, fullest first.
        _, blocks = jobs.racks_and_blocks(cluster, jobs.placement(pods))
        assert len(blocks) == 2
    finally:
        cluster.kubectl(
            "delete",
            "job",
            "-n",
            "default",
            name,
            "--cascade=foreground",
            "--wait=true",
            check=False,
        )


def test_required_rack_keeps_every_pod_in_one_rack(
    cluster: Cluster, namespace: str, user_queue: str
):
    cluster.apply(
        jobs.job("rack", user_queue, pods=6, cpu="2", annotations={REQUIRED: RACK_LABEL}), namespace
    )
    workload = jobs.wait_admitted(cluster, namespace, "rack")
    pods = assert_pods_follow_assignment(cluster, namespace, "rack", workload)
    racks, _ = jobs.racks_and_blocks(cluster, jobs.placement(pods))
    assert len(racks) == 1
    assert_rank_order(workload, pods)
    job = cluster.get_json("job", "-n", namespace, "rack")
    assert job["spec"]["suspend"] is False


def test_metrics_count_admissions_and_ungated_pods(
    cluster: Cluster, namespace: str, user_queue: str, operator
):
    admitted_before = operator.metric("tas_admission_attempts_total", 'result="admitted"')
    ungated_before = operator.metric("tas_pods_ungated_total")
    # Kueue's own series, as its dashboards select them (labels as exposed: sorted by name).
    kueue_cq = 'cluster_queue="tas-cluster-queue",priority_class="",replica_role="leader"'
    kueue_before = operator.metric("kueue_admitted_workloads_total", kueue_cq)
    cluster.apply(jobs.job("counted", user_queue, pods=3), namespace)
    jobs.wait_admitted(cluster, namespace, "counted")
    jobs.wait_running(cluster, namespace, "counted", 3)
    assert (
        operator.metric("tas_admission_attempts_total", 'result="admitted"') >= admitted_before + 1
    )
    assert operator.metric("tas_pods_ungated_total") >= ungated_before + 3
    assert operator.metric("tas_admitted_workloads", 'cluster_queue="tas-cluster-queue"') >= 1
    assert operator.metric("kueue_admitted_workloads_total", kueue_cq) >= kueue_before + 1
    active = 'cluster_queue="tas-cluster-queue",replica_role="leader",status="active"'
    assert operator.metric("kueue_cluster_queue_status", active) == 1


def test_unconstrained_job_is_admitted_and_placed(
    cluster: Cluster, namespace: str, user_queue: str
):
    cluster.apply(
        jobs.job(
            "loose", user_queue, pods=5, cpu="3", annotations={UNCONSTRAINED: "true"}, indexed=False
        ),
        namespace,
    )
    workload = jobs.wait_admitted(cluster, namespace, "loose")
    assert_pods_follow_assignment(cluster, namespace, "loose", workload)


def finish_pods(cluster: Cluster, namespace: str, job_name: str) -> None:
    for pod in jobs.pods_of(cluster, namespace, job_name):
        cluster.kubectl(
            "patch",
            "pod",
            "-n",
            namespace,
            pod["metadata"]["name"],
            "--subresource=status",
            "--type=merge",
            "-p",
            json.dumps({"status": {"phase": "Succeeded"}}),
        )


def pods_on(cluster: Cluster, nodes: list[str]) -> list[str]:
    """The unfinished pods of any namespace bound to these nodes."""
    return [
        f"{p['metadata']['namespace']}/{p['metadata']['name']} on {p['spec']['nodeName']}"
        for p in cluster.get_json("pods", "-A")["items"]
        if p["spec"].get("nodeName") in nodes
        and p.get("status", {}).get("phase") not in ("Succeeded", "Failed")
    ]


def test_a_job_that_does_not_fit_waits_and_is_admitted_when_another_finishes(
    cluster: Cluster, namespace: str, user_queue: str, topology_nodes: list[str]
):
    # Whole-node arithmetic: the pods of earlier tests must have left the nodes (a check of the
    # cluster, not of the operator, whose counting of those pods is what is tested below).
    wait_for(
        lambda: not pods_on(cluster, topology_nodes),
        timeout=90,
        what="the pods of earlier tests to leave the topology nodes",
    )
    # Five whole-node pods leave no block with four free nodes.
    cluster.apply(jobs.job("big", user_queue, pods=5, cpu="8", indexed=False), namespace)
    jobs.wait_admitted(cluster, namespace, "big")
    jobs.wait_running(cluster, namespace, "big", 5)

    cluster.apply(
        jobs.job(
            "block",
            user_queue,
            pods=4,
            cpu="8",
            annotations={REQUIRED: "cloud.provider.com/topology-block"},
        ),
        namespace,
    )
    workload = jobs.wait_pending_message(cluster, namespace, "block", "allows to fit only")
    assert "out of 4 pod(s)" in jobs.condition(workload, "QuotaReserved")["message"]
    assert cluster.get_json("job", "-n", namespace, "block")["spec"]["suspend"] is True
    assert not jobs.pods_of(cluster, namespace, "block")

    finish_pods(cluster, namespace, "big")
    wait_for(
        lambda: (
            (jobs.condition(jobs.workload_of(cluster, namespace, "big"), "Finished") or {}).get(
                "status"
            )
            == "True"
        ),
        timeout=60,
        what="the finished Job's workload to be Finished",
    )
    try:
        workload = jobs.wait_admitted(cluster, namespace, "block")
    except AssertionError as exc:  # say what held the nodes, as the API server saw it
        raise AssertionError(
            f"{exc}; pods on the nodes: {pods_on(cluster, topology_nodes)}"
        ) from exc
    pods = assert_pods_follow_assignment(cluster, namespace, "block", workload)
    assert len(jobs.racks_and_blocks(cluster, jobs.placement(pods))[1]) == 1


def test_a_job_over_quota_waits_with_the_shortfall(cluster: Cluster, namespace: str, operator):
    cq = f"small-{namespace}"
    cluster.apply(jobs.cluster_queue(cq, {"cpu": 4}))
    try:
        cluster.apply(
            jobs.local_queue("small", cq),
            namespace,
        )
        cluster.apply(jobs.job("fits", "small", pods=3), namespace)
        jobs.wait_admitted(cluster, namespace, "fits")
        cluster.apply(jobs.job("over", "small", pods=3), namespace)
        workload = jobs.wait_pending_message(
            cluster, namespace, "over", "insufficient unused quota"
        )
        assert (
            "for cpu in flavor tas-flavor, 2 more needed"
            in jobs.condition(workload, "QuotaReserved")["message"]
        )
        status = wait_for(
            lambda: (
                cluster.get_json("clusterqueue", cq).get("status", {}).get("pendingWorkloads") == 1
                and cluster.get_json("clusterqueue", cq)["status"]
            ),
            what="ClusterQueue status counts",
        )
        assert status["admittedWorkloads"] == 1
    finally:
        cluster.kubectl("delete", "clusterqueue", cq, "--wait=false", check=False)


def test_editing_a_suspended_jobs_template_re_creates_its_workload(
    cluster: Cluster, namespace: str, operator
):
    """As Kueue: a pending Workload follows its suspended Job's template (here the topology
    annotation, one of the fields a suspended Job that never ran may change)."""
    cluster.apply(jobs.local_queue("nowhere", f"missing-{namespace}"), namespace)
    required = {jobs.PREFIX + "podset-required-topology": topology.RACK_LABEL}
    cluster.apply(jobs.job("edited", "nowhere", pods=2, annotations=required), namespace)
    first = jobs.wait_pending_message(cluster, namespace, "edited", "doesn't exist")
    # Kueue names the completion-index label for every batch/v1 Job
    index = {"podIndexLabel": "batch.kubernetes.io/job-completion-index"}
    assert first["spec"]["podSets"][0]["topologyRequest"] == {
        "required": topology.RACK_LABEL,
        **index,
    }
    preferred = {
        jobs.PREFIX + "podset-required-topology": None,
        jobs.PREFIX + "podset-preferred-topology": topology.BLOCK_LABEL,
    }
    cluster.kubectl(
        "patch",
        "job",
        "edited",
        "-n",
        namespace,
        "--type=merge",
        "-p",
        json.dumps({"spec": {"template": {"metadata": {"annotations": preferred}}}}),
    )

    def recreated():
        workload = jobs.workload_of(cluster, namespace, "edited")
        if workload is None or workload["metadata"]["uid"] == first["metadata"]["uid"]:
            return None
        return workload

    second = wait_for(recreated, timeout=60, what="a new Workload for the edited Job")
    assert second["spec"]["podSets"][0]["topologyRequest"] == {
        "preferred": topology.BLOCK_LABEL,
        **index,
    }
    assert second["metadata"]["name"] == first["metadata"]["name"]


@pytest.mark.parametrize(
    ("pods", "annotations", "problem"),
    [
        (2, {"podset-slice-size": "2"}, "may not be set without"),
        # Kueue would admit one slice of 2 and leave the third pod gated for good
        (
            3,
            {
                "podset-slice-required-topology": "kubernetes.io/hostname",
                "podset-slice-size": "2",
            },
            "must divide the pod set count 3",
        ),
    ],
    ids=["slice size alone", "slice size not dividing the count"],
)
def test_invalid_topology_annotation_is_refused_by_the_webhook(
    cluster: Cluster, namespace: str, user_queue: str, pods, annotations, problem
):
    annotations = {jobs.PREFIX + k: v for k, v in annotations.items()}
    bad = jobs.job("bad", user_queue, pods=pods, annotations=annotations)
    result = cluster.kubectl(
        "apply", "-n", namespace, "-f", "-", input=json.dumps(bad), check=False
    )
    assert result.returncode != 0
    assert "podset-slice-size" in result.stderr
    assert problem in result.stderr
    assert not cluster.get_json("jobs", "-n", namespace)["items"]


def test_a_job_without_queue_name_is_left_alone(cluster: Cluster, namespace: str, operator):
    cluster.apply(jobs.job("free", None, pods=2), namespace)
    jobs.wait_running(cluster, namespace, "free", 2)
    assert not cluster.get_json("workloads", "-n", namespace)["items"]
    job = cluster.get_json("job", "-n", namespace, "free")
    assert not job["spec"].get("suspend")


def test_cluster_queue_with_missing_topology_is_inactive(cluster: Cluster, operator):
    cluster.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "ResourceFlavor",
            "metadata": {"name": "orphan"},
            "spec": {"nodeLabels": {"x": "y"}, "topologyName": "does-not-exist"},
        }
    )
    cluster.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "ClusterQueue",
            "metadata": {"name": "orphan-cq"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [
                            {"name": "orphan", "resources": [{"name": "cpu", "nominalQuota": 1}]}
                        ],
                    }
                ],
            },
        }
    )
    try:

        def inactive():
            active = jobs.condition(cluster.get_json("clusterqueue", "orphan-cq"), "Active")
            return active if active and active["status"] == "False" else None

        active = wait_for(inactive, what="ClusterQueue inactive")
        assert active["reason"] == "TopologyNotFound"
    finally:
        cluster.kubectl("delete", "clusterqueue", "orphan-cq", check=False)
        cluster.kubectl("delete", "resourceflavor", "orphan", check=False)


def test_operator_killed_mid_flight_rebuilds_state_and_never_double_books(
    cluster: Cluster, namespace: str, user_queue: str, operator
):
    names = [f"j{i}" for i in range(6)]
    for name in names:
        cluster.apply(
            jobs.job(name, user_queue, pods=4, cpu="2", annotations={REQUIRED: RACK_LABEL}),
            namespace,
        )
    operator.kill()  # somewhere between creating workloads, admitting and ungating
    operator.start()
    # 6 jobs x 8 cpu on 64 cpu of nodes: all fit at once, each in one rack (16 cpu per rack).
    workloads = {name: jobs.wait_admitted(cluster, namespace, name, timeout=90) for name in names}
    per_node: Counter = Counter()
    for name in names:
        pods = assert_pods_follow_assignment(cluster, namespace, name, workloads[name])
        assert len(jobs.racks_and_blocks(cluster, jobs.placement(pods))[0]) == 1
        for pod in pods:
            per_node[pod["spec"]["nodeName"]] += 2
    assert max(per_node.values()) <= 8  # no node over its 8 cpu
    # Each Workload was admitted once: QuotaReserved never went back to False after admission.
    for wl in workloads.values():
        assert jobs.condition(wl, "QuotaReserved")["status"] == "True"
