"""RayCluster's own facts (Kueue's raycluster_controller_test.go and raycluster_webhook_test.go
by case name): never finished, and a RayCluster a RayJob or RayService controls is its parent's
to admit. The cluster spec's scenarios are in test_cluster_spec.py."""

from __future__ import annotations

from pathlib import Path

import yaml

from tas.integrations.raycluster import webhook
from tas.integrations.raycluster.controller import RAY_CLUSTER, ray_parent
from tests.unit.integrations.ray_builders import raycluster, worker

EXAMPLES = Path(__file__).parents[4] / "e2e" / "fixtures" / "kueue-examples"


def owned_by(kind: str, api_version: str = "ray.io/v1", controller: bool = True) -> dict:
    obj = raycluster(worker("g"), suspend=False)
    ref = {"apiVersion": api_version, "kind": kind, "name": "p", "uid": "parent-uid"}
    if controller:
        ref["controller"] = True
    obj["metadata"]["ownerReferences"] = [ref]
    return obj


def test_a_raycluster_of_a_rayjob_or_rayservice_is_its_parents():
    for kind in ("RayJob", "RayService"):
        child = owned_by(kind)
        assert ray_parent(child) == "parent-uid"
        assert RAY_CLUSTER.skips(child)
        assert webhook.mutate(child) == {}  # its parent's suspend holds it


def test_a_raycluster_owned_otherwise_is_its_own():
    for obj in (
        owned_by("RayJob", controller=False),
        owned_by("RayJob", "other.io/v1"),
        owned_by("Deployment", "apps/v1"),
    ):
        assert ray_parent(obj) is None
        assert not RAY_CLUSTER.skips(obj)
        assert webhook.mutate(obj) == {"spec": {"suspend": True}}


def test_a_raycluster_never_finishes():
    obj = raycluster(worker("g"))
    obj["status"] = {"state": "failed", "reason": "boom"}
    assert RAY_CLUSTER.finished(obj) is None


def test_autoscaling_is_refused_with_kueues_raycluster_message():
    obj = raycluster(worker("g"), enableInTreeAutoscaling=True)
    assert webhook.validate(obj) == [
        "spec.enableInTreeAutoscaling: Invalid value: true: a kueue managed job can use autoscaling"
        " only when the ElasticJobsViaWorkloadSlices feature gate is on and the job is an elastic job"
    ]


def test_kueues_sample_raycluster_is_admitted_as_head_and_workers():
    obj = yaml.safe_load((EXAMPLES / "ray-cluster-sample.yaml").read_text())
    obj["metadata"].update(namespace="ns", uid="u", resourceVersion="1")
    assert webhook.validate(obj) == []
    names = [(ps["name"], ps["count"]) for ps in RAY_CLUSTER.pod_sets(obj)]
    assert names == [
        ("head", 1),
        *((g["groupName"], g["replicas"]) for g in obj["spec"]["workerGroupSpecs"]),
    ]
