"""TrainJob: the JobSet its runtime makes, its pod sets, start and restore through Kueue's
runtime patch, and the webhooks (Kueue's trainjob_controller_test.go and
trainjob_webhook_test.go scenarios, as tables)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.api.annotations import TopologyRequestError
from tas.integrations.trainjob import webhook
from tas.integrations.trainjob.controller import (
    KUEUE_MANAGER,
    TrainJob,
    controlled_by_trainjob,
    kueue_replicated_jobs,
    pod_sets_of,
)
from tas.integrations.trainjob.runtime import (
    CLUSTER_TRAINING_RUNTIME,
    TRAINING_RUNTIME,
    RuntimeNotFound,
    child_replicated_jobs,
    runtime_ref,
    strategic_merge,
)
from tas.jobframework.podset import merge_patch
from tas.jobframework.workload import build_workload, needs_new_workload
from tests.unit.integrations.builders import FLAVORS, QUEUE, RACK, REQUIRED, admitted

ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
GATE = "kueue.x-k8s.io/topology"

EXAMPLES = Path(__file__).parents[4] / "e2e/fixtures/kueue-examples"


def rjob(name: str, *, trainer: bool = False, parallelism=None, replicas=None, **annotations):
    labels = {ANCESTOR: "trainer"} if trainer else {}
    spec: dict = {
        "template": {
            "metadata": {"annotations": dict(annotations)} if annotations else {},
            "spec": {
                "containers": [
                    {"name": "node", "image": "img", "resources": {"requests": {"cpu": "1"}}}
                ]
            },
        }
    }
    if parallelism is not None:
        spec["parallelism"] = parallelism
    out = {"name": name, "template": {"metadata": {"labels": labels}, "spec": spec}}
    if replicas is not None:
        out["replicas"] = replicas
    return out


def runtime(*rjobs, ml_policy=None, kind="ClusterTrainingRuntime", pod_group=None):
    spec: dict = {"template": {"spec": {"replicatedJobs": [copy.deepcopy(r) for r in rjobs]}}}
    if ml_policy is not None:
        spec["mlPolicy"] = ml_policy
    if pod_group is not None:
        spec["podGroupPolicy"] = pod_group
    return {"kind": kind, "metadata": {"name": "test"}, "spec": spec}


def trainjob(*, num_nodes=None, patches=None, suspend=True, trainer=None, kind=None):
    spec: dict = {"runtimeRef": {"name": "test"}, "suspend": suspend}
    if kind:
        spec["runtimeRef"]["kind"] = kind
    trainer = dict(trainer or {})
    if num_nodes is not None:
        trainer["numNodes"] = num_nodes
    if trainer:
        spec["trainer"] = trainer
    if patches is not None:
        spec["runtimePatches"] = patches
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {
            "name": "trainjob",
            "namespace": "ns",
            "uid": "tj-uid",
            "resourceVersion": "7",
            "labels": {QUEUE: "q"},
        },
        "spec": spec,
    }


def node_patch(manager: str, pod_template: dict) -> dict:
    """A runtime patch, by `manager`, of the pod template of the "node" replicatedJob."""
    rjob = {"name": "node", "template": {"spec": {"template": pod_template}}}
    return {
        "manager": manager,
        "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [rjob]}}},
    }


NODE_AND_FOO = runtime(rjob("node", trainer=True), rjob("foo"))


def lookup(rt):
    return TrainJob(lambda ref: rt)


# ---- pod sets (Kueue's TestReconciler) ---------------------------------------------------------


@pytest.mark.parametrize(
    ("tj", "rt", "counts"),
    [
        (trainjob(), NODE_AND_FOO, {"node": 1, "foo": 1}),
        (trainjob(num_nodes=2), NODE_AND_FOO, {"node": 2, "foo": 1}),
        # the ML policy's numNodes counts the trainer step, the TrainJob's overrides it
        (
            trainjob(),
            runtime(rjob("node", trainer=True), ml_policy={"numNodes": 3, "torch": {}}),
            {"node": 3},
        ),
        (
            trainjob(num_nodes=5),
            runtime(rjob("node", trainer=True), ml_policy={"numNodes": 3, "torch": {}}),
            {"node": 5},
        ),
        # a step other than the trainer keeps its parallelism; its replicas multiply
        (
            trainjob(num_nodes=4),
            runtime(rjob("node", trainer=True), rjob("aux", parallelism=2, replicas=3)),
            {"node": 4, "aux": 6},
        ),
        # MPI counts the replicatedJob `node`, one less when the launcher runs as a node
        (
            trainjob(num_nodes=4),
            runtime(
                rjob("launcher", trainer=True),
                rjob("node"),
                ml_policy={"mpi": {"runLauncherAsNode": True}},
            ),
            {"launcher": 1, "node": 3},
        ),
        (
            trainjob(num_nodes=4),
            runtime(rjob("launcher", trainer=True), rjob("node"), ml_policy={"mpi": {}}),
            {"launcher": 1, "node": 4},
        ),
    ],
    ids=[
        "workload is created with the corresponding podsets",
        "podset count for the trainer job is set to .Spec.Trainer.NumNodes",
        "ml-policy-num-nodes",
        "trainjob-num-nodes-over-ml-policy",
        "other-step-parallelism-times-replicas",
        "mpi-launcher-as-node",
        "mpi-launcher-apart",
    ],
)
def test_a_pod_set_per_replicated_job_counted_as_the_trainer_counts(tj, rt, counts):
    pod_sets = lookup(rt).pod_sets(tj)
    assert [ps["name"] for ps in pod_sets] == list(counts)
    assert {ps["name"]: ps["count"] for ps in pod_sets} == counts
    for ps in pod_sets:
        request = ps["topologyRequest"]
        assert request["podIndexLabel"] == "batch.kubernetes.io/job-completion-index"
        assert request["subGroupIndexLabel"] == "jobset.sigs.k8s.io/job-index"


def test_the_trainer_step_takes_the_trainjobs_image_command_resources_and_env():
    tj = trainjob(
        trainer={
            "image": "mine",
            "command": ["python"],
            "env": [{"name": "A", "value": "1"}],
            "resourcesPerNode": {"requests": {"cpu": "4", "memory": "2Gi"}},
        }
    )
    node = child_replicated_jobs(tj, NODE_AND_FOO)[0]
    container = node["template"]["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "mine" and container["command"] == ["python"]
    assert container["resources"] == {"requests": {"cpu": "4", "memory": "2Gi"}}
    assert container["env"] == [{"name": "A", "value": "1"}]
    assert node["replicas"] == 1
    foo = child_replicated_jobs(tj, NODE_AND_FOO)[1]
    assert foo["template"]["spec"]["template"]["spec"]["containers"][0]["image"] == "img"
    workload = build_workload(lookup(NODE_AND_FOO), tj)
    requests = workload["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]
    assert requests == {"requests": {"cpu": "4", "memory": "2Gi"}}


def test_coscheduling_labels_every_pod_template_with_the_trainjob_name():
    rt = runtime(rjob("node", trainer=True), pod_group={"coscheduling": {}})
    template = pod_sets_of(trainjob(), rt)[0]["template"]
    assert template["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "trainjob"


@pytest.mark.parametrize(
    ("rt", "patches", "want"),
    [
        (runtime(rjob("node", trainer=True, **{REQUIRED: RACK})), None, RACK),
        # a runtime patch's annotations reach the pod set
        (
            runtime(rjob("node", trainer=True)),
            [
                node_patch(
                    "example.com/user", {"metadata": {"annotations": {REQUIRED: "cloud.com/block"}}}
                )
            ],
            "cloud.com/block",
        ),
    ],
    ids=["from-the-runtime", "from-a-runtime-patch"],
)
def test_topology_annotations_of_the_merged_template_are_honoured(rt, patches, want):
    request = pod_sets_of(trainjob(patches=patches), rt)[0]["topologyRequest"]
    assert request.get("required") == want


def test_runtime_patches_merge_maps_and_lists_by_key_and_replace_tolerations():
    template = {
        "spec": {
            "template": {
                "metadata": {"labels": {"a": "1"}},
                "spec": {
                    "nodeSelector": {"x": "1"},
                    "tolerations": [{"key": "t1", "operator": "Exists"}],
                    "containers": [
                        {"name": "node", "image": "i", "env": [{"name": "E", "value": "1"}]}
                    ],
                },
            }
        }
    }
    patch = {
        "spec": {
            "template": {
                "metadata": {"labels": {"b": "2"}},
                "spec": {
                    "nodeSelector": {"y": "2"},
                    "tolerations": [{"key": "t2", "operator": "Exists"}],
                    "containers": [{"name": "node", "env": [{"name": "F", "value": "2"}]}],
                },
            }
        }
    }
    merged = strategic_merge(template, patch)["spec"]["template"]
    assert merged["metadata"]["labels"] == {"a": "1", "b": "2"}
    assert merged["spec"]["nodeSelector"] == {"x": "1", "y": "2"}
    assert merged["spec"]["tolerations"] == [{"key": "t2", "operator": "Exists"}]
    container = merged["spec"]["containers"][0]
    assert container["image"] == "i"
    assert container["env"] == [{"name": "E", "value": "1"}, {"name": "F", "value": "2"}]


def test_a_bad_annotation_names_the_replicated_job_and_the_fields_to_adjust():
    rt = runtime(rjob("node", trainer=True, **{"kueue.x-k8s.io/podset-slice-size": "2"}))
    with pytest.raises(TopologyRequestError, match=r"job\[node\]"):
        pod_sets_of(trainjob(), rt)
    reasons = webhook.validate(trainjob(), rt)
    assert len(reasons) == 1 and "job[node]" in reasons[0]
    assert "TrainJob.spec.runtimePatches" in reasons[0]


def test_the_runtime_named_is_cluster_scoped_by_default_or_namespaced():
    assert runtime_ref(trainjob()).resource == CLUSTER_TRAINING_RUNTIME
    assert runtime_ref(trainjob()).namespace is None
    ref = runtime_ref(trainjob(kind="TrainingRuntime"))
    assert (ref.resource, ref.namespace, ref.name) == (TRAINING_RUNTIME, "ns", "test")
    assert ref.path() == "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainingruntimes/test"


def test_a_missing_runtime_is_an_error_naming_the_runtime_ref():
    with pytest.raises(RuntimeNotFound, match=r"spec\.runtimeRef"):
        lookup(None).pod_sets(trainjob())
    assert webhook.validate(trainjob(), None) == [
        "spec.runtimeRef: ClusterTrainingRuntime 'test' not found"
    ]


@settings(max_examples=40, deadline=None)
@given(
    num_nodes=st.integers(1, 64),
    others=st.lists(st.tuples(st.integers(1, 4), st.integers(1, 4)), max_size=3),
)
def test_pod_set_counts_add_up_to_the_pods_the_jobset_will_make(num_nodes, others):
    rjobs = [rjob("node", trainer=True)] + [
        rjob(f"aux-{i}", parallelism=p, replicas=r) for i, (p, r) in enumerate(others)
    ]
    tj, rt = trainjob(num_nodes=num_nodes), runtime(*rjobs)
    pods = sum(
        (rj.get("replicas") or 1) * rj["template"]["spec"]["parallelism"]
        for rj in child_replicated_jobs(tj, rt)
    )
    pod_sets = pod_sets_of(tj, rt)
    assert sum(ps["count"] for ps in pod_sets) == pods == num_nodes + sum(p * r for p, r in others)


# ---- start, stop, restore (Kueue's TestRunWithPodsetsInfo, TestRestorePodSetsInfo) --------------


def kueue_patch(replicated_jobs=None):
    spec = {"replicatedJobs": replicated_jobs} if replicated_jobs else {}
    return {
        "manager": KUEUE_MANAGER,
        "trainingRuntimeSpec": {"template": {"metadata": {"labels": {QUEUE: "q"}}, "spec": spec}},
    }


USER_PATCH = node_patch("example.com/user-manager", {"spec": {"nodeSelector": {"disktype": "sdd"}}})


def started(tj, rt):
    job = lookup(rt)
    workload = admitted(build_workload(job, tj), {"node": [("h1", 1)]})
    first = job.start_patch(tj, workload, FLAVORS)
    return job, workload, first


@pytest.mark.parametrize(
    "patches",
    [[kueue_patch()], [USER_PATCH, kueue_patch()], []],
    ids=[
        "should add to the TrainJob the config specified in the PodSet info",
        "should respect user provided RuntimePatches when adding PodSet info config to the trainjob",
        "kueue-patch-missing-is-added",
    ],
)
def test_start_writes_kueues_runtime_patch_while_suspended_then_unsuspends(patches):
    tj = trainjob(patches=patches)
    rt = runtime(rjob("node", trainer=True), rjob("foo"))
    job, workload, first = started(tj, rt)
    assert "suspend" not in first["spec"]  # the Trainer's webhook wants the patch while suspended
    after = merge_patch(tj, first)
    users = [p for p in after["spec"]["runtimePatches"] if p["manager"] != KUEUE_MANAGER]
    assert users == [p for p in patches if p["manager"] != KUEUE_MANAGER]
    by_name = {rj["name"]: rj for rj in kueue_replicated_jobs(after)}
    node = by_name["node"]["template"]["spec"]["template"]
    assert node["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "node"
    assert node["metadata"]["annotations"]["kueue.x-k8s.io/workload"] == workload.name
    # the flavor's node labels (with the pod set's own: a strategic merge keeps them anyway)
    assert node["spec"]["nodeSelector"]["pool"] == "tas"
    assert node["spec"]["schedulingGates"] == [{"name": GATE}]
    assert node["spec"]["tolerations"] == [
        {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]
    assert "schedulingGates" not in by_name["foo"]["template"]["spec"]["template"]["spec"]
    # the pod sets the JobSet will have carry what the start added
    jobset = {rj["name"]: rj for rj in child_replicated_jobs(after, rt)}
    assert jobset["node"]["template"]["spec"]["template"]["spec"]["nodeSelector"]["pool"] == "tas"
    assert pod_sets_of(after, rt) == pod_sets_of(tj, rt)  # the Workload's: as the user wrote it
    second = job.start_patch(after, workload, FLAVORS)
    assert second["spec"] == {"suspend": False}


def test_start_replaces_existing_kueue_overrides():
    """Kueue's "should replace existing Kueue overrides (idempotency)"."""
    old = [
        {
            "name": "node",
            "template": {
                "spec": {
                    "template": {
                        "metadata": {"annotations": {"test-annotation": "old-value"}},
                        "spec": {"nodeSelector": {"old-selector": "value"}},
                    }
                }
            },
        }
    ]
    tj = trainjob(patches=[USER_PATCH, kueue_patch(old)])
    _, _, first = started(tj, runtime(rjob("node", trainer=True)))
    node = kueue_replicated_jobs(merge_patch(tj, first))[0]["template"]["spec"]["template"]
    assert "test-annotation" not in node["metadata"].get("annotations", {})
    assert node["spec"]["nodeSelector"] == {"disktype": "sdd", "pool": "tas"}


def test_restore_clears_kueues_replicated_job_patches_only():
    """Kueue's "should clear replicated job patches from the kueue RuntimePatch"."""
    tj = trainjob(patches=[USER_PATCH])
    rt = runtime(rjob("node", trainer=True))
    job, workload, first = started(tj, rt)
    running = merge_patch(merge_patch(tj, first), {"spec": {"suspend": False}})
    assert job.restore_patch(running, workload) is None  # not while it runs
    stopped = merge_patch(running, job.stop_patch(running))
    restored = merge_patch(stopped, job.restore_patch(stopped, workload))
    assert kueue_replicated_jobs(restored) == []
    assert restored["spec"]["runtimePatches"][0] == USER_PATCH
    assert job.restore_patch(restored, workload) is None
    assert pod_sets_of(restored, rt) == pod_sets_of(tj, rt)
    assert not needs_new_workload(job, restored, workload)


@pytest.mark.parametrize(
    ("conditions", "want"),
    [
        ([{"type": "Complete", "status": "True", "message": "done"}], (True, "done")),
        ([{"type": "Failed", "status": "True", "message": "oom"}], (False, "oom")),
        ([{"type": "Complete", "status": "False"}], None),
        ([], None),
    ],
    ids=["complete", "failed", "not-yet", "no-conditions"],
)
def test_finished_at_complete_or_failed(conditions, want):
    tj = trainjob()
    tj["status"] = {"conditions": conditions}
    done = lookup(NODE_AND_FOO).finished(tj)
    assert (None if done is None else (done.succeeded, done.message)) == want


# ---- webhooks (Kueue's trainjob_webhook_test.go) -------------------------------------------------


def test_mutate_suspends_and_appends_kueues_runtime_patch_with_the_queue_label():
    tj = trainjob(patches=[USER_PATCH], suspend=False)
    patch = webhook.mutate(tj)
    assert patch["spec"]["suspend"] is True
    assert patch["spec"]["runtimePatches"][0] == USER_PATCH
    ours = patch["spec"]["runtimePatches"][-1]
    assert ours["manager"] == KUEUE_MANAGER
    assert ours["trainingRuntimeSpec"]["template"]["metadata"]["labels"] == {QUEUE: "q"}


@pytest.mark.parametrize(
    ("resources", "want"),
    [
        ({"requests": {"cpu": 1, "memory": "2Gi"}, "limits": {"cpu": 0.5}},
         {"requests": {"cpu": "1"}, "limits": {"cpu": "500m"}}),
        ({"requests": {"cpu": "1", "memory": "2Gi"}}, None),
        ({"requests": {"cpu": True}, "claims": [{"name": "gpu"}]}, None),
        ({"requests": "bad"}, None),
    ],
    ids=["numbers", "strings-already", "not-a-number", "malformed"],
)  # fmt: skip
def test_mutate_writes_numeric_quantities_per_node_as_strings(resources, want):
    """As Kueue's webhook does by rewriting the TrainJob from its Go types: the Trainer's own
    webhook would otherwise rewrite them at Kueue's start, against spec.trainer's immutability."""
    tj = trainjob()
    tj["spec"]["trainer"] = {"numNodes": 1, "resourcesPerNode": resources}
    patch = webhook.mutate(tj)
    assert patch["spec"].get("trainer") == (want and {"resourcesPerNode": want})


def test_mutate_leaves_a_trainjob_without_queue_alone():
    tj = trainjob()
    tj["metadata"]["labels"] = {}
    assert webhook.mutate(tj) == {}


def test_valid_trainjob_is_admitted():
    assert webhook.validate(trainjob(), NODE_AND_FOO) == []


def test_the_child_jobset_is_recognised_by_its_controller_reference():
    jobset = {
        "metadata": {
            "ownerReferences": [
                {
                    "apiVersion": "trainer.kubeflow.org/v1alpha1",
                    "kind": "TrainJob",
                    "name": "t",
                    "uid": "u1",
                    "controller": True,
                }
            ]
        }
    }
    assert controlled_by_trainjob(jobset) == "u1"
    jobset["metadata"]["ownerReferences"][0]["controller"] = False
    assert controlled_by_trainjob(jobset) is None


# Kubeflow Trainer v2.2.0's manifests/base/runtimes/torch_distributed.yaml, its default runtime.
TORCH_DISTRIBUTED = {
    "kind": "ClusterTrainingRuntime",
    "metadata": {"name": "torch-distributed"},
    "spec": {
        "mlPolicy": {"numNodes": 1, "torch": {}},
        "template": {
            "spec": {
                "replicatedJobs": [
                    {
                        "name": "node",
                        "template": {
                            "metadata": {"labels": {ANCESTOR: "trainer"}},
                            "spec": {
                                "template": {
                                    "spec": {
                                        "containers": [
                                            {
                                                "name": "node",
                                                "image": "pytorch/pytorch:2.10.0-cuda12.8-cudnn9-runtime",
                                            }
                                        ]
                                    }
                                }
                            },
                        },
                    }
                ]
            }
        },
    },
}


def test_kueues_sample_trainjob_is_one_pod_set_of_its_nodes():
    path = EXAMPLES / "sample-trainjob.yaml"
    tj = yaml.safe_load(path.read_text())
    assert runtime_ref(tj).name == "torch-distributed"
    tj["metadata"].update(namespace="default", uid="u", resourceVersion="1")
    tj = merge_patch(tj, webhook.mutate(tj))
    assert tj["spec"]["suspend"] is True
    [ps] = build_workload(lookup(TORCH_DISTRIBUTED), tj)["spec"]["podSets"]
    assert (ps["name"], ps["count"]) == ("node", 1)
    container = ps["template"]["spec"]["containers"][0]
    # stored as Kueue's webhook writes it: a number as its quantity string
    assert container["resources"]["requests"] == {"cpu": "1", "memory": "2Gi"}
    assert container["command"][0] == "bash"
