"""LeaderWorkerSet: a Workload per group, its webhooks, and its pods' group labels (Kueue's
leaderworkerset tests' scenarios)."""

from __future__ import annotations

import copy

import pytest

from tas.integrations.leaderworkerset import webhook as lws_webhook
from tas.integrations.leaderworkerset import workload as L
from tas.integrations.leaderworkerset.controller import waiting_pod
from tas.integrations.pod.controller import work_key
from tests.unit.integrations.builders import GROUP, QUEUE, RACK, REQUIRED
from tests.unit.integrations.builders import leader_and_workers as leaderworkerset

LWS_TAS = {REQUIRED: RACK, GROUP: "lws-group"}


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
