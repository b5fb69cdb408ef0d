"""kopf wiring: start-up and shutdown, the liveness probe, and the admission webhooks.

kopf does what it does well here: serving webhooks (on every replica) and the process's
lifecycle. The cluster is not watched through kopf: each kind is listed and watched by a
reflector on the same event loop (see tas.runtime), whose start-up cost is linear in the
objects listed. Every handler is async, so none runs in kopf's thread pool.

The webhook configurations belong to the chart. kopf only serves the webhooks; it never
creates, fills or empties a configuration, so a replica that stops takes no webhook away from
the others. webhooks/rotation.py keeps the certificate and the configurations' CA bundle.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import kopf
from kopf._cogs.structs import references  # for OffLoopReviews (no public name)
from kopf._core.engines.admission import AmbiguousResourceError, UnknownResourceError
from kopf._core.reactor.inventory import ResourceMemories  # for ForgetfulMemories (no public name)

from tas import metrics
from tas.api.annotations import TopologyRequestError
from tas.api.constants import QUEUE_NAME_LABEL
from tas.config import Settings
from tas.features import Gate
from tas.integrations import JOBSET, LEADERWORKERSET, Framework
from tas.jobframework.workload import build_workload
from tas.jobs.lifecycle import JOB
from tas.jobset.jobset import JOB_SET
from tas.kube import client_session
from tas.kube.kubeconfig import load_connection
from tas.leaderworkerset import lws
from tas.pods import webhook as pod_webhook
from tas.runtime.runtime import Runtime, slicing_gates
from tas.runtime.watches import owned_by_jobset
from tas.statefulset import webhook as sts_webhook
from tas.webhooks.rotation import WebhookCertificates
from tas.webhooks.server import ReviewFn, WebhookServer, call_on

log = logging.getLogger("tas.operator")

# The webhooks' handler ids, which are their URL paths in the chart's webhook configurations.
SUSPEND_WEBHOOK = "suspend-queued-jobs"
VALIDATE_WEBHOOK = "validate-topology-request"
SUSPEND_JOBSET_WEBHOOK = "suspend-queued-jobsets"
VALIDATE_JOBSET_WEBHOOK = "validate-jobsets"
MUTATE_POD_WEBHOOK = "gate-queued-pods"
VALIDATE_POD_WEBHOOK = "validate-pods"
MUTATE_STATEFULSET_WEBHOOK = "mark-queued-statefulsets"
VALIDATE_STATEFULSET_WEBHOOK = "validate-statefulsets"
MUTATE_LWS_WEBHOOK = "mark-queued-leaderworkersets"
VALIDATE_LWS_WEBHOOK = "validate-leaderworkersets"


class ForgetfulMemories(ResourceMemories):
    """kopf keeps a memory per object it is shown, until a watch reports the object deleted.
    Nothing is watched through kopf here, so every UPDATE review (a real uid) would leave one
    behind for good, and anyone who reaches the webhook port could fill the process's memory.
    The webhooks need no memory between reviews: none is kept."""

    async def recall(self, raw_body, *, memobase=None, noticed_by_listing=False, ephemeral=False):
        return await super().recall(
            raw_body, memobase=memobase, noticed_by_listing=noticed_by_listing, ephemeral=True
        )


class OffLoopReviews:
    """kopf's review function, called on the webhook server's own thread and event loop.

    Read in kopf 1.45's serve_admission_request: it keeps nothing between reviews (our
    ForgetfulMemories store nothing), and touches nothing bound to kopf's loop (the cause's
    logger posts no events, and async handlers run inline). The one thing it reads that kopf's
    loop changes is kopf's discovered resources, which kopf empties and refills in place when a
    CRD changes: that is atomic on kopf's loop only. So each review is given a copy of them,
    taken on kopf's loop, and taken again (at most once a second) when a review names a
    resource the copy lacks, such as one whose CRD was installed since. Our handlers read the
    cache through `call_on` (only the loop that owns it may touch it)."""

    RECOPY_SECONDS = 1.0

    def __init__(self, fn: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.fn, self.loop = fn, loop
        self.discovered: references.Insights = fn.keywords["insights"]  # kopf's own, live
        self.insights = self._copy()
        self.copied_at = time.monotonic()

    def _copy(self) -> references.Insights:
        return references.Insights(webhook_resources=set(self.discovered.webhook_resources))

    async def __call__(self, request: Any, **kwargs: Any) -> Any:
        try:
            return await self.fn(request, insights=self.insights, **kwargs)
        except (UnknownResourceError, AmbiguousResourceError):
            if time.monotonic() - self.copied_at < self.RECOPY_SECONDS:
                raise
            self.insights = await call_on(self.loop, self._copy)
            self.copied_at = time.monotonic()
            return await self.fn(request, insights=self.insights, **kwargs)


def serving_off_loop(server: WebhookServer) -> Callable[[ReviewFn], AsyncIterator[dict]]:
    """The server as kopf calls it (`settings.admission.server`), given kopf's review function
    made safe to call off kopf's loop."""

    def serve(fn: ReviewFn) -> AsyncIterator[dict]:
        return server(OffLoopReviews(fn, asyncio.get_running_loop()))

    return serve


def rt(memo: Any) -> Runtime:
    return memo.runtime


async def on_cache_loop(memo: Any, fn: Callable[..., Any], *args: Any) -> Any:
    """fn(*args) on the operator's loop, which owns the cache: the webhooks run on their own."""
    return await call_on(memo.loop, fn, *args)


# ---- start-up and shutdown ---------------------------------------------------------------------


@kopf.on.startup()
async def startup(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    config: Settings = memo.settings
    settings.posting.enabled = False  # we write our own events, on Workloads
    memo.loop = asyncio.get_running_loop()
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
    certfile, keyfile, cafile = certificates.files
    server = WebhookServer(
        addr=config.webhook_listen,
        port=config.webhook_port,
        host=config.webhook_url_host,
        certfile=certfile,
        keyfile=keyfile,
        cafile=cafile,
        max_review_bytes=config.webhook_max_review_bytes,
    )
    certificates.on_renewed.append(server.reload)
    rt(memo).background(certificates.run(), "webhook-certificate")
    rt(memo).helpers.append(
        asyncio.create_task(ready_when_trusted(rt(memo), certificates, server), name="readiness")
    )
    # Serve the Secret's certificate from the start if the API server answers soon.
    await asyncio.wait([asyncio.ensure_future(certificates.ready.wait())], timeout=10)
    settings.admission.server = serving_off_loop(server)
    metrics.serve(config.metrics_port)


async def ready_when_trusted(
    runtime: Runtime, certificates: WebhookCertificates, server: WebhookServer
) -> None:
    """Readiness (GET /readyz on the webhook port) passes once the certificate served is the
    Secret's, which the webhook configurations trust (the provisional one is trusted by no
    one), and the caches are synced: before that the Service sends this replica no review."""
    await certificates.ready.wait()
    await runtime.synced()
    server.set_ready()
    log.info("ready: serving the trusted certificate, caches synced")


@kopf.on.login()
async def login(memo: kopf.Memo, **_: Any) -> kopf.AiohttpSession:
    """kopf (its discovery, which the webhooks wait for) reaches the API server as our client
    does: the same TLS, tls-server-name, proxy and credentials. kopf logs in again on a 401."""
    connection = load_connection(memo.settings.kubeconfig)
    authorization = await connection.authorization()
    headers = {"Authorization": authorization} if authorization else None
    return kopf.AiohttpSession(
        aiohttp_session=client_session(connection, 0, headers),
        server=connection.server,
        default_namespace=connection.namespace,
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


def enabled(memo: Any, framework: Framework) -> bool:
    """A webhook of a disabled integration passes everything (the chart does not call it)."""
    return memo.settings.integrations.enabled(framework)


def slicing(memo: Any) -> dict[str, bool]:
    return slicing_gates(memo.settings.gates)


def refuse(errors: list[str]) -> None:
    if errors:
        raise kopf.AdmissionError("; ".join(errors), code=422)


def review_object(body: kopf.Body) -> dict:
    """The reviewed object as a plain dict; a name and uid even at creation (generateName)."""
    obj = {"metadata": dict(body.meta), "spec": dict(body.spec)}
    obj["metadata"].setdefault("name", body.meta.get("generateName") or "new")
    obj["metadata"].setdefault("uid", "")
    obj["metadata"].setdefault("namespace", "")
    if "status" in body:
        obj["status"] = dict(body.get("status") or {})
    return obj


# ---- batch/v1 Jobs -----------------------------------------------------------------------------


@kopf.on.mutate(
    "batch",
    "v1",
    "jobs",
    id=SUSPEND_WEBHOOK,
    operations=["CREATE"],
    labels={QUEUE_NAME_LABEL: kopf.PRESENT},
    side_effects=False,
)
async def suspend_queued_job(
    body: kopf.Body, spec: Any, patch: kopf.Patch, memo: kopf.Memo, **_: Any
) -> None:
    """A queued Job starts suspended: its pods wait for admission. A JobSet's Job is left to its
    JobSet."""
    if enabled(memo, Framework.JOB) and not owned_by_jobset(body) and not spec.get("suspend"):
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
    if not enabled(memo, Framework.JOB) or owned_by_jobset(body):
        return
    try:
        build_workload(JOB, review_object(body), **slicing(memo))
    except TopologyRequestError as exc:
        raise kopf.AdmissionError(str(exc), code=422) from None


# ---- JobSets -----------------------------------------------------------------------------------


@kopf.on.mutate(
    JOBSET.group,
    JOBSET.version,
    JOBSET.plural,
    id=SUSPEND_JOBSET_WEBHOOK,
    operations=["CREATE"],
    labels={QUEUE_NAME_LABEL: kopf.PRESENT},
    side_effects=False,
)
async def suspend_queued_jobset(spec: Any, patch: kopf.Patch, memo: kopf.Memo, **_: Any) -> None:
    """A queued JobSet starts suspended, and with it every Job it makes."""
    if enabled(memo, Framework.JOBSET) and not spec.get("suspend"):
        patch.spec["suspend"] = True


@kopf.on.validate(
    JOBSET.group,
    JOBSET.version,
    JOBSET.plural,
    id=VALIDATE_JOBSET_WEBHOOK,
    operations=["CREATE", "UPDATE"],
    labels={QUEUE_NAME_LABEL: kopf.PRESENT},
    side_effects=False,
)
async def validate_jobset(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """Every replicatedJob's topology annotations, with Kueue's rules; the message names the
    annotation and the replicatedJob."""
    if not enabled(memo, Framework.JOBSET):
        return
    try:
        JOB_SET.pod_sets(review_object(body), **slicing(memo))
    except TopologyRequestError as exc:
        raise kopf.AdmissionError(str(exc), code=422) from None


# ---- plain pods and pod groups -----------------------------------------------------------------


@kopf.on.mutate(
    "",
    "v1",
    "pods",
    id=MUTATE_POD_WEBHOOK,
    operations=["CREATE"],
    side_effects=False,
)
async def gate_queued_pod(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, **_: Any) -> None:
    """A queued pod is gated at creation until its Workload (its own, or its group's) is
    admitted; a pod of a Job or JobSet admitted as a whole is left alone."""
    if not enabled(memo, Framework.POD):
        return
    pod = review_object(body)
    controller = next(
        (o.get("uid") for o in body.meta.get("ownerReferences") or [] if o.get("controller")), None
    )
    if await on_cache_loop(memo, rt(memo).managed_owner, controller):
        return
    patch.update(
        pod_webhook.mutate(pod, tas=memo.settings.gates.enabled(Gate.TOPOLOGY_AWARE_SCHEDULING))
    )


@kopf.on.validate(
    "",
    "v1",
    "pods",
    id=VALIDATE_POD_WEBHOOK,
    operations=["CREATE", "UPDATE"],
    side_effects=False,
)
async def validate_pod(body: kopf.Body, old: Any, memo: kopf.Memo, **_: Any) -> None:
    if enabled(memo, Framework.POD):
        previous = {"metadata": dict(old.get("metadata") or {})} if old else None
        refuse(pod_webhook.validate(review_object(body), previous, **slicing(memo)))


# ---- StatefulSets ------------------------------------------------------------------------------


@kopf.on.mutate(
    "apps",
    "v1",
    "statefulsets",
    id=MUTATE_STATEFULSET_WEBHOOK,
    operations=["CREATE", "UPDATE"],
    labels={QUEUE_NAME_LABEL: kopf.PRESENT},
    side_effects=False,
)
async def mark_queued_statefulset(
    body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, **_: Any
) -> None:
    """Its pods become one pod group of `replicas`, admitted at the first pod."""
    if enabled(memo, Framework.STATEFULSET):
        patch.update(sts_webhook.mutate(review_object(body)))


@kopf.on.validate(
    "apps",
    "v1",
    "statefulsets",
    id=VALIDATE_STATEFULSET_WEBHOOK,
    operations=["UPDATE"],
    labels={QUEUE_NAME_LABEL: kopf.PRESENT},
    side_effects=False,
)
async def validate_statefulset(body: kopf.Body, old: Any, memo: kopf.Memo, **_: Any) -> None:
    """Decided from the reviewed object alone, never from the cache: see
    sts_webhook.validate_update."""
    if not enabled(memo, Framework.STATEFULSET) or not old:
        return
    previous = {k: dict(old.get(k) or {}) for k in ("metadata", "spec", "status")}
    refuse(sts_webhook.validate_update(previous, review_object(body)))


# ---- LeaderWorkerSets --------------------------------------------------------------------------


@kopf.on.mutate(
    LEADERWORKERSET.group,
    LEADERWORKERSET.version,
    LEADERWORKERSET.plural,
    id=MUTATE_LWS_WEBHOOK,
    operations=["CREATE", "UPDATE"],
    labels={QUEUE_NAME_LABEL: kopf.PRESENT},
    side_effects=False,
)
async def mark_queued_leaderworkerset(
    body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, **_: Any
) -> None:
    """Its pods are gated at creation and join their group's Workload."""
    if enabled(memo, Framework.LEADERWORKERSET):
        patch.update(lws.mutate(review_object(body)))


@kopf.on.validate(
    LEADERWORKERSET.group,
    LEADERWORKERSET.version,
    LEADERWORKERSET.plural,
    id=VALIDATE_LWS_WEBHOOK,
    operations=["CREATE", "UPDATE"],
    labels={QUEUE_NAME_LABEL: kopf.PRESENT},
    side_effects=False,
)
async def validate_leaderworkerset(body: kopf.Body, old: Any, memo: kopf.Memo, **_: Any) -> None:
    if enabled(memo, Framework.LEADERWORKERSET):
        previous = (
            {"metadata": dict(old.get("metadata") or {}), "spec": dict(old.get("spec") or {})}
            if old
            else None
        )
        bound = memo.settings.max_leaderworkerset_replicas
        refuse(lws.validate(review_object(body), previous, max_replicas=bound, **slicing(memo)))
