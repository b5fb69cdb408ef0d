"""MPIJob: Kueue's mpijob_controller_test.go (TestCalcPriorityClassName, TestPodSets,
TestReconciler) and mpijob_webhook_test.go (TestValidateCreate, TestDefault) by case name.
test_replica_specs runs its priority table, and every scenario replica-specs kinds share, for
each kind."""

from __future__ import annotations

import pytest

from tas.integrations.mpijob import webhook
from tas.integrations.mpijob.controller import MPI_JOB
from tas.jobframework.podset import merge_patch
from tests.unit.integrations.builders import BLOCK, GROUP, PREFERRED, RACK, REQUIRED
from tests.unit.integrations.replica_specs_cases import (
    Kind,
    leader_and_worker_priority_classes,
    replica,
    training_job,
)

KIND = Kind(MPI_JOB, webhook)
OFFSET = "kueue.x-k8s.io/pod-index-offset"
LAUNCHER_PATH = KIND.path("Launcher")
WORKER_PATH = KIND.path("Worker")


def test_the_kind_is_kueues():
    assert KIND.types == ("Launcher", "Worker")
    assert MPI_JOB.field == "mpiReplicaSpecs"
    assert MPI_JOB.resource.api_version == "kubeflow.org/v2beta1"


# Kueue's TestCalcPriorityClassName; test_replica_specs runs it with the other kinds' tables
PRIORITY_CLASS = leader_and_worker_priority_classes("Launcher")


@pytest.mark.parametrize(
    ("annotation", "field", "level"),
    [(REQUIRED, "required", RACK), (PREFERRED, "preferred", BLOCK)],
    ids=["with required topology annotation", "with preferred topology annotation"],
)
def test_pod_sets(annotation, field, level):
    job = training_job(
        KIND,
        {
            "Launcher": replica(1, **{annotation: level}),
            "Worker": replica(2, **{annotation: level}),
        },
    )
    pod_sets = MPI_JOB.pod_sets(job)
    assert [(ps["name"], ps["count"]) for ps in pod_sets] == [("launcher", 1), ("worker", 2)]
    for ps in pod_sets:
        assert ps["topologyRequest"] == {
            field: level,
            "podIndexLabel": "training.kubeflow.org/replica-index",
        }


# ---- TestValidateCreate ------------------------------------------------------------------------


def launcher_and_workers(launcher: dict, worker: dict, launchers: int = 1) -> dict:
    return training_job(
        KIND, {"Launcher": replica(launchers, **launcher), "Worker": replica(3, **worker)}
    )


@pytest.mark.parametrize(
    "job",
    [
        launcher_and_workers({REQUIRED: BLOCK}, {REQUIRED: BLOCK}),
        launcher_and_workers(
            {GROUP: "groupname", REQUIRED: BLOCK}, {GROUP: "groupname", REQUIRED: BLOCK}
        ),
    ],
    ids=["valid topology request", "valid PodSet grouping request"],
)
def test_validate_create_admits(job):
    assert webhook.validate(job) == []
    assert [ps["count"] for ps in MPI_JOB.pod_sets(job)] == [1, 3]


@pytest.mark.parametrize(
    ("job", "paths", "problem"),
    [
        (
            launcher_and_workers(
                {REQUIRED: BLOCK, PREFERRED: BLOCK}, {REQUIRED: BLOCK, PREFERRED: BLOCK}
            ),
            [LAUNCHER_PATH, WORKER_PATH],
            "may not be set together",
        ),
        (
            launcher_and_workers(
                {GROUP: "groupname1", REQUIRED: BLOCK}, {GROUP: "groupname2", REQUIRED: BLOCK}
            ),
            [LAUNCHER_PATH],  # the first group found; Kueue lists the Worker's too
            "must join exactly 2 pod sets, got 1",
        ),
        (
            launcher_and_workers(
                {GROUP: "groupname", REQUIRED: BLOCK}, {GROUP: "groupname", REQUIRED: BLOCK}, 2
            ),
            [WORKER_PATH],
            "needs one pod set with count 1 (the leader), got counts 2 and 3",
        ),
        (
            launcher_and_workers(
                {GROUP: "groupname", REQUIRED: BLOCK}, {GROUP: "groupname", REQUIRED: RACK}
            ),
            [WORKER_PATH],
            "needs the same",
        ),
        (
            launcher_and_workers(
                {GROUP: "groupname", PREFERRED: BLOCK}, {GROUP: "groupname", PREFERRED: RACK}
            ),
            [WORKER_PATH],
            "needs the same",
        ),
        (
            launcher_and_workers(
                {GROUP: "groupname", REQUIRED: BLOCK}, {GROUP: "groupname", PREFERRED: RACK}
            ),
            [WORKER_PATH],
            "needs the same",
        ),
    ],
    ids=[
        "invalid topology request",
        "invalid PodSet grouping request - groups of size other than 2",
        "invalid PodSet grouping request - no leader in group",
        "invalid PodSet grouping request - required topology does not match",
        "invalid PodSet grouping request - preferred topology does not match",
        "invalid PodSet grouping request - different topology annotations within group",
    ],
)
def test_validate_create_refuses_naming_the_template(job, paths, problem):
    reasons = webhook.validate(job)
    assert [r.split(":")[0] for r in reasons] == paths
    assert all(problem in r for r in reasons)


# ---- TestDefault (the TAS cases) ---------------------------------------------------------------


def mpijob(run_launcher_as_worker: bool | None, launcher: dict | None = None, **worker) -> dict:
    job = launcher_and_workers(launcher or {}, worker)
    job["spec"]["runPolicy"]["suspend"] = False
    if run_launcher_as_worker is not None:
        job["spec"]["runLauncherAsWorker"] = run_launcher_as_worker
    return job


@pytest.mark.parametrize(
    ("job", "tas", "offset"),
    [
        (mpijob(True), True, True),
        (mpijob(False), True, False),
        (mpijob(None), True, False),
        (mpijob(True), False, False),
        (mpijob(True, **{"existing-annotation": "value"}), True, True),
        (mpijob(True, {GROUP: "group1"}), True, False),
    ],
    ids=[
        "TAS enabled, RunLauncherAsWorker true with 2 replica specs",
        "TAS enabled, RunLauncherAsWorker false",
        "TAS enabled, RunLauncherAsWorker nil",
        "TAS disabled, RunLauncherAsWorker true",
        "TAS enabled, RunLauncherAsWorker true, Worker has existing annotations",
        "TAS enabled, RunLauncherAsWorker true, Launcher has PodSetGroupName annotation",
    ],
)
def test_default(job, tas, offset):
    defaulted = merge_patch(job, webhook.mutate(job, tas=tas))
    assert MPI_JOB.suspended(defaulted)
    specs = job["spec"]["mpiReplicaSpecs"]
    want = {k: {**v} for k, v in specs.items()}
    if offset:
        want["Worker"]["template"] = merge_patch(
            want["Worker"]["template"], {"metadata": {"annotations": {OFFSET: "1"}}}
        )
    assert defaulted["spec"]["mpiReplicaSpecs"] == want


def test_default_tas_enabled_run_launcher_as_worker_true_only_launcher_replica():
    job = training_job(KIND, {"Launcher": replica(1)})
    job["spec"]["runLauncherAsWorker"] = True
    assert webhook.mutate(job) == {}  # created suspended already; no workers to offset


def test_with_the_offset_the_workers_ranks_follow_the_launchers():
    """mpi-operator numbers a working launcher 0 and the workers 1 .. n: less the offset, the
    workers' ranks are 0 .. n - 1, every rank of their pod set once."""
    job = merge_patch(mpijob(True), webhook.mutate(mpijob(True)))
    worker = next(ps for ps in MPI_JOB.pod_sets(job) if ps["name"] == "worker")
    offset = int(worker["template"]["metadata"]["annotations"][OFFSET])
    assert sorted(index + 1 - offset for index in range(worker["count"])) == list(
        range(worker["count"])
    )
