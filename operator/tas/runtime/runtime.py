"""Everything the operator runs, created once on the event loop: cache, watches, workers, lease.

Start-up order: every kind is listed once (O(objects)); then, on the replica that holds the
Lease, the admission loop and the writing workers start. Standbys keep their caches warm and
serve webhooks, and take over within the lease duration. A worker that dies makes the liveness
probe fail (see `problems`), so the kubelet restarts the process instead of leaving it wedged.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import itertools
import logging
import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tas import metrics
from tas.admission.loop import AdmissionLoop
from tas.admission.moves import DefragRules
from tas.cache import projections as proj
from tas.cache.projections import OwnerRef
from tas.cache.state import ClusterState
from tas.config import Settings
from tas.features import Gate
from tas.hotswap.controller import NodeHealthController
from tas.hotswap.replace import ReplacementRules
from tas.integrations.leaderworkerset.controller import LeaderWorkerSetController
from tas.integrations.pod.controller import PodController
from tas.integrations.registry import GENERIC_JOBS, GenericJobKind, ObjectRef, managed_owners
from tas.jobframework.namespaces import ManagedNamespaces
from tas.jobframework.reconciler import JobReconciler
from tas.kube import CRDS, Kube, KubeError
from tas.kube.kubeconfig import load_connection
from tas.kube.reflector import Reflector
from tas.kube.retry import Backoff
from tas.pacing import Pacer, settle_heap
from tas.runtime import migrate
from tas.runtime.fence import FencedKube
from tas.runtime.leader import LeaderElector, LeaseSettings
from tas.runtime.serial import SerialWorker
from tas.runtime.watches import WATCHES, Watch, on_workload
from tas.ungater.worker import Ungater
from tas.webhooks.view import CacheView, ViewPublisher
from tas.workload.writer import WorkloadWriter

if TYPE_CHECKING:
    from tas.view.server import ViewServer

log = logging.getLogger("tas.operator")


# Listed in the --namespace namespaces only, when given (nodes and pods are always listed
# everywhere: capacity is cluster-wide).
NAMESPACED = (
    "limitranges",
    "localqueues",
    "workloads",
    *(k.name for k in GENERIC_JOBS),
    *(k.children_watch(c) for k in GENERIC_JOBS for c in k.children),
    *(r.plural for k in GENERIC_JOBS if k.lookup for r in k.lookup.resources if r.namespaced),
    "managed-pods",
    "leaderworkersets",
    "placementgroups",
)
# How long after the sync the later imports wait for the first admission cycle's writes. A
# restart's first cycle takes milliseconds; this bounds how much later the webhooks come up.
FIRST_CYCLE_WAIT_S = 1.0
# How long after those writes the imports no webhook needs wait for the webhooks to serve.
WEBHOOKS_WAIT_S = 10.0
# The workers that write: cancelled at once when the lease is lost.
WRITERS = (
    "admission",
    *(k.name for k in GENERIC_JOBS),
    "pods",
    "leaderworkersets",
    "ungater",
    "hotswap",
)


@dataclass(frozen=True)
class GenericJobRuntime:
    """An enabled GenericJob kind as it runs: its reconciler, the worker that syncs it, and
    the objects its pod sets are built from (its lookup's, as watched: a TrainJob's runtimes)."""

    kind: GenericJobKind
    reconciler: JobReconciler
    worker: SerialWorker
    looked_up: dict[ObjectRef, Mapping]

    def lookup(self, obj: Mapping) -> Mapping | None:
        """What `obj` names of its kind's lookup, as cached (None: not there, or no lookup)."""
        lookup = self.kind.lookup
        return None if lookup is None else self.looked_up.get(lookup.named_by(obj))

    def owns(self, owner: OwnerRef | None) -> bool:
        """The Workload's controlling owner is of this kind."""
        resource = self.kind.resource
        return (
            owner is not None
            and owner.kind == resource.kind
            and owner.api_version.rsplit("/", 1)[0] == (resource.group or owner.api_version)
        )


class Runtime:
    def __init__(self, settings: Settings, kube: Kube | None = None) -> None:
        gates = settings.gates
        self.settings = settings
        self.state = ClusterState(
            gates.solver_options(),
            overlapping_flavors=gates.enabled(Gate.TAS_HANDLE_OVERLAPPING_FLAVORS),
        )
        self.state.fair_sharing = settings.fair_sharing.fair_sharing  # None: off
        self.state.bind_to_current_thread()  # the loop's thread: any other mutator is a bug
        self.kube = kube or Kube(load_connection(settings.kubeconfig))
        self.elector = self._elector() if settings.leader_elect else None
        # What only the leader writes: nothing is sent once the lease may have moved (see
        # tas.runtime.fence). Watches, the lease and the webhook certificate use self.kube.
        self.leader_kube = (
            FencedKube(self.kube, self.elector.time_left) if self.elector else self.kube
        )
        self.writer = WorkloadWriter(self.leader_kube, refresh=self._refresh_workload)
        self.admission = self._admission_loop(settings)
        self._integrations(settings)
        self.hotswap_enabled = gates.enabled(Gate.TAS_FAILED_NODE_REPLACEMENT)
        self.node_health = NodeHealthController(
            self.state,
            self.leader_kube,
            self.writer,
            on_pod_termination=gates.enabled(Gate.TAS_REPLACE_NODE_ON_POD_TERMINATION),
            on_taints=gates.enabled(Gate.TAS_REPLACE_NODE_ON_NODE_TAINTS),
            multiple_nodes=gates.enabled(Gate.TAS_REPLACE_MULTIPLE_FAILED_NODES),
            remove_pods_on_deleted_nodes=gates.enabled(Gate.TAS_REMOVE_PODS_ON_DELETED_NODES),
        )
        self.hotswap_worker = SerialWorker("hotswap", self.node_health.sync, concurrency=2)
        # CRD name -> the watches of what it serves, for the enabled integrations (a kind, the
        # children or runtimes of another: JobSets are both).
        self.crd_kinds: dict[str, list[str]] = {}
        for kind, w in WATCHES.items():
            if self.enabled(w.framework, w.gate):
                for crd in w.crds:
                    self.crd_kinds.setdefault(crd, []).append(kind)
        self.established: set[str] = set()  # the CRDs of crd_kinds established now
        self.numa_problems: dict[str, str] = {}  # node -> why its zones are not counted
        self.dynamic: dict[str, list[tuple[Reflector, asyncio.Task]]] = {}
        self.reflectors = self._reflectors()
        self.tasks: list[asyncio.Task] = []
        self.helpers: list[asyncio.Task] = []  # one-off tasks that end by themselves
        self.active = False
        self.webhooks_serving = asyncio.Event()  # set by the webhook wiring (tas.handlers)
        self.view: ViewServer | None = None  # the topology view, once served
        # What the webhooks (on their own thread) read of the cache: a frozen copy.
        self.webhook_view = ViewPublisher(self._webhook_view)
        self.state.listeners.append(self.webhook_view.changed)

    def _admission_loop(self, settings: Settings) -> AdmissionLoop:
        gates = settings.gates
        return AdmissionLoop(
            self.state,
            self.writer,
            replacement=ReplacementRules(
                fail_fast=gates.enabled(Gate.TAS_FAILED_NODE_REPLACEMENT_FAIL_FAST),
                keep_pod_owned=gates.enabled(Gate.SKIP_REASSIGNMENT_FOR_POD_OWNED_WORKLOADS),
                multiple_nodes=gates.enabled(Gate.TAS_REPLACE_MULTIPLE_FAILED_NODES),
            ),
            defrag=DefragRules(
                enabled=gates.enabled(Gate.TAS_DEFRAGMENTATION),
                moves_per_hour=settings.defragmentation_moves_per_hour,
            ),
            admission_fair_sharing=(
                settings.fair_sharing.admission_fair_sharing
                if gates.enabled(Gate.ADMISSION_FAIR_SHARING)
                else None
            ),
        )

    def _integrations(self, settings: Settings) -> None:
        """The integrations' controllers, the ungater and their serial workers; every write
        of theirs goes through the fenced client."""
        # Kueue's managedJobsNamespaceSelector, as the chart's webhooks apply it
        self.managed = ManagedNamespaces(
            settings.managed_namespaces_selector, self.state.namespaces
        )
        managed = self.managed
        writes = self.leader_kube
        # Every registered GenericJob kind, enabled or not (a disabled one is never listed, so
        # its reconciler stays empty); by name (its resource's plural).
        self.generic_jobs = {}
        for kind in GENERIC_JOBS:
            looked_up: dict[ObjectRef, Mapping] = {}
            job = kind.lookup.bind(looked_up.get) if kind.lookup else kind.job
            reconciler = JobReconciler(job, self.state, writes, self.writer, managed=managed)
            worker = SerialWorker(kind.name, reconciler.sync, concurrency=kind.concurrency)
            self.generic_jobs[kind.name] = GenericJobRuntime(kind, reconciler, worker, looked_up)
        self.owners = managed_owners(settings.integrations)
        self.pod_groups = PodController(self.state, writes, self.writer, managed=managed)
        self.leaderworkersets = LeaderWorkerSetController(
            self.state,
            writes,
            self.pod_groups.pods,
            max_replicas=settings.max_leaderworkerset_replicas,
            managed=managed,
        )
        # The children of a queued kind (a JobSet's Jobs): (watch, namespace, name) -> uid.
        self.children: dict[tuple[str, str, str], str] = {}
        self.ungater = Ungater(self.state, writes)
        self.pod_worker = SerialWorker("pods", self.pod_groups.sync, concurrency=8)
        self.lws_worker = SerialWorker(
            "leaderworkersets", self.leaderworkersets.sync, concurrency=4
        )
        self.ungate_worker = SerialWorker("ungater", self.ungater.sync, concurrency=4)

    def _elector(self) -> LeaderElector:
        lease = LeaseSettings(namespace=self.settings.leader_election_namespace)
        return LeaderElector(self.kube, lease, on_lost=self._lost_lease)

    def enabled(self, framework: str | None, gate: Gate | None = None) -> bool:
        if gate is not None and not self.settings.gates.enabled(gate):
            return False
        return framework is None or self.settings.integrations.enabled(framework)

    def _reflector(self, kind: str, watch: Watch) -> list[Reflector]:
        paths = [watch.path]
        if kind in NAMESPACED and self.settings.namespaces:
            prefix, resource = watch.path.rsplit("/", 1)
            paths = [f"{prefix}/namespaces/{ns}/{resource}" for ns in self.settings.namespaces]
        handle = functools.partial(watch.handler, self)
        return [
            Reflector(
                self.kube, p, handle, name=kind, params=watch.params, decode_list=watch.decode_list
            )
            for p in paths
        ]

    def _reflectors(self) -> list[Reflector]:
        """The kinds listed before admission starts. A kind served by a CRD is listed once its
        CRD is established (see `_on_crd`): its reflector is made then."""
        out = []
        for kind, watch in WATCHES.items():
            if self.enabled(watch.framework, watch.gate) and not watch.crds:
                out += self._reflector(kind, watch)
        if self.crd_kinds:
            out.append(Reflector(self.kube, CRDS, self._on_crd, name="crds"))
        return out

    async def _on_crd(self, kind: str, obj) -> None:
        """Start listing a kind when its CRD is established, stop when it goes away."""
        name = obj["metadata"]["name"]
        conditions = (obj.get("status") or {}).get("conditions") or []
        established = kind != "DELETED" and any(
            c.get("type") == "Established" and c.get("status") == "True" for c in conditions
        )
        if established:
            self.established.add(name)
        else:
            self.established.discard(name)
        for watched in self.crd_kinds.get(name, ()):
            served = all(crd in self.established for crd in WATCHES[watched].crds)
            await self._crd_watch(watched, name, served)

    async def _crd_watch(self, watched: str, name: str, established: bool) -> None:
        running = self.dynamic.get(watched)
        if established and running is None:
            log.info("%s: CRD %s established; handling them", watched, name)
            reflectors = self._reflector(watched, WATCHES[watched])
            self.dynamic[watched] = [
                (r, asyncio.create_task(r.run(), name=f"watch-{watched}")) for r in reflectors
            ]
        elif not established and running is not None:
            log.info("%s: CRD %s is gone; no longer handling them", watched, name)
            for reflector, task in self.dynamic.pop(watched):
                task.cancel()
                for namespace, obj_name in list(reflector.known):
                    await reflector.handle(
                        "DELETED", {"metadata": {"namespace": namespace, "name": obj_name}}
                    )

    def _report_missing_crds(self) -> None:
        for crd, kinds in self.crd_kinds.items():
            kind = kinds[0]  # one line per CRD
            if crd not in self.established:
                log.info(
                    "%s integration: CRD %s is not installed; skipped until it appears",
                    WATCHES[kind].framework,
                    crd,
                )

    def owner_changed(self, workload) -> None:
        """A Workload changed: its owner's integration looks again."""
        namespace = workload.namespace
        owner = workload.owner
        for generic in self.generic_jobs.values():
            if owner is not None and generic.owns(owner):
                generic.worker.submit((namespace, owner.name))
        for key in self.pod_groups.keys_of_workload(workload):
            self.pod_worker.submit(key)
        lws = workload.owned_by("LeaderWorkerSet")
        if lws is not None:
            self.lws_worker.submit(("lws", namespace, lws.name))

    async def sync_unqueued(self) -> None:
        """A priority class came or changed (rare): queued objects without a Workload (one that
        named a missing class waits for it) are looked at again; pods and LeaderWorkerSets are
        all resubmitted, as at start-up (a sync with nothing to do writes nothing)."""
        pacer = Pacer()
        for generic in self.generic_jobs.values():
            for key, obj in list(generic.reconciler.objects.items()):
                await pacer.maybe_yield()
                if generic.reconciler.workload_of(obj) is None:
                    generic.worker.submit(key)
        await self._resubmit_pods_and_lws(pacer)

    def managed_owner(self, uid: str | None) -> bool:
        """A pod's controller is admitted through another integration (a queued Job, a
        JobSet's Job): the pod is not managed on its own."""
        return bool(uid) and (uid in self.state.workload_by_owner or uid in self.state.parents)

    async def _refresh_workload(self, obj, refused_version: str) -> None:
        """A Workload read again after a 409. Taken only if the cache still holds the version
        the refused decision was made on: the watch may have brought a newer one (or its
        deletion) meanwhile, and the cache must never go back to an older one."""
        cached = self.state.workloads.get(proj.key_of(obj))
        if cached is not None and cached.resource_version == refused_version:
            await on_workload(self, "MODIFIED", obj)

    def _webhook_view(self) -> CacheView:
        owners = itertools.chain(self.state.workload_by_owner, self.state.parents)
        looked_up = {name: g.looked_up for name, g in self.generic_jobs.items() if g.kind.lookup}
        return CacheView.of(owners, looked_up)

    def check_node(self, name: str | None) -> None:
        if self.hotswap_enabled and name:
            self.hotswap_worker.submit(name)

    # ---- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        def task(coro, name: str) -> None:
            self.tasks.append(asyncio.create_task(coro, name=name))

        for reflector in self.reflectors:
            task(reflector.run(), f"watch-{reflector.name}")
        if self.elector is not None:
            task(self.elector.run(), "lease")
        task(self.admission.run(), "admission")
        for worker in self.workers():
            task(worker.run(), worker.name)
        task(self._activate(), "activate")
        task(self.webhook_view.run(), "webhook-view")
        if self.settings.view_address:
            self.helpers.append(asyncio.create_task(self._serve_view(), name="view"))

    async def _serve_view(self) -> None:
        """The topology view, on every replica (it only reads the cache), once the webhooks
        serve: building it while thousands of nodes are listed would slow the listing, and
        while the webhooks start it would delay them (see past_webhooks)."""
        await self.past_webhooks()
        # Imported only now, in a thread, so that admission goes on meanwhile.
        live_server = await asyncio.to_thread(importlib.import_module, "tas.view.live_server")
        self.view = await live_server.serve(self.state, self.settings.view_address)

    def workers(self) -> list[SerialWorker]:
        return [
            *(generic.worker for generic in self.generic_jobs.values()),
            self.pod_worker,
            self.lws_worker,
            self.ungate_worker,
            self.hotswap_worker,
        ]

    async def webhooks_served(self) -> None:
        """Our webhooks serve: the writes they refused while they did not (a Job started right
        after the first admission) go again now, not after their backoff. Once those are
        through, what waits in past_webhooks goes on."""
        retried = [(worker, worker.retry_now()) for worker in self.workers()]
        for worker, keys in retried:
            await worker.through(keys)
        self.webhooks_serving.set()

    def background(self, coro, name: str) -> None:
        """A task that runs as long as the process, watched by the liveness probe."""
        self.tasks.append(asyncio.create_task(coro, name=name))

    async def synced(self) -> None:
        await asyncio.gather(*(r.synced.wait() for r in self.reflectors))

    async def past_first_admissions(self) -> None:
        """Returns once the caches are synced and the first admission cycle's writes are
        answered, or FIRST_CYCLE_WAIT_S after the sync (a standby runs no cycle). What only
        later steps need (kopf and the webhooks, the view) is loaded after
        this: its import, even in a thread, holds the interpreter lock the first admission
        of a restart needs."""
        await self.synced()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.admission.first_decisions(), FIRST_CYCLE_WAIT_S)

    async def past_webhooks(self) -> None:
        """Returns once our webhooks serve and the writes they held back are through, or
        WEBHOOKS_WAIT_S after the first admissions. What no webhook needs (the view, the storage
        migration's reads and writes) starts after this: in a thread too, an import would hold
        the interpreter lock that the webhooks' start and those writes (a Job's start) need."""
        await self.past_first_admissions()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.webhooks_serving.wait(), WEBHOOKS_WAIT_S)

    async def _activate(self) -> None:
        await self.synced()
        log.info(
            "caches synced: %d nodes, %d pods, %d workloads",
            len(self.state.nodes),
            len(self.state.pods),
            len(self.state.workloads),
        )
        self._report_missing_crds()
        if self.elector is not None:
            try:
                await asyncio.wait_for(self.elector.leading.wait(), 3)
            except TimeoutError:
                log.info("standing by: another replica holds the lease")
                await self.elector.leading.wait()
        log.info("admitting (leader)")
        metrics.configure(  # what is recorded from here on is this replica's, as it now leads
            replica_role=metrics.ROLE_LEADER if self.elector else metrics.ROLE_STANDALONE,
            local_queue_metrics=self.settings.gates.enabled(Gate.LOCAL_QUEUE_METRICS),
        )
        self.helpers.append(asyncio.create_task(self._migrate_storage(), name="migrate-storage"))
        self.active = True
        settle_heap(initial=True)  # full collections walk the lists' objects only as they grow
        self.admission.synced.set()
        for worker in self.workers():
            worker.started.set()
        await self._resubmit_all()
        self.admission.wake()

    async def _resubmit_all(self) -> None:
        """Whatever may have changed while another replica led, or none did: each worker
        looks again (a sync with nothing to do writes nothing). Tens of thousands of objects
        at most once per start: it yields as it goes (see tas.pacing)."""
        pacer = Pacer()
        for name in list(self.state.nodes):  # a node may have failed while we were away
            await pacer.maybe_yield()
            self.check_node(name)
        for generic in self.generic_jobs.values():
            for key in list(generic.reconciler.objects):
                await pacer.maybe_yield()
                generic.worker.submit(key)
        await self._resubmit_pods_and_lws(pacer)
        for key, workload in list(self.state.workloads.items()):
            await pacer.maybe_yield()
            if workload.admitted:
                self.ungate_worker.submit(key)

    async def _resubmit_pods_and_lws(self, pacer: Pacer) -> None:
        for pod in list(self.pod_groups.pods.values()):
            await pacer.maybe_yield()
            for key in self.pod_groups.upsert(pod):
                self.pod_worker.submit(key)
        for lws_key in list(self.leaderworkersets.objects):
            await pacer.maybe_yield()
            self.lws_worker.submit(("lws", *lws_key))

    async def _migrate_storage(self, backoff: Backoff | None = None) -> None:
        """Objects stored in an older version (before an upgrade, or by Kueue) are rewritten
        in the storage version once, so that reading them never again needs the conversion
        webhook (see tas.runtime.migrate). Retried with a capped backoff while the API server does not
        answer; a refusal (RBAC) ends it with a warning naming the manual step."""
        backoff = backoff or Backoff(cap=60.0)
        failures = 0
        # Its reads and writes wait for the first admission and the webhooks' start.
        await self.past_webhooks()
        while True:
            try:
                for line in (await migrate.migrate(self.leader_kube)).lines():
                    log.info("storage migration: %s", line)
                return
            except KubeError as exc:
                if 400 <= exc.status < 500 and exc.status not in (409, 429):
                    log.warning("storage not migrated (%s): run `tas migrate-storage`", exc)
                    return
                failures += 1
                delay = backoff.delay(failures, exc.retry_after)
                log.warning("storage not migrated yet (%s); again in %.1fs", exc, delay)
                await asyncio.sleep(delay)

    def _lost_lease(self) -> None:
        """Another replica may be admitting now: stop writing at once, then exit so the
        process restarts as a standby (controller-runtime does the same)."""
        for t in self.tasks:
            if t.get_name() in WRITERS:
                t.cancel()
        self.admission.cancel_writes()
        os.kill(os.getpid(), signal.SIGTERM)

    def problems(self) -> list[str]:
        """Why the process is not healthy: tasks that ended although they run forever, or
        start-up (`activate`) that failed."""
        out = []
        dynamic = [task for pairs in self.dynamic.values() for _, task in pairs]
        for t in [*self.tasks, *dynamic]:
            if not t.done() or t.cancelled():
                continue
            exc = t.exception()
            if t.get_name() == "activate" and exc is None:
                continue  # its work is done; failing, it would leave admission never started
            out.append(f"{t.get_name()} stopped: {exc!r}")
        return out

    async def stop(self) -> None:
        dynamic = [task for pairs in self.dynamic.values() for _, task in pairs]
        for t in [*self.tasks, *dynamic, *self.helpers]:
            t.cancel()
        await asyncio.gather(*self.tasks, *dynamic, *self.helpers, return_exceptions=True)
        if self.view is not None:
            from tas.view import live_server  # imported when the view was served

            await live_server.stop(self.state, self.view)
        if self.elector is not None:
            try:
                await asyncio.wait_for(self.elector.release(), 5)
            except Exception as exc:  # best effort: the lease expires anyway
                log.warning("lease not released: %s", exc)
        await self.kube.close()
