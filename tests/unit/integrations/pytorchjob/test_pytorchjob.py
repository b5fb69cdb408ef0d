"""PyTorchJob: what is PyTorchJob's own - its replica types in Kueue's order and Kueue's
pytorchjob_controller_test.go tables (TestPriorityClass, TestOrderedReplicaTypes) by case name.
test_replica_specs runs these tables, and every scenario replica-specs kinds share (TestPodSets,
TestValidate, TestReconciler), for each kind."""

from __future__ import annotations

import pytest

from tas.integrations.pytorchjob import webhook
from tas.integrations.pytorchjob.controller import PYTORCH_JOB
from tests.unit.integrations.replica_specs_cases import (
    Kind,
    leader_and_worker_priority_classes,
)

KIND = Kind(PYTORCH_JOB, webhook)


def test_the_kind_is_kueues():
    assert KIND.types == ("Master", "Worker")
    assert PYTORCH_JOB.field == "pytorchReplicaSpecs"
    assert PYTORCH_JOB.resource.api_version == "kubeflow.org/v1"


PRIORITY_CLASS = leader_and_worker_priority_classes("Master")

ORDERED_REPLICA_TYPES = [
    pytest.param([], [], id="job has no replicas"),
    pytest.param(["Worker", "Master"], ["master", "worker"], id="job has all replicas"),
    pytest.param(["Worker"], ["worker"], id="job only has the worker replica"),
]
