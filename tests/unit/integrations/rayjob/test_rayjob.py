"""RayJob's own facts: the submitter pod set, finished, skipped on an existing cluster, its
webhook's refusals (Kueue's rayjob_controller_test.go and rayjob_webhook_test.go by case name).
The cluster spec's scenarios, shared with the other Ray kinds, are in
raycluster/test_cluster_spec.py."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from tas.cache import projections as proj
from tas.integrations.rayjob import webhook
from tas.integrations.rayjob.controller import RAY_JOB, default_submitter_template
from tas.jobframework.podset import merge_patch
from tas.jobframework.workload import build_workload, needs_new_workload
from tests.unit.integrations.builders import BLOCK, FLAVORS, PREFERRED, RACK, REQUIRED, admitted
from tests.unit.integrations.ray_builders import rayjob, template, worker

EXAMPLES = Path(__file__).parents[4] / "e2e" / "fixtures" / "kueue-examples"
SUBMITTER_RESOURCES = {
    "limits": {"cpu": "1", "memory": "1Gi"},
    "requests": {"cpu": "500m", "memory": "200Mi"},
}


def by_name(obj) -> dict[str, dict]:
    return {ps["name"]: ps for ps in RAY_JOB.pod_sets(obj)}


@pytest.mark.parametrize(
    ("mode", "names"),
    [
        (None, ["head", "group1", "group2"]),
        ("HTTPMode", ["head", "group1", "group2"]),
        ("InteractiveMode", ["head", "group1", "group2"]),
        ("SidecarMode", ["head", "group1", "group2"]),
        ("K8sJobMode", ["head", "group1", "group2", "submitter"]),
    ],
    ids=[
        "no annotations",
        "http mode",
        "interactive mode",
        "sidecar mode",
        "with default job submitter",
    ],
)
def test_a_submitter_pod_set_follows_the_cluster_in_k8s_job_mode(mode, names):
    obj = rayjob(worker("group1"), worker("group2", 3), mode=mode)
    pod_sets = RAY_JOB.pod_sets(obj)
    assert [ps["name"] for ps in pod_sets] == names
    assert [ps["count"] for ps in pod_sets] == [1, 1, 3, 1][: len(names)]


def test_the_default_submitter_is_kuberays_with_the_heads_image():
    """Kueue's "with default job submitter": KubeRay's default container and resources."""
    submitter = by_name(rayjob(worker("group1"), mode="K8sJobMode"))["submitter"]
    [container] = submitter["template"]["spec"]["containers"]
    assert container == {
        "name": "ray-job-submitter",
        "image": "ray:2.9",
        "resources": SUBMITTER_RESOURCES,
    }
    assert submitter["template"]["spec"]["restartPolicy"] == "Never"


def test_with_submitter_job_pod_template_override():
    own = {
        "spec": {
            "containers": [
                {"name": "ray-job-submitter", "resources": {"requests": {"cpu": "50m"}}}
            ],
            "restartPolicy": "Never",
        }
    }
    submitter = by_name(rayjob(worker("group1"), mode="K8sJobMode", submitterPodTemplate=own))[
        "submitter"
    ]
    assert submitter["template"] == own


@pytest.mark.parametrize(
    ("submitter_annotations", "expected"),
    [(None, None), ({REQUIRED: BLOCK}, BLOCK)],
    ids=[
        "with submitter topology annotation not specified",
        "with submitter topology annotation specified",
    ],
)
def test_the_submitters_topology_annotations_are_its_own(submitter_annotations, expected):
    extra = (
        {"submitterPodTemplate": template(submitter_annotations)} if submitter_annotations else {}
    )
    obj = rayjob(
        worker("group1", 3, **{PREFERRED: BLOCK}), head={REQUIRED: RACK}, mode="K8sJobMode", **extra
    )
    pod_sets = by_name(obj)
    assert pod_sets["head"]["topologyRequest"]["required"] == RACK
    assert pod_sets["group1"]["topologyRequest"]["preferred"] == BLOCK
    assert pod_sets["submitter"].get("topologyRequest", {}).get("required") == expected


def test_a_bad_submitter_annotation_names_the_submitter_template():
    obj = rayjob(
        worker("g"), mode="K8sJobMode", submitterPodTemplate=template({REQUIRED: "not a label!"})
    )
    [error] = webhook.validate(obj)
    assert error.startswith("spec.submitterPodTemplate.metadata.annotations: ")


def test_in_sidecar_mode_the_head_asks_for_the_submitter_container_too():
    """Kueue v0.17.7 (#12725): KubeRay runs the submitter beside Ray in the head pod."""
    head = by_name(rayjob(worker("g"), mode="SidecarMode"))["head"]
    names = [c["name"] for c in head["template"]["spec"]["containers"]]
    assert names == ["c", "ray-job-submitter"]
    assert head["template"]["spec"]["containers"][1]["resources"] == SUBMITTER_RESOURCES


# ---- finished: Kueue's Test_RayJobFinished ----------------------------------------------------


@pytest.mark.parametrize(
    ("job_status", "deployment", "expected"),
    [
        ("RUNNING", "Running", None),
        ("SUCCEEDED", "Complete", True),
        ("FAILED", "Complete", False),
        ("FAILED", "Failed", False),
        ("RUNNING", "Failed", False),
    ],
    ids=[
        "jobStatus=Running, jobDeploymentStatus=Running",
        "jobStatus=Succeeded, jobDeploymentStatus=Complete",
        "jobStatus=Failed, jobDeploymentStatus=Complete",
        "jobStatus=Failed, jobDeploymentStatus=Failed",
        "jobStatus=Running, jobDeploymentStatus=Failed (when activeDeadlineSeconds is exceeded)",
    ],
)
def test_finished_reads_the_deployment_and_succeeded_the_job(job_status, deployment, expected):
    obj = rayjob(worker("g"))
    obj["status"] = {"jobStatus": job_status, "jobDeploymentStatus": deployment, "message": "m"}
    done = RAY_JOB.finished(obj)
    assert (done.succeeded if done else None) == expected
    assert done is None or done.message == "m"


def test_a_rayjob_on_an_existing_cluster_is_skipped():
    assert RAY_JOB.skips(
        rayjob(worker("g"), rayClusterSpec=None, clusterSelector={"ray.io/cluster": "c"})
    )
    assert not RAY_JOB.skips(rayjob(worker("g")))


# ---- the webhook: Kueue's TestValidateCreate / TestValidateUpdate ------------------------------


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        (
            {"rayClusterSpec": None},
            [
                "spec.rayClusterSpec: Required value: rayClusterSpec is required for Kueue-managed jobs that don't use clusterSelector"
            ],
        ),
        (
            {"shutdownAfterJobFinishes": False},
            [
                "spec.shutdownAfterJobFinishes: Invalid value: false: a kueue managed job should delete the cluster after finishing"
            ],
        ),
        (
            {"clusterSelector": {"k1": "v1"}},
            [
                "spec.clusterSelector: Invalid value: a kueue managed job should not use an existing cluster"
            ],
        ),
        ({"clusterSelector": {"k1": "v1"}, "rayClusterSpec": None}, []),
        (
            {"clusterSelector": {"k1": "v1"}, "shutdownAfterJobFinishes": False},
            [
                "spec.clusterSelector: Invalid value: a kueue managed job should not use an existing cluster"
            ],
        ),
    ],
    ids=[
        "invalid managed - no cluster selector and no RayClusterSpec",
        "invalid managed - by queue",
        "invalid managed - has cluster selector and RayClusterSpec",
        "valid - cluster selector without RayClusterSpec (not managed)",
        "the cluster selector refusal ends validation",
    ],
)
def test_kueues_refusals_of_a_rayjob(changes, expected):
    obj = rayjob(worker("g"))
    for key, value in changes.items():
        if value is None:
            del obj["spec"][key]
        else:
            obj["spec"][key] = value
    assert webhook.validate(obj) == expected


def test_invalid_unmanaged():
    obj = rayjob(worker("g"), queue=None, shutdownAfterJobFinishes=False)
    assert webhook.validate(obj) == []


@pytest.mark.parametrize(
    ("queue", "refused"),
    [("q", True), (None, False)],
    ids=["invalid new managed - by queue", "invalid unmanaged"],
)
def test_an_update_is_validated_as_a_creation(queue, refused):
    old = rayjob(worker("g"), queue=queue)
    new = copy.deepcopy(old)
    new["spec"]["shutdownAfterJobFinishes"] = False
    assert bool(webhook.validate(new, old)) == refused


def test_priority_class_may_change_while_suspended():
    """Kueue's "priorityClassName is immutable" case: admitted, as the RayJob is suspended."""
    old = rayjob(worker("g"))
    old["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "test-1"
    new = copy.deepcopy(old)
    new["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "test-2"
    assert webhook.validate(new, old) == []


# ---- the submitter at start and restore ---------------------------------------------------------


def test_a_default_submitter_is_written_readied_and_taken_back():
    """Kueue v0.17.7 (#12695): without its own template the submitter pod would not carry the
    gate and the flavor; the default is written, readied, and removed again at restore."""
    obj = rayjob(worker("g", **{REQUIRED: RACK}), mode="K8sJobMode")
    workload = admitted(
        build_workload(RAY_JOB, obj),
        {"head": [("h1", 1)], "g": [("h1", 1)], "submitter": [("h1", 1)]},
    )
    running = merge_patch(obj, RAY_JOB.start_patch(obj, workload, FLAVORS))
    submitter = running["spec"]["submitterPodTemplate"]
    assert submitter["metadata"]["labels"] == {"kueue.x-k8s.io/podset": "submitter"}
    assert submitter["spec"]["schedulingGates"] == [{"name": "kueue.x-k8s.io/topology"}]
    assert submitter["spec"]["nodeSelector"] == {"pool": "tas"}
    assert submitter["spec"]["containers"] == default_submitter_template(obj)["spec"]["containers"]
    stopped = merge_patch(running, RAY_JOB.stop_patch(running))
    pending = proj.workload_from_object(build_workload(RAY_JOB, obj))
    restored = merge_patch(stopped, RAY_JOB.restore_patch(stopped, pending))
    assert restored["spec"] == obj["spec"]
    assert not needs_new_workload(RAY_JOB, restored, pending)


def test_the_users_submitter_template_is_readied_and_given_back():
    own = template({REQUIRED: RACK})
    obj = rayjob(worker("g"), mode="K8sJobMode", submitterPodTemplate=own)
    workload = admitted(
        build_workload(RAY_JOB, obj),
        {"head": [("h1", 1)], "g": [("h1", 1)], "submitter": [("h1", 1)]},
    )
    running = merge_patch(obj, RAY_JOB.start_patch(obj, workload, FLAVORS))
    assert running["spec"]["submitterPodTemplate"]["metadata"]["annotations"][REQUIRED] == RACK
    assert running["spec"]["submitterPodTemplate"]["spec"]["schedulingGates"] == [
        {"name": "kueue.x-k8s.io/topology"}
    ]
    stopped = merge_patch(running, RAY_JOB.stop_patch(running))
    pending = proj.workload_from_object(build_workload(RAY_JOB, obj))
    assert merge_patch(stopped, RAY_JOB.restore_patch(stopped, pending))["spec"] == obj["spec"]


def test_the_workload_is_named_and_owned_as_kueue_does():
    workload = build_workload(RAY_JOB, rayjob(worker("g")))
    assert workload["metadata"]["name"].startswith("rayjob-job-")
    [owner] = workload["metadata"]["ownerReferences"]
    assert (owner["apiVersion"], owner["kind"], owner["uid"]) == ("ray.io/v1", "RayJob", "job-uid")


def test_kueues_sample_rayjob_is_admitted_as_head_worker_and_submitter():
    """Kueue's site/static/examples/jobs/ray-job-sample.yaml, as the API server defaults it
    (KubeRay's CRD: submissionMode K8sJobMode)."""
    obj = yaml.safe_load((EXAMPLES / "ray-job-sample.yaml").read_text())
    obj["metadata"].update(namespace="ns", uid="u", resourceVersion="1")
    obj["spec"].setdefault("submissionMode", "K8sJobMode")
    assert webhook.validate(obj) == []
    assert {n: ps["count"] for n, ps in by_name(obj).items()} == {
        "head": 1,
        "small-group": 1,
        "submitter": 1,
    }
    assert (
        by_name(obj)["submitter"]["template"]["spec"]["containers"][0]["image"]
        == "rayproject/ray:2.9.0"
    )
