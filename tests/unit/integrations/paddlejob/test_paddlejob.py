"""PaddleJob: what is PaddleJob's own - its replica types in Kueue's order and Kueue's
paddlejob_controller_test.go tables (TestPriorityClass, TestOrderedReplicaTypes) by case name.
test_replica_specs runs these tables, and every scenario replica-specs kinds share (TestPodSets,
TestValidate, TestReconciler), for each kind."""

from __future__ import annotations

import pytest

from tas.integrations.paddlejob import webhook
from tas.integrations.paddlejob.controller import PADDLE_JOB
from tests.unit.integrations.replica_specs_cases import (
    Kind,
    leader_and_worker_priority_classes,
)

KIND = Kind(PADDLE_JOB, webhook)


def test_the_kind_is_kueues():
    assert KIND.types == ("Master", "Worker")
    assert PADDLE_JOB.field == "paddleReplicaSpecs"
    assert PADDLE_JOB.resource.api_version == "kubeflow.org/v1"


PRIORITY_CLASS = leader_and_worker_priority_classes("Master")

ORDERED_REPLICA_TYPES = [
    pytest.param([], [], id="job has no replicas"),
    pytest.param(["Worker", "Master"], ["master", "worker"], id="job has all replicas"),
    pytest.param(["Worker"], ["worker"], id="job only has the worker replica"),
]
