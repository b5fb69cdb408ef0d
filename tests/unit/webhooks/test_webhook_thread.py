"""The webhook server's thread never waits for the operator's loop: a review is answered while
that loop is blocked (sleeping or computing), a review that needs the cache reads the frozen
copy, a renewed certificate is served, the thread ends when the server stops, and reviews are
counted as controller-runtime counts Kueue's."""

from __future__ import annotations

import asyncio
import datetime
import http.client
import ssl
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import kopf
import orjson
import pytest
from prometheus_client import REGISTRY

from tas import integrations
from tas.config import Settings
from tas.handlers.operator import MUTATE_POD_WEBHOOK, OffLoopReviews
from tas.webhooks import server as server_module
from tas.webhooks.rotation import WebhookCertificates
from tas.webhooks.server import SWITCH_INTERVAL, WebhookServer
from tas.webhooks.view import CacheView, ViewPublisher
from tests.unit.handlers.test_webhook_isolation import (
    PODS,
    kopf_review_function,
    queued_pod,
)
from tests.unit.handlers.test_webhook_isolation import review as pod_review
from tests.unit.webhooks.test_certificate_rotation import HOSTS, NAME, FakeApi
from tests.unit.webhooks.test_webhook_server import (
    Recorder,
    insecure,
    make_server,
    post,
    review,
    run,
    served_certificate,
)

BLOCKED = 0.3  # seconds the operator's loop is held
ANSWERED_WITHIN = 0.15  # far less: the review did not wait for the loop


def blocking_post(port: int, path: str, body: bytes) -> tuple[int, bytes, float]:
    """A review sent from a thread of its own (the test's loop is the one blocked)."""
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=insecure(), timeout=5)
    start = time.perf_counter()
    try:
        connection.request("POST", path, body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, response.read(), time.perf_counter() - start
    finally:
        connection.close()


def sleeping(seconds: float) -> None:
    time.sleep(seconds)


def computing(seconds: float) -> None:
    """Pure Python for `seconds`: holds the interpreter lock but at its switch points."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        sum(range(1000))


def while_blocked(block, port: int, path: str, body: bytes):
    """Block the running loop for BLOCKED seconds while a review is sent to `path`."""
    answers: list[tuple[int, bytes, float]] = []
    client = threading.Thread(target=lambda: answers.append(blocking_post(port, path, body)))
    client.start()
    block(BLOCKED)
    return client, answers


@pytest.mark.parametrize("block", [sleeping, computing], ids=["sleeping", "computing"])
def test_a_review_is_answered_while_the_operators_loop_is_blocked(tmp_path: Path, block) -> None:
    server = make_server(tmp_path)
    recorder = Recorder()

    async def body(url):
        await post(f"{url}/warm", review())
        client, answers = while_blocked(block, server.port, "/x", review())
        await asyncio.to_thread(client.join)
        return answers

    [(status, _, seconds)] = run(server, recorder, body)
    assert status == 200
    assert seconds < ANSWERED_WITHIN, f"{seconds * 1000:.0f} ms with the loop held {BLOCKED}s"


@pytest.mark.parametrize(
    ("controller", "gated"), [("job-uid", False), ("other-uid", True)], ids=["managed", "alone"]
)
def test_a_review_that_needs_the_cache_is_answered_from_the_copy_while_the_loop_is_blocked(
    tmp_path: Path, controller: str, gated: bool
) -> None:
    """The pod webhook asks whether a pod's controller is admitted with its owner: answered
    from the published copy, not by a call on the blocked loop."""
    publisher = ViewPublisher(lambda: CacheView.of({"job-uid"}, {}))
    publisher.publish()
    server = make_server(tmp_path)
    request = orjson.dumps(pod_review("CREATE", queued_pod(controller), None, PODS))

    async def go():
        memo = kopf.Memo(
            settings=Settings(integrations=integrations.parse("pod")),
            runtime=SimpleNamespace(webhook_view=publisher),
            loop=asyncio.get_running_loop(),
        )
        agen = server(OffLoopReviews(kopf_review_function(memo, PODS)))
        await agen.__anext__()
        try:
            client, answers = while_blocked(
                sleeping, server.port, f"/{MUTATE_POD_WEBHOOK}", request
            )
            await asyncio.to_thread(client.join)
            return answers
        finally:
            await agen.aclose()

    [(status, raw, seconds)] = asyncio.run(go())
    answer = orjson.loads(raw)["response"]
    assert status == 200 and answer["allowed"] is True
    assert ("patch" in answer) is gated
    assert seconds < ANSWERED_WITHIN, f"{seconds * 1000:.0f} ms with the loop held {BLOCKED}s"


def test_a_renewed_certificate_is_served_to_new_connections(tmp_path: Path) -> None:
    """The rotation writes a new certificate and calls the server's reload: the next
    connection gets it, while the server keeps serving."""
    certificates = WebhookCertificates(
        FakeApi(), tmp_path / "certs", HOSTS, NAME, secret=("tas-system", "cert")
    )
    asyncio.run(certificates.check())
    certfile, keyfile, cafile = certificates.files
    server = WebhookServer(
        addr="127.0.0.1",
        port=make_server(tmp_path / "unused").port,
        host="127.0.0.1",
        certfile=certfile,
        keyfile=keyfile,
        cafile=cafile,
    )
    certificates.on_renewed.append(server.reload)

    async def body(url):
        first = await asyncio.to_thread(served_certificate, server.port)
        expiring = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=3650)
        await certificates.check(now=expiring)  # everything is due: a new CA and certificate
        second = await asyncio.to_thread(served_certificate, server.port)
        status, _ = await post(f"{url}/x", review())
        return first, second, status

    first, second, status = run(server, Recorder(), body)
    assert first != second
    assert second == ssl.PEM_cert_to_DER_cert(certfile.read_text().split("\n\n")[0] + "\n")
    assert status == 200


def test_stopping_ends_the_thread_and_restores_the_switch_interval(tmp_path: Path) -> None:
    server = make_server(tmp_path)
    before_interval = sys.getswitchinterval()
    seen = {}

    async def body(url):
        seen["interval"] = sys.getswitchinterval()
        seen["threads"] = [t.name for t in threading.enumerate()]
        return await post(f"{url}/x", review())

    start = time.monotonic()
    run(server, Recorder(), body)
    assert time.monotonic() - start < server_module.STOP_SECONDS
    assert "webhooks" in seen["threads"]
    assert "webhooks" not in [t.name for t in threading.enumerate()]
    assert seen["interval"] == min(before_interval, SWITCH_INTERVAL)
    assert sys.getswitchinterval() == before_interval


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_reviews_are_counted_per_path_and_code_with_a_bounded_number_of_paths(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setattr(server_module, "MAX_LABELS", 2)
    server = make_server(tmp_path, max_review_bytes=1024)
    paths = ["/metric-a", "/metric-b", "/metric-c", "/metric-a"]
    before = {
        p: sample("controller_runtime_webhook_latency_seconds_count", webhook=p)
        for p in (*paths, "/other")
    }
    refused = sample("controller_runtime_webhook_requests_total", webhook="/metric-b", code="413")

    async def body(url):
        for path in paths:
            await post(f"{url}{path}", review())
        return await post(f"{url}/metric-b", review(4096))

    run(server, Recorder(), body)
    counted = {
        p: sample("controller_runtime_webhook_latency_seconds_count", webhook=p) - before[p]
        for p in before
    }
    assert counted == {"/metric-a": 2, "/metric-b": 2, "/metric-c": 0, "/other": 1}
    after = sample("controller_runtime_webhook_requests_total", webhook="/metric-b", code="413")
    assert after - refused == 1
