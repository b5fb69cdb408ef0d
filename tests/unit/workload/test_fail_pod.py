"""Failing a pod, as the ungater and hot swap both do: the status names why, a pod already gone
is no error, and any other refusal is raised for the caller's retry."""

from __future__ import annotations

import asyncio

import pytest

from tas.api.constants import POD_COND_TERMINATED_BY_KUEUE
from tas.kube import STRATEGIC, KubeError
from tas.workload.pods import fail_pod


class StatusKube:
    def __init__(self, error: KubeError | None = None) -> None:
        self.error = error
        self.patches: list[tuple[str, dict, str | None]] = []

    async def patch(self, path, body, content_type=None):
        if self.error is not None:
            raise self.error
        self.patches.append((path, body, content_type))
        return {}


def fail(kube, *, fail: bool = True) -> bool:
    return asyncio.run(fail_pod(kube, "ns", "p", "Because", "why", fail=fail))  # type: ignore[arg-type]


@pytest.mark.parametrize("failed", [True, False], ids=["failed", "only-marked"])
def test_the_status_patch_names_the_reason_and_fails_the_pod_when_asked(failed):
    kube = StatusKube()
    assert fail(kube, fail=failed) is True
    ((path, body, content_type),) = kube.patches
    assert (path, content_type) == ("/api/v1/namespaces/ns/pods/p/status", STRATEGIC)
    (condition,) = body["status"]["conditions"]
    assert (condition["type"], condition["reason"], condition["message"]) == (
        POD_COND_TERMINATED_BY_KUEUE,
        "Because",
        "why",
    )
    assert (body["status"].get("phase") == "Failed") is failed


def test_a_pod_gone_already_is_no_error():
    assert fail(StatusKube(KubeError(404, 'pods "p" not found'))) is False


@pytest.mark.parametrize("status", [409, 500, 0], ids=["conflict", "server-error", "no-answer"])
def test_other_refusals_are_raised_for_a_retry(status):
    with pytest.raises(KubeError):
        fail(StatusKube(KubeError(status, "no")))
