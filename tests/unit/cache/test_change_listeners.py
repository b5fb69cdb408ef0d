"""The cache tells its listeners (the topology view) when what the view draws changes, and not
on changes it does not draw (a node's heartbeat, a pod seen again unchanged)."""

from __future__ import annotations

from dataclasses import replace

from tas.cache import projections as proj
from tests.unit.admission.fixtures import make_state, node, two_racks, workload
from tests.unit.cache.test_accounting import admit, pod


def counted(state) -> list[int]:
    calls: list[int] = []
    state.listeners.append(lambda: calls.append(1))
    return calls


def test_capacity_pods_and_workloads_notify():
    state = make_state(two_racks())
    calls = counted(state)
    state.upsert_node(proj.node_from_object(node("x1", "b9", "r9")))
    assert calls, "a new node"
    calls.clear()
    state.upsert_pod(pod("other", "x1", owner=None))
    assert calls, "a pod outside TAS takes room on its node"
    calls.clear()
    admit(state, "w", pods=2)
    assert calls, "an admission"
    calls.clear()
    state.upsert_workload(proj.workload_from_object(workload("waiting", pods=1)))
    assert calls, "a pending workload appears"
    calls.clear()
    state.delete_workload("ns", "w")
    assert calls, "a workload goes, its hosts are free"


def test_unchanged_objects_do_not_notify():
    state = make_state(two_racks())
    name = next(iter(state.nodes))
    state.upsert_pod(pod("p", name, owner=None))
    calls = counted(state)
    state.upsert_node(replace(state.nodes[name]))  # a heartbeat: equal projection
    state.upsert_pod(pod("p", name, owner=None))
    state.delete_pod("ns", "absent")
    assert calls == []
