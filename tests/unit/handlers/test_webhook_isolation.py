"""Webhook answers reveal nothing about other namespaces, and the handlers that need the cache
read the frozen copy published for them while kopf's review function runs on the webhook
server's loop.

Reviews go through kopf's own entry point with our registered handlers, as the server calls it.
Anyone who reaches the webhook port can send any review, naming any namespace.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import threading
import uuid
from types import SimpleNamespace

import kopf
import orjson
import pytest
from kopf._cogs.structs import ephemera, references
from kopf._core.engines.admission import serve_admission_request

from tas import integrations
from tas.config import Settings
from tas.handlers.operator import (
    MUTATE_POD_WEBHOOK,
    VALIDATE_STATEFULSET_WEBHOOK,
    ForgetfulMemories,
    OffLoopReviews,
)
from tas.integrations.statefulset import webhook as sts_webhook
from tas.webhooks.view import CacheView

STATEFULSETS = references.Resource(
    group="apps", version="v1", plural="statefulsets", kind="StatefulSet", namespaced=True
)
PODS = references.Resource(group="", version="v1", plural="pods", kind="Pod", namespaced=True)
QUEUE = "kueue.x-k8s.io/queue-name"


def review(operation: str, obj: dict, old: dict | None, resource: references.Resource) -> dict:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "operation": operation,
            "namespace": obj["metadata"]["namespace"],
            "resource": {
                "group": resource.group,
                "version": resource.version,
                "resource": resource.plural,
            },
            "userInfo": {"username": "tenant"},
            "object": obj,
            "oldObject": old,
        },
    }


def kopf_review_function(memo: kopf.Memo, *resources: references.Resource):
    """kopf's review function as kopf hands it to the server (a partial of its entry point)."""
    import tas.handlers.operator  # noqa: F401  (registers the handlers)

    insights = references.Insights()
    insights.webhook_resources.update(resources)
    return functools.partial(
        serve_admission_request,
        settings=kopf.OperatorSettings(),
        memories=ForgetfulMemories(),
        memobase=ephemera.AnyMemo(memo),
        registry=kopf.get_default_registry(),
        insights=insights,
        indices={},
    )


def statefulset(namespace: str, replicas: int) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "web", "namespace": namespace, "labels": {QUEUE: "q"}},
        "spec": {"replicas": replicas, "template": {"metadata": {}, "spec": {}}},
        "status": {"replicas": 0, "readyReplicas": 0},
    }


class Cache:
    """The part of the operator's state the webhooks could read; it records who read it."""

    def __init__(self, workloads=(), managed_owners=()) -> None:
        self.state = SimpleNamespace(workloads={key: object() for key in workloads})
        self.owners = set(managed_owners)
        self.read_on: list[threading.Thread] = []
        # The frozen copy the runtime publishes for the webhooks' thread.
        self.webhook_view = SimpleNamespace(current=CacheView.of(self.owners, {}))

    def managed_owner(self, uid):
        self.read_on.append(threading.current_thread())
        return uid in self.owners


def answer(runtime, request: dict, webhook: str, *resources) -> dict:
    async def go():
        memo = kopf.Memo(
            settings=Settings(integrations=integrations.parse("statefulset")),
            runtime=runtime,
            loop=asyncio.get_running_loop(),
        )
        return await kopf_review_function(memo, *resources)(request, webhook=webhook)

    return asyncio.run(go())["response"]


@pytest.mark.parametrize("namespace", ["victim", "tenant"])
def test_a_statefulset_review_answers_the_same_whatever_workloads_exist(namespace: str) -> None:
    """Scaling up from zero: Kueue looks the previous Workload up by name in the review's
    namespace. A forged review naming another namespace would learn whether it exists."""
    group = sts_webhook.group_name("web")
    request = review("UPDATE", statefulset(namespace, 2), statefulset(namespace, 0), STATEFULSETS)
    answers = [
        answer(Cache(workloads=present), request, VALIDATE_STATEFULSET_WEBHOOK, STATEFULSETS)
        for present in ([], [(namespace, group)], [("other", group)])
    ]
    allowed = [a["allowed"] for a in answers]
    assert allowed == [True, True, True], answers


def queued_pod(controller_uid: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "namespace": "tenant",
            "labels": {QUEUE: "q"},
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": "j",
                    "uid": controller_uid,
                    "controller": True,
                }
            ],
        },
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }


def test_the_pod_webhook_reads_the_frozen_copy_and_never_the_operators_loop() -> None:
    cache = Cache(managed_owners={"job-uid"})

    async def go():
        operator_loop = asyncio.get_running_loop()
        settings = Settings(integrations=integrations.parse("pod"))
        memo = kopf.Memo(settings=settings, runtime=cache, loop=operator_loop)
        reviews = OffLoopReviews(kopf_review_function(memo, PODS))

        def on_server_thread(uid):
            request = review("CREATE", queued_pod(uid), None, PODS)
            return asyncio.run(reviews(request, webhook=MUTATE_POD_WEBHOOK))["response"]

        managed = await asyncio.to_thread(on_server_thread, "job-uid")
        alone = await asyncio.to_thread(on_server_thread, "someone-else")
        return managed, alone, threading.current_thread()

    managed, alone, _ = asyncio.run(go())
    assert cache.read_on == []  # the live cache was never asked
    assert "patch" not in managed  # its Job's Workload covers it: left alone
    patch = orjson.loads(base64.b64decode(alone["patch"]))
    assert any(op["path"].startswith("/spec/schedulingGates") for op in patch), patch


def test_a_kind_kopf_has_not_discovered_is_reviewed_all_the_same() -> None:
    """A CRD installed while the operator runs (JobSet, LeaderWorkerSet) may stay unknown to
    kopf's discovery; its reviews are answered from the kinds our webhooks serve."""
    cache = Cache()

    async def go():
        memo = kopf.Memo(
            settings=Settings(integrations=integrations.parse("statefulset")),
            runtime=cache,
            loop=asyncio.get_running_loop(),
        )
        fn = kopf_review_function(memo, PODS)  # kopf discovered pods only
        assert STATEFULSETS not in fn.keywords["insights"].webhook_resources
        reviews = OffLoopReviews(fn)
        request = review("UPDATE", statefulset("ns", 0), statefulset("ns", 3), STATEFULSETS)

        def on_server_thread():
            return asyncio.run(reviews(request, webhook=VALIDATE_STATEFULSET_WEBHOOK))

        return await asyncio.to_thread(on_server_thread)

    answer = asyncio.run(go())
    assert answer["response"]["allowed"] is True
