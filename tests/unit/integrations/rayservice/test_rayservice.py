"""RayService's own facts (Kueue's rayservice_controller_test.go and rayservice_webhook_test.go
by case name): held by its cluster spec's `suspend`, never finished. The cluster spec's
scenarios are in raycluster/test_cluster_spec.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tas.integrations.rayservice import webhook
from tas.integrations.rayservice.controller import RAY_SERVICE
from tas.jobframework.workload import build_workload
from tests.unit.integrations.ray_builders import rayservice, worker

EXAMPLES = Path(__file__).parents[4] / "e2e" / "fixtures" / "kueue-examples"


@pytest.mark.parametrize(
    ("suspend", "expected"),
    [(False, False), (True, True), (None, False)],
    ids=["not suspended", "suspended", "suspend is nil"],
)
def test_is_suspended(suspend, expected):
    assert RAY_SERVICE.suspended(rayservice(worker("g"), suspend=suspend)) is expected


def test_stop_and_mutate_suspend_the_cluster_spec():
    obj = rayservice(worker("g"), suspend=False)
    assert RAY_SERVICE.stop_patch(obj)["spec"] == {"rayClusterSpec": {"suspend": True}}
    assert webhook.mutate(obj) == {"spec": {"rayClusterSpec": {"suspend": True}}}


def test_a_rayservice_never_finishes():
    obj = rayservice(worker("g"))
    obj["status"] = {"conditions": [{"type": "Ready", "status": "False"}]}
    assert RAY_SERVICE.finished(obj) is None


def test_autoscaling_without_elastic_jobs_feature():
    obj = rayservice(worker("g"), enableInTreeAutoscaling=True)
    assert webhook.validate(obj) == [
        "spec.rayClusterSpec.enableInTreeAutoscaling: Invalid value: true:"
        " a kueue managed job should only use autoscaling when workload slicing is enabled"
    ]


def test_the_workload_is_named_and_owned_as_kueue_does():
    workload = build_workload(RAY_SERVICE, rayservice(worker("g")))
    assert workload["metadata"]["name"].startswith("rayservice-svc-")
    assert workload["metadata"]["ownerReferences"][0]["kind"] == "RayService"


def test_kueues_sample_rayservice_is_admitted_as_head_and_workers():
    obj = yaml.safe_load((EXAMPLES / "ray-service-sample.yaml").read_text())
    obj["metadata"].update(namespace="ns", uid="u", resourceVersion="1")
    assert webhook.validate(obj) == []
    assert next(ps["name"] for ps in RAY_SERVICE.pod_sets(obj)) == "head"
