"""kopf wiring: start-up and shutdown, the liveness probe, and the admission webhooks.

kopf does what it does well here: serving webhooks (on every replica) and the process's
lifecycle. The cluster is not watched through kopf: each kind is listed and watched by a
reflector on the same event loop (see runtime.py and watches.py), whose start-up cost is linear
in the objects listed. Every handler is async, so none runs in kopf's thread pool.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import Any

import kopf

from tas import certs, metrics
from tas.api.annotations import TopologyRequestError
from tas.api.constants import QUEUE_NAME_LABEL
from tas.config import Settings
from tas.features import Gate
from tas.handlers.runtime import Runtime
from tas.jobs.workload import build_workload
from tas.kubeconfig import load_connection

log = logging.getLogger("tas.operator")


class ServiceWebhookServer:
    """kopf's webhook server, announced to the API server as a Service reference instead of a
    URL: an in-cluster API server reaches webhooks through Services, not cluster DNS names."""

    def __init__(self, inner: kopf.WebhookServer, namespace: str, name: str, port: int) -> None:
        self.inner = inner
        self.service = {"namespace": namespace, "name": name, "port": port}

    async def __call__(self, fn: Any) -> Any:
        async for config in self.inner(fn):
            announced: dict[str, Any] = {"service": {**self.service, "path": self.inner.path or ""}}
            if config.get("caBundle"):
                announced["caBundle"] = config["caBundle"]
            yield announced


def rt(memo: Any) -> Runtime:
    return memo.runtime


# ---- start-up and shutdown ---------------------------------------------------------------------


@kopf.on.startup()
async def startup(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    config: Settings = memo.settings
    settings.posting.enabled = False  # we write our own events, on Workloads
    cert_dir = Path(config.webhook_cert_dir or tempfile.mkdtemp(prefix="tas-webhook-"))
    hosts = [config.webhook_url_host, config.webhook_listen]
    if config.webhook_service:
        namespace, name, _ = config.webhook_service
        hosts = [f"{name}.{namespace}.svc", f"{name}.{namespace}.svc.cluster.local", *hosts]
    certfile, keyfile, cafile = certs.serving_files(cert_dir, hosts)
    server = kopf.WebhookServer(
        addr=config.webhook_listen,
        port=config.webhook_port,
        host=config.webhook_url_host,
        certfile=str(certfile),
        pkeyfile=str(keyfile),
        cafile=str(cafile) if cafile else None,
    )
    if config.webhook_service:
        settings.admission.server = ServiceWebhookServer(server, *config.webhook_service)
    else:
        settings.admission.server = server
    settings.admission.managed = config.webhook_config_name
    metrics.serve(config.metrics_port)
    if "runtime" not in memo:  # `tas operator` starts it before kopf, to list sooner
        memo.runtime = Runtime(config)
        memo.runtime.start()


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
    id="suspend-queued-jobs",
    operations=["CREATE"],
    labels={QUEUE_NAME_LABEL: kopf.PRESENT},
    side_effects=False,
    persistent=True,  # never removed on exit: another replica serves it through the Service
)
async def suspend_queued_job(spec: Any, patch: kopf.Patch, **_: Any) -> None:
    """A queued Job starts suspended: its pods wait for admission."""
    if not spec.get("suspend"):
        patch.spec["suspend"] = True


@kopf.on.validate(
    "batch",
    "v1",
    "jobs",
    id="validate-topology-request",
    operations=["CREATE", "UPDATE"],
    labels={QUEUE_NAME_LABEL: kopf.PRESENT},
    side_effects=False,
    persistent=True,
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
