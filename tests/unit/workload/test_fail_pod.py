"""Failing a pod, as the ungater and hot swap both do: the status names why, the write holds
only for the pod of the UID given, a pod gone (or re-made under its name) is no error, and any
other refusal is raised for the caller's retry."""

from __future__ import annotations

import asyncio

import pytest

from tas.api.conditions import pod_disrupted, pod_terminated_by_kueue
from tas.api.constants import POD_COND_DISRUPTION_TARGET, POD_COND_TERMINATED_BY_KUEUE
from tas.kube import STRATEGIC, KubeError
from tas.workload.pods import UID_CHANGED, fail_pod


class StatusKube:
    """A pod `p` of UID `live_uid`, as the API server answers a status patch for it."""

    def __init__(self, error: KubeError | None = None, live_uid: str = "u1") -> None:
        self.error = error
        self.live_uid = live_uid
        self.patches: list[tuple[str, dict, str | None]] = []

    async def patch(self, path, body, content_type=None):
        if self.error is not None:
            raise self.error
        uid = body.get("metadata", {}).get("uid")
        if uid is not None and uid != self.live_uid:
            raise KubeError(UID_CHANGED, "metadata.uid: Invalid value: field is immutable")
        self.patches.append((path, body, content_type))
        return {}


def fail(kube, status: dict | None = None, uid: str = "u1") -> bool:
    status = status or pod_terminated_by_kueue("Because", "why")
    return asyncio.run(fail_pod(kube, "ns", "p", uid, status))  # type: ignore[arg-type]


@pytest.mark.parametrize("failed", [True, False], ids=["failed", "only-marked"])
def test_the_status_patch_names_the_reason_and_fails_the_pod_when_asked(failed):
    kube = StatusKube()
    assert fail(kube, pod_terminated_by_kueue("Because", "why", fail=failed)) is True
    ((path, body, content_type),) = kube.patches
    assert (path, content_type) == ("/api/v1/namespaces/ns/pods/p/status", STRATEGIC)
    assert body["metadata"] == {"uid": "u1"}
    (condition,) = body["status"]["conditions"]
    assert (condition["type"], condition["reason"], condition["message"]) == (
        POD_COND_TERMINATED_BY_KUEUE,
        "Because",
        "why",
    )
    assert (body["status"].get("phase") == "Failed") is failed


def test_a_disruption_is_written_as_kubernetes_writes_it():
    kube = StatusKube()
    assert fail(kube, pod_disrupted("NodeDeleted", "gone")) is True
    ((_, body, _),) = kube.patches
    assert body["status"]["phase"] == "Failed"
    assert body["status"]["conditions"][0]["type"] == POD_COND_DISRUPTION_TARGET


def test_a_pod_gone_already_is_no_error():
    assert fail(StatusKube(KubeError(404, 'pods "p" not found'))) is False


def test_a_pod_made_again_under_the_same_name_is_not_touched():
    kube = StatusKube(live_uid="u2")
    assert fail(kube, uid="u1") is False
    assert kube.patches == []


@pytest.mark.parametrize("status", [409, 500, 0], ids=["conflict", "server-error", "no-answer"])
def test_other_refusals_are_raised_for_a_retry(status):
    with pytest.raises(KubeError):
        fail(StatusKube(KubeError(status, "no")))


def test_an_invalid_status_is_not_taken_for_a_pod_made_again():
    with pytest.raises(KubeError):
        fail(StatusKube(KubeError(UID_CHANGED, "status.conditions[0].type: Required value")))
