"""TFJob: Kueue's tfjob_controller_test.go tables (TestPriorityClass, TestOrderedReplicaTypes,
TestPodSets, TestValidate, TestReconciler) by case name, and the scenarios every replica-specs
kind passes (replica_specs_cases)."""

from __future__ import annotations

import pytest

from tas.integrations.tfjob import webhook
from tas.integrations.tfjob.controller import TF_JOB
from tests.unit.integrations.replica_specs_cases import *  # noqa: F403 - run here for this kind
from tests.unit.integrations.replica_specs_cases import (
    Kind,
    replica,
    resolved_priority_class,
    training_job,
)

KIND = Kind(TF_JOB, webhook)


@pytest.fixture(scope="module")  # immutable: shared by the hypothesis examples too
def kind() -> Kind:
    return KIND


def test_the_kind_is_kueues():
    assert KIND.types == ("Chief", "Master", "PS", "Worker", "Evaluator")
    assert TF_JOB.field == "tfReplicaSpecs"


ALL = {
    "Chief": "chief-priority",
    "PS": "ps-priority",
    "Worker": "worker-priority",
    "Evaluator": "eval-priority",
}


@pytest.mark.parametrize(
    ("run_policy", "templates", "want"),
    [
        (None, {}, None),
        (
            "scheduling-priority",
            {"Chief": "chief-priority", "Worker": "worker-priority"},
            "scheduling-priority",
        ),
        (None, {"Chief": "chief-priority"}, "chief-priority"),
        (None, ALL, "chief-priority"),
        (None, {"Chief": None, "Evaluator": "eval-priority"}, "eval-priority"),
        (None, {"Chief": None, "Worker": "worker-priority"}, "worker-priority"),
        (None, {"Chief": None, "Evaluator": None}, None),
    ],
    ids=[
        "none priority class name specified",
        "priority specified at runPolicy and replicas; use priority in runPolicy",
        "runPolicy present, but without priority; fallback to chief",
        "specified on chief takes precedence over chief",
        "chief present, but without priority; fallback to evaluator",
        "specified on worker only",
        "evaluator present, but without priority; fallback to empty",
    ],
)
def test_priority_class(run_policy, templates, want):
    assert resolved_priority_class(KIND, templates, run_policy) == want


@pytest.mark.parametrize(
    ("present", "want"),
    [
        ([], []),
        (
            ["Evaluator", "Worker", "PS", "Master", "Chief"],
            ["chief", "master", "ps", "worker", "evaluator"],
        ),
        (["Worker"], ["worker"]),
    ],
    ids=["job has no replicas", "job has all replicas", "job has only worker replicas"],
)
def test_ordered_replica_types(present, want):
    job = training_job(KIND, {t: replica() for t in present})
    assert [ps["name"] for ps in TF_JOB.pod_sets(job)] == want


def test_kueues_sample_tfjob_is_a_ps_then_two_workers():
    job = training_job(KIND, {"Worker": replica(2), "PS": replica(1)})
    assert [(ps["name"], ps["count"]) for ps in TF_JOB.pod_sets(job)] == [("ps", 1), ("worker", 2)]
