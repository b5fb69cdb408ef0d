"""AppWrapper as a GenericJob: its components' pod sets, start and restore through
`podSetInfos`, and the webhooks (Kueue's appwrapper_controller_test.go scenarios, as tables)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.api.annotations import TopologyRequestError
from tas.integrations.appwrapper import webhook
from tas.integrations.appwrapper.components import PathError, component_pod_sets, value_at
from tas.integrations.appwrapper.controller import APP_WRAPPER, controlled_by_appwrapper
from tas.jobframework.podset import merge_patch
from tas.jobframework.workload import build_workload, needs_new_workload
from tests.unit.integrations.builders import FLAVORS, PREFERRED, QUEUE, REQUIRED, admitted

REPLICA_INDEX = "training.kubeflow.org/replica-index"
GATE = "kueue.x-k8s.io/topology"

EXAMPLES = Path(__file__).parents[4] / "e2e/fixtures/kueue-examples"


def template(**annotations) -> dict:
    meta = {"annotations": dict(annotations)} if annotations else {}
    return {
        "metadata": meta,
        "spec": {
            "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
            ]
        },
    }


def pytorchjob(master=1, workers=4, master_annotations=None, worker_annotations=None) -> dict:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "pytorchjob"},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": master, "template": template(**(master_annotations or {}))},
                "Worker": {"replicas": workers, "template": template(**(worker_annotations or {}))},
            }
        },
    }


def batch_job(parallelism=2, completions=None) -> dict:
    spec = {"parallelism": parallelism, "template": template()}
    if completions is not None:
        spec["completions"] = completions
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "job"}, "spec": spec}


def jobset(replicas=2, parallelism=3) -> dict:
    rj = {
        "name": "w",
        "replicas": replicas,
        "template": {"spec": {"parallelism": parallelism, "template": template()}},
    }
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js"},
        "spec": {"replicatedJobs": [rj]},
    }


def appwrapper(*wrapped: dict, suspend=True, **component_extra) -> dict:
    return {
        "apiVersion": "workload.codeflare.dev/v1beta2",
        "kind": "AppWrapper",
        "metadata": {
            "name": "aw",
            "namespace": "ns",
            "uid": "aw-uid",
            "resourceVersion": "3",
            "labels": {QUEUE: "q"},
        },
        "spec": {
            "suspend": suspend,
            "components": [{"template": copy.deepcopy(w), **component_extra} for w in wrapped],
        },
    }


@pytest.mark.parametrize(
    ("aw", "want"),
    [
        (
            appwrapper(pytorchjob(), batch_job()),
            [
                ("aw-0", 1, REPLICA_INDEX),
                ("aw-1", 4, REPLICA_INDEX),
                ("aw-2", 2, "batch.kubernetes.io/job-completion-index"),
            ],
        ),
        (
            appwrapper(batch_job(parallelism=5, completions=3)),
            [("aw-0", 3, "batch.kubernetes.io/job-completion-index")],
        ),
        (
            appwrapper(jobset(replicas=2, parallelism=3)),
            [("aw-0", 6, "batch.kubernetes.io/job-completion-index")],
        ),
        (
            appwrapper(
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": "d"},
                    "spec": {"replicas": 3, "template": template()},
                }
            ),
            [("aw-0", 3, None)],
        ),
        (
            appwrapper(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": "p"},
                    "spec": template()["spec"],
                }
            ),
            [("aw-0", 1, None)],
        ),
    ],
    ids=[
        "no annotations",
        "job-completions-cap",
        "jobset-replicas-x-parallelism",
        "deployment-replicas",
        "pod",
    ],
)
def test_a_pod_set_per_component_pod_set_named_after_the_appwrapper(aw, want):
    pod_sets = APP_WRAPPER.pod_sets(aw)
    got = [
        (ps["name"], ps["count"], ps.get("topologyRequest", {}).get("podIndexLabel"))
        for ps in pod_sets
    ]
    assert got == want


def test_with_required_and_preferred_topology_annotation():
    aw = appwrapper(
        pytorchjob(
            master_annotations={REQUIRED: "cloud.com/rack"},
            worker_annotations={PREFERRED: "cloud.com/block"},
        )
    )
    requests = [ps["topologyRequest"] for ps in APP_WRAPPER.pod_sets(aw)]
    assert requests[0]["required"] == "cloud.com/rack"
    assert requests[1]["preferred"] == "cloud.com/block"
    assert all(r["podIndexLabel"] == REPLICA_INDEX for r in requests)


def test_a_jobsets_pod_set_is_ranked_within_its_jobs():
    request = APP_WRAPPER.pod_sets(appwrapper(jobset(replicas=2)))[0]["topologyRequest"]
    assert request["subGroupIndexLabel"] == "jobset.sigs.k8s.io/job-index"
    assert request["subGroupCount"] == 2


def test_declared_pod_sets_win_over_inference_and_the_status_over_both():
    declared = [{"path": "template.spec.template", "replicas": 7}]
    aw = appwrapper(batch_job(), podSets=declared)
    assert [ps["count"] for ps in APP_WRAPPER.pod_sets(aw)] == [7]
    aw["status"] = {
        "componentStatus": [{"podSets": [{"path": "template.spec.template", "replicas": 9}]}]
    }
    assert [ps["count"] for ps in APP_WRAPPER.pod_sets(aw)] == [9]


def test_a_path_without_a_pod_template_is_left_out():
    aw = appwrapper(
        batch_job(),
        podSets=[
            {"path": "template.spec.nothing", "replicas": 2},
            {"path": "template.spec.template", "replicas": 1},
        ],
    )
    assert [(ps["name"], ps["count"]) for ps in APP_WRAPPER.pod_sets(aw)] == [("aw-0", 1)]


@pytest.mark.parametrize(
    "path",
    ["spec.template", "template.spec.replicatedJobs[9]", "template.spec..x", "template.kind.x"],
    ids=["not-from-template", "out-of-bounds", "bad-element", "through-a-string"],
)
def test_bad_paths_are_refused_with_the_path(path):
    with pytest.raises(PathError, match=r"template|path"):
        value_at({"template": jobset()}, path)


def test_a_bad_annotation_names_the_component_and_its_path():
    aw = appwrapper(pytorchjob(worker_annotations={"kueue.x-k8s.io/podset-slice-size": "2"}))
    with pytest.raises(
        TopologyRequestError,
        match=r"spec\.components\[0\]\.template\.spec\.pytorchReplicaSpecs\.Worker",
    ):
        APP_WRAPPER.pod_sets(aw)
    assert len(webhook.validate(aw)) == 1
    assert webhook.validate(appwrapper(pytorchjob())) == []


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["job", "jobset", "pytorch"]), st.integers(1, 5), st.integers(1, 5)
        ),
        min_size=1,
        max_size=4,
    )
)
def test_pod_set_counts_add_up_to_the_wrapped_pods(components):
    wrapped, pods = [], 0
    for kind, a, b in components:
        if kind == "job":
            wrapped.append(batch_job(parallelism=a))
            pods += a
        elif kind == "jobset":
            wrapped.append(jobset(replicas=a, parallelism=b))
            pods += a * b
        else:
            wrapped.append(pytorchjob(master=1, workers=a))
            pods += 1 + a
    aw = appwrapper(*wrapped)
    pod_sets = APP_WRAPPER.pod_sets(aw)
    assert sum(ps["count"] for ps in pod_sets) == pods
    assert [ps["name"] for ps in pod_sets] == [f"aw-{n}" for n in range(len(pod_sets))]
    assert len(pod_sets) == len(component_pod_sets(aw))


def test_start_writes_pod_set_infos_per_component_and_unsuspends():
    aw = appwrapper(pytorchjob(), batch_job())
    workload = admitted(build_workload(APP_WRAPPER, aw), {"aw-1": [("h1", 4)]})
    patch = APP_WRAPPER.start_patch(aw, workload, FLAVORS)
    started = merge_patch(aw, patch)
    assert started["spec"]["suspend"] is False
    infos = [c["podSetInfos"] for c in started["spec"]["components"]]
    assert [len(i) for i in infos] == [2, 1]
    worker = infos[0][1]
    assert worker["labels"] == {"kueue.x-k8s.io/podset": "aw-1"}
    assert worker["annotations"]["kueue.x-k8s.io/workload"] == workload.name
    assert worker["nodeSelector"] == {"pool": "tas"}
    assert worker["tolerations"] == [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert worker["schedulingGates"] == [{"name": GATE}]
    assert "schedulingGates" not in infos[0][0]  # no topology assignment, no gate
    # the wrapped templates are the user's: the Workload still matches
    assert APP_WRAPPER.pod_sets(started) == APP_WRAPPER.pod_sets(aw)

    stopped = merge_patch(started, APP_WRAPPER.stop_patch(started))
    assert APP_WRAPPER.restore_patch(started, workload) is None  # not while running
    restored = merge_patch(stopped, APP_WRAPPER.restore_patch(stopped, workload))
    assert all("podSetInfos" not in c for c in restored["spec"]["components"])
    assert APP_WRAPPER.restore_patch(restored, workload) is None
    assert not needs_new_workload(APP_WRAPPER, restored, workload)


@pytest.mark.parametrize(
    ("status", "want"),
    [
        ({"phase": "Succeeded"}, (True, "AppWrapper finished successfully")),
        ({"phase": "Failed"}, (False, "AppWrapper failed")),
        (
            {"phase": "Failed", "conditions": [{"type": "ResourcesDeployed", "status": "True"}]},
            None,
        ),
        ({"phase": "Running"}, None),
    ],
    ids=["succeeded", "failed", "failed-still-deleting", "running"],
)
def test_finished_by_phase(status, want):
    aw = appwrapper(batch_job())
    aw["status"] = status
    done = APP_WRAPPER.finished(aw)
    assert (None if done is None else (done.succeeded, done.message)) == want


def test_webhook_suspends_at_creation():
    assert webhook.mutate(appwrapper(batch_job(), suspend=False)) == {"spec": {"suspend": True}}
    assert webhook.mutate(appwrapper(batch_job())) == {}


def test_a_wrapped_resource_is_recognised_by_its_controller_reference():
    obj = {
        "metadata": {
            "ownerReferences": [
                {
                    "apiVersion": "workload.codeflare.dev/v1beta2",
                    "kind": "AppWrapper",
                    "name": "aw",
                    "uid": "u2",
                    "controller": True,
                }
            ]
        }
    }
    assert controlled_by_appwrapper(obj) == "u2"
    assert controlled_by_appwrapper({"metadata": {}}) is None


def test_kueues_sample_appwrapper_is_a_master_and_a_worker_pod_set():
    path = EXAMPLES / "pytorch-sample.yaml"
    aw = yaml.safe_load(path.read_text())
    aw["metadata"].update(namespace="default", uid="u", resourceVersion="1")
    pod_sets = APP_WRAPPER.pod_sets(aw)
    assert [(ps["name"], ps["count"]) for ps in pod_sets] == [
        ("sample-appwrapper-pytorch-job-0", 1),
        ("sample-appwrapper-pytorch-job-1", 1),
    ]
    assert all(ps["topologyRequest"]["podIndexLabel"] == REPLICA_INDEX for ps in pod_sets)
