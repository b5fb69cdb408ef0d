"""What a tenant makes and then removes leaves nothing behind in the operator's memory: usage
kept per node name a pod named (any spec.nodeName will do), and the status last written for a
LocalQueue since deleted."""

from __future__ import annotations

import asyncio

from tas.admission.loop import AdmissionLoop
from tas.cache import projections as proj
from tests.unit.admission.fixtures import make_state, two_racks
from tests.unit.admission.test_loop import FakeWriter


def bound_pod(name: str, node_name: str) -> dict:
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
        "spec": {
            "nodeName": node_name,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
        },
        "status": {"phase": "Running"},
    }


def test_pods_bound_to_made_up_node_names_leave_no_usage_behind_when_gone():
    state = make_state(two_racks())
    before = {name: dict(usage) for name, usage in state._non_tas_usage.items()}
    for i in range(1000):
        state.upsert_pod(proj.pod_from_object(bound_pod(f"p{i}", f"no-such-node-{i}")))
    state.upsert_pod(proj.pod_from_object(bound_pod("real", "x1")))
    for i in range(1000):
        state.delete_pod("ns", f"p{i}")
    assert set(state._non_tas_usage) == {*before, "x1"}  # one entry per node still used
    state.delete_pod("ns", "real")
    assert {n: u for n, u in state._non_tas_usage.items() if any(u.values())} == {}
    assert set(state._non_tas_usage) == set(before)


def test_a_deleted_local_queues_status_is_forgotten():
    state = make_state(two_racks())
    loop = AdmissionLoop(state, FakeWriter())

    async def cycles():
        for i in range(100):  # a tenant making and deleting queues
            state.upsert_local_queue("ns", f"lq-{i}", "cq")
            await loop.cycle()
            state.delete_local_queue("ns", f"lq-{i}")
        await loop.cycle()
        await loop.drain()

    asyncio.run(cycles())
    assert set(loop._lq_status) == {("ns", "lq")}  # the fixtures' own queue, still there
