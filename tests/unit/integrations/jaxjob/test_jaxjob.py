"""JAXJob: what is JAXJob's own - its replica types in Kueue's order and Kueue's
jaxjob_controller_test.go tables (TestPriorityClass, TestOrderedReplicaTypes) by case name.
test_replica_specs runs these tables, and every scenario replica-specs kinds share (TestPodSets,
TestValidate, TestReconciler), for each kind."""

from __future__ import annotations

import pytest

from tas.integrations.jaxjob import webhook
from tas.integrations.jaxjob.controller import JAX_JOB
from tests.unit.integrations.replica_specs_cases import (
    Kind,
)

KIND = Kind(JAX_JOB, webhook)


def test_the_kind_is_kueues():
    assert KIND.types == ("Worker",)
    assert JAX_JOB.field == "jaxReplicaSpecs"


PRIORITY_CLASS = [
    pytest.param(None, {}, None, id="none priority class name specified"),
    pytest.param(
        "scheduling-priority",
        {"Worker": "worker-priority"},
        "scheduling-priority",
        id="priority specified at runPolicy and replicas; use priority in runPolicy",
    ),
]

ORDERED_REPLICA_TYPES = [
    pytest.param([], [], id="job has no replicas"),
    pytest.param(["Worker"], ["worker"], id="job has worker replicas"),
]
