"""The scenarios every replica-specs kind (the Kubeflow training jobs, MPIJob) must pass, as
Kueue's kubeflowjob-based controller tests hold them for each kind: test_replica_specs runs
these tests once for each kind (its `kind` fixture, a `Kind`), with each kind's own tables.

Ported from Kueue v0.17.0 pkg/controller/jobs/kubeflow/jobs/*/*_controller_test.go and
pkg/controller/jobs/mpijob/mpijob_{controller,webhook}_test.go: TestPodSets, TestValidate,
TestOrderedReplicaTypes, TestReconciler ("workload is created with podsets", "when workload is
evicted, suspended is reset, restore node affinity"); plus the invariants they rest on.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.api.annotations import TopologyRequestError
from tas.cache import projections as proj
from tas.jobframework.podset import merge_patch
from tas.jobframework.priority import PriorityClassMissing
from tas.jobframework.replica_specs import REPLICA_INDEX_LABEL, ReplicaSpecsJob
from tas.jobframework.workload import build_workload, needs_new_workload
from tests.unit.integrations.builders import (
    BLOCK,
    FLAVORS,
    PREFERRED,
    QUEUE,
    RACK,
    REQUIRED,
    SLICE_SIZE,
    SLICE_TOPOLOGY,
    admitted,
    container,
)

GATE = "kueue.x-k8s.io/topology"
ONE_TOPOLOGY = "may not be set together"  # our words for Kueue's "more than one topology"


@dataclass(frozen=True)
class Kind:
    job: ReplicaSpecsJob
    webhook: ModuleType

    @property
    def types(self) -> tuple[str, ...]:
        return self.job.replica_types

    def path(self, replica_type: str) -> str:
        return f"spec.{self.job.field}[{replica_type}].template.metadata.annotations"


def replica(replicas: int | None = 1, priority_class: str | None = None, **annotations) -> dict:
    spec: dict = {"containers": [container()], "restartPolicy": "Never"}
    if priority_class:
        spec["priorityClassName"] = priority_class
    out: dict = {"template": {"metadata": {"annotations": dict(annotations)}, "spec": spec}}
    if replicas is not None:
        out["replicas"] = replicas
    return out


def training_job(
    kind: Kind, specs: dict[str, dict], *, suspend: bool = True, run_policy: dict | None = None
) -> dict:
    resource = kind.job.resource
    return {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": {
            "name": "job",
            "namespace": "ns",
            "uid": "job-uid",
            "resourceVersion": "5",
            "labels": {QUEUE: "q"},
        },
        "spec": {
            "runPolicy": {"suspend": suspend, **(run_policy or {})},
            kind.job.field: copy.deepcopy(specs),
        },
    }


def every_type(kind: Kind, replicas: int = 1, **annotations) -> dict:
    return training_job(kind, {t: replica(replicas, **annotations) for t in kind.types})


# ---- TestOrderedReplicaTypes, TestPodSets ------------------------------------------------------


def test_job_has_no_replicas(kind):
    assert kind.job.pod_sets(training_job(kind, {})) == []


def test_job_has_all_replicas_in_kueues_order(kind):
    reversed_specs = {t: replica(i + 1) for i, t in reversed(list(enumerate(kind.types)))}
    pod_sets = kind.job.pod_sets(training_job(kind, reversed_specs))
    assert [ps["name"] for ps in pod_sets] == [t.lower() for t in kind.types]
    assert [ps["count"] for ps in pod_sets] == [i + 1 for i in range(len(kind.types))]


def test_job_only_has_the_last_replica_type(kind):
    last = kind.types[-1]
    pod_sets = kind.job.pod_sets(training_job(kind, {last: replica(3), "Unknown": replica(2)}))
    assert [(ps["name"], ps["count"]) for ps in pod_sets] == [(last.lower(), 3)]


def test_no_annotations(kind):
    job = training_job(kind, {t: replica(None) for t in kind.types})  # replicas default 1
    pod_sets = kind.job.pod_sets(job)
    for ps, t in zip(pod_sets, kind.types, strict=True):
        assert ps["count"] == 1
        assert ps["template"] == job["spec"][kind.job.field][t]["template"]
        assert ps["topologyRequest"] == {"podIndexLabel": REPLICA_INDEX_LABEL}


def test_with_required_and_preferred_topology_annotation(kind):
    first, last = kind.types[0], kind.types[-1]
    specs = {t: replica(2) for t in kind.types}
    specs[first] = replica(1, **{REQUIRED: RACK})
    specs[last] = replica(2, **{PREFERRED: BLOCK})  # the same type for a one-type kind
    requests = {
        ps["name"]: ps.get("topologyRequest") for ps in kind.job.pod_sets(training_job(kind, specs))
    }
    assert requests[last.lower()] == {"preferred": BLOCK, "podIndexLabel": REPLICA_INDEX_LABEL}
    if first != last:
        assert requests[first.lower()] == {"required": RACK, "podIndexLabel": REPLICA_INDEX_LABEL}


# ---- TestValidate (and the webhook) ------------------------------------------------------------


def test_validate_no_annotations(kind):
    assert kind.webhook.validate(every_type(kind)) == []


def test_validate_valid_tas_request(kind):
    specs = {t: replica(3, **{PREFERRED: BLOCK}) for t in kind.types}
    specs[kind.types[0]] = replica(1, **{REQUIRED: RACK})
    assert kind.webhook.validate(training_job(kind, specs)) == []


def test_validate_invalid_tas_request_names_every_replica_type(kind):
    job = every_type(kind, 3, **{REQUIRED: RACK, PREFERRED: BLOCK})
    reasons = kind.webhook.validate(job)
    assert len(reasons) == len(kind.types)
    for reason, t in zip(reasons, kind.types, strict=True):
        assert reason.startswith(kind.path(t) + ":")
        assert ONE_TOPOLOGY in reason


def test_validate_invalid_slice_topology_request_slice_size_larger_than_number_of_podsets(kind):
    specs = {
        t: replica(5 * (i + 1), **{REQUIRED: RACK, SLICE_TOPOLOGY: BLOCK, SLICE_SIZE: "1000"})
        for i, t in enumerate(kind.types)
    }
    reasons = kind.webhook.validate(training_job(kind, specs))
    for reason, (i, t) in zip(reasons, enumerate(kind.types), strict=True):
        assert reason.startswith(kind.path(t))
        assert f'annotation "{SLICE_SIZE}"' in reason
        assert f"must not be greater than the pod set count {5 * (i + 1)}" in reason


@pytest.mark.parametrize("bad", [{REQUIRED: "not a label!"}, {SLICE_SIZE: "2"}])
def test_a_bad_annotation_in_any_template_raises_naming_that_template(kind, bad):
    for t in kind.types:
        specs = {other: replica(2, **{REQUIRED: RACK}) for other in kind.types}
        specs[t] = replica(2, **bad)
        with pytest.raises(TopologyRequestError) as refused:
            kind.job.pod_sets(training_job(kind, specs))
        assert str(refused.value).startswith(kind.path(t) + ":")


def test_every_templates_topology_annotations_are_its_own_pod_sets(kind):
    levels = [f"cloud.com/level-{i}" for i in range(len(kind.types))]
    specs = {
        t: replica(4, **{REQUIRED: level}) for t, level in zip(kind.types, levels, strict=True)
    }
    pod_sets = kind.job.pod_sets(training_job(kind, specs))
    assert [ps["topologyRequest"]["required"] for ps in pod_sets] == levels


# ---- the webhook's mutation ---------------------------------------------------------------------


def test_a_queued_job_is_created_suspended(kind):
    job = training_job(kind, {kind.types[-1]: replica(2)}, suspend=False)
    patch = kind.webhook.mutate(job)
    assert patch["spec"]["runPolicy"] == {"suspend": True}
    assert kind.job.suspended(merge_patch(job, patch))
    assert kind.webhook.mutate(merge_patch(job, patch)) == {}


# ---- TestReconciler -----------------------------------------------------------------------------


def test_workload_is_created_with_podsets(kind):
    workload = build_workload(kind.job, every_type(kind, 2))
    resource = kind.job.resource
    assert workload["metadata"]["name"].startswith(f"{resource.kind.lower()}-job-")
    assert workload["metadata"]["ownerReferences"] == [
        {
            "apiVersion": resource.api_version,
            "kind": resource.kind,
            "name": "job",
            "uid": "job-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert workload["spec"]["queueName"] == "q"
    assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == [
        (t.lower(), 2) for t in kind.types
    ]


def _admitted(kind: Kind, job: dict) -> proj.WorkloadInfo:
    return admitted(
        build_workload(kind.job, job),
        {ps["name"]: [("h1", ps["count"])] for ps in kind.job.pod_sets(job)},
    )


def test_start_gates_every_template_with_the_flavor_and_unsuspends(kind):
    job = every_type(kind, 2, **{REQUIRED: RACK})
    workload = _admitted(kind, job)
    patch = kind.job.start_patch(job, workload, FLAVORS)
    assert patch["metadata"] == {"resourceVersion": "5"}  # guarded
    assert patch["spec"]["runPolicy"] == {"suspend": False}
    started = merge_patch(job, patch)
    assert not kind.job.suspended(started)
    for t in kind.types:
        spec = started["spec"][kind.job.field][t]
        assert spec["replicas"] == 2  # a merge patch merges the map: only templates change
        meta, pod_spec = spec["template"]["metadata"], spec["template"]["spec"]
        assert meta["labels"] == {"kueue.x-k8s.io/podset": t.lower()}
        assert meta["annotations"] == {REQUIRED: RACK, "kueue.x-k8s.io/workload": workload.name}
        assert pod_spec["schedulingGates"] == [{"name": GATE}]
        assert pod_spec["nodeSelector"] == {"pool": "tas"}
        assert pod_spec["tolerations"] == [
            {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}
        ]


def test_when_workload_is_evicted_suspended_is_reset_restore_node_affinity(kind):
    job = every_type(kind, 2, **{REQUIRED: RACK})
    workload = _admitted(kind, job)
    running = merge_patch(job, kind.job.start_patch(job, workload, FLAVORS))
    pending = proj.workload_from_object(build_workload(kind.job, job))
    assert kind.job.restore_patch(running, pending) is None  # never while it runs
    stopped = merge_patch(running, kind.job.stop_patch(running))
    assert kind.job.suspended(stopped)
    restored = merge_patch(stopped, kind.job.restore_patch(stopped, pending))
    assert restored == job
    assert kind.job.restore_patch(restored, pending) is None
    assert not needs_new_workload(kind.job, restored, pending)
    assert not kind.job.needs_start_time_reset(stopped)


def strict_merge_patch(target: object, patch: dict) -> dict:
    """RFC 7386 as the API server applies it to a custom resource: a map emptied by deletions
    stays, as {} (only built-in types drop it, by `omitempty`)."""
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = strict_merge_patch(out.get(key), value) if isinstance(value, dict) else value
    return out


def test_a_restored_custom_resource_keeps_no_emptied_map_as_kueues_typed_write(kind):
    # Templates without labels, annotations or nodeSelector: what a start adds goes entirely.
    job = every_type(kind, 2)
    for t in kind.types:
        del job["spec"][kind.job.field][t]["template"]["metadata"]["annotations"]
    workload = _admitted(kind, job)
    running = strict_merge_patch(job, kind.job.start_patch(job, workload, FLAVORS))
    stopped = strict_merge_patch(running, kind.job.stop_patch(running))
    pending = proj.workload_from_object(build_workload(kind.job, job))
    restored = strict_merge_patch(stopped, kind.job.restore_patch(stopped, pending))
    for t in kind.types:
        template = restored["spec"][kind.job.field][t]["template"]
        assert template == job["spec"][kind.job.field][t]["template"], t


def test_a_suspended_job_resized_needs_a_new_workload(kind):
    job = every_type(kind, 2)
    pending = proj.workload_from_object(build_workload(kind.job, job))
    resized = copy.deepcopy(job)
    resized["spec"][kind.job.field][kind.types[-1]]["replicas"] = 3
    assert needs_new_workload(kind.job, resized, pending)


@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        ([], None),
        ([{"type": "Running", "status": "True"}], None),
        (
            [
                {"type": "Running", "status": "False"},
                {"type": "Succeeded", "status": "True", "message": "job succeeded"},
            ],
            (True, "job succeeded"),
        ),
        ([{"type": "Failed", "status": "True", "reason": "BackoffLimit"}], (False, "BackoffLimit")),
        ([{"type": "Succeeded", "status": "False"}], None),
    ],
    ids=["no-conditions", "running", "succeeded", "failed", "not-yet"],
)
def test_finished_reads_the_succeeded_and_failed_conditions(kind, conditions, expected):
    job = every_type(kind)
    job["status"] = {"conditions": conditions}
    done = kind.job.finished(job)
    assert (done.succeeded, done.message) == expected if expected else done is None


# ---- the pods the training operator creates ------------------------------------------------------


def operator_pods(kind: Kind, job: dict) -> list[tuple[str, int]]:
    """(replica type, replica index) of every pod the training operator creates: `replicas`
    (default 1) per replica type it runs, indexed 0 .. replicas - 1."""
    specs = job["spec"][kind.job.field]
    return [
        (t, index)
        for t in kind.types
        if t in specs
        for index in range(1 if specs[t].get("replicas") is None else specs[t]["replicas"])
    ]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_pod_set_counts_are_the_pods_the_operator_creates(kind, data):
    present = data.draw(st.lists(st.sampled_from(kind.types), unique=True))
    specs = {t: replica(data.draw(st.one_of(st.none(), st.integers(0, 50)))) for t in present}
    job = training_job(kind, specs)
    pods = operator_pods(kind, job)
    pod_sets = kind.job.pod_sets(job)
    assert sum(ps["count"] for ps in pod_sets) == len(pods)
    for ps in pod_sets:
        indexes = sorted(i for t, i in pods if t.lower() == ps["name"])
        assert indexes == list(range(ps["count"]))  # every rank of the pod set, once
        assert ps["topologyRequest"]["podIndexLabel"] == REPLICA_INDEX_LABEL


# ---- TestPriorityClass: each kind's table calls this ---------------------------------------------


def resolved_priority_class(
    kind: Kind, templates: dict[str, str | None], run_policy_class: str | None = None
) -> str | None:
    """The PriorityClass a new Workload takes, every class named existing in the cluster:
    `templates` maps a replica type to its template's priorityClassName (None: none)."""
    specs = {t: replica(1, priority_class=name) for t, name in templates.items()}
    policy = {"schedulingPolicy": {"priorityClass": run_policy_class}} if run_policy_class else {}
    job = training_job(kind, specs, run_policy=policy)
    named = {n for n in [run_policy_class, *templates.values()] if n}
    classes = {n: proj.PodPriorityClass(value=100 + i) for i, n in enumerate(sorted(named))}
    spec = build_workload(kind.job, job, classes=({}, classes))["spec"]
    ref = spec.get("priorityClassRef")
    if ref:
        assert spec["priority"] == classes[ref["name"]].value
    return ref["name"] if ref else None


def leader_and_worker_priority_classes(leader: str) -> list:
    """Kueue's TestPriorityClass table (run policy's class, templates' classes, the class the
    Workload takes) for a kind of a leader replica type and Workers (Master for PyTorchJob,
    PaddleJob and XGBoostJob; Launcher for MPIJob's TestCalcPriorityClassName), by case name."""
    lead = leader.lower()
    return [
        pytest.param(None, {}, None, id="none priority class name specified"),
        pytest.param(
            "scheduling-priority",
            {leader: f"{lead}-priority", "Worker": "worker-priority"},
            "scheduling-priority",
            id="priority specified at runPolicy and replicas; use priority in runPolicy",
        ),
        pytest.param(
            None,
            {leader: f"{lead}-priority"},
            f"{lead}-priority",
            id=f"runPolicy present, but without priority; fallback to {lead}",
        ),
        pytest.param(
            None,
            {leader: f"{lead}-priority", "Worker": "worker-priority"},
            f"{lead}-priority",
            id=f"specified on {lead} takes precedence over worker",
        ),
        pytest.param(
            None,
            {leader: None, "Worker": "worker-priority"},
            "worker-priority",
            id=f"{lead} present, but without priority; fallback to worker",
        ),
        pytest.param(
            None, {"Worker": "worker-priority"}, "worker-priority", id="specified on worker only"
        ),
        pytest.param(
            None,
            {"Worker": None},
            None,
            id="worker present, but without priority; fallback to empty",
        ),
    ]


def test_a_missing_run_policy_priority_class_is_refused_naming_its_field(kind):
    job = training_job(
        kind,
        {kind.types[-1]: replica(1, priority_class="there")},
        run_policy={"schedulingPolicy": {"priorityClass": "missing"}},
    )
    classes = {"there": proj.PodPriorityClass(value=1)}
    with pytest.raises(
        PriorityClassMissing,
        match=r"^spec\.runPolicy\.schedulingPolicy\.priorityClass: .*'missing'",
    ):
        build_workload(kind.job, job, classes=({}, classes))
