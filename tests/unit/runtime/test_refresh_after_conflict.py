"""A Workload read again after a 409 must never take the cache back to an older version."""

import asyncio

from tas.cache import projections as proj
from tas.config import Settings
from tas.kube import Kube
from tas.kube.kubeconfig import Connection
from tas.runtime.runtime import Runtime
from tests.unit.admission.fixtures import workload


def versioned(rv: str, queue: str = "lq") -> dict:
    obj = workload("a", pods=1)
    obj["metadata"]["resourceVersion"] = rv
    obj["spec"]["queueName"] = queue
    return obj


def refreshed(cached_rv: str, reread_rv: str, refused_rv: str) -> str:
    async def go():
        kube = Kube(Connection(server="http://127.0.0.1:9", ssl=False))
        rt = Runtime(Settings(leader_elect=False), kube=kube)
        rt.state.upsert_workload(proj.workload_from_object(versioned(cached_rv)))
        await rt._refresh_workload(versioned(reread_rv, queue="newer"), refused_rv)
        return rt.state.workloads[("ns", "a")].resource_version

    return asyncio.run(go())


def test_the_reread_is_taken_when_the_cache_still_holds_the_refused_version():
    assert refreshed(cached_rv="4", reread_rv="6", refused_rv="4") == "6"


def test_the_reread_is_dropped_when_the_watch_brought_a_newer_version_meanwhile():
    # The watch delivered 7 while the GET (which saw 6) was in flight.
    assert refreshed(cached_rv="7", reread_rv="6", refused_rv="4") == "7"
