"""Edges of balanced placement's search (thresholds, ties, the leader's room, its failures) and of
the NUMA zone counts beside a leader, plus the leader's domain when no domain can absorb it."""

from __future__ import annotations

import pytest

from tas.solver import (
    Node,
    PodSetRequest,
    SliceLayer,
    TopologyRequest,
    TopologySnapshot,
    algorithm,
)
from tas.solver.balanced import (
    BalancedPlacementFailed,
    _Candidates,
    apply_balanced_placement,
    find_best_domains,
)
from tas.solver.tree import Domain, DomainTree
from tas.solver.types import (
    CONTAINER_SCOPE,
    HOSTNAME_LEVEL,
    NodeNuma,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    NumaShape,
    NumaZone,
)
from tests.unit.solver.test_balanced_rules import params

PREFIX = "TAS Balanced Placement: "
FIELDS = ("pod_count", "slice_count", "pod_count_with_leader", "slice_count_with_leader")


def set_counts(domain: Domain, state: tuple[int, int, int, int, int]) -> None:
    for name, value in zip((*FIELDS, "leader_count"), state, strict=True):
        setattr(domain, name, value)


def counts_of(domain: Domain) -> tuple[int, ...]:
    return tuple(getattr(domain, name) for name in (*FIELDS, "leader_count"))


def two_level_tree(leaves: dict[tuple[str, str], tuple[int, int, int, int, int]]) -> DomainTree:
    """Blocks over racks with (pods, slices, pods with leader, slices with leader, leaders)."""
    tree = DomainTree(2, sorted(leaves))
    for leaf in tree.leaves:
        set_counts(leaf, leaves[leaf.values])
    return tree


# -- find_best_domains ----------------------------------------------------------------------------


def test_threshold_is_capped_by_the_leader_domain_slices_with_leader(deep):
    """Kueue's threshold is min(slices / domains used, the last leader domain's slices with
    leader, the last worker domain's slices): 5 slices over b1/r1 (1 with the leader) and
    b2/r1 (4) give 1, not 5 // 2 = 2 (at 2 the leader's rack could no longer host it)."""
    tree = two_level_tree({("b1", "r1"): (4, 4, 1, 1, 1), ("b2", "r1"): (4, 4, 0, 0, 0)})
    domains, threshold = find_best_domains(tree, params(5))
    assert threshold == 1
    assert [d.values for d in domains] == [("b1",), ("b2",)]


def test_leader_domain_with_no_worker_room_gives_no_threshold(deep):
    """The greedy's leader rack holds the leader and no worker (0 slices with the leader), so
    the threshold is 0: balanced placement is not possible and the caller falls back."""
    tree = two_level_tree({("b1", "r1"): (1, 1, 0, 0, 1), ("b2", "r1"): (2, 2, 2, 2, 0)})
    assert find_best_domains(tree, params(2)) == ([], 0)


def test_fewer_pods_than_one_slice_gives_no_threshold(deep):
    """No whole slice to place: "not possible" (Kueue would divide by zero), not a crash."""
    tree = two_level_tree({("b1", "r1"): (4, 2, 4, 2, 0), ("b2", "r1"): (4, 2, 4, 2, 0)})
    assert find_best_domains(tree, params(1, leaders=0, slice_size=2)) == ([], 0)


def test_full_tie_between_groups_keeps_the_first_in_topology_order(deep):
    """Same threshold and same number of domains: the group seen first (by values) stays."""
    tree = two_level_tree({("b1", "r1"): (2, 2, 2, 2, 0), ("b2", "r1"): (2, 2, 2, 2, 0)})
    domains, threshold = find_best_domains(tree, params(2, requested=1, leaders=0))
    assert threshold == 2
    assert [d.values for d in domains] == [("b1", "r1")]


# -- pruning at the requested level ------------------------------------------------------------


def test_pruning_the_requested_level_itself_takes_only_the_leader_room(deep):
    """Requested level = slice level: the group's own domains are pruned. At threshold 3 the
    rack with 2 slices beside the leader keeps its 4 slices for workers but cannot host the
    leader any more; the other keeps both."""
    tree = two_level_tree({("b", "r1"): (4, 4, 2, 2, 1), ("b", "r2"): (4, 4, 3, 3, 1)})
    candidates = _Candidates(tree.levels[1], params(6, requested=1))
    candidates.prune_below(3, True)
    assert [counts_of(d) for d in candidates.domains] == [(4, 4, 0, 0, 0), (4, 4, 3, 3, 1)]


# -- apply_balanced_placement ---------------------------------------------------------------------


def test_no_domain_set_covering_the_request_is_a_balanced_failure():
    """The chosen blocks cannot hold the request: balanced placement gives up with Kueue's
    reason (the caller falls back to BestFit), it does not crash."""
    tree = two_level_tree({("b1", "r1"): (1, 1, 1, 1, 0), ("b2", "r1"): (1, 1, 1, 1, 0)})
    for block in tree.levels[0]:
        set_counts(block, (1, 1, 1, 1, 0))
    with pytest.raises(BalancedPlacementFailed) as failed:
        apply_balanced_placement(params(5, leaders=0), 1, tree.levels[0])
    assert str(failed.value) == PREFIX + "Cannot find optimal domain set to fit the request"


# -- NUMA zones beside a leader ---------------------------------------------------------------


RACK = "example.com/rack"
LEVELS = (RACK, HOSTNAME_LEVEL)


def numa_host(name: str, *zone_cpus: int) -> Node:
    zones = tuple(NumaZone(f"node-{i}", {"cpu": c * 1000}) for i, c in enumerate(zone_cpus))
    return Node(
        name=name,
        labels={RACK: "r1", HOSTNAME_LEVEL: name},
        allocatable={"cpu": 32_000, "memory": 64_000_000},
        numa=NodeNuma(scope=CONTAINER_SCOPE, zones=zones),
    )


def guaranteed_podset(name: str, count: int, cpu: int) -> PodSetRequest:
    return PodSetRequest(
        name=name,
        count=count,
        requests={"cpu": cpu * 1000, "memory": 1_000_000},
        topology=TopologyRequest(required=RACK, group_name="g"),
        numa=NumaShape(({"cpu": cpu * 1000, "memory": 1_000_000},)),
    )


@pytest.mark.parametrize("reference", [False, True])
def test_workers_beside_the_leader_count_whole_pods_per_zone(reference: bool) -> None:
    """Three zones of 3 CPUs; the leader (1 CPU) takes zone 0, leaving 2 + 3 + 3: each zone holds
    one 2-CPU worker on its own (a pod never spans zones), so 3 workers fit and 4 do not,
    although the leftover halves add up to 8 CPUs."""
    snapshot = TopologySnapshot(LEVELS, [numa_host("h0", 3, 3, 3)], reference=reference)
    leader = guaranteed_podset("leader", 1, 1)
    fits = snapshot.find_assignments([leader, guaranteed_podset("workers", 3, 2)])
    assert fits.admitted, fits.failure
    assert not snapshot.find_assignments([leader, guaranteed_podset("workers", 4, 2)]).admitted


# -- the leader's domain when no domain can absorb its penalty ------------------------------------


def plain_host(name: str, rack: str, cpu: int, gpu: int) -> Node:
    return Node(
        name=name,
        labels={RACK: rack, HOSTNAME_LEVEL: name},
        allocatable={"cpu": cpu * 1000, "example.com/gpu": gpu * 1000},
    )


def test_leader_that_no_domain_can_absorb_fails_as_the_plain_path():
    """Rack r1 (6 CPUs, the only GPU) hosts the leader but then holds 2 workers, r2 holds 4:
    6 of 9 workers. The array path reports what the plain (Kueue-port) path reports."""
    nodes = [plain_host("a", "r1", 6, 1), plain_host("b", "r2", 4, 0)]
    podsets = [
        PodSetRequest(
            "leader",
            1,
            {"cpu": 4000, "example.com/gpu": 1000},
            TopologyRequest(preferred=RACK, group_name="g"),
        ),
        PodSetRequest("workers", 9, {"cpu": 1000}, TopologyRequest(preferred=RACK, group_name="g")),
    ]
    fast = TopologySnapshot(LEVELS, nodes).find_assignments(podsets)
    plain = TopologySnapshot(LEVELS, nodes, reference=True).find_assignments(podsets)
    assert not plain.admitted
    assert fast.failure == plain.failure


# -- BestFit's tightest domain, on both paths ------------------------------------------------------


def test_best_fit_domain_falls_back_to_the_first_when_none_fits():
    """find_best_fit_domain's contract: domains[0] when no domain holds what is needed."""
    first, second = Domain(("a",), 0), Domain(("b",), 0)
    set_counts(first, (2, 2, 2, 2, 0))
    set_counts(second, (3, 3, 3, 3, 0))
    assert algorithm.find_best_fit_domain([first, second], 5, 0, True) is first
    assert algorithm.find_best_fit_domain([first, second], 5, 0, False) is first
    # and the tightest one that holds it otherwise
    assert algorithm.find_best_fit_domain([second, first], 2, 0, True) is first


def cpu_host(name: str, rack: str, cpu: int) -> Node:
    return Node(name, {RACK: rack, HOSTNAME_LEVEL: name}, {"cpu": cpu * 1000})


def cpu_pods(count: int, **topology) -> PodSetRequest:
    return PodSetRequest("main", count, {"cpu": 1000}, TopologyRequest(**topology))


def placed_on_both_paths(nodes: list[Node], podsets: list[PodSetRequest]) -> dict[str, int]:
    """Hostname -> pods, the same on the array path and on the plain (Kueue-port) path."""
    out = []
    for reference in (False, True):
        result = TopologySnapshot(LEVELS, nodes, reference=reference).find_assignments(podsets)
        assert result.failure is None
        counts: dict[str, int] = {}
        for podset in result.podsets:
            for d in podset.assignment.domains:
                counts[d.values[-1]] = counts.get(d.values[-1], 0) + d.count
        out.append(counts)
    assert out[0] == out[1]
    return out[0]


def test_best_fit_takes_the_tightest_host_in_the_rack():
    """Hosts of 5 and 3 CPUs: 3 pods go to the host they fill, not the larger one."""
    nodes = [cpu_host("a", "r1", 5), cpu_host("b", "r1", 3)]
    assert placed_on_both_paths(nodes, [cpu_pods(3, required=RACK)]) == {"b": 3}


def test_best_fit_spread_over_racks_ends_on_the_tightest_rack():
    """No rack holds 7: the largest (5) is taken whole, then the tightest that covers the other
    2 (r3, not r2)."""
    nodes = [cpu_host("a", "r1", 5), cpu_host("b", "r2", 4), cpu_host("c", "r3", 2)]
    assert placed_on_both_paths(nodes, [cpu_pods(7, preferred=RACK)]) == {"a": 5, "c": 2}


def group(count: int, **topology) -> list[PodSetRequest]:
    return [
        PodSetRequest("leader", 1, {"cpu": 1000}, TopologyRequest(group_name="g", **topology)),
        PodSetRequest("workers", count, {"cpu": 1000}, TopologyRequest(group_name="g", **topology)),
    ]


def test_least_free_leader_group_takes_the_fullest_host_that_holds_it():
    """Unconstrained (LeastFreeCapacity): leader + 2 workers go to the host with the least room
    that still holds all three (3 CPUs), not to a roomier one."""
    nodes = [cpu_host("a", "r1", 8), cpu_host("b", "r1", 3), cpu_host("c", "r1", 5)]
    assert placed_on_both_paths(nodes, group(2, unconstrained=True)) == {"b": 3}


def test_leader_group_spread_over_racks_on_both_paths():
    nodes = [cpu_host("a", "r1", 5), cpu_host("b", "r2", 4), cpu_host("c", "r3", 2)]
    assert placed_on_both_paths(nodes, group(6, preferred=RACK)) == {"a": 5, "c": 2}


def test_best_fit_below_the_slice_level_takes_the_tightest_host():
    """One slice of 3 per rack: below the slice level the rack's 3 pods still go to the host
    they fill (3 CPUs), not the larger one (5)."""
    nodes = [cpu_host("a", "r1", 5), cpu_host("b", "r1", 3)]
    request = cpu_pods(3, required=RACK, slice_layers=(SliceLayer(RACK, 3),))
    assert placed_on_both_paths(nodes, [request]) == {"b": 3}


def test_missing_resource_is_the_limiting_one_even_for_one_unit():
    """A host without the requested extended resource (one unit per pod) is excluded for it,
    not for the CPU that holds exactly one pod (Kueue: the resource giving the fewest pods)."""
    nodes = [cpu_host("a", "r1", 1)]
    podset = PodSetRequest(
        "main", 1, {"cpu": 1000, "example.com/gpu": 1}, TopologyRequest(required=RACK)
    )
    for reference in (False, True):
        result = TopologySnapshot(LEVELS, nodes, reference=reference).find_assignments([podset])
        assert result.failure == (
            'topology "example.com/rack" doesn\'t allow to fit any of 1 pod(s). Total nodes: 1; '
            'excluded: resource "example.com/gpu": 1'
        )


def test_leader_goes_where_its_penalty_costs_no_whole_slice():
    """Slices of 2 per host: on x (6 CPUs) the leader would cost a whole slice (5 pods left,
    2 slices), on y (3 CPUs) it costs none (2 pods left, still 1 slice). Only the leader on y
    leaves the 4 slices needed: counting the penalty in pods would put it on x and fail."""
    nodes = [cpu_host("x", "r1", 6), cpu_host("y", "r2", 3)]
    podsets = [
        PodSetRequest("leader", 1, {"cpu": 1000}, TopologyRequest(preferred=RACK, group_name="g")),
        PodSetRequest(
            "workers",
            8,
            {"cpu": 1000},
            TopologyRequest(
                preferred=RACK, group_name="g", slice_layers=(SliceLayer(HOSTNAME_LEVEL, 2),)
            ),
        ),
    ]
    for reference in (False, True):
        result = TopologySnapshot(LEVELS, nodes, reference=reference).find_assignments(podsets)
        assert result.failure is None
        leader, workers = result.podsets
        assert [(d.values[-1], d.count) for d in leader.assignment.domains] == [("y", 1)]
        assert [(d.values[-1], d.count) for d in workers.assignment.domains] == [
            ("x", 6),
            ("y", 2),
        ]


def test_below_the_slice_level_best_fit_puts_the_leader_where_it_fills_the_host():
    """One slice of 2 per rack: the leader (3 GB) and 2 workers go to b, whose memory they fill
    (2 workers beside the leader), not to a, which lists first (fewer pods) but keeps room."""
    nodes = [
        Node("a", {RACK: "r1", HOSTNAME_LEVEL: "a"}, {"cpu": 4000, "memory": 10}),
        Node("b", {RACK: "r1", HOSTNAME_LEVEL: "b"}, {"cpu": 5000, "memory": 5}),
    ]
    topology = TopologyRequest(required=RACK, group_name="g", slice_layers=(SliceLayer(RACK, 2),))
    podsets = [
        PodSetRequest("leader", 1, {"memory": 3}, TopologyRequest(required=RACK, group_name="g")),
        PodSetRequest("workers", 2, {"cpu": 1000, "memory": 1}, topology),
    ]
    for reference in (False, True):
        result = TopologySnapshot(LEVELS, nodes, reference=reference).find_assignments(podsets)
        assert result.failure is None
        assert [
            [(d.values[-1], d.count) for d in podset.assignment.domains]
            for podset in result.podsets
        ] == [[("b", 1)], [("b", 2)]]


def test_failure_counts_the_nodes_required_affinity_excludes():
    """Kueue's reason lists the nodes that required node affinity left out."""
    nodes = [
        Node(h, {RACK: "r1", HOSTNAME_LEVEL: h, "zone": z}, {"cpu": 4000})
        for h, z in (("a", "z1"), ("b", "z2"))
    ]
    only_z1 = NodeSelectorTerm((NodeSelectorRequirement("zone", "In", ("z1",)),))
    podset = PodSetRequest(
        "main", 5, {"cpu": 1000}, TopologyRequest(required=RACK), required_affinity=(only_z1,)
    )
    for reference in (False, True):
        result = TopologySnapshot(LEVELS, nodes, reference=reference).find_assignments([podset])
        assert result.failure == (
            'topology "example.com/rack" allows to fit only 4 out of 5 pod(s). Total nodes: 2; '
            "excluded: affinity: 1"
        )
