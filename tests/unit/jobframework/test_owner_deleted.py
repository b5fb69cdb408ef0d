"""An owner being deleted (a foreground deletion removes its Workloads first) is left alone, as
Kueue's reconciler leaves it: no new Workload, which would be admitted and start it again."""

from __future__ import annotations

import asyncio

import pytest

from tas.integrations.job.controller import JOB
from tas.integrations.leaderworkerset.controller import LeaderWorkerSetController
from tas.jobframework.reconciler import JobReconciler
from tests.unit.integrations.builders import QUEUE, RecordingKube, leaderworkerset, state


@pytest.mark.parametrize("admitted_before", [False, True], ids=["never-admitted", "admitted"])
def test_an_owner_being_deleted_gets_no_workload_and_no_patch(admitted_before):
    """A foreground deletion deletes the Workload before the Job: the Job, still there with its
    deletionTimestamp, must not get a new Workload (which would be admitted and start it)."""
    obj = {
        "metadata": {
            "name": "j",
            "namespace": "ns",
            "uid": "job-uid",
            "resourceVersion": "3",
            "labels": {QUEUE: "q"},
            "deletionTimestamp": "2026-11-27T20:25:42Z",
        },
        "spec": {
            "suspend": not admitted_before,
            "template": {"spec": {"containers": [{"name": "c"}]}},
        },
    }
    kube = RecordingKube()
    reconciler = JobReconciler(JOB, state(), kube, writer=None)  # type: ignore[arg-type]
    asyncio.run(reconciler.sync(reconciler.upsert(obj)))
    assert (kube.created, kube.patches, kube.events) == ([], [], [])
    del obj["metadata"]["deletionTimestamp"]  # the same object not being deleted gets one
    asyncio.run(reconciler.sync(reconciler.upsert(obj)))
    assert [w["kind"] for w in kube.created] == ["Workload"]


def test_a_leaderworkerset_being_deleted_gets_no_group_workloads():
    obj = leaderworkerset()
    obj["metadata"]["deletionTimestamp"] = "2026-11-27T20:25:42Z"
    kube = RecordingKube()
    controller = LeaderWorkerSetController(state(), kube, {})  # type: ignore[arg-type]
    for key in controller.upsert(obj):
        asyncio.run(controller.sync(key))
    assert kube.created == []
    del obj["metadata"]["deletionTimestamp"]
    for key in controller.upsert(obj):
        asyncio.run(controller.sync(key))
    assert len(kube.created) == 2  # one per replica once it is not being deleted
