"""`tas view --kubeconfig`: the operator's own watch handlers fill the cache through a context
that has nothing to wake and nothing to write with."""

from __future__ import annotations

import asyncio

from tas.cache.state import ClusterState
from tas.config import Settings
from tas.runtime import viewonly
from tas.runtime.watches import WATCHES
from tests.unit.admission.fixtures import node, workload


class NoWrites:
    """A client that fails the test on any call."""

    def __getattr__(self, name):
        raise AssertionError(f"the read-only view called kube.{name}")


def test_the_handlers_fill_the_cache_and_write_nothing():
    state = ClusterState()
    context = viewonly.ReadOnlyContext(state, NoWrites(), Settings())  # type: ignore[arg-type]

    async def feed():
        await WATCHES["namespaces"].handler(context, "ADDED", {"metadata": {"name": "ns"}})
        await WATCHES["nodes"].handler(context, "ADDED", node("h1", "b1", "r1"))
        await WATCHES["workloads"].handler(context, "ADDED", workload("w", pods=2))
        pod = {
            "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
            "spec": {"nodeName": "h1", "containers": [{"name": "c"}]},
            "status": {"phase": "Running"},
        }
        await WATCHES["pods"].handler(context, "ADDED", pod)
        await WATCHES["nodes"].handler(context, "DELETED", {"metadata": {"name": "h1"}})
        lq = {"metadata": {"name": "lq", "namespace": "ns"}, "spec": {"clusterQueue": "cq"}}
        await WATCHES["localqueues"].handler(context, "ADDED", lq)

    asyncio.run(feed())
    assert set(state.workloads) == {("ns", "w")}
    assert set(state.pods) == {("ns", "p")}
    assert state.nodes == {}
    assert state.local_queues == {("ns", "lq"): "cq"}


def test_only_the_kinds_the_view_draws_are_listed():
    settings = Settings()
    kube = NoWrites()
    context = viewonly.ReadOnlyContext(ClusterState(), kube, settings)  # type: ignore[arg-type]
    names = {r.name for r in viewonly.reflectors(context, settings)}
    assert names == set(viewonly.VIEW_KINDS) - {"placementgroups"}  # its gate is off by default
