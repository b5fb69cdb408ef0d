"""kopf wiring: watches feed the cache, events wake the serial workers. Nothing decides here.

Every watched kind has an index function that updates the cache. kopf calls index functions
for every listed object before it calls any other handler of any kind, so when the first event
handler runs the cache holds the whole cluster: that is when admission may start (Kueue waits
for its caches to sync for the same reason). Deletions arrive only as events.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
from pathlib import Path
from typing import Any

import kopf

from tas import certs, metrics
from tas.admission.kube_writer import KubeStatusWriter
from tas.admission.loop import AdmissionLoop
from tas.api.annotations import TopologyRequestError
from tas.api.constants import HOSTNAME_LABEL, QUEUE_NAME_LABEL
from tas.cache import projections as proj
from tas.cache.state import ClusterState
from tas.config import Settings
from tas.hotswap.controller import NodeHealthController
from tas.jobs.controller import JobController
from tas.jobs.workload import build_workload
from tas.kube import Kube, load_api_client
from tas.serial import SerialWorker
from tas.solver.types import SolverOptions
from tas.ungater.worker import Ungater

log = logging.getLogger("tas.operator")
KUEUE = ("kueue.x-k8s.io", "v1beta1")


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


class Runtime:
    """Everything the handlers share, created once at start-up and kept in kopf's memo."""

    def __init__(self, settings: Settings) -> None:
        gates = settings.gates
        self.settings = settings
        self.state = ClusterState(
            SolverOptions(
                profile_mixed=gates.enabled("TASProfileMixed"),
                balanced_placement=gates.enabled("TASBalancedPlacement"),
            )
        )
        self.kube = Kube(load_api_client(settings.kubeconfig))
        self.admission = AdmissionLoop(
            self.state,
            KubeStatusWriter(self.kube),
            replacement_fail_fast=gates.enabled("TASFailedNodeReplacementFailFast"),
        )
        self.jobs = JobController(
            self.state, self.kube, multi_layer_enabled=gates.enabled("TASMultiLayerTopology")
        )
        self.ungater = Ungater(self.state, self.kube)
        self.job_worker = SerialWorker("jobs", self.jobs.sync)
        self.ungate_worker = SerialWorker("ungater", self.ungater.sync)
        self.hotswap_enabled = gates.enabled("TASFailedNodeReplacement")
        self.node_health = NodeHealthController(
            self.state,
            self.kube,
            self.admission,
            on_pod_termination=gates.enabled("TASReplaceNodeOnPodTermination"),
            on_taints=gates.enabled("TASReplaceNodeOnNodeTaints"),
            multiple_nodes=gates.enabled("TASMultipleNodeReplacement"),
        )
        self.hotswap_worker = SerialWorker("hotswap", self.node_health.sync)
        self.tasks: list[asyncio.Task] = []

    def check_node(self, name: str | None) -> None:
        if self.hotswap_enabled and name:
            self.hotswap_worker.submit(name)

    def start(self) -> None:
        self.tasks = [
            asyncio.create_task(self.admission.run(), name="admission"),
            asyncio.create_task(self.job_worker.run(), name="jobs"),
            asyncio.create_task(self.ungate_worker.run(), name="ungater"),
            asyncio.create_task(self.hotswap_worker.run(), name="hotswap"),
        ]

    def mark_synced(self) -> None:
        if not self.admission.synced.is_set():
            log.info(
                "caches synced: %d nodes, %d pods, %d workloads",
                len(self.state.nodes),
                len(self.state.pods),
                len(self.state.workloads),
            )
            self.admission.synced.set()
            self.job_worker.started.set()
            self.ungate_worker.started.set()
            self.hotswap_worker.started.set()
            for name in self.state.nodes:  # a node may have failed while we were away
                self.check_node(name)
            self.admission.wake()


def rt(memo: Any) -> Runtime:
    return memo.runtime


# ---- start-up and shutdown ---------------------------------------------------------------------


@kopf.on.startup()
async def startup(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    config: Settings = memo.settings
    settings.posting.enabled = False  # we write our own events, on Workloads
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(
        prefix="tas.kueue.x-k8s.io"
    )
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix="tas.kueue.x-k8s.io"
    )
    settings.persistence.finalizer = "tas.kueue.x-k8s.io/finalizer"
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    cert_dir = Path(config.webhook_cert_dir or tempfile.mkdtemp(prefix="tas-webhook-"))
    hosts = [config.webhook_url_host, config.webhook_listen]
    if config.webhook_service:
        namespace, name, _ = config.webhook_service
        hosts = [f"{name}.{namespace}.svc", f"{name}.{namespace}.svc.cluster.local", *hosts]
    certfile, keyfile = certs.write_self_signed(cert_dir, hosts)
    server = kopf.WebhookServer(
        addr=config.webhook_listen,
        port=config.webhook_port,
        host=config.webhook_url_host,
        certfile=str(certfile),
        pkeyfile=str(keyfile),
    )
    if config.webhook_service:
        settings.admission.server = ServiceWebhookServer(server, *config.webhook_service)
    else:
        settings.admission.server = server
    settings.admission.managed = config.webhook_config_name
    metrics.serve(config.metrics_port)
    memo.runtime = Runtime(config)
    memo.runtime.start()


@kopf.on.cleanup()
async def cleanup(memo: kopf.Memo, **_: Any) -> None:
    for task in rt(memo).tasks:
        task.cancel()


# ---- the cache: index functions update it, events delete from it and wake the workers ----------


@kopf.index("namespaces")
def index_namespace(name: str, labels: Any, memo: kopf.Memo, **_: Any) -> None:
    rt(memo).state.upsert_namespace(name, dict(labels))


@kopf.on.event("namespaces")
def on_namespace(type: str, name: str, memo: kopf.Memo, **_: Any) -> None:
    runtime = rt(memo)
    runtime.mark_synced()  # namespaces always exist, so this fires right after the initial lists
    if type == "DELETED":
        runtime.state.delete_namespace(name)
    runtime.admission.wake()


@kopf.index("nodes")
def index_node(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    rt(memo).state.upsert_node(proj.node_from_object(body))


@kopf.on.event("nodes")
def on_node(type: str, name: str, memo: kopf.Memo, **_: Any) -> None:
    runtime = rt(memo)
    if type == "DELETED":
        runtime.state.delete_node(name)
    runtime.check_node(name)
    runtime.admission.wake()  # cheap: the loop retries only if the capacity generation moved


@kopf.index("pods")
def index_pod(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    rt(memo).state.upsert_pod(proj.pod_from_object(body))


@kopf.on.event("pods")
def on_pod(type: str, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    runtime = rt(memo)
    pod = proj.pod_from_object(body)
    if type == "DELETED":
        runtime.state.delete_pod(pod.namespace, pod.name)
        runtime.ungater.forget_pod(pod.uid)
    if pod.workload:
        runtime.ungate_worker.submit((pod.namespace, pod.workload))
        workload = runtime.state.workloads.get((pod.namespace, pod.workload))
        if workload and workload.evicted and workload.owner_job:
            runtime.job_worker.submit(
                (pod.namespace, workload.owner_job)
            )  # waiting for its pods to go
        runtime.check_node(pod.node_name or pod.node_selector.get(HOSTNAME_LABEL))
    runtime.admission.wake()


@kopf.index(*KUEUE, "topologies")
def index_topology(name: str, spec: Any, memo: kopf.Memo, **_: Any) -> None:
    rt(memo).state.upsert_topology(name, [level["nodeLabel"] for level in spec.get("levels") or []])


@kopf.on.event(*KUEUE, "topologies")
def on_topology(type: str, name: str, memo: kopf.Memo, **_: Any) -> None:
    if type == "DELETED":
        rt(memo).state.delete_topology(name)
    rt(memo).admission.wake()


@kopf.index(*KUEUE, "resourceflavors")
def index_flavor(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    rt(memo).state.upsert_flavor(proj.flavor_from_object(body))


@kopf.on.event(*KUEUE, "resourceflavors")
def on_flavor(type: str, name: str, memo: kopf.Memo, **_: Any) -> None:
    if type == "DELETED":
        rt(memo).state.delete_flavor(name)
    rt(memo).admission.wake()


@kopf.index(*KUEUE, "clusterqueues")
def index_cluster_queue(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    rt(memo).state.upsert_cluster_queue(proj.cluster_queue_from_object(body))


@kopf.on.event(*KUEUE, "clusterqueues")
def on_cluster_queue(type: str, name: str, memo: kopf.Memo, **_: Any) -> None:
    if type == "DELETED":
        rt(memo).state.delete_cluster_queue(name)
    rt(memo).admission.wake()


@kopf.index(*KUEUE, "localqueues")
def index_local_queue(namespace: str, name: str, spec: Any, memo: kopf.Memo, **_: Any) -> None:
    rt(memo).state.upsert_local_queue(namespace, name, spec.get("clusterQueue") or "")


@kopf.on.event(*KUEUE, "localqueues")
def on_local_queue(type: str, namespace: str, name: str, memo: kopf.Memo, **_: Any) -> None:
    if type == "DELETED":
        rt(memo).state.delete_local_queue(namespace, name)
    rt(memo).admission.wake()


@kopf.index(*KUEUE, "workloads")
def index_workload(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    rt(memo).state.upsert_workload(proj.workload_from_object(body))


@kopf.on.event(*KUEUE, "workloads")
def on_workload(type: str, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    runtime = rt(memo)
    workload = proj.workload_from_object(body)
    if type == "DELETED":
        runtime.state.delete_workload(workload.namespace, workload.name)
    elif workload.admitted:
        runtime.ungate_worker.submit(workload.key)
    if workload.owner_job:
        runtime.job_worker.submit((workload.namespace, workload.owner_job))
    runtime.admission.wake()


@kopf.on.event("batch", "v1", "jobs", labels={QUEUE_NAME_LABEL: kopf.PRESENT})
def on_job(
    type: str, body: kopf.Body, namespace: str, name: str, memo: kopf.Memo, **_: Any
) -> None:
    runtime = rt(memo)
    if type == "DELETED":
        runtime.jobs.forget(namespace, name)
        return
    runtime.job_worker.submit(runtime.jobs.upsert(body))


# ---- admission webhooks for Jobs ---------------------------------------------------------------


@kopf.on.mutate(
    "batch",
    "v1",
    "jobs",
    id="suspend-queued-jobs",
    operations=["CREATE"],
    labels={QUEUE_NAME_LABEL: kopf.PRESENT},
    side_effects=False,
)
def suspend_queued_job(spec: Any, patch: kopf.Patch, **_: Any) -> None:
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
)
def validate_topology_request(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
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
        build_workload(job, multi_layer_enabled=config.gates.enabled("TASMultiLayerTopology"))
    except TopologyRequestError as exc:
        raise kopf.AdmissionError(str(exc), code=422) from None
