"""TFJob: what is TFJob's own - its replica types in Kueue's order and Kueue's
tfjob_controller_test.go tables (TestPriorityClass, TestOrderedReplicaTypes) by case name.
test_replica_specs runs these tables, and every scenario replica-specs kinds share (TestPodSets,
TestValidate, TestReconciler), for each kind."""

from __future__ import annotations

import pytest

from tas.integrations.tfjob import webhook
from tas.integrations.tfjob.controller import TF_JOB
from tests.unit.integrations.replica_specs_cases import (
    Kind,
    replica,
    training_job,
)

KIND = Kind(TF_JOB, webhook)


def test_the_kind_is_kueues():
    assert KIND.types == ("Chief", "Master", "PS", "Worker", "Evaluator")
    assert TF_JOB.field == "tfReplicaSpecs"


ALL = {
    "Chief": "chief-priority",
    "PS": "ps-priority",
    "Worker": "worker-priority",
    "Evaluator": "eval-priority",
}

PRIORITY_CLASS = [
    pytest.param(None, {}, None, id="none priority class name specified"),
    pytest.param(
        "scheduling-priority",
        {"Chief": "chief-priority", "Worker": "worker-priority"},
        "scheduling-priority",
        id="priority specified at runPolicy and replicas; use priority in runPolicy",
    ),
    pytest.param(
        None,
        {"Chief": "chief-priority"},
        "chief-priority",
        id="runPolicy present, but without priority; fallback to chief",
    ),
    pytest.param(None, ALL, "chief-priority", id="specified on chief takes precedence over chief"),
    pytest.param(
        None,
        {"Chief": None, "Evaluator": "eval-priority"},
        "eval-priority",
        id="chief present, but without priority; fallback to evaluator",
    ),
    pytest.param(
        None,
        {"Chief": None, "Worker": "worker-priority"},
        "worker-priority",
        id="specified on worker only",
    ),
    pytest.param(
        None,
        {"Chief": None, "Evaluator": None},
        None,
        id="evaluator present, but without priority; fallback to empty",
    ),
]

ORDERED_REPLICA_TYPES = [
    pytest.param([], [], id="job has no replicas"),
    pytest.param(
        ["Evaluator", "Worker", "PS", "Master", "Chief"],
        ["chief", "master", "ps", "worker", "evaluator"],
        id="job has all replicas",
    ),
    pytest.param(["Worker"], ["worker"], id="job has only worker replicas"),
]


def test_kueues_sample_tfjob_is_a_ps_then_two_workers():
    job = training_job(KIND, {"Worker": replica(2), "PS": replica(1)})
    assert [(ps["name"], ps["count"]) for ps in TF_JOB.pod_sets(job)] == [("ps", 1), ("worker", 2)]
