"""StatefulSet: its pods are one pod group, and it scales only to and from zero (Kueue's
statefulset tests' scenarios)."""

from __future__ import annotations

import pytest

from tas.integrations.statefulset import webhook as sts
from tests.unit.integrations.builders import QUEUE


def statefulset(replicas=3, ready=0, status_replicas=0, queue="q") -> dict:
    labels = {QUEUE: queue} if queue else {}
    return {
        "metadata": {"name": "web", "namespace": "ns", "labels": labels},
        "spec": {"replicas": replicas, "template": {"metadata": {}, "spec": {}}},
        "status": {"readyReplicas": ready, "replicas": status_replicas},
    }


def test_a_queued_statefulsets_pods_are_one_serving_group_of_its_replicas():
    meta = sts.mutate(statefulset(replicas=3))["spec"]["template"]["metadata"]
    assert meta["labels"] == {
        "kueue.x-k8s.io/managed": "true",
        "kueue.x-k8s.io/pod-group-name": "statefulset-web-ac922",  # Kueue's name, checked in Go
        QUEUE: "q",
    }
    assert meta["annotations"] == {
        "kueue.x-k8s.io/pod-suspending-parent": "statefulset",
        "kueue.x-k8s.io/pod-group-total-count": "3",
        "kueue.x-k8s.io/pod-group-fast-admission": "true",
        "kueue.x-k8s.io/pod-group-serving": "true",
        "kueue.x-k8s.io/pod-group-pod-index-label": "apps.kubernetes.io/pod-index",
    }
    assert sts.mutate(statefulset(queue=None)) == {}


@pytest.mark.parametrize(
    ("old", "new", "errors"),
    [
        (statefulset(3), statefulset(3), []),
        (statefulset(3), statefulset(0), []),
        (statefulset(0), statefulset(2), []),
        (statefulset(3), statefulset(4), ["spec.replicas: field is immutable"]),
        (statefulset(0), statefulset(2, status_replicas=1), ["scaling down is still in progress"]),
        (statefulset(3, ready=2), statefulset(3, queue="other"), ["field is immutable"]),
        (statefulset(3), statefulset(3, queue="other"), []),  # nothing runs yet
    ],
    ids=[
        "same",
        "to-zero",
        "from-zero",
        "resize",
        "still-scaling-down",
        "queue-while-running",
        "queue-while-idle",
    ],
)
def test_a_queued_statefulset_scales_only_to_and_from_zero(old, new, errors):
    found = sts.validate_update(old, new)
    assert len(found) == len(errors), found
    for error, part in zip(found, errors, strict=True):
        assert part in error
