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
import functools
import logging
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, cast

import kopf
from kopf._cogs.structs import references  # for OffLoopReviews (no public name)
from kopf._core.reactor.inventory import ResourceMemories  # for ForgetfulMemories (no public name)

from tas import metrics
from tas.api.constants import QUEUE_NAME_LABEL
from tas.api.frameworks import RESOURCES, Framework, Resource
from tas.config import Settings
from tas.features import Gate
from tas.integrations.deployment import webhook as deployment_webhook
from tas.integrations.leaderworkerset import webhook as lws_webhook
from tas.integrations.pod import webhook as pod_webhook
from tas.integrations.registry import BY_FRAMEWORK, GENERIC_JOBS, GenericJobKind, managed_owners
from tas.integrations.statefulset import webhook as sts_webhook
from tas.jobframework.owners import controller_of
from tas.kube import client_session
from tas.kube.kubeconfig import load_connection
from tas.runtime.runtime import Runtime
from tas.webhooks.rotation import WebhookCertificates
from tas.webhooks.server import ReviewFn, WebhookServer, call_on

log = logging.getLogger("tas.operator")

# The webhooks' handler ids, which are their URL paths in the chart's webhook configurations.
# A GenericJob kind's are its registry row's (tas.integrations.registry).
SUSPEND_WEBHOOK = BY_FRAMEWORK[Framework.JOB].suspend_webhook
VALIDATE_WEBHOOK = BY_FRAMEWORK[Framework.JOB].validate_webhook
SUSPEND_JOBSET_WEBHOOK = BY_FRAMEWORK[Framework.JOBSET].suspend_webhook
VALIDATE_JOBSET_WEBHOOK = BY_FRAMEWORK[Framework.JOBSET].validate_webhook
MUTATE_POD_WEBHOOK = "gate-queued-pods"
VALIDATE_POD_WEBHOOK = "validate-pods"
MUTATE_STATEFULSET_WEBHOOK = "mark-queued-statefulsets"
VALIDATE_STATEFULSET_WEBHOOK = "validate-statefulsets"
MUTATE_DEPLOYMENT_WEBHOOK = "mark-queued-deployments"
VALIDATE_DEPLOYMENT_WEBHOOK = "validate-deployments"
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
    loop changes is kopf's discovered resources, refilled on kopf's loop when a CRD changes: not
    safe to read from this thread, and not prompt either. kopf rescans a group on each event of
    its CRDs, and when the API server's discovery lags behind a new CRD's Established condition
    the last rescan finds nothing: the kind (JobSet, LeaderWorkerSet installed while we run)
    then stays unknown and every review of it is refused. So reviews are matched against the
    kinds our webhooks serve, given once: the chart's webhook configurations name exactly those,
    and a disabled integration's webhook passes everything. Our handlers read the cache
    through the frozen copy the runtime publishes (tas.webhooks.view); only a TrainJob naming a
    runtime not in the copy yet asks the cache's loop (`call_on`)."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        served = {
            references.Resource(r.group, r.version, r.plural, kind=r.kind, namespaced=True)
            for r in (*RESOURCES.values(), *(k.resource for k in GENERIC_JOBS))
        }
        self.insights = references.Insights(webhook_resources=served)

    async def __call__(self, request: Any, **kwargs: Any) -> Any:
        return await self.fn(request, insights=self.insights, **kwargs)


def serving_off_loop(server: WebhookServer) -> kopf.WebhookServerProtocol:
    """The server as kopf calls it (`settings.admission.server`), given kopf's review function
    made safe to call off kopf's loop."""

    def serve(fn: ReviewFn) -> AsyncIterator[kopf.WebhookClientConfig]:
        # Our server, which imports no kopf, yields kopf's client config as a plain dict.
        configs = server(OffLoopReviews(fn))
        return cast(AsyncIterator[kopf.WebhookClientConfig], configs)

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
    await server.serving.wait()
    await runtime.webhooks_served()


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


# ---- admission webhooks ------------------------------------------------------------------------


def enabled(memo: Any, framework: str) -> bool:
    """A webhook of a disabled integration passes everything (the chart does not call it)."""
    return memo.settings.integrations.enabled(framework)


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


Review = Callable[..., Awaitable[None]]


def webhook(
    on: Callable[..., Callable[[Review], Any]],
    framework: str,
    handler_id: str,
    operations: list[str],
    *,
    queued_only: bool = True,
    resource: Resource | None = None,
) -> Callable[[Review], Review]:
    """kopf's decorator (`on`: kopf.on.mutate or kopf.on.validate) for a webhook of one
    integration: on its kind (`resource`, by default the framework's in RESOURCES), under
    `handler_id` (the path the chart's webhook configuration calls), without side effects, for
    objects with a queue name unless `queued_only` is False (a pod may be queued by its
    parent's mark alone). The handler runs only while the integration is enabled."""
    resource = resource or RESOURCES[Framework(framework)]

    def register(fn: Review) -> Review:
        @functools.wraps(fn)
        async def review(memo: kopf.Memo, **kwargs: Any) -> None:
            if enabled(memo, framework):
                await fn(memo=memo, **kwargs)

        return on(
            resource.group,
            resource.version,
            resource.plural,
            id=handler_id,
            operations=operations,
            labels={QUEUE_NAME_LABEL: kopf.PRESENT} if queued_only else None,
            side_effects=False,
        )(review)

    return register


# ---- the kinds held suspended until admitted (batch/v1 Job, JobSet, ...) ------------------------


def admitted_with_owner(memo: Any, body: kopf.Body) -> bool:
    """Controlled by an object of an enabled kind admitted as a whole (a JobSet's Job): left
    to that owner, as Kueue's webhooks leave an object whose owner it manages."""
    return managed_owners(memo.settings.integrations).controller(body) is not None


def register_generic_job(kind: GenericJobKind) -> None:
    """The kind's webhooks: a queued object starts suspended (its pods wait for admission, and
    with it every child its controller makes), and its pod templates' topology annotations
    are validated with Kueue's rules (the message names the annotation and the template)."""

    async def suspend(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, **_: Any) -> None:
        if not admitted_with_owner(memo, body):
            tas = memo.settings.gates.enabled(Gate.TOPOLOGY_AWARE_SCHEDULING)
            patch.update(kind.mutate(review_object(body), tas=tas))

    async def validate(body: kopf.Body, memo: kopf.Memo, old: Any = None, **_: Any) -> None:
        if admitted_with_owner(memo, body):
            return
        obj = review_object(body)
        previous = {k: dict(old.get(k) or {}) for k in ("metadata", "spec")} if old else None
        looked_up = None
        if kind.lookup is not None:  # what its pod sets are built from (a TrainJob's runtime)
            looked_up = rt(memo).webhook_view.current.lookup(kind.name, kind.lookup.named_by(obj))
            if looked_up is None:  # perhaps created since the copy: the cache has the last word
                generic = rt(memo).generic_jobs[kind.name]
                looked_up = await on_cache_loop(memo, generic.lookup, obj)
        refuse(kind.validate(obj, previous, looked_up))

    for on, handler_id, operations, fn in (
        (kopf.on.mutate, kind.suspend_webhook, ["CREATE"], suspend),
        (kopf.on.validate, kind.validate_webhook, ["CREATE", "UPDATE"], validate),
    ):
        fn.__name__ = fn.__qualname__ = handler_id.replace("-", "_")
        webhook(on, kind.framework, handler_id, operations, resource=kind.resource)(fn)


for _kind in GENERIC_JOBS:
    register_generic_job(_kind)


# ---- plain pods and pod groups -----------------------------------------------------------------


@webhook(kopf.on.mutate, Framework.POD, MUTATE_POD_WEBHOOK, ["CREATE"], queued_only=False)
async def gate_queued_pod(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, **_: Any) -> None:
    """A queued pod is gated at creation until its Workload (its own, or its group's) is
    admitted; a pod of a Job or JobSet admitted as a whole is left alone."""
    pod = review_object(body)
    if admitted_with_owner(memo, body):
        return
    controller = controller_of(pod)
    uid = controller.get("uid") if controller else None
    if rt(memo).webhook_view.current.managed_owner(uid):  # never waits for the cache's loop
        return
    patch.update(
        pod_webhook.mutate(pod, tas=memo.settings.gates.enabled(Gate.TOPOLOGY_AWARE_SCHEDULING))
    )


@webhook(
    kopf.on.validate, Framework.POD, VALIDATE_POD_WEBHOOK, ["CREATE", "UPDATE"], queued_only=False
)
async def validate_pod(body: kopf.Body, old: Any = None, **_: Any) -> None:
    previous = {"metadata": dict(old.get("metadata") or {})} if old else None
    refuse(pod_webhook.validate(review_object(body), previous))


# ---- StatefulSets ------------------------------------------------------------------------------


@webhook(kopf.on.mutate, Framework.STATEFULSET, MUTATE_STATEFULSET_WEBHOOK, ["CREATE", "UPDATE"])
async def mark_queued_statefulset(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
    """Its pods become one pod group of `replicas`, admitted at the first pod."""
    patch.update(sts_webhook.mutate(review_object(body)))


@webhook(kopf.on.validate, Framework.STATEFULSET, VALIDATE_STATEFULSET_WEBHOOK, ["UPDATE"])
async def validate_statefulset(body: kopf.Body, old: Any = None, **_: Any) -> None:
    """Decided from the reviewed object alone, never from the cache: see
    sts_webhook.validate_update."""
    if not old:
        return
    previous = {k: dict(old.get(k) or {}) for k in ("metadata", "spec", "status")}
    refuse(sts_webhook.validate_update(previous, review_object(body)))


# ---- Deployments -------------------------------------------------------------------------------


@webhook(kopf.on.mutate, Framework.DEPLOYMENT, MUTATE_DEPLOYMENT_WEBHOOK, ["CREATE", "UPDATE"])
async def mark_queued_deployment(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
    """Its pods are queued plain pods, each admitted on its own."""
    patch.update(deployment_webhook.mutate(review_object(body)))


@webhook(kopf.on.validate, Framework.DEPLOYMENT, VALIDATE_DEPLOYMENT_WEBHOOK, ["CREATE", "UPDATE"])
async def validate_deployment(body: kopf.Body, old: Any = None, **_: Any) -> None:
    """Decided from the reviewed object alone, as a StatefulSet's."""
    if not old:
        refuse(deployment_webhook.validate(review_object(body)))
        return
    previous = {k: dict(old.get(k) or {}) for k in ("metadata", "status")}
    refuse(deployment_webhook.validate_update(previous, review_object(body)))


# ---- LeaderWorkerSets --------------------------------------------------------------------------


@webhook(kopf.on.mutate, Framework.LEADERWORKERSET, MUTATE_LWS_WEBHOOK, ["CREATE", "UPDATE"])
async def mark_queued_leaderworkerset(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
    """Its pods are gated at creation and join their group's Workload."""
    patch.update(lws_webhook.mutate(review_object(body)))


@webhook(kopf.on.validate, Framework.LEADERWORKERSET, VALIDATE_LWS_WEBHOOK, ["CREATE", "UPDATE"])
async def validate_leaderworkerset(
    body: kopf.Body, memo: kopf.Memo, old: Any = None, **_: Any
) -> None:
    previous = (
        {"metadata": dict(old.get("metadata") or {}), "spec": dict(old.get("spec") or {})}
        if old
        else None
    )
    bound = memo.settings.max_leaderworkerset_replicas
    refuse(lws_webhook.validate(review_object(body), previous, max_replicas=bound))
