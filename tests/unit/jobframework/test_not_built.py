"""An owner whose Workload cannot be built is told why in a Warning event, the same way for every
kind: an invalid topology request, or a priority class that does not exist."""

from __future__ import annotations

import asyncio

import pytest

from tas.api.constants import REASON_INVALID_TOPOLOGY_REQUEST, REASON_PRIORITY_CLASS_NOT_FOUND
from tas.integrations.job.controller import JOB
from tas.integrations.leaderworkerset.controller import LeaderWorkerSetController
from tas.integrations.pod.controller import PodController
from tas.jobframework.reconciler import JobReconciler
from tests.unit.integrations.builders import (
    QUEUE,
    REQUIRED,
    RecordingKube,
    leaderworkerset,
    pod,
    state,
)

PRIORITY_CLASS = "kueue.x-k8s.io/priority-class"
INVALID_TOPOLOGY = {REQUIRED: ""}  # a required topology level must be named
REASONS = {
    "invalid-topology": REASON_INVALID_TOPOLOGY_REQUEST,
    "missing-priority-class": REASON_PRIORITY_CLASS_NOT_FOUND,
}


def spoil(owner: dict, template: dict, cause: str) -> None:
    """The template's annotations made invalid, or the owner naming a class that is not there."""
    if cause == "invalid-topology":
        template.setdefault("metadata", {}).setdefault("annotations", {}).update(INVALID_TOPOLOGY)
    else:
        owner["metadata"]["labels"][PRIORITY_CLASS] = "gone"


def events_for_job(cause: str) -> list:
    obj = {
        "metadata": {"name": "j", "namespace": "ns", "uid": "job-uid", "labels": {QUEUE: "q"}},
        "spec": {"suspend": True, "template": {"spec": {"containers": [{"name": "c"}]}}},
    }
    spoil(obj, obj["spec"]["template"], cause)
    kube = RecordingKube()
    reconciler = JobReconciler(JOB, state(), kube, writer=None)  # type: ignore[arg-type]
    asyncio.run(reconciler.sync(reconciler.upsert(obj)))
    return kube.events


def events_for_pod(cause: str) -> list:
    obj = pod("p")
    spoil(obj, obj, cause)  # a pod is its own template
    kube = RecordingKube()
    controller = PodController(state(), kube, writer=None)  # type: ignore[arg-type]
    for key in controller.upsert(obj):
        asyncio.run(controller.sync(key))
    return kube.events


def events_for_leaderworkerset(cause: str) -> list:
    obj = leaderworkerset()
    spoil(obj, obj["spec"]["leaderWorkerTemplate"]["workerTemplate"], cause)
    kube = RecordingKube()
    controller = LeaderWorkerSetController(state(), kube, {})  # type: ignore[arg-type]
    for key in controller.upsert(obj):
        asyncio.run(controller.sync(key))
    return kube.events


@pytest.mark.parametrize("cause", list(REASONS))
@pytest.mark.parametrize(
    "events_for",
    [events_for_job, events_for_pod, events_for_leaderworkerset],
    ids=["job", "pod", "leaderworkerset"],
)
def test_an_owner_whose_workload_cannot_be_built_gets_an_event_with_the_cause(events_for, cause):
    [(_, reason, message)] = events_for(cause)
    assert reason == REASONS[cause]
    assert message
