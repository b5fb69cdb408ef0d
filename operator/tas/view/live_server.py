"""The view of a live cache, served: what `tas operator` and `tas view` start on their loop."""

from __future__ import annotations

from collections.abc import Mapping

from tas.cache.state import ClusterState
from tas.pacing import Pacer
from tas.view import gang, live
from tas.view.model import ClusterView
from tas.view.publisher import Publisher
from tas.view.server import ViewServer


async def serve(state: ClusterState, address: str) -> ViewServer | None:
    """Serve the view of `state` on `address`, rebuilt whenever the cache changes; None when
    the address cannot be bound (logged once; the caller carries on without the view)."""

    async def build() -> ClusterView:
        return await live.build_paced(state, Pacer())

    def largest(per_pod: Mapping[str, int], level: str, mode: str) -> Mapping[str, int]:
        return gang.largest_gangs(state, per_pod, level, mode)

    publisher = Publisher(build)
    server = ViewServer(publisher, largest, address)
    if not await server.start():
        return None
    state.listeners.append(publisher.changed)
    publisher.changed()  # the first view
    return server


async def stop(state: ClusterState, server: ViewServer) -> None:
    if server.publisher.changed in state.listeners:
        state.listeners.remove(server.publisher.changed)
    await server.stop()
