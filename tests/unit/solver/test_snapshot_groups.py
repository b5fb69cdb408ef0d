"""TopologySnapshot's side of placement groups and of the fragmentation-aware profile:
`find_group_assignment` (the snapshot's capacity, eligibility, required level, occupied,
foreign and reserved domains handed to solver/groups.py), `group_layout`, `leaf_path`, and
`_profile_domain` (which pod sets the profile applies to, and on what capacity).

Expected placements are worked out by hand from the docstrings of groups.py and profile.py.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from tas.solver import (
    DomainAssignment,
    Node,
    PodSetRequest,
    SliceLayer,
    SolverOptions,
    TopologyAssignment,
    TopologyRequest,
    TopologySnapshot,
)
from tas.solver.groups import GroupRules, GroupState
from tas.solver.types import CONTAINER_SCOPE, NodeNuma, NumaShape, NumaZone

HOST = "kubernetes.io/hostname"
LEVELS = ("block", "rack", HOST)
BLOCK, RACK = 0, 1  # level indexes, as GroupRules takes them
CPU = "cpu"


def host(name: str, rack: str, cpu: int = 4, used: int = 0, **labels: str) -> Node:
    """A host `name` in `rack` (named "<block>-<rack>"), `cpu` CPUs of which `used` are taken
    by pods outside topology-aware admission."""
    return Node(
        name,
        {"block": rack.split("-")[0], "rack": rack, HOST: name, **labels},
        {CPU: cpu * 1000},
        {CPU: used * 1000} if used else {},
    )


def uneven_blocks() -> list[Node]:
    """Free CPUs per rack: b0-r0 5 (3+2), b0-r1 8 (4+4), b1-r0 6 (3+3), b1-r1 0 (0+0).
    5 pods of 1 CPU: BestFit takes b0-r0 (the tightest rack that fits); the profile keeps the
    block with the most room (b0, 13) whole and takes b1-r0 (its block has 6)."""
    return [
        host("b0-r0-h0", "b0-r0", used=1),
        host("b0-r0-h1", "b0-r0", used=2),
        host("b0-r1-h0", "b0-r1"),
        host("b0-r1-h1", "b0-r1"),
        host("b1-r0-h0", "b1-r0", used=1),
        host("b1-r0-h1", "b1-r0", used=1),
        host("b1-r1-h0", "b1-r1", used=4),
        host("b1-r1-h1", "b1-r1", used=4),
    ]


def snapshot(nodes: list[Node], *, aware: bool = False) -> TopologySnapshot:
    return TopologySnapshot(LEVELS, nodes, options=SolverOptions(fragmentation_aware=aware))


def pods(count: int, name: str = "main", cpu: int = 1, **topology) -> PodSetRequest:
    return PodSetRequest(name, count, {CPU: cpu * 1000}, TopologyRequest(**topology))


def per_host(placement, name: str = "main") -> dict[str, int]:
    assert placement.admitted, placement.failure
    [placed] = [p for p in placement.podsets if p.name == name]
    return {d.values[-1]: d.count for d in placed.assignment.domains}


def racks(placement, name: str = "main") -> set[str]:
    return {h.rsplit("-", 1)[0] for h in per_host(placement, name)}


def member(
    snap: TopologySnapshot,
    podset: PodSetRequest,
    rules: GroupRules | None = None,
    *,
    owned: dict[int, set[tuple[str, ...]]] | None = None,
    affinity_of_others: dict[int, set[tuple[str, ...]]] | None = None,
):
    """find_group_assignment for the first member of a group (its state still empty)."""
    return snap.find_group_assignment(
        podset, rules or GroupRules(), GroupState(), owned or {}, affinity_of_others
    )


# -- find_group_assignment -------------------------------------------------------------------


def test_a_member_is_placed_as_one_pod_set_with_its_count_and_the_planned_pods():
    snap = snapshot(uneven_blocks())
    placement, planned = member(snap, pods(5), GroupRules(affinity=RACK))
    # BestFit for a new affinity domain: the tightest rack that holds all 5, b0-r0 (3 + 2)
    assert placement.admitted
    [placed] = placement.podsets
    assert (placed.name, placed.count) == ("main", 5)
    assert placed.assignment == TopologyAssignment(
        (HOST,), (DomainAssignment(("b0-r0-h0",), 3), DomainAssignment(("b0-r0-h1",), 2))
    )
    assert planned is not None
    assert planned.pods == {("b0", "b0-r0", "b0-r0-h0"): 3, ("b0", "b0-r0", "b0-r0-h1"): 2}


def test_fragmentation_aware_member_opens_its_affinity_domain_in_the_fullest_block():
    placement, _ = member(snapshot(uneven_blocks(), aware=True), pods(5), GroupRules(affinity=RACK))
    assert racks(placement) == {"b1-r0"}
    assert per_host(placement) == {"b1-r0-h0": 3, "b1-r0-h1": 2}


def test_other_groups_affinity_domains_are_kept_to_grow_in_when_fragmentation_aware():
    """b1-r0 would be the profile's choice, but another group's affinity domain is there:
    the member opens the best of the rest instead, b0's emptiest rack (room to grow)."""
    others = {RACK: {("b1", "b1-r0")}}
    aware = snapshot(uneven_blocks(), aware=True)
    placement, _ = member(aware, pods(5), GroupRules(affinity=RACK), affinity_of_others=others)
    assert racks(placement) == {"b0-r1"}


def test_other_groups_affinity_domains_are_still_used_when_nothing_else_fits():
    others = {RACK: {("b1", "b1-r0"), ("b0", "b0-r0")}}
    aware = snapshot(uneven_blocks(), aware=True)
    # 7 pods: only b0-r1 (8) holds them, reserved or not
    placement, _ = member(aware, pods(7), GroupRules(affinity=RACK), affinity_of_others=others)
    assert racks(placement) == {"b0-r1"}
    # 6 pods: b0-r1 and b1-r0 fit; b1-r0 is kept for its group, b0-r1 is free to take
    placement, _ = member(aware, pods(6), GroupRules(affinity=RACK), affinity_of_others=others)
    assert racks(placement) == {"b0-r1"}
    # with b0-r1 reserved too, the only racks left are other groups' own: the best of them
    others[RACK].add(("b0", "b0-r1"))
    placement, _ = member(aware, pods(6), GroupRules(affinity=RACK), affinity_of_others=others)
    assert racks(placement) == {"b1-r0"}


def test_other_groups_affinity_domains_mean_nothing_with_the_profile_off():
    others = {RACK: {("b0", "b0-r0")}}
    placement, _ = member(
        snapshot(uneven_blocks()), pods(5), GroupRules(affinity=RACK), affinity_of_others=others
    )
    assert racks(placement) == {"b0-r0"}


def test_domains_other_exclusive_groups_own_are_out_of_bounds():
    owned = {RACK: {("b0", "b0-r0")}}
    placement, planned = member(
        snapshot(uneven_blocks()), pods(5), GroupRules(affinity=RACK), owned=owned
    )
    # b0-r0 would be BestFit's choice; of the rest, b1-r0 (6) is tighter than b0-r1 (8)
    assert racks(placement) == {"b1-r0"}
    assert planned is not None


def test_exclusive_member_skips_domains_holding_other_workloads_pods():
    snap = snapshot(uneven_blocks())
    # BestFit for 4 pods: b1 is the tightest block (6, all in b1-r0), so b1-r0
    placement, _ = member(snap, pods(4), GroupRules(exclusive=RACK))
    assert racks(placement) == {"b1-r0"}
    # another workload's pod on b1-r0-h0: b1-r0 keeps 5 free but is no longer empty, and b1
    # has no empty rack with room left; of b0's racks, b0-r0 (5) is the tighter
    other = TopologyAssignment((HOST,), (DomainAssignment(("b1-r0-h0",), 1),))
    snap.add_usage(other, {CPU: 1000})
    placement, _ = member(snap, pods(4), GroupRules(exclusive=RACK))
    assert racks(placement) == {"b0-r0"}
    # once that pod is gone its rack is empty again (its usage entry is all zeros)
    snap.add_usage(other, {CPU: 1000}, sign=-1)
    placement, _ = member(snap, pods(4), GroupRules(exclusive=RACK))
    assert racks(placement) == {"b1-r0"}


def test_exclusive_member_in_a_flavor_without_nodes_is_refused_not_crashed():
    snap = snapshot([])
    placement, planned = member(snap, pods(2), GroupRules(exclusive=RACK))
    assert planned is None
    assert placement.failure == (
        "placement group: room for 0 of 2 pods under the group's constraints (2 pod(s) requested)"
    )


def test_member_required_level_keeps_its_pods_in_one_domain():
    snap = snapshot(uneven_blocks())
    # 9 pods fit the topology (19 free) but no rack (8 at most): refused, not spread
    placement, planned = member(snap, pods(9, required="rack"))
    assert planned is None
    assert placement.failure == (
        "placement group: no rack has room for all the pods (9 pod(s) requested)"
    )
    # the same 9 pods fit in one block (b0 has 13)
    placement, _ = member(snap, pods(9, required="block"))
    assert {h.split("-")[0] for h in per_host(placement)} == {"b0"}
    # and without a required level they are spread
    placement, _ = member(snap, pods(9))
    assert sum(per_host(placement).values()) == 9


def test_member_with_an_unknown_required_level_gets_the_level_error():
    placement, planned = member(snapshot(uneven_blocks()), pods(2, required="zone"))
    assert planned is None
    assert placement.failure == (
        "no requested topology level: zone (the topology's levels are: "
        "block, rack, kubernetes.io/hostname)"
    )
    assert not placement.admitted


def eligibility_hosts() -> list[Node]:
    """r1 holds an allowed 4-CPU host; r2 a tighter 2-CPU host the pod set may not use."""
    return [
        host("b0-r1-a", "b0-r1", pool="main"),
        host("b0-r2-x", "b0-r2", cpu=2, pool="other"),
    ]


def test_member_keeps_off_hosts_its_node_selector_excludes():
    snap = snapshot(eligibility_hosts())
    selected = PodSetRequest("main", 1, {CPU: 1000}, node_selector={"pool": "main"})
    placement, _ = member(snap, selected)
    # b0-r2-x would be the tighter fit but is not selected
    assert per_host(placement) == {"b0-r1-a": 1}
    # 5 pods: only 4 fit the selected host, none may go to the other one
    placement, planned = member(snap, replace(selected, count=5))
    assert planned is None
    assert placement.failure == (
        "placement group: room for 4 of 5 pods under the group's constraints (5 pod(s) requested)"
    )


def test_member_capacity_is_counted_exactly_beyond_int64():
    """A node with an exbibyte of memory switches the snapshot to Python integers; a member
    is still placed by BestFit on the counts of every resource."""
    huge = 2**70
    nodes = [
        Node("b0-r0-h0", {"block": "b0", "rack": "b0-r0", HOST: "b0-r0-h0"}, {CPU: 4000}),
        Node(
            "b0-r1-h0",
            {"block": "b0", "rack": "b0-r1", HOST: "b0-r1-h0"},
            {CPU: 2000, "memory": huge},
        ),
        Node(
            "b1-r0-h0",
            {"block": "b1", "rack": "b1-r0", HOST: "b1-r0-h0"},
            {CPU: 3000, "memory": huge},
        ),
    ]
    snap = snapshot(nodes)
    request = PodSetRequest("main", 3, {CPU: 1000, "memory": 2**69})
    placement, _ = member(snap, request)
    # each huge host holds 2 pods (memory), the first none (it has no memory at all); no
    # block holds 3, so the largest first (a tie of 2: b0 by its path), then b1
    assert per_host(placement) == {"b0-r1-h0": 2, "b1-r0-h0": 1}


# -- group_layout and leaf_path ----------------------------------------------------------------


def test_group_layout_is_reused_until_the_tree_changes():
    snap = snapshot(uneven_blocks())
    first = snap.group_layout()
    assert snap.group_layout() is first
    assert first.leaf_paths[0] == ("b0", "b0-r0", "b0-r0-h0")
    snap.upsert_node(host("b2-r0-h0", "b2-r0"))  # a new leaf: the tree is rebuilt
    second = snap.group_layout()
    assert second is not first
    assert ("b2", "b2-r0", "b2-r0-h0") in second.leaf_paths
    assert snap.group_layout() is second


def test_leaf_path_gives_the_full_values_of_a_hostname_domain():
    snap = snapshot(uneven_blocks())
    assert snap.leaf_path(("b1-r0-h1",)) == ("b1", "b1-r0", "b1-r0-h1")
    assert snap.leaf_path(("b0", "b0-r1", "b0-r1-h0")) == ("b0", "b0-r1", "b0-r1-h0")
    assert snap.leaf_path(("gone",)) is None


def test_leaf_path_without_a_hostname_level_takes_the_values_as_they_are():
    snap = TopologySnapshot(("block", "rack"), uneven_blocks())
    assert snap.leaf_path(("b1", "b1-r0")) == ("b1", "b1-r0")
    assert snap.leaf_path(("b1", "b9")) is None


def test_members_below_a_hidden_hostname_level_are_placed_on_nodes_and_named_by_rack():
    """TASNodeFeasibilityForAllLevels on a rack-lowest topology: the planner counts nodes, the
    assignment names racks, another workload's pods occupy their rack, and a rack's values are
    its full path."""
    options = SolverOptions(node_feasibility_all_levels=True)
    snap = TopologySnapshot(("block", "rack"), uneven_blocks(), options=options)
    placement, planned = member(snap, pods(4), GroupRules(exclusive=RACK))
    assert placement.podsets[0].assignment == TopologyAssignment(
        ("block", "rack"), (DomainAssignment(("b1", "b1-r0"), 4),)
    )
    # planned per node (3 cpus free on each)
    assert {path[:2] for path in planned.pods} == {("b1", "b1-r0")}
    assert sum(planned.pods.values()) == 4 and max(planned.pods.values()) <= 3
    snap.add_usage(placement.podsets[0].assignment, {CPU: 1000})
    placement, _ = member(snap, pods(4), GroupRules(exclusive=RACK))
    # b1-r0 is no longer empty; of b0's racks, b0-r0 (5) is the tighter
    assert [d.values for d in placement.podsets[0].assignment.domains] == [("b0", "b0-r0")]
    assert snap.leaf_path(("b1", "b1-r0")) == ("b1", "b1-r0")
    assert snap.leaf_path(("b1-r0-h0",)) is None


# -- _profile_domain: what the profile sees --------------------------------------------------


def selector_hosts() -> list[Node]:
    """Racks of allowed (pool=main) free CPUs: b0-r0 5 (3+2), b0-r1 2, b1-r0 6 (a 4 and a 2,
    with a roomy 5-CPU host of another pool beside them), b1-r1 only other-pool hosts.
    By allowed room b1 (6) is fuller than b0 (7)."""
    return [
        host("b0-r0-h0", "b0-r0", used=1, pool="main"),
        host("b0-r0-h1", "b0-r0", used=2, pool="main"),
        host("b0-r1-h0", "b0-r1", used=2, pool="main"),
        host("b1-r0-a", "b1-r0", pool="main"),
        host("b1-r0-b", "b1-r0", used=2, pool="main"),
        host("b1-r0-x", "b1-r0", cpu=5, pool="other"),
        host("b1-r1-y", "b1-r1", pool="other"),
        host("b1-r1-z", "b1-r1", pool="other"),
    ]


def test_profile_counts_only_the_hosts_the_pod_set_may_use():
    request = PodSetRequest(
        "main", 5, {CPU: 1000}, TopologyRequest(required="rack"), node_selector={"pool": "main"}
    )
    best_fit = snapshot(selector_hosts()).find_assignments([request])
    assert racks(best_fit) == {"b0-r0"}  # the tightest rack that holds 5
    aware = snapshot(selector_hosts(), aware=True).find_assignments([request])
    # b1 has less allowed room (6) than b0 (7): b1-r0, on its allowed hosts only (the fuller
    # b first: 2 + 3), never on the other pool's host even though it alone would hold all 5
    assert per_host(aware) == {"b1-r0-b": 2, "b1-r0-a": 3}


def test_profile_counts_leaves_excluded_by_exclusive_groups_as_no_room():
    snap = snapshot(uneven_blocks(), aware=True)
    layout = snap.group_layout()
    excluded = layout.leaves_under(RACK, {("b0", "b0-r1")})  # 8 free but owned by a group
    placement = snap.find_assignments([pods(5, required="rack")], excluded=excluded)
    # b0 has 5 usable (b0-r0), b1 6: b0-r0 now sits in the fuller block
    assert racks(placement) == {"b0-r0"}


def test_profile_counts_whole_slices_per_slice_domain():
    """Rooms per rack: b0 3 and 2 (no slice of 4), b1 4 and 4, b2 4 and 2. A block request of
    one 4-pod slice per rack fits only b1 and b2; b2 has less room."""
    free = {"b0": (3, 2), "b1": (4, 4), "b2": (4, 2)}
    nodes = [
        host(f"{b}-r{r}-h0", f"{b}-r{r}", cpu=4, used=4 - room)
        for b, rooms in free.items()
        for r, room in enumerate(rooms)
    ]
    request = pods(4, required="block", slice_layers=(SliceLayer("rack", 4),))
    placement = snapshot(nodes, aware=True).find_assignments([request])
    assert per_host(placement) == {"b2-r0-h0": 4}


def test_profile_sees_the_capacity_earlier_pod_sets_of_the_workload_take():
    """First pod set: 4 pods in b1-r1 (3+3 free, the profile's rack: its block is fuller).
    That leaves b1-r1 with 2 and b1 with 10 of room against b0's 16: the second pod set's 3
    pods go to b1 again, to b1-r0, the only rack of b1 that still holds them."""
    nodes = [host(f"b0-r{r}-h{h}", f"b0-r{r}") for r in range(2) for h in range(2)]
    nodes += [host(f"b1-r0-h{h}", "b1-r0") for h in range(2)]
    nodes += [host(f"b1-r1-h{h}", "b1-r1", used=1) for h in range(2)]
    first = pods(4, "first", required="rack")
    second = pods(3, "second", required="rack")
    placement = snapshot(nodes, aware=True).find_assignments([first, second])
    assert racks(placement, "first") == {"b1-r1"}
    assert racks(placement, "second") == {"b1-r0"}


def test_profile_leaves_unconstrained_pod_sets_to_kueue():
    """Unconstrained pods are placed by Kueue's own profile (the host with the least free
    capacity that holds them, b0-r0-h0), not moved to the fuller block's b1-r0-h0."""
    request = pods(2, unconstrained=True)
    nodes = [
        host("b0-r0-h0", "b0-r0", used=2),
        host("b0-r0-h1", "b0-r0"),
        host("b1-r0-h0", "b1-r0", used=1),
        host("b1-r0-h1", "b1-r0", used=4),
    ]
    kueue = snapshot(nodes).find_assignments([request])
    aware = snapshot(nodes, aware=True).find_assignments([request])
    assert per_host(aware) == per_host(kueue) == {"b0-r0-h0": 2}
    # the same pods at a required host level do follow the profile
    at_host = snapshot(nodes, aware=True).find_assignments([pods(2, required=HOST)])
    assert per_host(at_host) == {"b1-r0-h0": 2}


def test_profile_leaves_a_leader_and_its_workers_to_kueue():
    """The profile sizes a domain for one pod set; with a leader Kueue places both: 1 + 4 pods
    in the tightest rack that holds 5, b0-r0, whether the profile is on or not."""
    leader = pods(1, "leader", required="rack", group_name="g")
    workers = pods(4, "workers", required="rack", group_name="g")
    kueue = snapshot(uneven_blocks()).find_assignments([leader, workers])
    aware = snapshot(uneven_blocks(), aware=True).find_assignments([leader, workers])
    assert racks(kueue, "workers") == racks(aware, "workers") == {"b0-r0"}
    assert racks(aware, "leader") == {"b0-r0"}


def numa_host(name: str, rack: str, zone_cpus: tuple[int, ...]) -> Node:
    return Node(
        name,
        {"block": rack.split("-")[0], "rack": rack, HOST: name},
        {CPU: sum(zone_cpus) * 1000},
        numa=NodeNuma(
            CONTAINER_SCOPE,
            tuple(NumaZone(f"node-{i}", {CPU: c * 1000}) for i, c in enumerate(zone_cpus)),
        ),
    )


def guaranteed(count: int, name: str = "main", cpu: int = 1, **topology) -> PodSetRequest:
    return PodSetRequest(
        name,
        count,
        {CPU: cpu * 1000},
        TopologyRequest(**topology),
        numa=NumaShape(({CPU: cpu * 1000},)),
    )


def test_profile_leaves_pod_sets_counted_by_numa_zones_to_kueue():
    """Zone-counted pods keep Kueue's BestFit: the tightest rack for 5 pods (b0-r0)."""
    nodes = [
        numa_host("b0-r0-h0", "b0-r0", (2, 1)),
        numa_host("b0-r0-h1", "b0-r0", (1, 1)),
        numa_host("b0-r1-h0", "b0-r1", (2, 2)),
        numa_host("b0-r1-h1", "b0-r1", (2, 2)),
        numa_host("b1-r0-h0", "b1-r0", (2, 1)),
        numa_host("b1-r0-h1", "b1-r0", (2, 1)),
    ]
    request = guaranteed(5, required="rack")
    kueue = snapshot(nodes).find_assignments([request])
    aware = snapshot(nodes, aware=True).find_assignments([request])
    assert racks(kueue) == racks(aware) == {"b0-r0"}


def test_a_request_beyond_int64_is_refused_with_the_profile_on():
    """Quantities past the arrays' range go to the exact plain path, profile or not."""
    request = PodSetRequest("main", 1, {CPU: 2**63}, TopologyRequest(required="rack"))
    placement = snapshot(uneven_blocks(), aware=True).find_assignments([request])
    assert not placement.admitted
    assert "cpu" in placement.failure


# -- NUMA zones with a leader after earlier pod sets -------------------------------------------


def one_numa_host(totals: int) -> list[Node]:
    """A single host with two zones of 4 CPUs and `totals` CPUs by node totals."""
    zones = NodeNuma(
        CONTAINER_SCOPE, (NumaZone("node-0", {CPU: 4000}), NumaZone("node-1", {CPU: 4000}))
    )
    labels = {"block": "b0", "rack": "b0-r0", HOST: "b0-r0-h0"}
    return [Node("b0-r0-h0", labels, {CPU: totals * 1000}, numa=zones)]


@pytest.mark.parametrize("reference", [False, True])
def test_a_leader_group_sees_the_zones_an_earlier_pod_set_took(reference: bool):
    """12 CPUs by totals: after a 4-CPU pod and a 4-CPU leader, totals still hold one 4-CPU
    worker, but the first pod took zone 0 and the leader zone 1: no zone is left for it."""
    snap = TopologySnapshot(LEVELS, one_numa_host(12), reference=reference)
    leader = guaranteed(1, "leader", cpu=4, required="rack", group_name="g")
    workers = guaranteed(1, "workers", cpu=4, required="rack", group_name="g")
    alone = snap.find_assignments([leader, workers])
    assert per_host(alone, "leader") == per_host(alone, "workers") == {"b0-r0-h0": 1}
    after = snap.find_assignments([guaranteed(1, "first", cpu=4), leader, workers])
    assert not after.admitted


@pytest.mark.parametrize("reference", [False, True])
def test_a_leader_does_not_go_where_earlier_pod_sets_took_every_zone(reference: bool):
    """16 CPUs by totals, but two 4-CPU pods of the first pod set fill both zones: a 4-CPU
    leader fits by totals only, and a second host with 2-CPU zones cannot take it either."""
    nodes = [*one_numa_host(16), numa_host("b0-r0-h1", "b0-r0", (2, 2))]
    snap = TopologySnapshot(LEVELS, nodes, reference=reference)
    leader = guaranteed(1, "leader", cpu=4, required="rack", group_name="g")
    workers = guaranteed(2, "workers", required="rack", group_name="g")
    alone = snap.find_assignments([leader, workers])
    assert per_host(alone, "leader") == {"b0-r0-h0": 1}
    first = guaranteed(2, "first", cpu=4, required=HOST)
    after = snap.find_assignments([first, leader, workers])
    assert not after.admitted


@pytest.mark.parametrize("reference", [False, True])
def test_a_zone_counted_leader_with_plain_workers_takes_a_zone_left_free(reference: bool):
    """Workers without a NUMA shape keep node totals; the leader needs only a free zone, and
    zone 1 is free after the first pod set's pod in zone 0."""
    snap = TopologySnapshot(LEVELS, one_numa_host(12), reference=reference)
    leader = guaranteed(1, "leader", cpu=4, required="rack", group_name="g")
    workers = pods(3, "workers", required="rack", group_name="g")
    placement = snap.find_assignments([guaranteed(1, "first", cpu=4), leader, workers])
    assert per_host(placement, "leader") == {"b0-r0-h0": 1}
    assert per_host(placement, "workers") == {"b0-r0-h0": 3}
