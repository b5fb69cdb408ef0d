"""`tas view --kubeconfig`: the operator's cache, listed and watched read-only, and its page.

From a workstation, beside the operator: the same watch handlers fill the same ClusterState,
but nothing they would wake exists (no admission, no workers, no lease, no webhooks), so
nothing is ever written. Only the kinds the view draws are listed. Pods of kinds whose
children the operator links to their workload (a JobSet's Jobs) are not linked here: they are
drawn as other pods.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Any

from tas.cache.state import ClusterState
from tas.config import Settings
from tas.features import Gate
from tas.jobframework.namespaces import ManagedNamespaces
from tas.kube import Kube
from tas.kube.kubeconfig import load_connection
from tas.kube.reflector import Reflector
from tas.runtime.watches import WATCHES
from tas.view import live_server

log = logging.getLogger("tas.view")

# What the view draws (capacity, usage, queues, workloads, placement groups), and nothing the
# admission side alone needs.
VIEW_KINDS = tuple(kind for kind, watch in WATCHES.items() if watch.drawn)


class _Idle:
    """Stands in for the admission loop and the workers the handlers wake: does nothing."""

    def wake(self) -> None: ...

    def submit(self, key: Any) -> None: ...

    def workload_changed(self, workload: Any) -> None: ...

    def forget_pod(self, uid: str) -> None: ...

    @property
    def fair(self) -> _Idle:  # admission fair sharing's LocalQueue hooks
        return self

    def local_queue(self, key: Any, obj: Any) -> bool:
        return False

    def local_queue_deleted(self, key: Any) -> None: ...


class ReadOnlyContext:
    """The watch handlers' context (watches.WatchContext) with the cache and nothing else."""

    def __init__(self, state: ClusterState, kube: Kube, settings: Settings) -> None:
        self.state = state
        self.kube = kube
        self.managed = ManagedNamespaces(settings.managed_namespaces_selector, state.namespaces)
        self.active = False
        idle: Any = _Idle()
        self.admission = self.pod_worker = self.lws_worker = self.ungate_worker = idle
        self.leaderworkersets = self.ungater = self.pod_groups = self.owners = idle
        self.children: dict = {}
        self.numa_problems: dict[str, str] = {}
        self.generic_jobs: dict = {}

    def owner_changed(self, workload: Any) -> None: ...

    def check_node(self, name: str | None) -> None: ...

    async def sync_unqueued(self) -> None: ...


def reflectors(context: ReadOnlyContext, settings: Settings) -> list[Reflector]:
    out = []
    for kind in VIEW_KINDS:
        watch = WATCHES[kind]
        if watch.gate is not None and not settings.gates.enabled(watch.gate):
            continue
        handle = functools.partial(watch.handler, context)
        out.append(Reflector(context.kube, watch.path, handle, name=kind, params=watch.params))
    return out


async def run(settings: Settings) -> int:
    """List and watch, then serve the page until interrupted; 1 if the address is taken."""
    gates = settings.gates
    state = ClusterState(
        gates.solver_options(),
        overlapping_flavors=gates.enabled(Gate.TAS_HANDLE_OVERLAPPING_FLAVORS),
    )
    state.bind_to_current_thread()
    kube = Kube(load_connection(settings.kubeconfig), component="tas-view")
    watching = reflectors(ReadOnlyContext(state, kube, settings), settings)
    tasks = [asyncio.create_task(r.run(), name=f"watch-{r.name}") for r in watching]
    try:
        await asyncio.gather(*(r.synced.wait() for r in watching))
        log.info("listed %d nodes, %d pods, %d workloads", *_sizes(state))
        server = await live_server.serve(state, settings.view_address)
        if server is None:
            return 1
        try:
            await asyncio.gather(*tasks)  # the watches run until interrupted
        finally:
            await live_server.stop(state, server)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await kube.close()
    return 0


def _sizes(state: ClusterState) -> tuple[int, int, int]:
    return len(state.nodes), len(state.pods), len(state.workloads)
