"""PaddleJob: Kueue's paddlejob_controller_test.go tables (TestPriorityClass, TestOrderedReplicaTypes,
TestPodSets, TestValidate, TestReconciler) by case name, and the scenarios every replica-specs
kind passes (replica_specs_cases)."""

from __future__ import annotations

import pytest

from tas.integrations.paddlejob import webhook
from tas.integrations.paddlejob.controller import PADDLE_JOB
from tests.unit.integrations.replica_specs_cases import *  # noqa: F403 - run here for this kind
from tests.unit.integrations.replica_specs_cases import (
    Kind,
    replica,
    resolved_priority_class,
    training_job,
)

KIND = Kind(PADDLE_JOB, webhook)


@pytest.fixture(scope="module")  # immutable: shared by the hypothesis examples too
def kind() -> Kind:
    return KIND


def test_the_kind_is_kueues():
    assert KIND.types == ("Master", "Worker")
    assert PADDLE_JOB.field == "paddleReplicaSpecs"
    assert PADDLE_JOB.resource.api_version == "kubeflow.org/v1"


@pytest.mark.parametrize(
    ("run_policy", "templates", "want"),
    [
        (None, {}, None),
        (
            "scheduling-priority",
            {"Master": "master-priority", "Worker": "worker-priority"},
            "scheduling-priority",
        ),
        (None, {"Master": "master-priority"}, "master-priority"),
        (None, {"Master": "master-priority", "Worker": "worker-priority"}, "master-priority"),
        (None, {"Master": None, "Worker": "worker-priority"}, "worker-priority"),
        (None, {"Worker": "worker-priority"}, "worker-priority"),
        (None, {"Worker": None}, None),
    ],
    ids=[
        "none priority class name specified",
        "priority specified at runPolicy and replicas; use priority in runPolicy",
        "runPolicy present, but without priority; fallback to master",
        "specified on master takes precedence over worker",
        "master present, but without priority; fallback to worker",
        "specified on worker only",
        "worker present, but without priority; fallback to empty",
    ],
)
def test_priority_class(run_policy, templates, want):
    assert resolved_priority_class(KIND, templates, run_policy) == want


@pytest.mark.parametrize(
    ("present", "want"),
    [([], []), (["Worker", "Master"], ["master", "worker"]), (["Worker"], ["worker"])],
    ids=["job has no replicas", "job has all replicas", "job only has the worker replica"],
)
def test_ordered_replica_types(present, want):
    job = training_job(KIND, {t: replica() for t in present})
    assert [ps["name"] for ps in PADDLE_JOB.pod_sets(job)] == want
