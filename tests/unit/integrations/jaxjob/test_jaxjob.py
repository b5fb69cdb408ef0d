"""JAXJob: Kueue's jaxjob_controller_test.go tables (TestPriorityClass, TestOrderedReplicaTypes,
TestPodSets, TestValidate, TestReconciler) by case name, and the scenarios every replica-specs
kind passes (replica_specs_cases)."""

from __future__ import annotations

import pytest

from tas.integrations.jaxjob import webhook
from tas.integrations.jaxjob.controller import JAX_JOB
from tests.unit.integrations.replica_specs_cases import *  # noqa: F403 - run here for this kind
from tests.unit.integrations.replica_specs_cases import (
    Kind,
    replica,
    resolved_priority_class,
    training_job,
)

KIND = Kind(JAX_JOB, webhook)


@pytest.fixture(scope="module")  # immutable: shared by the hypothesis examples too
def kind() -> Kind:
    return KIND


def test_the_kind_is_kueues():
    assert KIND.types == ("Worker",)
    assert JAX_JOB.field == "jaxReplicaSpecs"


@pytest.mark.parametrize(
    ("run_policy", "templates", "want"),
    [
        (None, {}, None),
        ("scheduling-priority", {"Worker": "worker-priority"}, "scheduling-priority"),
    ],
    ids=[
        "none priority class name specified",
        "priority specified at runPolicy and replicas; use priority in runPolicy",
    ],
)
def test_priority_class(run_policy, templates, want):
    assert resolved_priority_class(KIND, templates, run_policy) == want


@pytest.mark.parametrize(
    ("present", "want"),
    [([], []), (["Worker"], ["worker"])],
    ids=["job has no replicas", "job has worker replicas"],
)
def test_ordered_replica_types(present, want):
    job = training_job(KIND, {t: replica() for t in present})
    assert [ps["name"] for ps in JAX_JOB.pod_sets(job)] == want
