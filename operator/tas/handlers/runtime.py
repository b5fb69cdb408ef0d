"""Everything the operator runs, created once on the event loop: cache, watches, workers, lease.

Start-up order: every kind is listed once (O(objects)); then, on the replica that holds the
Lease, the admission loop and the writing workers start. Standbys keep their caches warm and
serve webhooks, and take over within the lease duration. A worker that dies makes the liveness
probe fail (see `problems`), so the kubelet restarts the process instead of leaving it wedged.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import signal

from tas.admission.loop import AdmissionLoop
from tas.cache import projections as proj
from tas.cache.reflector import Reflector
from tas.cache.state import ClusterState
from tas.config import Settings
from tas.features import Gate
from tas.handlers.watches import WATCHES, on_workload
from tas.hotswap.controller import NodeHealthController
from tas.jobs.controller import JobController
from tas.kube import Kube
from tas.kubeconfig import load_connection
from tas.leader import LeaderElector, LeaseSettings
from tas.serial import SerialWorker
from tas.solver.types import SolverOptions
from tas.ungater.worker import Ungater
from tas.workload.writer import WorkloadWriter

log = logging.getLogger("tas.operator")

NAMESPACED = ("localqueues", "workloads", "jobs")


class Runtime:
    def __init__(self, settings: Settings, kube: Kube | None = None) -> None:
        gates = settings.gates
        self.settings = settings
        self.state = ClusterState(
            SolverOptions(
                profile_mixed=gates.enabled(Gate.TAS_PROFILE_MIXED),
                balanced_placement=gates.enabled(Gate.TAS_BALANCED_PLACEMENT),
            )
        )
        self.state.bind_to_current_thread()  # the loop's thread: any other mutator is a bug
        self.kube = kube or Kube(load_connection(settings.kubeconfig))
        self.writer = WorkloadWriter(self.kube, refresh=self._refresh_workload)
        self.admission = AdmissionLoop(
            self.state,
            self.writer,
            replacement_fail_fast=gates.enabled(Gate.TAS_FAILED_NODE_REPLACEMENT_FAIL_FAST),
        )
        self.jobs = JobController(
            self.state,
            self.kube,
            self.writer,
            multi_layer_enabled=gates.enabled(Gate.TAS_MULTI_LAYER_TOPOLOGY),
        )
        self.ungater = Ungater(self.state, self.kube)
        self.job_worker = SerialWorker("jobs", self.jobs.sync, concurrency=8)
        self.ungate_worker = SerialWorker("ungater", self.ungater.sync, concurrency=4)
        self.hotswap_enabled = gates.enabled(Gate.TAS_FAILED_NODE_REPLACEMENT)
        self.node_health = NodeHealthController(
            self.state,
            self.kube,
            self.writer,
            on_pod_termination=gates.enabled(Gate.TAS_REPLACE_NODE_ON_POD_TERMINATION),
            on_taints=gates.enabled(Gate.TAS_REPLACE_NODE_ON_NODE_TAINTS),
            multiple_nodes=gates.enabled(Gate.TAS_MULTIPLE_NODE_REPLACEMENT),
        )
        self.hotswap_worker = SerialWorker("hotswap", self.node_health.sync, concurrency=2)
        self.reflectors = self._reflectors()
        self.elector = (
            LeaderElector(
                self.kube,
                LeaseSettings(namespace=settings.leader_election_namespace),
                on_lost=self._lost_lease,
            )
            if settings.leader_elect
            else None
        )
        self.tasks: list[asyncio.Task] = []
        self.active = False

    def _reflectors(self) -> list[Reflector]:
        out = []
        for kind, (path, params, handler) in WATCHES.items():
            paths = [path]
            if kind in NAMESPACED and self.settings.namespaces:
                prefix, resource = path.rsplit("/", 1)
                paths = [f"{prefix}/namespaces/{ns}/{resource}" for ns in self.settings.namespaces]
            for p in paths:
                handle = functools.partial(handler, self)
                out.append(Reflector(self.kube, p, handle, name=kind, params=params))
        return out

    async def _refresh_workload(self, obj, refused_version: str) -> None:
        """A Workload read again after a 409. Taken only if the cache still holds the version
        the refused decision was made on: the watch may have brought a newer one (or its
        deletion) meanwhile, and the cache must never go back to an older one."""
        cached = self.state.workloads.get(proj.key_of(obj))
        if cached is not None and cached.resource_version == refused_version:
            await on_workload(self, "MODIFIED", obj)

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
        task(self.job_worker.run(), "jobs")
        task(self.ungate_worker.run(), "ungater")
        task(self.hotswap_worker.run(), "hotswap")
        task(self._activate(), "activate")

    def background(self, coro, name: str) -> None:
        """A task that runs as long as the process, watched by the liveness probe."""
        self.tasks.append(asyncio.create_task(coro, name=name))

    async def synced(self) -> None:
        await asyncio.gather(*(r.synced.wait() for r in self.reflectors))

    async def _activate(self) -> None:
        await self.synced()
        log.info(
            "caches synced: %d nodes, %d pods, %d workloads",
            len(self.state.nodes),
            len(self.state.pods),
            len(self.state.workloads),
        )
        if self.elector is not None:
            try:
                await asyncio.wait_for(self.elector.leading.wait(), 3)
            except TimeoutError:
                log.info("standing by: another replica holds the lease")
                await self.elector.leading.wait()
        log.info("admitting (leader)")
        self.active = True
        self.admission.synced.set()
        for worker in (self.job_worker, self.ungate_worker, self.hotswap_worker):
            worker.started.set()
        for name in list(self.state.nodes):  # a node may have failed while we were away
            self.check_node(name)
        for key in list(self.jobs.jobs):  # Jobs whose Workload changed while we were away
            self.job_worker.submit(key)
        for key, workload in list(self.state.workloads.items()):
            if workload.admitted:
                self.ungate_worker.submit(key)
        self.admission.wake()

    def _lost_lease(self) -> None:
        """Another replica may be admitting now: stop writing at once, then exit so the
        process restarts as a standby (controller-runtime does the same)."""
        for t in self.tasks:
            if t.get_name() in ("admission", "jobs", "ungater", "hotswap"):
                t.cancel()
        self.admission.cancel_writes()
        os.kill(os.getpid(), signal.SIGTERM)

    def problems(self) -> list[str]:
        """Why the process is not healthy: tasks that ended although they run forever."""
        out = []
        for t in self.tasks:
            if t.get_name() == "activate" or not t.done() or t.cancelled():
                continue
            exc = t.exception()
            out.append(f"{t.get_name()} stopped: {exc!r}")
        return out

    async def stop(self) -> None:
        for t in self.tasks:
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        if self.elector is not None:
            try:
                await asyncio.wait_for(self.elector.release(), 5)
            except Exception as exc:  # best effort: the lease expires anyway
                log.warning("lease not released: %s", exc)
        await self.kube.close()
