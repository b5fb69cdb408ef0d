"""TopologySnapshot's own contract: usage accounting, incremental node updates, defaults,
validation messages. Expected values are worked out by hand from the rules in the docstrings
(Kueue's rules where Kueue has one)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tas.solver import (
    FlavorSpec,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodSetRequest,
    SliceLayer,
    SolverOptions,
    Taint,
    Toleration,
    TopologyRequest,
    TopologySnapshot,
)
from tests.unit.solver.solver_test_helpers import (
    BLOCK,
    HOST,
    RACK,
    THREE_LEVELS,
    TWO_LEVELS,
    assignment,
    node,
)

CPU = "cpu"


def rack_nodes(spec: dict[tuple[str, str], list[tuple[str, str]]]) -> list:
    """{(block, rack): [(host, cpu), ...]} -> nodes with 100 pods each."""
    return [
        node(host, {BLOCK: block, RACK: rack, HOST: host}, {CPU: cpu, "pods": "100"})
        for (block, rack), hosts in spec.items()
        for host, cpu in hosts
    ]


def one_cpu_pods(count: int, **topology) -> PodSetRequest:
    return PodSetRequest("main", count, {CPU: 1000}, TopologyRequest(**topology))


def hosts_of(placement) -> dict[str, int]:
    return {d.values[-1]: d.count for d in placement.podsets[0].assignment.domains}


@pytest.fixture
def two_racks() -> TopologySnapshot:
    # b1/r1: x1 (2 cpu), x2 (2 cpu); b1/r2: x3 (4 cpu)
    return TopologySnapshot(
        THREE_LEVELS,
        rack_nodes({("b1", "r1"): [("x1", "2"), ("x2", "2")], ("b1", "r2"): [("x3", "4")]}),
    )


def test_add_usage_takes_capacity_and_negative_sign_gives_it_back(two_racks):
    first = two_racks.find_assignments([one_cpu_pods(4, required=RACK)])
    # both racks hold 4; BestFit tie -> fewer... equal pods, so the first by values: r1
    assert hosts_of(first) == {"x1": 2, "x2": 2}

    two_racks.add_usage(first.podsets[0].assignment, {CPU: 1000})
    second = two_racks.find_assignments([one_cpu_pods(4, required=RACK)])
    assert hosts_of(second) == {"x3": 4}

    two_racks.add_usage(second.podsets[0].assignment, {CPU: 1000})
    full = two_racks.find_assignments([one_cpu_pods(1, required=RACK)])
    assert full.failure == (
        f'topology "{RACK}" doesn\'t allow to fit any of 1 pod(s). '
        'Total nodes: 3; excluded: resource "cpu": 3'
    )

    two_racks.add_usage(first.podsets[0].assignment, {CPU: 1000}, sign=-1)
    again = two_racks.find_assignments([one_cpu_pods(4, required=RACK)])
    assert hosts_of(again) == {"x1": 2, "x2": 2}


def test_usage_also_counts_one_pod_per_pod_against_allocatable_pods():
    snapshot = TopologySnapshot((HOST,), [node("x1", {HOST: "x1"}, {CPU: "100", "pods": "3"})])
    admitted = snapshot.find_assignments([one_cpu_pods(2)])
    snapshot.add_usage(admitted.podsets[0].assignment, {CPU: 1000})
    # 1 pod slot left although 98 cpus are free
    assert hosts_of(snapshot.find_assignments([one_cpu_pods(1)])) == {"x1": 1}
    assert snapshot.find_assignments([one_cpu_pods(2)]).failure == (
        'topology "kubernetes.io/hostname" allows to fit only 1 out of 2 pod(s)'
    )


def test_find_assignments_does_not_change_the_snapshot(two_racks):
    request = [one_cpu_pods(4, required=RACK), one_cpu_pods(4, required=RACK)]
    request[1] = PodSetRequest("second", 4, {CPU: 1000}, TopologyRequest(required=RACK))
    first = two_racks.find_assignments(request)
    assert first.admitted
    # the second pod set saw the first one's pods (assumed usage) ...
    assert {d.values[0] for d in first.podsets[1].assignment.domains} == {"x3"}
    # ... but nothing stays behind in the snapshot
    assert two_racks.find_assignments(request) == first


def test_first_failing_pod_set_fails_the_whole_workload(two_racks):
    result = two_racks.find_assignments(
        [one_cpu_pods(4, required=RACK), PodSetRequest("big", 5, {CPU: 1000}, TopologyRequest())]
    )
    assert not result.admitted
    assert result.podsets == ()
    # x1 and x2 are full with the first pod set's pods, so they count as excluded
    assert result.failure == (
        'topology "kubernetes.io/hostname" allows to fit only 4 out of 5 pod(s). '
        'Total nodes: 3; excluded: resource "cpu": 2'
    )


def test_missing_pods_allocatable_means_110_pods_and_missing_resource_means_none():
    snapshot = TopologySnapshot((HOST,), [node("x1", {HOST: "x1"}, {CPU: "1000"})])
    assert hosts_of(snapshot.find_assignments([one_cpu_pods(110)])) == {"x1": 110}
    assert snapshot.find_assignments([one_cpu_pods(111)]).failure == (
        'topology "kubernetes.io/hostname" allows to fit only 110 out of 111 pod(s)'
    )
    gpu = PodSetRequest("gpu", 1, {"nvidia.com/gpu": 1000})
    assert snapshot.find_assignments([gpu]).failure == (
        'topology "kubernetes.io/hostname" doesn\'t allow to fit any of 1 pod(s). '
        'Total nodes: 1; excluded: resource "nvidia.com/gpu": 1'
    )


def test_non_tas_usage_above_allocatable_counts_as_zero_not_negative():
    over = node("x1", {HOST: "x1"}, {CPU: "1"})
    over = type(over)(**{**over.__dict__, "usage": {CPU: 5000}})
    snapshot = TopologySnapshot((HOST,), [over, node("x2", {HOST: "x2"}, {CPU: "1"})])
    assert hosts_of(snapshot.find_assignments([one_cpu_pods(1)])) == {"x2": 1}


def test_upsert_node_updates_capacity_in_place(two_racks):
    two_racks.find_assignments([one_cpu_pods(1)])  # build the tree
    two_racks.upsert_node(
        node("x3", {BLOCK: "b1", RACK: "r2", HOST: "x3"}, {CPU: "8", "pods": "100"})
    )
    assert hosts_of(two_racks.find_assignments([one_cpu_pods(8, required=RACK)])) == {"x3": 8}


def test_upsert_node_adds_a_new_rack_and_remove_node_drops_it(two_racks):
    assert not two_racks.find_assignments([one_cpu_pods(6, required=RACK)]).admitted
    two_racks.upsert_node(node("x9", {BLOCK: "b2", RACK: "r9", HOST: "x9"}, {CPU: "6"}))
    placed = two_racks.find_assignments([one_cpu_pods(6, required=RACK)])
    assert hosts_of(placed) == {"x9": 6}

    two_racks.remove_node("x9")
    assert not two_racks.find_assignments([one_cpu_pods(6, required=RACK)]).admitted


def test_node_turning_not_ready_leaves_and_its_usage_returns_with_it(two_racks):
    placed = two_racks.find_assignments([one_cpu_pods(4, required=HOST)])
    assert hosts_of(placed) == {"x3": 4}
    two_racks.add_usage(placed.podsets[0].assignment, {CPU: 1000})
    x3 = node("x3", {BLOCK: "b1", RACK: "r2", HOST: "x3"}, {CPU: "4", "pods": "100"})
    two_racks.upsert_node(type(x3)(**{**x3.__dict__, "ready": False}))
    two_racks.upsert_node(x3)
    # x3 came back still holding the admitted pods: only x1/x2 can take 2 more
    assert hosts_of(two_racks.find_assignments([one_cpu_pods(2, required=HOST)])) == {"x1": 2}


def test_flavor_node_labels_and_tolerations_apply():
    tainted = node(
        "x1",
        {HOST: "x1", "pool": "gpu"},
        {CPU: "4"},
        taints=[Taint("gpu", "NoSchedule", "true")],
    )
    other_pool = node("x2", {HOST: "x2", "pool": "cpu"}, {CPU: "4"})
    flavor = FlavorSpec(node_labels={"pool": "gpu"}, tolerations=(Toleration("gpu", "Exists"),))
    snapshot = TopologySnapshot((HOST,), [tainted, other_pool], flavor)
    assert hosts_of(snapshot.find_assignments([one_cpu_pods(4)])) == {"x1": 4}

    without_toleration = TopologySnapshot(
        (HOST,), [tainted, other_pool], FlavorSpec(node_labels={"pool": "gpu"})
    )
    assert without_toleration.find_assignments([one_cpu_pods(1)]).failure == (
        'topology "kubernetes.io/hostname" doesn\'t allow to fit any of 1 pod(s). '
        'Total nodes: 1; excluded: taint "gpu=true:NoSchedule": 1'
    )


def test_prefer_no_schedule_taints_do_not_block():
    soft = node("x1", {HOST: "x1"}, {CPU: "1"}, taints=[Taint("t", "PreferNoSchedule")])
    assert TopologySnapshot((HOST,), [soft]).find_assignments([one_cpu_pods(1)]).admitted


def test_required_node_affinity_filters_hostname_leaves():
    nodes = [
        node("x1", {HOST: "x1", "gen": "3"}, {CPU: "4"}),
        node("x2", {HOST: "x2", "gen": "5"}, {CPU: "4"}),
    ]
    newer = PodSetRequest(
        "main",
        2,
        {CPU: 1000},
        required_affinity=(NodeSelectorTerm((NodeSelectorRequirement("gen", "Gt", ("4",)),)),),
    )
    result = TopologySnapshot((HOST,), nodes).find_assignments([newer])
    assert hosts_of(result) == {"x2": 2}


def test_rack_as_lowest_level_ignores_taints_and_selectors():
    # With a non-hostname lowest level Kueue has no single node to check, so it does not filter.
    nodes = [
        node("x1", {BLOCK: "b1", RACK: "r1"}, {CPU: "2"}, taints=[Taint("t", "NoSchedule")]),
        node("x2", {BLOCK: "b1", RACK: "r1"}, {CPU: "2"}),
    ]
    request = PodSetRequest(
        "main", 4, {CPU: 1000}, TopologyRequest(required=RACK), node_selector={"zone": "a"}
    )
    result = TopologySnapshot(TWO_LEVELS, nodes).find_assignments([request])
    assert result.podsets[0].assignment == assignment(TWO_LEVELS, [(("b1", "r1"), 4)])


def test_unknown_level_fails_with_the_valid_levels_instead_of_raising(two_racks):
    result = two_racks.find_assignments([one_cpu_pods(1, required="zone")])
    assert result.failure == (
        "no requested topology level: zone (the topology's levels are: "
        "cloud.com/topology-block, cloud.com/topology-rack, kubernetes.io/hostname)"
    )


def test_slice_size_not_dividing_the_pod_count_is_refused_not_partly_placed():
    # Kueue's integration test "scheduler persists Count greater than the sum of
    # TopologyAssignment domains" admits count 3 with slice size 2 as 2 pods placed, and the third
    # pod stays gated forever (kueue#15277). We refuse the workload with a reason instead.
    nodes = [
        node(h, {BLOCK: "b1", RACK: "r1", HOST: h}, {"nvidia.com/gpu": "12", CPU: "1"})
        for h in ("x1", "x2")
    ]
    request = PodSetRequest(
        "worker",
        3,
        {"nvidia.com/gpu": 1000},
        TopologyRequest(preferred=RACK, slice_layers=(SliceLayer(HOST, 2),)),
    )
    placement = TopologySnapshot(THREE_LEVELS, nodes).find_assignments([request])
    assert placement.podsets == ()
    assert placement.failure == "podSetSliceSize 2 must divide the pod set count 3"
    divisible = replace(request, count=4)
    placed = TopologySnapshot(THREE_LEVELS, nodes).find_assignments([divisible]).podsets[0]
    assert sum(d.count for d in placed.assignment.domains) == 4


def test_profile_mixed_off_uses_best_fit_for_unconstrained():
    nodes = [
        node("x1", {HOST: "x1"}, {CPU: "1"}),
        node("x2", {HOST: "x2"}, {CPU: "3"}),
        node("x3", {HOST: "x3"}, {CPU: "2"}),
    ]
    request = one_cpu_pods(2, unconstrained=True)
    # LeastFreeCapacity: the smallest host that fits alone
    assert hosts_of(TopologySnapshot((HOST,), nodes).find_assignments([request])) == {"x3": 2}
    best_fit = TopologySnapshot((HOST,), nodes, options=SolverOptions(profile_mixed=False))
    # BestFit: the tightest among the hosts that fit, x3 again; now ask for 3
    assert hosts_of(best_fit.find_assignments([one_cpu_pods(3, unconstrained=True)])) == {"x2": 3}
    # LFC with 3 pods: x2 is the only host that fits alone
    assert hosts_of(
        TopologySnapshot((HOST,), nodes).find_assignments([one_cpu_pods(3, unconstrained=True)])
    ) == {"x2": 3}


def test_hostname_assignment_is_ordered_by_the_full_path_like_kueue():
    # x9 sits in rack r1, a1 in rack r2: Kueue orders by (block, rack, host), not hostname.
    nodes = [
        node("x9", {BLOCK: "b1", RACK: "r1", HOST: "x9"}, {CPU: "1"}),
        node("a1", {BLOCK: "b1", RACK: "r2", HOST: "a1"}, {CPU: "1"}),
    ]
    result = TopologySnapshot(THREE_LEVELS, nodes).find_assignments([one_cpu_pods(2)])
    assert [d.values for d in result.podsets[0].assignment.domains] == [("x9",), ("a1",)]


def test_repeated_shapes_see_usage_changes_between_placements():
    # the per-shape fit cache must follow add_usage on individual leaves
    nodes = [node(f"x{i}", {HOST: f"x{i}"}, {CPU: "2"}) for i in range(40)]
    snapshot = TopologySnapshot((HOST,), nodes)
    seen = set()
    for _ in range(40):
        result = snapshot.find_assignments([one_cpu_pods(2, required=HOST)])
        host = result.podsets[0].assignment.domains[0].values[0]
        assert host not in seen
        seen.add(host)
        snapshot.add_usage(result.podsets[0].assignment, {CPU: 1000})
    assert not snapshot.find_assignments([one_cpu_pods(1)]).admitted


def test_no_eligible_nodes_fails_like_kueue():
    snapshot = TopologySnapshot(THREE_LEVELS, [node("x1", {HOST: "x1"}, {CPU: "1"})])
    assert snapshot.find_assignments([one_cpu_pods(1)]).failure == (
        "no topology domains at level: kubernetes.io/hostname"
    )


def test_zero_pods_get_an_empty_assignment(two_racks):
    result = two_racks.find_assignments([one_cpu_pods(0, required=RACK)])
    assert result.admitted
    assert result.podsets[0].assignment.domains == ()


def test_a_group_of_three_pod_sets_is_refused_not_guessed(two_racks):
    grouped = [
        PodSetRequest(name, 1, {CPU: 1000}, TopologyRequest(required=RACK, group_name="g"))
        for name in ("a", "b", "c")
    ]
    assert two_racks.find_assignments(grouped).failure == (
        "pod set group g has 3 pod sets; a group is exactly one leader and one workers pod set"
    )


@pytest.mark.parametrize("reference", [False, True], ids=["vectorized", "plain"])
def test_least_free_capacity_that_fits_nowhere_names_the_roomiest_domain(reference):
    """Kueue's LeastFreeCapacity with a required level (required + unconstrained): when no
    domain holds the request, the message counts the pods of the last domain in its order, the
    one with the most room (here x2, 3 pods), not of the first (x3, 1)."""
    nodes = [
        node("x1", {HOST: "x1"}, {CPU: "2"}),
        node("x2", {HOST: "x2"}, {CPU: "3"}),
        node("x3", {HOST: "x3"}, {CPU: "1"}),
    ]
    snapshot = TopologySnapshot((HOST,), nodes, reference=reference)
    placement = snapshot.find_assignments([one_cpu_pods(4, required=HOST, unconstrained=True)])
    assert placement.failure == (
        'topology "kubernetes.io/hostname" allows to fit only 3 out of 4 pod(s)'
    )


@pytest.mark.parametrize("reference", [False, True], ids=["vectorized", "plain"])
def test_least_free_capacity_that_fits_nowhere_breaks_a_slice_tie_by_pods(reference):
    """As above with slices of 2: x2 and x3 hold one slice each; of the two, x3 (3 pods) comes
    last in LeastFreeCapacity's order (slices, then pods, ascending), not x2."""
    nodes = [
        node("x1", {HOST: "x1"}, {CPU: "1"}),
        node("x2", {HOST: "x2"}, {CPU: "2"}),
        node("x3", {HOST: "x3"}, {CPU: "3"}),
    ]
    snapshot = TopologySnapshot((HOST,), nodes, reference=reference)
    request = one_cpu_pods(
        4, required=HOST, unconstrained=True, slice_layers=(SliceLayer(HOST, 2),)
    )
    # Kueue's quirk, kept: that domain's pod count against the slices asked for
    assert snapshot.find_assignments([request]).failure == (
        'topology "kubernetes.io/hostname" allows to fit only 3 out of 2 slice(s)'
    )
