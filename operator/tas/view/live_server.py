"""The view of a live cache, served: what `tas operator` and `tas view` start on their loop."""

from __future__ import annotations

from collections.abc import Mapping

from tas.cache.state import ClusterState
from tas.pacing import Pacer
from tas.view import gang, live
from tas.view.model import ClusterView
from tas.view.publisher import Publisher
from tas.view.replacements import ReplacementLog
from tas.view.server import ViewServer


async def serve(state: ClusterState, address: str) -> ViewServer | None:
    """Serve the view of `state` on `address`, rebuilt whenever the cache changes; None when
    the address cannot be bound (logged once; the caller carries on without the view)."""

    replacements = ReplacementLog()

    async def build() -> ClusterView:
        return await live.build_paced(state, Pacer(), replacements=replacements.recent)

    def largest(per_pod: Mapping[str, int], level: str, mode: str) -> Mapping[str, int]:
        return gang.largest_gangs(state, per_pod, level, mode)

    publisher = Publisher(build)
    server = ViewServer(publisher, largest, address)
    if not await server.start():
        return None
    state.listeners.append(publisher.changed)
    state.workload_listeners.append(replacements.workload_changed)
    publisher.changed()  # the first view
    return server


async def stop(state: ClusterState, server: ViewServer) -> None:
    if server.publisher.changed in state.listeners:
        state.listeners.remove(server.publisher.changed)
    state.workload_listeners[:] = [  # this view's replacement log
        listener
        for listener in state.workload_listeners
        if not isinstance(getattr(listener, "__self__", None), ReplacementLog)
    ]
    await server.stop()
