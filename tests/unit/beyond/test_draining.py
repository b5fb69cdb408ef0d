"""Draining domains (gate TASDrainingDomains): no new pods on draining nodes, running workloads
keep their charges, hot swap never picks a draining node, and a workload that would fit only
with the draining nodes is told so."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tas.admission.decide import decide
from tas.api.constants import DRAINING_LABEL
from tas.api.topologyassignment import v1beta2_to_v1beta1
from tas.cache import projections as proj
from tas.cache.state import ClusterState
from tas.hotswap.replace import find_replacement
from tas.solver.snapshot import TopologySnapshot
from tas.solver.types import SolverOptions
from tests.unit.admission import fixtures
from tests.unit.admission.fixtures import BLOCK, RACK, node, workload
from tests.unit.solver_properties.test_invariants import PROPERTY, clusters, podsets

ON = SolverOptions(draining_domains=True)
NOTE = "It would fit on nodes marked draining"


def draining(obj: dict) -> dict:
    obj["metadata"]["labels"][DRAINING_LABEL] = "true"
    return obj


def four_racks(drained: set[str]) -> list[dict]:
    """Two blocks of two racks of two 4-cpu nodes; the nodes named in `drained` drain."""
    out = []
    for block in ("b1", "b2"):
        for rack in ("r1", "r2"):
            for i in (1, 2):
                name = f"{block}{rack}n{i}"
                obj = node(name, block, f"{block}{rack}")
                out.append(draining(obj) if name in drained else obj)
    return out


def state_of(nodes: list[dict], options: SolverOptions) -> ClusterState:
    return fixtures.make_state(nodes, options=options)


def hosts_of(decision) -> set[str]:
    stored = decision.admission["podSetAssignments"][0]["topologyAssignment"]
    return {d["values"][0] for d in v1beta2_to_v1beta1(stored)["domains"]}


def admit(state: ClusterState, name: str, pods: int, level: str) -> dict:
    obj = workload(name, pods=pods, cpu="1", annotations_request={"required": level})
    d = decide(state, proj.workload_from_object(obj), state.cluster_queues["cq"])
    assert d.admitted, d.message
    obj["status"] = {
        "admission": d.admission,
        "conditions": [
            {"type": "QuotaReserved", "status": "True"},
            {"type": "Admitted", "status": "True"},
        ],
    }
    state.upsert_workload(proj.workload_from_object(obj))
    return obj


RACK_B1R1 = {"b1r1n1", "b1r1n2"}
ALL_B1 = {"b1r1n1", "b1r1n2", "b1r2n1", "b1r2n2"}
CASES = [
    # id, drained nodes, gate on, pods, level, admitted, hosts allowed, note in message
    (
        "gate-off-ignores-the-label",
        ALL_B1 | {"b2r1n1", "b2r1n2", "b2r2n1"},
        False,
        8,
        RACK,
        True,
        None,
        False,
    ),
    ("drained-rack-skipped", RACK_B1R1, True, 8, RACK, True, {"b1r2n1", "b1r2n2"}, False),
    (
        "drained-block-skipped",
        ALL_B1,
        True,
        16,
        BLOCK,
        True,
        {"b2r1n1", "b2r1n2", "b2r2n1", "b2r2n2"},
        False,
    ),
    (
        "one-node-drains-only-itself",
        {"b1r1n1"},
        True,
        4,
        RACK,
        True,
        {"b1r1n2", "b1r2n1", "b1r2n2", "b2r1n1", "b2r1n2", "b2r2n1", "b2r2n2"},
        False,
    ),
    ("fits-only-with-draining", ALL_B1 | {"b2r1n1"}, True, 16, BLOCK, False, None, True),
    ("fits-nowhere-no-note", set(), True, 17, BLOCK, False, None, False),
]


@pytest.mark.parametrize(
    "drained, on, pods, level, admitted, allowed, note",
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_placement_with_draining_nodes(drained, on, pods, level, admitted, allowed, note):
    state = state_of(four_racks(drained), ON if on else SolverOptions())
    obj = workload("w", pods=pods, cpu="1", annotations_request={"required": level})
    d = decide(state, proj.workload_from_object(obj), state.cluster_queues["cq"])
    assert d.admitted is admitted, d.message
    if admitted and allowed is not None:
        assert hosts_of(d) <= allowed
    assert (NOTE in d.message) is note, d.message
    if not admitted and on and drained:
        assert f"draining: {len(drained)}" in d.message


def test_gate_off_places_exactly_as_without_the_label():
    plain = state_of(four_racks(set()), SolverOptions())
    labelled = state_of(four_racks(ALL_B1), SolverOptions())
    obj = workload("w", pods=6, cpu="1", annotations_request={"required": BLOCK})
    wl = proj.workload_from_object(obj)
    one = decide(plain, wl, plain.cluster_queues["cq"])
    two = decide(labelled, wl, labelled.cluster_queues["cq"])
    assert one == two


def test_running_workload_on_a_draining_rack_keeps_its_charge():
    state = state_of(four_racks(set()), ON)
    obj = admit(state, "running", 8, RACK)
    key = ("ns", "running")
    taken = hosts_of_charge(state, key)
    for n in four_racks(taken):  # now its rack drains
        state.upsert_node(proj.node_from_object(n))
    assert hosts_of_charge(state, key) == taken  # untouched
    # its capacity is still used: a block-wide 16-pod workload does not fit even with draining
    # nodes counted, so nothing tells it to wait for them
    wide = workload("wide", pods=16, cpu="1", annotations_request={"required": BLOCK})
    block_of_running = next(iter(taken))[:2]
    d = decide(state, proj.workload_from_object(wide), state.cluster_queues["cq"])
    assert d.admitted and not any(h.startswith(block_of_running) for h in hosts_of(d))
    assert obj["metadata"]["name"] == "running"


def hosts_of_charge(state: ClusterState, key) -> set[str]:
    return {d.values[-1] for ps in state.charges()[key].pod_sets for d in ps.assignment.domains}


def test_hot_swap_never_picks_a_draining_node():
    # one rack of four nodes; the workload takes two, a third drains, the fourth is the spare
    nodes = [node(f"x{i}", "b1", "r1") for i in range(1, 5)]
    state = state_of(nodes, ON)
    obj = workload("train", pods=4, cpu="2", annotations_request={"required": RACK})
    d = decide(state, proj.workload_from_object(obj), state.cluster_queues["cq"])
    assert d.admitted, d.message
    used = sorted(hosts_of(d))
    free = sorted({"x1", "x2", "x3", "x4"} - set(used))
    obj["status"] = {
        "admission": d.admission,
        "conditions": [{"type": "QuotaReserved", "status": "True"}],
    }
    state.upsert_workload(proj.workload_from_object(obj))
    state.upsert_node(proj.node_from_object(draining(node(free[0], "b1", "r1"))))
    down = node(used[0], "b1", "r1")
    down["status"]["conditions"][0]["status"] = "False"
    state.upsert_node(proj.node_from_object(down))
    obj["status"]["unhealthyNodes"] = [{"name": used[0]}]
    wl = proj.workload_from_object(obj)
    state.upsert_workload(wl)
    result = find_replacement(state, wl, state.charges()[wl.key])
    assert result.failure is None
    new_hosts = {d.values[-1] for d in result.assignments["main"].domains}
    assert new_hosts == {used[1], free[1]}
    # and with the spare draining too, there is no replacement at all
    state.upsert_node(proj.node_from_object(draining(node(free[1], "b1", "r1"))))
    assert find_replacement(state, wl, state.charges()[wl.key]).failure


@st.composite
def drained_scenarios(draw):
    cluster = draw(clusters())
    nodes = tuple(replace(n, draining=draw(st.integers(0, 2)) == 0) for n in cluster.nodes)
    workloads = [[draw(podsets(cluster.levels, "ps"))] for _ in range(draw(st.integers(1, 3)))]
    return replace(cluster, nodes=nodes), workloads


@PROPERTY
@given(drained_scenarios())
def test_no_pod_lands_on_a_draining_node_and_none_over_commits(scenario):
    cluster, workloads = scenario
    snapshot = TopologySnapshot(cluster.levels, cluster.nodes, options=ON)
    by_name = cluster.by_name
    used = {n.name: dict(n.usage) for n in cluster.nodes}
    for podsets_of_workload in workloads:
        placement = snapshot.find_assignments(podsets_of_workload)
        if not placement.admitted:
            continue
        [podset] = podsets_of_workload
        [placed] = placement.podsets
        snapshot.add_usage(placed.assignment, podset.requests)
        required = podset.topology.required
        if required is not None:
            domains = {by_name[d.values[-1]].labels[required] for d in placed.assignment.domains}
            parents = {
                tuple(
                    by_name[d.values[-1]].labels[lv]
                    for lv in cluster.levels[: cluster.levels.index(required) + 1]
                )
                for d in placed.assignment.domains
            }
            assert len(parents) <= 1 and len(domains) <= 1
        for d in placed.assignment.domains:
            host = by_name[d.values[-1]]
            assert not host.draining
            for resource, amount in {**podset.requests, "pods": 1000}.items():
                used[host.name][resource] = used[host.name].get(resource, 0) + amount * d.count
                assert used[host.name][resource] <= host.allocatable.get(resource, 0) or amount == 0
