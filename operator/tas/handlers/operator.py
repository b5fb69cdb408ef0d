"""kopf wiring: start-up and shutdown, the liveness probe, and the admission webhooks.

kopf does what it does well here: serving webhooks (on every replica) and the process's
lifecycle. The cluster is not watched through kopf: each kind is listed and watched by a
reflector on the same event loop (see runtime.py and watches.py), whose start-up cost is linear
in the objects listed. Every handler is async, so none runs in kopf's thread pool.

The webhook configurations belong to the chart. kopf only serves the webhooks; it never
creates, fills or empties a configuration, so a replica that stops takes no webhook away from
the others. webhookcert.py keeps the certificate and the configurations' CA bundle.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
from pathlib import Path
from typing import Any

import kopf
from kopf._core.reactor.inventory import ResourceMemories  # for ForgetfulMemories (no public name)

from tas import metrics
from tas.api.annotations import TopologyRequestError
from tas.api.constants import QUEUE_NAME_LABEL
from tas.config import Settings
from tas.features import Gate
from tas.handlers.runtime import Runtime
from tas.jobs.workload import build_workload
from tas.kubeconfig import load_connection
from tas.webhookcert import WebhookCertificates

log = logging.getLogger("tas.operator")

# How often kopf's server looks for a renewed certificate (it restarts itself on a change). A
# renewal starts months before the old one expires, so any interval below hours is enough.
CERT_FILE_CHECK_SECONDS = 30.0
# The webhooks' handler ids, which are their URL paths in the chart's webhook configurations.
SUSPEND_WEBHOOK = "suspend-queued-jobs"
VALIDATE_WEBHOOK = "validate-topology-request"


class ForgetfulMemories(ResourceMemories):
    """kopf keeps a memory per object it is shown, until a watch reports the object deleted.
    Nothing is watched through kopf here, so every UPDATE review (a real uid) would leave one
    behind for good, and anyone who reaches the webhook port could fill the process's memory.
    The webhooks need no memory between reviews: none is kept."""

    async def recall(self, raw_body, *, memobase=None, noticed_by_listing=False, ephemeral=False):
        return await super().recall(
            raw_body, memobase=memobase, noticed_by_listing=noticed_by_listing, ephemeral=True
        )


def rt(memo: Any) -> Runtime:
    return memo.runtime


# ---- start-up and shutdown ---------------------------------------------------------------------


@kopf.on.startup()
async def startup(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    config: Settings = memo.settings
    settings.posting.enabled = False  # we write our own events, on Workloads
    if "runtime" not in memo:  # `tas operator` starts it before kopf, to list sooner
        memo.runtime = Runtime(config)
        memo.runtime.start()
    # The chart owns the webhook configurations; kopf only serves (settings.admission.managed
    # stays unset, so kopf never creates, fills or empties them).
    certificates = WebhookCertificates(
        rt(memo).kube,
        Path(config.webhook_cert_dir or tempfile.mkdtemp(prefix="tas-webhook-")),
        config.webhook_cert_hosts,
        config.webhook_config_name,
        secret=config.webhook_cert_secret,
    )
    certificates.provisional()
    rt(memo).background(certificates.run(), "webhook-certificate")
    # Serve the Secret's certificate from the start if the API server answers soon.
    await asyncio.wait([asyncio.ensure_future(certificates.ready.wait())], timeout=10)
    certfile, keyfile, cafile = certificates.files
    settings.admission.server = kopf.WebhookServer(
        addr=config.webhook_listen,
        port=config.webhook_port,
        host=config.webhook_url_host,
        certfile=str(certfile),
        pkeyfile=str(keyfile),
        cafile=str(cafile),
        file_check_interval=CERT_FILE_CHECK_SECONDS,
    )
    metrics.serve(config.metrics_port)


@kopf.on.login()
async def login(memo: kopf.Memo, **_: Any) -> kopf.ConnectionInfo:
    """kopf (webhook configurations, discovery) logs in with the credentials our client uses."""
    connection = load_connection(memo.settings.kubeconfig)
    scheme, _, token = (connection.authorization() or "").partition(" ")
    return kopf.ConnectionInfo(
        server=connection.server,
        ca_path=None if connection.insecure else connection.ca_file,
        insecure=connection.insecure,
        scheme=scheme or None,
        token=token or None,
        certificate_path=connection.cert_file,
        private_key_path=connection.key_file,
    )


@kopf.on.cleanup()
async def cleanup(memo: kopf.Memo, **_: Any) -> None:
    await rt(memo).stop()


@kopf.on.probe(id="workers")
async def workers_alive(memo: kopf.Memo, **_: Any) -> dict:
    """Liveness: fails (HTTP 500) when a watch or worker task has died."""
    runtime = rt(memo)
    problems = runtime.problems()
    if problems:
        raise kopf.PermanentError("; ".join(problems))
    return {"synced": all(r.synced.is_set() for r in runtime.reflectors), "leading": runtime.active}


# ---- admission webhooks for Jobs ---------------------------------------------------------------


@kopf.on.mutate(
    "batch",
    "v1",
    "jobs",
    id=SUSPEND_WEBHOOK,
    operations=["CREATE"],
    labels={QUEUE_NAME_LABEL: kopf.PRESENT},
    side_effects=False,
)
async def suspend_queued_job(spec: Any, patch: kopf.Patch, **_: Any) -> None:
    """A queued Job starts suspended: its pods wait for admission."""
    if not spec.get("suspend"):
        patch.spec["suspend"] = True


@kopf.on.validate(
    "batch",
    "v1",
    "jobs",
    id=VALIDATE_WEBHOOK,
    operations=["CREATE", "UPDATE"],
    labels={QUEUE_NAME_LABEL: kopf.PRESENT},
    side_effects=False,
)
async def validate_topology_request(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    config: Settings = memo.settings
    job = {
        "metadata": {
            "name": body.meta.get("name") or "new",
            "namespace": body.meta.get("namespace") or "",
            "uid": body.meta.get("uid") or "",
        },
        "spec": dict(body.spec),
    }
    try:
        build_workload(job, multi_layer_enabled=config.gates.enabled(Gate.TAS_MULTI_LAYER_TOPOLOGY))
    except TopologyRequestError as exc:
        raise kopf.AdmissionError(str(exc), code=422) from None
