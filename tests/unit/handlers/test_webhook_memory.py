"""Webhook reviews leave nothing behind: anyone who reaches the webhook port can send them.

The reviews go through kopf's own admission entry point with our registered handlers; only the
memories object differs between kopf's default and ours.
"""

from __future__ import annotations

import asyncio
import uuid

import kopf
import pytest
from kopf._cogs.structs import ephemera, references
from kopf._core.engines.admission import serve_admission_request
from kopf._core.reactor.inventory import ResourceMemories

from tas.config import Settings
from tas.handlers.operator import VALIDATE_WEBHOOK, ForgetfulMemories

JOBS = references.Resource(group="batch", version="v1", plural="jobs", kind="Job", namespaced=True)


def review(operation: str) -> dict:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "j",
            "namespace": "ns",
            "uid": str(uuid.uuid4()),
            "labels": {"kueue.x-k8s.io/queue-name": "q"},
        },
        "spec": {"parallelism": 1, "template": {"spec": {"containers": [{"name": "c"}]}}},
    }
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "operation": operation,
            "resource": {"group": "batch", "version": "v1", "resource": "jobs"},
            "userInfo": {"username": "anyone"},
            "object": job,
            "oldObject": job if operation == "UPDATE" else None,
        },
    }


async def send(memories: ResourceMemories, count: int) -> list[dict]:
    import tas.handlers.operator  # noqa: F401  (registers the handlers)

    insights = references.Insights()
    insights.webhook_resources.add(JOBS)
    memo = kopf.Memo(settings=Settings())
    responses = []
    for i in range(count):
        responses.append(
            await serve_admission_request(
                review("UPDATE" if i % 2 else "CREATE"),
                webhook=VALIDATE_WEBHOOK,
                settings=kopf.OperatorSettings(),
                memories=memories,
                memobase=ephemera.AnyMemo(memo),
                registry=kopf.get_default_registry(),
                insights=insights,
                indices={},
            )
        )
    return responses


@pytest.mark.parametrize(("memories", "kept"), [(ResourceMemories, 100), (ForgetfulMemories, 0)])
def test_reviews_leave_no_memory_behind(memories, kept):
    store = memories()
    responses = asyncio.run(send(store, 200))
    assert all(r["response"]["allowed"] for r in responses)  # the handler really ran
    assert len(list(store.iter_all_memories())) == kept  # kopf's own keeps one per UPDATE
