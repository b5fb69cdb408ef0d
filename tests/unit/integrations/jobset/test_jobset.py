"""JobSet as a GenericJob: pod sets, validation messages, start and restore (Kueue's
jobset_controller_test.go and jobset_webhook_test.go scenarios, as tables)."""

from __future__ import annotations

import pytest

from tas.api.annotations import TopologyRequestError
from tas.cache import projections as proj
from tas.integrations.jobset.controller import JOB_SET
from tas.jobframework.podset import merge_patch
from tas.jobframework.workload import build_workload, needs_new_workload
from tests.unit.gates import gates
from tests.unit.integrations.builders import (
    BLOCK,
    FLAVORS,
    GROUP,
    PREFERRED,
    RACK,
    REQUIRED,
    SLICE_SIZE,
    SLICE_TOPOLOGY,
    admitted,
    jobset,
    replicated_job,
)

GATE = "kueue.x-k8s.io/topology"


@pytest.mark.parametrize(
    ("replicated", "counts"),
    [
        ([replicated_job("a", replicas=1, parallelism=4)], {"a": 4}),
        ([replicated_job("a", replicas=3, parallelism=2)], {"a": 6}),
        # parallelism capped by completions (Kueue's PodsCountPerReplica)
        ([replicated_job("a", replicas=2, parallelism=5, completions=3)], {"a": 6}),
        (
            [
                replicated_job("driver", replicas=1),
                replicated_job("workers", replicas=4, parallelism=2),
            ],
            {"driver": 1, "workers": 8},
        ),
    ],
    ids=["one-job", "replicas-x-parallelism", "completions-cap", "two-replicated-jobs"],
)
def test_each_replicated_job_is_a_pod_set_of_replicas_times_parallelism(replicated, counts):
    pod_sets = JOB_SET.pod_sets(jobset(*replicated))
    assert {ps["name"]: ps["count"] for ps in pod_sets} == counts
    for ps, rj in zip(pod_sets, replicated, strict=True):
        request = ps["topologyRequest"]
        # ranked by the Job's index within its replicatedJob, then the completion index
        assert request["podIndexLabel"] == "batch.kubernetes.io/job-completion-index"
        assert request["subGroupIndexLabel"] == "jobset.sigs.k8s.io/job-index"
        assert request["subGroupCount"] == rj["replicas"]


def test_topology_annotations_of_each_replicated_job_are_its_pod_sets_request():
    js = jobset(
        replicated_job("req", replicas=1, parallelism=4, **{REQUIRED: RACK}),
        replicated_job("pref", replicas=1, parallelism=2, **{PREFERRED: BLOCK}),
        replicated_job(
            "sliced", replicas=2, parallelism=4, **{SLICE_TOPOLOGY: RACK, SLICE_SIZE: "4"}
        ),
        replicated_job(
            "both",
            replicas=2,
            parallelism=4,
            **{REQUIRED: BLOCK, SLICE_TOPOLOGY: RACK, SLICE_SIZE: "4"},
        ),
        replicated_job(
            "layers",
            replicas=2,
            parallelism=4,
            **{
                "kueue.x-k8s.io/podset-slice-required-topology-constraints": (
                    f'[{{"topology": "{BLOCK}", "size": 8}}, {{"topology": "{RACK}", "size": 4}}]'
                )
            },
        ),
        replicated_job(
            "free",
            replicas=1,
            parallelism=3,
            **{"kueue.x-k8s.io/podset-unconstrained-topology": "true"},
        ),
    )
    with gates(TASMultiLayerTopology=True):  # the "layers" job's constraints need it
        requests = {ps["name"]: ps["topologyRequest"] for ps in JOB_SET.pod_sets(js)}
    assert requests["req"]["required"] == RACK
    assert requests["pref"]["preferred"] == BLOCK
    assert (
        requests["sliced"]["podSetSliceRequiredTopology"],
        requests["sliced"]["podSetSliceSize"],
    ) == (RACK, 4)
    assert requests["both"]["required"] == BLOCK and requests["both"]["podSetSliceSize"] == 4
    assert requests["layers"]["podsetSliceRequiredTopologyConstraints"] == [
        {"topology": BLOCK, "size": 8},
        {"topology": RACK, "size": 4},
    ]
    assert requests["free"]["unconstrained"] is True


# ---- the webhook's refusals name the annotation and the replicatedJob ---------------------------


@pytest.mark.parametrize(
    ("replicated", "index", "annotation", "problem"),
    [
        (
            [
                replicated_job("launcher", **{REQUIRED: BLOCK}),
                replicated_job("worker", **{PREFERRED: BLOCK, REQUIRED: BLOCK}),
            ],
            1,
            PREFERRED,
            "may not be set together",
        ),
        (
            [
                replicated_job(
                    "job1", replicas=2, **{REQUIRED: BLOCK, SLICE_TOPOLOGY: BLOCK, SLICE_SIZE: "20"}
                )
            ],
            0,
            SLICE_SIZE,
            "must not be greater than the pod set count 2",
        ),
        (
            [
                replicated_job(
                    "w", replicas=2, parallelism=2, **{SLICE_SIZE: "x", SLICE_TOPOLOGY: RACK}
                )
            ],
            0,
            SLICE_SIZE,
            "must be an integer",
        ),
        ([replicated_job("w", **{REQUIRED: "not a label!"})], 0, REQUIRED, "must be a label key"),
        (
            [
                replicated_job("job1", **{REQUIRED: BLOCK, GROUP: "1podset"}),
                replicated_job("job2", **{REQUIRED: BLOCK, GROUP: "other"}),
            ],
            0,
            GROUP,
            "must join exactly 2 pod sets",
        ),
        (
            [
                replicated_job("job1", replicas=2, **{REQUIRED: BLOCK, GROUP: "g"}),
                replicated_job("job2", replicas=1, parallelism=3, **{REQUIRED: BLOCK, GROUP: "g"}),
            ],
            1,
            GROUP,
            "needs one pod set with count 1",
        ),
        (
            [
                replicated_job("job1", **{REQUIRED: RACK, GROUP: "g"}),
                replicated_job("job2", replicas=2, **{REQUIRED: BLOCK, GROUP: "g"}),
            ],
            1,
            GROUP,
            "needs the same",
        ),
    ],
    ids=[
        "two-modes",
        "slice-size-over-count",
        "slice-size-not-int",
        "bad-level",
        "group-of-one",
        "no-leader",
        "modes-differ",
    ],
)
def test_an_invalid_annotation_is_refused_naming_it_and_its_replicated_job(
    replicated, index, annotation, problem
):
    with pytest.raises(TopologyRequestError) as refused:
        JOB_SET.pod_sets(jobset(*replicated))
    message = str(refused.value)
    assert f"spec.replicatedJobs[{index}].template.spec.template.metadata.annotations" in message
    assert f"replicatedJob {replicated[index]['name']!r}" in message
    assert f'annotation "{annotation}"' in message
    assert problem in message


def test_a_valid_leader_and_workers_group_is_accepted():
    js = jobset(
        replicated_job("launcher", **{REQUIRED: BLOCK, GROUP: "g"}),
        replicated_job("worker", replicas=4, **{REQUIRED: BLOCK, GROUP: "g"}),
    )
    assert [ps["count"] for ps in JOB_SET.pod_sets(js)] == [1, 4]


# ---- start, stop, restore ----------------------------------------------------------------------


def two_jobs() -> dict:
    return jobset(
        replicated_job("driver", **{REQUIRED: RACK}),
        replicated_job("workers", replicas=2, parallelism=2, **{REQUIRED: RACK}),
    )


def test_start_gates_every_template_with_the_flavor_and_unsuspends():
    js = two_jobs()
    workload = admitted(
        build_workload(JOB_SET, js), {"driver": [("h1", 1)], "workers": [("h1", 4)]}
    )
    patch = JOB_SET.start_patch(js, workload, FLAVORS)
    assert patch["metadata"] == {"resourceVersion": "5"}  # guarded
    assert patch["spec"]["suspend"] is False
    rjobs = patch["spec"]["replicatedJobs"]  # a merge patch replaces the list whole
    assert [rj["name"] for rj in rjobs] == ["driver", "workers"]
    for rj in rjobs:
        template = rj["template"]["spec"]["template"]
        assert template["metadata"]["labels"] == {"kueue.x-k8s.io/podset": rj["name"]}
        assert template["metadata"]["annotations"]["kueue.x-k8s.io/workload"] == workload.name
        assert template["metadata"]["annotations"][REQUIRED] == RACK  # the user's kept
        assert template["spec"]["schedulingGates"] == [{"name": GATE}]
        assert template["spec"]["nodeSelector"] == {"pool": "tas"}
        assert template["spec"]["tolerations"] == [
            {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}
        ]
        assert (
            rj["replicas"]
            == next(r for r in js["spec"]["replicatedJobs"] if r["name"] == rj["name"])["replicas"]
        )


def test_a_stopped_jobset_gets_back_the_templates_the_user_wrote():
    js = two_jobs()
    workload = admitted(
        build_workload(JOB_SET, js), {"driver": [("h1", 1)], "workers": [("h1", 4)]}
    )
    running = merge_patch(js, JOB_SET.start_patch(js, workload, FLAVORS))
    stopped = merge_patch(running, JOB_SET.stop_patch(running))
    assert stopped["spec"]["suspend"] is True
    pending = proj.workload_from_object(build_workload(JOB_SET, js))
    restore = JOB_SET.restore_patch(stopped, pending)
    restored = merge_patch(stopped, restore)
    assert restored["spec"]["replicatedJobs"] == js["spec"]["replicatedJobs"]
    assert JOB_SET.restore_patch(restored, pending) is None
    assert not needs_new_workload(JOB_SET, restored, pending)
    assert JOB_SET.restore_patch(running, pending) is None  # never while it runs


def test_a_suspended_jobset_resized_needs_a_new_workload():
    js = two_jobs()
    pending = proj.workload_from_object(build_workload(JOB_SET, js))
    resized = two_jobs()
    resized["spec"]["replicatedJobs"][1]["replicas"] = 3
    assert needs_new_workload(JOB_SET, resized, pending)


@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        ([], None),
        (
            [{"type": "Completed", "status": "True", "message": "jobset completed successfully"}],
            (True, "jobset completed successfully"),
        ),
        (
            [{"type": "Failed", "status": "True", "reason": "FailurePolicy"}],
            (False, "FailurePolicy"),
        ),
        ([{"type": "Completed", "status": "False"}], None),
    ],
    ids=["running", "completed", "failed", "not-yet"],
)
def test_finished_reads_the_jobset_conditions(conditions, expected):
    js = two_jobs()
    js["status"] = {"conditions": conditions}
    done = JOB_SET.finished(js)
    assert (done.succeeded, done.message) == expected if expected else done is None


def test_the_workload_is_named_and_owned_as_kueue_does():
    workload = build_workload(JOB_SET, two_jobs())
    assert workload["metadata"]["name"].startswith("jobset-js-")
    [owner] = workload["metadata"]["ownerReferences"]
    assert owner == {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "name": "js",
        "uid": "js-uid",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert workload["spec"]["queueName"] == "q"
