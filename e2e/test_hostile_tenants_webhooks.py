"""Hostile tenants at the webhook port: whoever reaches it (any pod, unless the chart's
NetworkPolicy keeps them out; nothing enforces one in this cluster) can send reviews of their
own making. None of them may stop admission, the lease, or tell one tenant about another's
namespace.

- An oversized review is refused at once, unread, and the operator keeps admitting.
- A flood of large reviews, under the cap so that they are read and answered, does not stall
  admission nor the lease's renewal: the webhook server has its own thread and loop.
- The StatefulSet webhook answers a forged review the same whether or not a Workload of the
  name it implies exists in the namespace it names.
"""

from __future__ import annotations

import datetime
import itertools
import json
import multiprocessing
import ssl
import time
import urllib.error
import urllib.request
import uuid

import pytest

from e2e import chart, jobs
from e2e.harness import Cluster, wait_for
from e2e.operator_process import OperatorProcess
from tas.config import MAX_REVIEW_BYTES
from tas.handlers.operator import SUSPEND_WEBHOOK, VALIDATE_STATEFULSET_WEBHOOK
from tas.integrations.statefulset import webhook as sts_webhook
from tas.runtime.leader import LeaseSettings
from tas.webhooks.server import READY_PATH

pytestmark = pytest.mark.e2e

FLOOD_SECONDS = 15.0  # a whole lease duration: a loop stalled by it would lose the lease
FLOOD_RATE = 200  # reviews a second, at most
FLOOD_BYTES = 192 << 10  # under the cap: each is read, decoded and answered


def insecure() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    return context


def job_review(size: int, namespace: str = "tenant") -> dict:
    """A queued Job's CREATE review of about `size` bytes (a long list of env variables)."""
    env = [{"name": f"V{i:06}", "value": "x" * 40} for i in range(size // 60)]
    job = jobs.job("forged", "q", pods=1)
    job["metadata"] |= {"namespace": namespace, "uid": str(uuid.uuid4())}
    job["spec"]["template"]["spec"]["containers"][0]["env"] = env
    return review("CREATE", job, None, ("batch", "v1", "jobs"))


def review(operation: str, obj: dict, old: dict | None, resource: tuple[str, str, str]) -> dict:
    group, version, plural = resource
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "operation": operation,
            "namespace": obj["metadata"]["namespace"],
            "resource": {"group": group, "version": version, "resource": plural},
            "userInfo": {"username": "tenant"},
            "object": obj,
            "oldObject": old,
        },
    }


def post(port: int, path: str, body: bytes, timeout: float = 30) -> tuple[int, bytes]:
    request = urllib.request.Request(
        f"https://127.0.0.1:{port}/{path}",
        data=body,
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=insecure()) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except (ConnectionError, urllib.error.URLError):
        return -1, b""  # the server closed the connection while the body was still going


def lease(cluster: Cluster) -> dict:
    return cluster.get_json("lease", "-n", chart.NAMESPACE, LeaseSettings(chart.NAMESPACE).name)


def renewals(op: OperatorProcess, since: float, until: float) -> list[float]:
    """When the operator wrote its Lease (epoch seconds), from its own log's time stamps."""
    name = LeaseSettings(chart.NAMESPACE).name
    out = []
    for line in op.log().splitlines():
        if "api-write PUT" in line and line.endswith(f"/leases/{name}"):
            stamp = datetime.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
            if since <= stamp <= until:
                out.append(stamp)
    return out


# ---- the oversized review -----------------------------------------------------------------------


def test_an_oversized_review_is_refused_fast_and_the_operator_keeps_admitting(
    cluster: Cluster, namespace: str, user_queue: str, operator: OperatorProcess
) -> None:
    body = json.dumps(job_review(1 << 20)).encode()
    assert len(body) > MAX_REVIEW_BYTES
    started = time.monotonic()
    status, _ = post(operator.port, SUSPEND_WEBHOOK, body)
    elapsed = time.monotonic() - started
    assert status in (413, -1), status  # refused, or cut off while still sending
    assert elapsed < 2.0, f"{elapsed:.2f}s to refuse"
    # A review under the cap is still answered, and readiness still passes.
    status, answer = post(operator.port, SUSPEND_WEBHOOK, json.dumps(job_review(1024)).encode())
    assert status == 200 and json.loads(answer)["response"]["allowed"] is True
    with urllib.request.urlopen(
        f"https://127.0.0.1:{operator.port}/{READY_PATH}", timeout=10, context=insecure()
    ) as ready:
        assert ready.status == 200
    cluster.apply(jobs.job("after-oversized", user_queue, pods=1), namespace)
    jobs.wait_admitted(cluster, namespace, "after-oversized", timeout=60)


# ---- the flood ---------------------------------------------------------------------------------


def flood(port: int, seconds: float, rate: int, size: int, out) -> None:
    """Reviews from 16 threads for `seconds`, at most `rate` a second, each thread waiting for
    its answer before the next (its own process, so that the test's polling is not slowed);
    puts the status counts on `out`."""
    import threading

    body = json.dumps(job_review(size)).encode()
    statuses: dict[int, int] = {}
    lock = threading.Lock()
    threads = 16
    start = time.monotonic()

    def sender(index: int) -> None:
        sent = 0
        while (due := start + (index + sent * threads) / rate) < start + seconds:
            time.sleep(max(0.0, due - time.monotonic()))
            status, _ = post(port, SUSPEND_WEBHOOK, body, timeout=30)
            with lock:
                statuses[status] = statuses.get(status, 0) + 1
            sent += 1

    workers = [threading.Thread(target=sender, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    out.put(statuses)


def test_a_flood_of_reviews_does_not_stall_admission_or_the_lease(
    cluster: Cluster, namespace: str, user_queue: str, operator: OperatorProcess
) -> None:
    wait_for(
        lambda: renewals(operator, time.time() - 3, time.time()),
        timeout=60,
        what="the operator leading (renewing its Lease)",
    )
    before = lease(cluster)
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    flooding = context.Process(
        target=flood, args=(operator.port, FLOOD_SECONDS, FLOOD_RATE, FLOOD_BYTES, results)
    )
    started, started_at = time.monotonic(), time.time()
    flooding.start()
    admitted_after: dict[str, float] = {}
    names = [f"during-flood-{i}" for i in range(3)]
    try:
        time.sleep(2)  # the flood is on
        # Workloads made directly, as an integration makes them: admitting them is the
        # operator's loop alone (a Job's own webhook calls would queue behind the flood).
        for name in names:
            cluster.apply(workload_manifest(name, user_queue), namespace)
        while time.monotonic() - started < FLOOD_SECONDS:
            for name in admitted_names(cluster, namespace):
                admitted_after.setdefault(name, time.monotonic() - started)
            time.sleep(0.5)
    finally:
        flooding.join(timeout=120)
    statuses = results.get(timeout=120)
    renewed = renewals(operator, started_at, started_at + FLOOD_SECONDS)
    gaps = [round(b - a, 2) for a, b in itertools.pairwise(renewed)]
    print(f"flood {statuses}; admitted after {admitted_after}; lease renewal gaps {gaps}")
    assert statuses.get(200, 0) >= 5 * FLOOD_SECONDS, statuses  # read and answered, many
    # Admission went on during the flood.
    assert sorted(admitted_after) == names, (admitted_after, statuses)
    # The lease was renewed all along (every retry period) by the same holder, never lost.
    after = lease(cluster)
    assert after["spec"]["holderIdentity"] == before["spec"]["holderIdentity"]
    assert after["spec"].get("leaseTransitions") == before["spec"].get("leaseTransitions")
    settings = LeaseSettings(chart.NAMESPACE)
    assert len(gaps) >= FLOOD_SECONDS / settings.retry_period / 2, gaps
    assert max(gaps) < settings.renew_deadline / 2, gaps


def workload_manifest(name: str, queue: str) -> dict:
    """A Workload made directly, as an integration would make it."""
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name},
        "spec": {
            "queueName": queue,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
                }
            ],
        },
    }


def admitted_names(cluster: Cluster, namespace: str) -> list[str]:
    items = cluster.get_json(jobs.WORKLOADS_V1BETA1, "-n", namespace)["items"]
    return [
        w["metadata"]["name"]
        for w in items
        if (jobs.condition(w, "Admitted") or {}).get("status") == "True"
    ]


# ---- the StatefulSet webhook ---------------------------------------------------------------------


def statefulset(namespace: str, replicas: int) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {
            "name": "web",
            "namespace": namespace,
            "uid": str(uuid.uuid4()),
            "labels": {jobs.QUEUE_LABEL: "q"},
        },
        "spec": {"replicas": replicas, "template": {"metadata": {}, "spec": {}}},
        "status": {"replicas": 0, "readyReplicas": 0},
    }


def test_the_statefulset_webhook_reveals_nothing_across_namespaces(
    cluster: Cluster, namespace: str, user_queue: str, operator: OperatorProcess
) -> None:
    """The victim's namespace holds a Workload named after a StatefulSet `web`; a tenant
    forges a scale-up review of `web` there, and one in a namespace without it."""
    group = sts_webhook.group_name("web")
    cluster.apply(workload_manifest(group, user_queue), namespace)
    wait_for(
        lambda: group in admitted_names(cluster, namespace),
        timeout=60,
        what="the victim's Workload admitted (so the operator's cache holds it)",
    )
    resource = ("apps", "v1", "statefulsets")
    answers = {}
    for target in (namespace, f"nothing-{uuid.uuid4().hex[:6]}"):
        forged = review("UPDATE", statefulset(target, 2), statefulset(target, 0), resource)
        status, body = post(
            operator.port, VALIDATE_STATEFULSET_WEBHOOK, json.dumps(forged).encode()
        )
        assert status == 200, body
        answer = json.loads(body)["response"]
        answers[target == namespace] = (answer["allowed"], answer.get("status"))
    assert answers[True] == answers[False], answers
