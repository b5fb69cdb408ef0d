"""TASNodeFeasibilityForAllLevels against Kueue's expectations (kueue_feasibility_cases.py), on
both placement paths, and the gate's edges Kueue's later unit tests pin down.

Every non-hostname case of Kueue's TestFindTopologyAssignments runs again with the gate on:
Kueue kept each expectation when it made every node a leaf, but one message.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from tas.solver import (
    DomainAssignment,
    FlavorSpec,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodSetRequest,
    SolverOptions,
    Taint,
    TopologyAssignment,
    TopologyRequest,
    TopologySnapshot,
)
from tests.unit.solver import kueue_feasibility_cases, kueue_tas_cases
from tests.unit.solver.solver_test_helpers import HOST, RACK, KueueCase, node
from tests.unit.solver.test_kueue_find_topology_assignments import (
    assert_kueue_result,
    snapshot_for,
)

GATE = {"TASNodeFeasibilityForAllLevels": True}
NON_HOSTNAME = [c for c in kueue_tas_cases.CASES if c.levels[-1] != HOST]
PATHS = [pytest.param(False, id="vectorized"), pytest.param(True, id="plain")]


def _expected(case: KueueCase) -> KueueCase:
    message = kueue_feasibility_cases.CHANGED_MESSAGES.get(case.name)
    if message is None:
        return case
    podsets = tuple(
        type(ps)(ps.request, ps.want, message if ps.reason else None) for ps in case.podsets
    )
    return KueueCase(**{**case.__dict__, "podsets": podsets})


def test_the_earlier_cases_cover_every_kind_of_non_hostname_request():
    # leaders, balanced placement, multi-layer slices and prior usage are all among them
    assert len(NON_HOSTNAME) >= 26
    assert any(len(c.podsets) == 2 for c in NON_HOSTNAME)
    assert any(c.prior_usage for c in NON_HOSTNAME)
    assert {"TASBalancedPlacement", "TASMultiLayerTopology"} <= {
        g for c in NON_HOSTNAME for g in c.gates
    }


@pytest.mark.parametrize("reference", PATHS)
@pytest.mark.parametrize("case", NON_HOSTNAME, ids=[c.name for c in NON_HOSTNAME])
def test_kueue_non_hostname_cases_with_the_gate(case: KueueCase, reference: bool):
    assert_kueue_result(_expected(case), lambda: snapshot_for(case, GATE, reference=reference))


CASES = kueue_feasibility_cases.CASES


@pytest.mark.parametrize("reference", PATHS)
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_kueue_feasibility_cases(case: KueueCase, reference: bool):
    assert_kueue_result(case, lambda: snapshot_for(case, GATE, reference=reference))


@pytest.mark.parametrize(
    "name",
    [
        "should not admit a workload which fits a rack's aggregate but no feasible node",
        "rack required; Pod fits in the rack's aggregated capacity but on no single node; BestFit",
    ],
)
def test_without_the_gate_a_rack_counts_its_summed_capacity(name: str):
    """Kueue v0.17: with a lowest level other than the hostname every leaf is eligible and holds
    what its nodes' summed capacity holds."""
    case = next(c for c in CASES if c.name == name)
    result = snapshot_for(case).find_assignments([ps.request for ps in case.podsets])
    assert result.failure is None
    assert (
        sum(d.count for d in result.podsets[0].assignment.domains) == case.podsets[0].request.count
    )


# -- edges from Kueue's unit tests after PR 14191 -----------------------------------------------


def _rack_node(name: str, rack: str, cpu: str = "4", **labels: str):
    return node(name, {RACK: rack, **labels}, {"cpu": cpu, "pods": "10"})


def _snapshot(nodes, levels=(RACK,), gate=True, reference=False) -> TopologySnapshot:
    options = SolverOptions(node_feasibility_all_levels=gate)
    return TopologySnapshot(levels, nodes, FlavorSpec(), options, reference=reference)


def _rack_pods(count: int, cpu: int, **topology) -> PodSetRequest:
    request = TopologyRequest(**topology) if topology else TopologyRequest(required=RACK)
    return PodSetRequest("main", count, {"cpu": cpu}, request)


def _placed(snapshot: TopologySnapshot, podset: PodSetRequest) -> dict[tuple[str, ...], int]:
    result = snapshot.find_assignments([podset])
    assert result.failure is None, result.failure
    return {d.values: d.count for d in result.podsets[0].assignment.domains}


def _usage(rack: str, count: int, cpu: int) -> TopologyAssignment:
    return TopologyAssignment((RACK,), (DomainAssignment((rack,), count),)), {"cpu": cpu}


@pytest.mark.parametrize("reference", PATHS)
def test_usage_on_a_domain_never_lands_on_a_node_of_the_same_name(reference: bool):
    """TestLeavesForUsageDomainIgnoresNameCollision: a node named like a rack of its level
    (here "r1", in rack r2) is not that rack."""
    nodes = [_rack_node("node-a", "r1"), _rack_node("node-b", "r1"), _rack_node("r1", "r2")]
    snapshot = _snapshot(nodes, reference=reference)
    snapshot.add_usage(*_usage("r1", 2, 4000))  # rack r1 full
    assert _placed(snapshot, _rack_pods(1, 4000)) == {("r2",): 1}


@pytest.mark.parametrize("reference", PATHS)
def test_nodes_sharing_a_hostname_label_stay_two_leaves(reference: bool):
    """TestTreeVirtualLevelKeyedByNodeName: the hidden level is keyed by node name; pooling
    two 4-cpu nodes labelled alike would fit an 8-cpu pod."""
    nodes = [
        _rack_node("node-a", "r1", **{HOST: "dup"}),
        _rack_node("node-b", "r1", **{HOST: "dup"}),
    ]
    snapshot = _snapshot(nodes, reference=reference)
    assert snapshot.find_assignments([_rack_pods(1, 8000)]).failure is not None
    assert _placed(snapshot, _rack_pods(2, 4000)) == {("r1",): 2}


@pytest.mark.parametrize("reference", PATHS)
@pytest.mark.parametrize(("count", "fits"), [(2, True), (3, False)])
def test_pods_fit_per_node_not_in_the_summed_capacity(count: int, fits: bool, reference: bool):
    """TestFitsNonHostnameLowestLevel: two 8-cpu nodes hold one 5-cpu pod each, though the
    rack sums 16."""
    nodes = [_rack_node("n1", "r1", "8"), _rack_node("n2", "r1", "8")]
    result = _snapshot(nodes, reference=reference).find_assignments([_rack_pods(count, 5000)])
    assert (result.failure is None) is fits


@pytest.mark.parametrize("reference", PATHS)
def test_removing_one_workload_keeps_the_other_ones_usage(reference: bool):
    """TestFitsAfterPerWorkloadRemoval: two workloads take a device each in a rack of two
    one-device nodes; after one leaves, one device is free, not two."""
    nodes = [
        node(name, {RACK: "r1"}, {"example.com/device": "1", "pods": "10"}) for name in ("n1", "n2")
    ]
    snapshot = _snapshot(nodes, reference=reference)
    one_device = TopologyAssignment((RACK,), (DomainAssignment(("r1",), 1),))
    for _ in range(2):
        snapshot.add_usage(one_device, {"example.com/device": 1000})
    snapshot.add_usage(one_device, {"example.com/device": 1000}, sign=-1)
    device = {"example.com/device": 1000}
    both = PodSetRequest("main", 2, device, TopologyRequest(required=RACK))
    assert "allows to fit only 1 out of 2" in snapshot.find_assignments([both]).failure
    assert _placed(snapshot, PodSetRequest("main", 1, device, TopologyRequest(required=RACK)))


@pytest.mark.parametrize("reference", PATHS)
def test_usage_of_a_domain_the_snapshot_does_not_hold_is_ignored(reference: bool):
    """TestApplyTASUsageSkipsDomainTheSnapshotDoesNotHold: its nodes went away."""
    snapshot = _snapshot([_rack_node("n1", "r1", "2")], reference=reference)
    snapshot.add_usage(*_usage("gone", 1, 1000))
    assert _placed(snapshot, _rack_pods(2, 1000)) == {("r1",): 2}


@pytest.mark.parametrize("balanced", [False, True])
@pytest.mark.parametrize("levels", [(RACK, HOST), (RACK,)], ids=["hostname", "rack"])
def test_a_grouped_request_leaves_nothing_behind(levels, balanced: bool):
    """TestTopologyAssignmentWithoutLeaderAfterGroupedRequest: a leader and its workers, then
    the workers alone, place as the workers alone did before."""
    nodes = [
        node(name, {RACK: rack, HOST: name}, {"cpu": "4", "pods": "20"})
        for name, rack in (("n1", "r1"), ("n2", "r2"))
    ]
    options = SolverOptions(node_feasibility_all_levels=True, balanced_placement=balanced)
    snapshot = TopologySnapshot(levels, nodes, FlavorSpec(), options)
    workers = PodSetRequest("workers", 6, {"cpu": 1000}, TopologyRequest(preferred=RACK))
    grouped = TopologyRequest(preferred=RACK, group_name="g")
    group = [
        PodSetRequest("workers", 6, {"cpu": 1000}, grouped),
        PodSetRequest("leader", 1, {"cpu": 1000}, grouped),
    ]
    alone = snapshot.find_assignments([workers])
    assert alone.admitted
    for _ in range(2):
        together = snapshot.find_assignments(group)
        assert together.admitted
        assert {p.name: sum(d.count for d in p.assignment.domains) for p in together.podsets} == {
            "workers": 6,
            "leader": 1,
        }
        assert snapshot.find_assignments([workers]) == alone


# -- ours: the node filters, per node, under a rack ------------------------------------------


def _pair(rack: str, cpu: str, zone: str, taints=()):
    return [
        node(f"{rack}-{i}", {RACK: rack, "zone": zone}, {"cpu": cpu, "pods": "10"}, taints=taints)
        for i in (1, 2)
    ]


TAINTED_BIG = _pair("r1", "8", "a", (Taint("dedicated", "NoSchedule", "gpu"),)) + _pair(
    "r2", "1", "b"
)
SMALL_A_BIG_B = _pair("r1", "1", "a") + _pair("r2", "8", "b")
ZONE_B = (NodeSelectorTerm((NodeSelectorRequirement("zone", "In", ("b",)),)),)
FILTERS = [
    pytest.param(
        TAINTED_BIG,
        _rack_pods(3, 1000),
        "allows to fit only 2 out of 3 pod(s). Total nodes: 4; excluded: "
        'taint "dedicated=gpu:NoSchedule": 2',
        {("r1",): 3},
        id="a rack of untolerated tainted nodes offers nothing",
    ),
    pytest.param(
        SMALL_A_BIG_B,
        replace(_rack_pods(2, 1000), node_selector={"zone": "b"}),
        {("r2",): 2},
        {("r1",): 2},
        id="a rack of nodes the nodeSelector does not match offers nothing",
    ),
    pytest.param(
        SMALL_A_BIG_B,
        replace(_rack_pods(2, 1000), required_affinity=ZONE_B),
        {("r2",): 2},
        {("r1",): 2},
        id="a rack of nodes the required affinity does not match offers nothing",
    ),
]


@pytest.mark.parametrize("reference", PATHS)
@pytest.mark.parametrize(("nodes", "podset", "with_gate", "without_gate"), FILTERS)
def test_node_filters_apply_below_a_rack(nodes, podset, with_gate, without_gate, reference):
    """With the gate a rack holds what the nodes the pod set may run on hold; without it (Kueue
    v0.17) every rack is eligible with its summed capacity, so BestFit takes the tighter one."""
    result = _snapshot(nodes, reference=reference).find_assignments([podset])
    if isinstance(with_gate, str):
        assert result.failure.endswith(with_gate)
    else:
        assert {d.values: d.count for d in result.podsets[0].assignment.domains} == with_gate
    assert _placed(_snapshot(nodes, gate=False, reference=reference), podset) == without_gate


def test_the_hidden_level_cannot_be_requested():
    """Kueue's resolveLevelIdx: the injected hostname level is not addressable."""
    result = _snapshot([_rack_node("n1", "r1")]).find_assignments(
        [_rack_pods(1, 1000, required=HOST)]
    )
    assert result.failure.startswith("no requested topology level: kubernetes.io/hostname")
