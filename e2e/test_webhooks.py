"""The webhooks belong to the chart and outlive any operator process; their certificate lives
in the chart's Secret and is renewed before it expires; the operator may touch nothing else.
"""

from __future__ import annotations

import base64
import datetime
import json
import socket
import ssl

import pytest
from cryptography import x509

from e2e import chart, jobs
from e2e.harness import Cluster, wait_for
from e2e.operator_process import WEBHOOK_CONFIG, OperatorProcess
from tas.webhooks import certs

pytestmark = pytest.mark.e2e

SA = f"system:serviceaccount:{chart.NAMESPACE}:{chart.RELEASE}"
KINDS = ("mutatingwebhookconfiguration", "validatingwebhookconfiguration")


def configurations(cluster: Cluster) -> dict[str, list[dict]]:
    return {kind: cluster.get_json(kind, WEBHOOK_CONFIG).get("webhooks") or [] for kind in KINDS}


def served_certificate(port: int) -> x509.Certificate:
    """The certificate the webhook port presents (not verified: we look at it)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        context.wrap_socket(raw) as tls,
    ):
        return x509.load_der_x509_certificate(tls.getpeercert(binary_form=True))


def secret_data(cluster: Cluster) -> dict[str, bytes]:
    secret = cluster.get_json("secret", "-n", chart.NAMESPACE, chart.CERT_SECRET)
    return {k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items()}


def put_secret(cluster: Cluster, data: dict[str, bytes]) -> None:
    encoded = {k: base64.b64encode(v).decode() for k, v in data.items()}
    cluster.kubectl(
        "patch",
        "secret",
        chart.CERT_SECRET,
        "-n",
        chart.NAMESPACE,
        "--type=merge",
        "-p",
        json.dumps({"data": encoded}),
    )


def create_queued_job(cluster: Cluster, namespace: str, queue: str, name: str):
    body = json.dumps(jobs.job(name, queue, pods=1))
    return cluster.kubectl(
        "create", "-n", namespace, "-o", "json", "-f", "-", input=body, check=False
    )


def test_a_stopped_operator_leaves_its_webhooks_in_place_and_queued_jobs_are_refused(
    cluster: Cluster, namespace: str, user_queue: str, operator: OperatorProcess
):
    before = configurations(cluster)
    assert all(before.values()) and all(
        h["clientConfig"].get("caBundle") for hooks in before.values() for h in hooks
    )
    operator.stop()  # SIGTERM: kopf's clean shutdown, as in a rolling update
    try:
        assert configurations(cluster) == before  # nothing emptied, nothing removed
        # With no operator, a queued Job is refused (never let through unsuspended) ...
        refused = create_queued_job(cluster, namespace, user_queue, "while-down")
        assert refused.returncode != 0 and "suspend-queued-jobs" in refused.stderr
        # ... and a Job without the queue-name label is not the webhooks' business.
        cluster.apply(jobs.job("plain", None, pods=1), namespace)
    finally:
        operator.start()
    created = create_queued_job(cluster, namespace, user_queue, "after")
    assert created.returncode == 0, created.stderr
    assert json.loads(created.stdout)["spec"]["suspend"] is True  # the webhook is back
    jobs.wait_admitted(cluster, namespace, "after")


@pytest.mark.parametrize(
    "expiring",
    ["serving certificate", "CA"],
)
def test_an_expiring_certificate_is_renewed_and_queued_jobs_keep_passing(
    cluster: Cluster, namespace: str, user_queue: str, operator: OperatorProcess, expiring: str
):
    now = datetime.datetime.now(datetime.UTC)
    operator.stop()
    try:
        # A Secret whose serving certificate (or CA) is about to expire, as if a year passed.
        short = datetime.timedelta(days=2)
        ca_life = short if expiring == "CA" else datetime.timedelta(days=3650)
        ca, ca_key = certs.make_ca(now, ca_life)
        tls, key = certs.make_serving(ca, ca_key, ["127.0.0.1"], now, short)
        put_secret(
            cluster,
            {certs.CA_CRT: ca, certs.CA_KEY: ca_key, certs.TLS_CRT: tls, certs.TLS_KEY: key},
        )
    finally:
        operator.start()
    data = secret_data(cluster)
    renewed = x509.load_pem_x509_certificate(data[certs.TLS_CRT])
    assert renewed.not_valid_after_utc - now > datetime.timedelta(days=300)
    bundle = x509.load_pem_x509_certificates(data[certs.CA_CRT])
    if expiring == "CA":
        # A new CA signs it; the old one is still trusted until it expires.
        assert len(bundle) == 2 and bundle[1] == x509.load_pem_x509_certificate(ca)
    else:
        assert data[certs.CA_CRT] == ca  # same CA: the caBundle did not have to change
    renewed.verify_directly_issued_by(bundle[0])
    # The port serves the new one (kopf's server reloads it), and the configurations trust it.
    wait_for(
        lambda: served_certificate(operator.port) == renewed,
        timeout=60,
        what="the renewed certificate to be served",
    )
    assert operator.webhooks_trusted()
    created = create_queued_job(cluster, namespace, user_queue, "renewed")
    assert created.returncode == 0, created.stderr
    assert json.loads(created.stdout)["spec"]["suspend"] is True
    jobs.wait_admitted(cluster, namespace, "renewed")


@pytest.mark.parametrize(
    ("verb", "resource", "allowed"),
    [
        ("create", "mutatingwebhookconfigurations", False),
        ("create", "validatingwebhookconfigurations", False),
        ("delete", f"mutatingwebhookconfigurations/{WEBHOOK_CONFIG}", False),
        ("delete", f"validatingwebhookconfigurations/{WEBHOOK_CONFIG}", False),
        ("patch", "mutatingwebhookconfigurations/someone-elses", False),
        ("patch", f"mutatingwebhookconfigurations/{WEBHOOK_CONFIG}", True),
        ("patch", f"validatingwebhookconfigurations/{WEBHOOK_CONFIG}", True),
        ("get", f"secrets/{chart.CERT_SECRET}", True),
        ("update", f"secrets/{chart.CERT_SECRET}", True),
        ("get", "secrets/another", False),
        ("list", "secrets", False),
        ("create", "secrets", False),
    ],
)
def test_the_operator_may_touch_only_its_own_webhooks_and_secret(
    cluster: Cluster, chart_installed, verb: str, resource: str, allowed: bool
):
    answer = cluster.kubectl(
        "auth", "can-i", verb, resource, f"--as={SA}", "-n", chart.NAMESPACE, check=False
    ).stdout.strip()
    assert answer == ("yes" if allowed else "no")
