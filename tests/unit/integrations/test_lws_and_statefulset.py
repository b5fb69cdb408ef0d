"""LeaderWorkerSet and StatefulSet: their Workloads, webhooks and pods' group labels (Kueue's
leaderworkerset and statefulset tests' scenarios)."""

from __future__ import annotations

import copy

import pytest

from tas import integrations
from tas.integrations.leaderworkerset import webhook as lws_webhook
from tas.integrations.leaderworkerset import workload as L
from tas.integrations.leaderworkerset.controller import waiting_pod
from tas.integrations.pod.controller import work_key
from tas.integrations.statefulset import webhook as sts
from tests.unit.integrations.builders import GROUP, QUEUE, RACK, REQUIRED, container

LWS_TAS = {REQUIRED: RACK, GROUP: "lws-group"}


def leaderworkerset(
    *, size=3, replicas=2, leader=True, leader_annotations=None, worker_annotations=None
) -> dict:
    templates = {
        "size": size,
        "workerTemplate": {
            "metadata": {"annotations": dict(worker_annotations or {})},
            "spec": {"containers": [container("200m")]},
        },
    }
    if leader:
        templates["leaderTemplate"] = {
            "metadata": {"annotations": dict(leader_annotations or {})},
            "spec": {"containers": [container("100m")]},
        }
    return {
        "metadata": {"name": "nginx", "namespace": "ns", "uid": "lws-uid", "labels": {QUEUE: "q"}},
        "spec": {"replicas": replicas, "leaderWorkerTemplate": templates},
    }


def test_each_group_is_a_workload_of_a_leader_and_its_workers():
    obj = leaderworkerset(leader_annotations=LWS_TAS, worker_annotations=LWS_TAS)
    workload = L.group_workload(obj, 1)
    assert workload["metadata"]["name"] == L.group_workload_name(obj, 1)
    assert workload["metadata"]["name"].startswith("leaderworkerset-nginx-1-")
    leader, worker = workload["spec"]["podSets"]
    assert (leader["name"], leader["count"], worker["name"], worker["count"]) == (
        "leader",
        1,
        "worker",
        2,
    )
    assert leader["topologyRequest"] == {"required": RACK, "podSetGroupName": "lws-group"}
    assert worker["topologyRequest"] == {
        "required": RACK,
        "podSetGroupName": "lws-group",
        "podIndexLabel": "leaderworkerset.sigs.k8s.io/worker-index",
    }
    [owner] = workload["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner.get("controller")) == (
        "LeaderWorkerSet",
        "lws-uid",
        None,
    )
    assert workload["metadata"]["annotations"] == {"kueue.x-k8s.io/is-group-workload": "true"}


def test_without_a_leader_template_the_group_is_one_pod_set_main():
    [main] = L.pod_sets(leaderworkerset(leader=False, size=4))
    assert (main["name"], main["count"]) == ("main", 4)


@pytest.mark.parametrize(
    ("leader", "worker", "where", "annotation"),
    [
        ({REQUIRED: "not a label!"}, {}, "leaderTemplate", REQUIRED),
        (
            {},
            {"kueue.x-k8s.io/podset-slice-size": "1"},
            "workerTemplate",
            "kueue.x-k8s.io/podset-slice-size",
        ),
        (
            {REQUIRED: RACK, GROUP: "g"},
            {REQUIRED: "cloud.com/block", GROUP: "g"},
            "workerTemplate",
            GROUP,
        ),
    ],
    ids=["bad-leader-level", "slice-size-alone", "group-modes-differ"],
)
def test_invalid_annotations_are_refused_naming_the_template(leader, worker, where, annotation):
    errors = lws_webhook.validate(
        leaderworkerset(leader_annotations=leader, worker_annotations=worker)
    )
    assert len(errors) == 1
    assert f"spec.leaderWorkerTemplate.{where}.metadata.annotations" in errors[0]
    assert f'annotation "{annotation}"' in errors[0]


def test_the_queue_name_cannot_change():
    old = leaderworkerset()
    new = copy.deepcopy(old)
    new["metadata"]["labels"][QUEUE] = "other"
    assert lws_webhook.validate(new, old) == [f"metadata.labels[{QUEUE}]: field is immutable"]


def test_the_webhook_marks_both_templates_so_their_pods_are_gated():
    patch = lws_webhook.mutate(leaderworkerset())["spec"]["leaderWorkerTemplate"]
    for template in ("leaderTemplate", "workerTemplate"):
        meta = patch[template]["metadata"]
        assert meta["labels"] == {QUEUE: "q"}
        assert meta["annotations"] == {
            "kueue.x-k8s.io/pod-suspending-parent": "leaderworkerset.x-k8s.io/leaderworkerset",
            "kueue.x-k8s.io/pod-group-serving": "true",
        }
    assert lws_webhook.mutate({"metadata": {"name": "x"}, "spec": {}}) == {}


def lws_pod(name: str, *, group_index: str | None = "1", worker: bool = False) -> dict:
    labels = {QUEUE: "q", L.NAME_LABEL: "nginx", "kueue.x-k8s.io/managed": "true"}
    if group_index is not None:
        labels[L.GROUP_INDEX_LABEL] = group_index
    annotations = {
        "kueue.x-k8s.io/pod-suspending-parent": "leaderworkerset.x-k8s.io/leaderworkerset"
    }
    if worker:
        annotations[L.LEADER_NAME_ANNOTATION] = "nginx-1"
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "resourceVersion": "9",
            "labels": labels,
            "annotations": annotations,
        }
    }


@pytest.mark.parametrize(("worker", "role"), [(False, "leader"), (True, "worker")])
def test_a_pod_joins_the_workload_of_its_group(worker, role):
    obj = leaderworkerset()
    pod = lws_pod("nginx-1-1" if worker else "nginx-1", worker=worker)
    assert waiting_pod(pod) and work_key(pod) is None  # not a single pod's workload
    patch = L.pod_membership(pod, obj)
    name = L.group_workload_name(obj, "1")
    assert patch["metadata"]["labels"] == {
        "kueue.x-k8s.io/pod-group-name": name,
        "kueue.x-k8s.io/prebuilt-workload-name": name,
    }
    assert patch["metadata"]["annotations"] == {
        "kueue.x-k8s.io/pod-group-total-count": "3",
        "kueue.x-k8s.io/role-hash": role,
    }
    assert L.pod_membership(lws_pod("x", group_index=None), obj) is None  # waits for its index
    joined = copy.deepcopy(pod)
    joined["metadata"]["labels"].update(patch["metadata"]["labels"])
    assert not waiting_pod(joined) and work_key(joined) == ("group", "ns", name)


# ---- StatefulSet -------------------------------------------------------------------------------


def statefulset(replicas=3, ready=0, status_replicas=0, queue="q") -> dict:
    labels = {QUEUE: queue} if queue else {}
    return {
        "metadata": {"name": "web", "namespace": "ns", "labels": labels},
        "spec": {"replicas": replicas, "template": {"metadata": {}, "spec": {}}},
        "status": {"readyReplicas": ready, "replicas": status_replicas},
    }


def test_a_queued_statefulsets_pods_are_one_serving_group_of_its_replicas():
    meta = sts.mutate(statefulset(replicas=3))["spec"]["template"]["metadata"]
    assert meta["labels"] == {
        "kueue.x-k8s.io/managed": "true",
        "kueue.x-k8s.io/pod-group-name": "statefulset-web-ac922",  # Kueue's name, checked in Go
        QUEUE: "q",
    }
    assert meta["annotations"] == {
        "kueue.x-k8s.io/pod-suspending-parent": "statefulset",
        "kueue.x-k8s.io/pod-group-total-count": "3",
        "kueue.x-k8s.io/pod-group-fast-admission": "true",
        "kueue.x-k8s.io/pod-group-serving": "true",
        "kueue.x-k8s.io/pod-group-pod-index-label": "apps.kubernetes.io/pod-index",
    }
    assert sts.mutate(statefulset(queue=None)) == {}


@pytest.mark.parametrize(
    ("old", "new", "errors"),
    [
        (statefulset(3), statefulset(3), []),
        (statefulset(3), statefulset(0), []),
        (statefulset(0), statefulset(2), []),
        (statefulset(3), statefulset(4), ["spec.replicas: field is immutable"]),
        (statefulset(0), statefulset(2, status_replicas=1), ["scaling down is still in progress"]),
        (statefulset(3, ready=2), statefulset(3, queue="other"), ["field is immutable"]),
        (statefulset(3), statefulset(3, queue="other"), []),  # nothing runs yet
    ],
    ids=[
        "same",
        "to-zero",
        "from-zero",
        "resize",
        "still-scaling-down",
        "queue-while-running",
        "queue-while-idle",
    ],
)
def test_a_queued_statefulset_scales_only_to_and_from_zero(old, new, errors):
    found = sts.validate_update(old, new)
    assert len(found) == len(errors), found
    for error, part in zip(found, errors, strict=True):
        assert part in error


# ---- --integrations ----------------------------------------------------------------------------


def test_integrations_are_kueues_framework_names_and_imply_pod():
    enabled = integrations.parse("statefulset")
    assert enabled.enabled(integrations.Framework.STATEFULSET)
    assert enabled.enabled(integrations.Framework.POD)  # its pods are a pod group
    assert not enabled.enabled(integrations.Framework.JOB)
    assert integrations.defaults().names() == ["batch/job"]  # Kueue's Configuration default
    assert integrations.parse(" batch/job , pod ").names() == ["batch/job", "pod"]
    with pytest.raises(integrations.IntegrationsError, match=r"'kubeflow\.org/mpijob'"):
        integrations.parse("batch/job,kubeflow.org/mpijob")


def test_the_flag_wins_over_the_environment():
    env = {"TAS_INTEGRATIONS": "pod"}
    assert integrations.from_env_and_flag(None, env).names() == ["pod"]
    assert integrations.from_env_and_flag("batch/job", env).names() == ["batch/job"]
    assert integrations.from_env_and_flag(None, {}).names() == ["batch/job"]
