"""Deployment: the webhooks mark the pod template, and each pod is then a plain pod of the pod
integration (Kueue's deployment_webhook_test.go scenarios, as tables)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tas.api.frameworks import Framework, parse
from tas.integrations.deployment import webhook
from tas.integrations.pod import webhook as pod_webhook
from tas.integrations.pod.controller import work_key
from tas.jobframework.podset import merge_patch
from tests.unit.integrations.builders import QUEUE, pod

PRIORITY = "kueue.x-k8s.io/priority-class"
PARENT = "kueue.x-k8s.io/pod-suspending-parent"
MANAGED = "kueue.x-k8s.io/managed"

EXAMPLES = Path(__file__).parents[4] / "e2e/fixtures/kueue-examples"


def deployment(queue=None, priority=None, ready=0, template_labels=None) -> dict:
    labels = {}
    if queue is not None:
        labels[QUEUE] = queue
    if priority is not None:
        labels[PRIORITY] = priority
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "test-pod", "namespace": "ns", "labels": labels},
        "spec": {
            "replicas": 3,
            "template": {
                "metadata": {"labels": dict(template_labels or {})},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        },
        "status": {"readyReplicas": ready},
    }


def template_labels(d: dict) -> dict:
    return merge_patch(d, webhook.mutate(d))["spec"]["template"]["metadata"].get("labels") or {}


@pytest.mark.parametrize(
    ("d", "want_labels"),
    [
        (deployment(), {}),
        (deployment("test-queue"), {MANAGED: "true", QUEUE: "test-queue"}),
        (
            deployment("test-queue", template_labels={QUEUE: "other"}),
            {MANAGED: "true", QUEUE: "test-queue"},
        ),
        (deployment(template_labels={QUEUE: "other"}), {QUEUE: "other"}),
        (
            deployment("test-queue", priority="test"),
            {MANAGED: "true", QUEUE: "test-queue", PRIORITY: "test"},
        ),
        (
            deployment("test-queue", priority="test", template_labels={QUEUE: "o", PRIORITY: "o"}),
            {MANAGED: "true", QUEUE: "test-queue", PRIORITY: "test"},
        ),
        (
            deployment(priority="test", template_labels={QUEUE: "o", PRIORITY: "o"}),
            {QUEUE: "o", PRIORITY: "o"},
        ),
    ],
    ids=[
        "deployment without queue",
        "deployment with queue",
        "deployment with queue and pod template spec queue",
        "deployment without queue with pod template spec queue",
        "deployment with queue and priority class",
        "deployment with queue, priority class and pod template spec queue, priority class",
        "deployment without queue with pod template spec queue and priority class",
    ],
)
def test_default(d, want_labels):
    assert template_labels(d) == want_labels
    annotations = (
        merge_patch(d, webhook.mutate(d))["spec"]["template"]["metadata"].get("annotations") or {}
    )
    assert (PARENT in annotations) == bool(d["metadata"]["labels"].get(QUEUE))
    if PARENT in annotations:
        assert annotations[PARENT] == "deployment"


@pytest.mark.parametrize(
    ("d", "fields"),
    [
        (deployment(), []),
        (deployment("test-queue"), []),
        (deployment("test/queue"), [f"metadata.labels[{QUEUE}]"]),
    ],
    ids=["without queue", "valid queue name", "invalid queue name"],
)
def test_validate_create(d, fields):
    assert [r.split(":")[0] for r in webhook.validate(d)] == fields


@pytest.mark.parametrize(
    ("old", "new", "fields"),
    [
        (deployment(), deployment(), []),
        (deployment("test-queue"), deployment(), [f"metadata.labels[{QUEUE}]"]),
        (deployment("test-queue"), deployment("test-queue"), []),
        (deployment(), deployment("test-queue"), []),
        (deployment("test/queue"), deployment("test/queue"), [f"metadata.labels[{QUEUE}]"]),
        (
            deployment("test-queue", ready=1),
            deployment("test-queue-new", ready=1),
            [f"metadata.labels[{QUEUE}]"],
        ),
        (deployment("test-queue", "test"), deployment("test-queue", "new-test"), []),
        (
            deployment("test-queue", ready=1),
            deployment("test-queue", "test", ready=1),
            [f"metadata.labels[{PRIORITY}]"],
        ),
        (
            deployment("test-queue", "test", ready=1),
            deployment("test-queue", "new-test", ready=1),
            [],
        ),
        (
            deployment("test-queue", "test", ready=1),
            deployment("test-queue", ready=1),
            [f"metadata.labels[{PRIORITY}]"],
        ),
        (deployment("test-queue"), deployment("test-queue", "test"), []),
        (deployment("test-queue", "test"), deployment("test-queue", "new-test"), []),
        (
            deployment("test-queue", "test"),
            deployment("test-queue"),
            [f"metadata.labels[{PRIORITY}]"],
        ),
    ],
    ids=[
        "without queue (no changes)",
        "without queue",
        "with queue (no changes)",
        "with queue",
        "with queue (invalid)",
        "with queue (ready replicas)",
        "update priority-class when suspended",
        "set priority-class when replicas ready",
        "update priority-class when replicas ready",
        "delete priority-class when replicas ready",
        "set priority-class when replicas not ready",
        "update priority-class when replicas not ready",
        "delete priority-class when replicas not ready",
    ],
)
def test_validate_update(old, new, fields):
    assert [r.split(":")[0] for r in webhook.validate_update(old, new)] == fields


def test_a_deployments_pod_is_a_queued_single_pod_of_the_pod_integration():
    """The marked template makes every pod a managed pod (gated by the pod webhook) with a
    Workload of its own; unlike a LeaderWorkerSet's, it waits for no group labels."""
    d = deployment("q")
    meta = merge_patch(d, webhook.mutate(d))["spec"]["template"]["metadata"]
    p = pod("nginx-abc", gated=False, labels=meta["labels"], annotations=meta["annotations"])
    assert pod_webhook.managed(p)
    gates = [g["name"] for g in pod_webhook.mutate(p)["spec"]["schedulingGates"]]
    assert "kueue.x-k8s.io/admission" in gates
    assert work_key(p) == ("pod", "ns", "nginx-abc")
    lws_pod = pod("lws-0", annotations={PARENT: "leaderworkerset.x-k8s.io/leaderworkerset"})
    assert work_key(lws_pod) is None


def test_the_deployment_integration_enables_the_pod_integration():
    integrations = parse("deployment")
    assert integrations.enabled(Framework.POD)
    assert integrations.enabled(Framework.DEPLOYMENT)
    assert not parse("trainer.kubeflow.org/trainjob").enabled(Framework.POD)


def test_kueues_sample_deployment_marks_its_pods_for_user_queue():
    path = EXAMPLES / "sample-deployment.yaml"
    d = yaml.safe_load(path.read_text())
    assert webhook.validate(d) == []
    assert template_labels(d) == {"app": "nginx", MANAGED: "true", QUEUE: "user-queue"}
