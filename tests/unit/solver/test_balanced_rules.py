"""Rules of Kueue's TASBalancedPlacement (tas_balanced_placement.go) that the ported cases leave
open: the retry at a threshold that reserves room for the leader, pruning, the search over
sibling groups, the knapsack's edge cases, the hand-out of spare slices and its failures."""

from __future__ import annotations

import pytest

from tas.solver import (
    Node,
    PodSetRequest,
    SliceLayer,
    SolverOptions,
    TopologyRequest,
    TopologySnapshot,
)
from tas.solver.algorithm import PlacementParams
from tas.solver.balanced import (
    BalancedPlacementFailed,
    _Candidates,
    _capacity_and_entropy_key,
    _children_entropy,
    evaluate_greedy,
    find_best_domains,
    place_slices_balanced,
    select_optimal_domain_set,
)
from tas.solver.tree import Domain, DomainTree
from tests.unit.solver.solver_test_helpers import BLOCK, HOST, RACK, THREE_LEVELS

PREFIX = "TAS Balanced Placement: "

# ---------------------------------------------------------------------------------------------
# Through the public API


def hosts(*specs: tuple[tuple[str, ...], int, int], levels=THREE_LEVELS) -> list[Node]:
    """(level values, cpus, gpus) per node; the last value is the hostname."""
    return [
        Node(path[-1], dict(zip(levels, path, strict=True)), {"cpu": cpu * 1000, "gpu": gpu * 1000})
        for path, cpu, gpu in specs
    ]


def workers(level: str, count: int, layers: tuple[SliceLayer, ...] = ()) -> PodSetRequest:
    return PodSetRequest(
        "workers",
        count,
        {"cpu": 1000, "gpu": 1000},
        TopologyRequest(preferred=level, slice_layers=layers, group_name="g"),
    )


def leader(level: str, requests: dict[str, int]) -> PodSetRequest:
    return PodSetRequest("leader", 1, requests, TopologyRequest(preferred=level, group_name="g"))


def place(nodes, podsets, *, balanced_placement=True, levels=THREE_LEVELS):
    """Pod set name -> {hostname: count}."""
    options = SolverOptions(balanced_placement=balanced_placement)
    result = TopologySnapshot(levels, nodes, options=options).find_assignments(podsets)
    assert result.failure is None
    placed = {}
    for podset in result.podsets:
        counts = {d.values[-1]: d.count for d in podset.assignment.domains}
        # int32 fields of the Workload's topologyAssignment: never a float like 8.0
        assert all(type(count) is int for count in counts.values()), counts
        placed[podset.name] = counts
    return placed


def test_equal_thresholds_prefer_the_group_needing_fewer_domains():
    """Racks r1, r2 (block b0) and one rack r3 (block b1) all allow 5 per host; b1 needs one
    rack instead of two, so it wins although b0 comes first."""
    nodes = hosts(
        (("b0", "r1", "x1"), 5, 5),
        (("b0", "r2", "x2"), 5, 5),
        (("b1", "r3", "x3"), 5, 5),
        (("b1", "r3", "x4"), 5, 5),
    )
    assert place(nodes, [workers(RACK, 10)]) == {"workers": {"x3": 5, "x4": 5}}


def test_spare_slices_go_to_domains_only_up_to_their_capacity():
    """32 over three hosts of 11: threshold 10, the two spare slices go one per host."""
    nodes = hosts(*((("b", "r", f"x{i}"), 11, 11) for i in (1, 2, 3)))
    assert place(nodes, [workers(RACK, 32)]) == {"workers": {"x1": 11, "x2": 11, "x3": 10}}


def test_optimal_set_short_of_whole_slices_falls_back_to_best_fit():
    """Slices of 2: the knapsack counts pods, so b+c (3+3 pods) covers 6 pods with only two
    slices; placing that set fails and BestFit places instead."""
    nodes = hosts((("b", "r", "a"), 5, 5), (("b", "r", "b"), 3, 3), (("b", "r", "c"), 3, 3))
    request = [workers(HOST, 6, (SliceLayer(HOST, 2),))]
    want = {"workers": {"a": 4, "b": 2}}
    assert place(nodes, request) == want
    assert place(nodes, request, balanced_placement=False) == want


def test_group_failing_after_pruning_does_not_end_the_search():
    """Block b0's racks hold Kueue's "rejects after fallback" case one level down (no threshold
    survives pruning); the search goes on to block b1, balanced there (8 + 4, not BestFit's
    10 + 2)."""
    nodes = hosts(
        (("b0", "k1", "y1"), 2, 10),
        (("b0", "k2", "y2"), 3, 3),
        (("b0", "k2", "y3"), 4, 4),
        (("b0", "k3", "y4"), 4, 10),
        (("b1", "m", "z1"), 12, 12),
        (("b1", "m", "z2"), 4, 10),
    )
    podsets = [leader(RACK, {"cpu": 1000, "gpu": 2000}), workers(RACK, 12)]
    assert place(nodes, podsets) == {"leader": {"z1": 1}, "workers": {"z1": 8, "z2": 4}}
    assert place(nodes, podsets, balanced_placement=False)["workers"] == {"z1": 10, "z2": 2}


def test_inner_slice_layers_prune_copies_as_kueue():
    """With an inner slice layer Kueue's pruning recomputes the whole copied subtree, inner
    rounding included; pruning in place would settle for BestFit's block b0 here."""
    nodes = hosts(
        (("b0", "r0", "b0h0"), 12, 11),
        (("b0", "r0", "b0h1"), 4, 4),
        (("b2", "r0", "b2h0"), 4, 4),
        (("b2", "r0", "b2h1"), 11, 10),
    )
    podsets = [
        leader(BLOCK, {"cpu": 1000}),
        workers(BLOCK, 12, (SliceLayer(RACK, 2), SliceLayer(HOST, 2))),
    ]
    assert place(nodes, podsets) == {"leader": {"b2h0": 1}, "workers": {"b2h0": 2, "b2h1": 10}}


# ---------------------------------------------------------------------------------------------
# find_best_domains and pruning on hand-built trees (Kueue's TestFindBestDomainsForBalanced-
# Placement and TestPruneDomainsBelowThreshold)

COUNTS = ("pod_count", "slice_count", "pod_count_with_leader", "slice_count_with_leader")


def set_counts(domain: Domain, state: tuple[int, int, int, int, int]) -> None:
    for name, value in zip((*COUNTS, "leader_count"), state, strict=True):
        setattr(domain, name, value)


def counts_of(domain: Domain) -> tuple[int, ...]:
    return tuple(getattr(domain, name) for name in (*COUNTS, "leader_count"))


def two_level_tree(leaves: dict[tuple[str, str], tuple[int, int, int, int, int]]) -> DomainTree:
    """Blocks with empty counts over racks with the given (pods, slices, pods with leader,
    slices with leader, leaders)."""
    tree = DomainTree(2, sorted(leaves))
    for leaf in tree.leaves:
        set_counts(leaf, leaves[leaf.values])
    return tree


def params(
    count: int, *, levels: int = 2, requested: int = 0, leaders: int = 1, slice_size: int = 1
):
    return PlacementParams(
        count=count,
        slice_size=slice_size,
        requested_level=requested,
        slice_level=levels - 1,
        required=False,
        unconstrained=False,
        least_free_capacity=False,
        topology_name="",
        level_keys=tuple(f"l{i}" for i in range(levels)),
        leader_count=leaders,
    )


def test_retry_with_leader_reservation_finds_a_lower_threshold(deep):
    """Greedy on racks gives threshold 2, but pruning at 2 takes b2/r1's leader room and the
    blocks no longer fit; reserving room for the leader (threshold 1) they do."""
    tree = two_level_tree(
        {
            ("b1", "r1"): (3, 3, 2, 2, 1),
            ("b2", "r1"): (2, 2, 1, 1, 1),
            ("b2", "r2"): (4, 4, 2, 2, 1),
        }
    )
    domains, threshold = find_best_domains(tree, params(8))
    assert threshold == 1
    assert [d.values for d in domains] == [("b1",), ("b2",)]
    # the group as retried: pruned at 1 from its original counts, nothing pruned
    assert counts_of(domains[1]) == (6, 6, 5, 5, 1)
    assert [counts_of(c) for c in domains[1].children] == [(2, 2, 1, 1, 1), (4, 4, 2, 2, 1)]


def test_no_threshold_when_the_retry_does_not_fit_either(deep):
    tree = two_level_tree(
        {
            ("b1", "r1"): (2, 2, 1, 1, 1),
            ("b2", "r1"): (3, 3, 1, 1, 1),
            ("b2", "r2"): (4, 4, 2, 2, 1),
            ("b3", "r1"): (4, 4, 3, 3, 1),
        }
    )
    assert find_best_domains(tree, params(12)) == ([], 0)


def pruning_parent() -> Domain:
    """Kueue's "keeps worker only domain": one block, two racks of one host each."""
    tree = DomainTree(3, [("p", "leader", "l"), ("p", "worker", "w")])
    parent, (leader_rack, worker_rack) = tree.levels[0][0], tree.levels[1]
    set_counts(leader_rack, (6, 6, 5, 5, 1))
    set_counts(leader_rack.children[0], (6, 6, 5, 5, 1))
    set_counts(worker_rack, (5, 5, 4, 4, 1))
    set_counts(worker_rack.children[0], (5, 5, 4, 4, 1))
    return parent


def test_pruning_keeps_a_domain_for_workers_but_not_for_the_leader(deep):
    """At threshold 5 the worker rack (5 slices, 4 with the leader) stays usable for workers
    but can no longer host the leader: its with-leader counts and leader count drop to 0."""
    candidates = _Candidates([pruning_parent()], params(10, levels=3))
    candidates.prune_below(5, True)
    parent = candidates.domains[0]
    leader_rack, worker_rack = parent.children
    assert counts_of(leader_rack) == (6, 6, 5, 5, 1)
    assert counts_of(worker_rack) == (5, 5, 0, 0, 0)
    assert counts_of(parent) == (11, 11, 10, 10, 1)
    if deep:  # Kueue clears the whole copied subtree; in place the host is never read again
        assert counts_of(worker_rack.children[0]) == (5, 5, 0, 0, 0)


def test_fresh_restores_the_group_as_before_pruning(deep):
    candidates = _Candidates([pruning_parent()], params(10, levels=3))
    candidates.prune_below(6, True)
    assert counts_of(candidates.domains[0].children[1]) == (0, 0, 0, 0, 0)
    restored = candidates.fresh()
    assert [counts_of(d) for d in restored.domains[0].children] == [
        (6, 6, 5, 5, 1),
        (5, 5, 4, 4, 1),
    ]
    restored.prune_below(5, True)
    assert counts_of(restored.domains[0]) == (11, 11, 10, 10, 1)


# ---------------------------------------------------------------------------------------------
# Building blocks


def domain(
    name: str,
    pods: int,
    *,
    slice_size: int = 1,
    leaders: int = 0,
    pods_with_leader: int | None = None,
    order: int = 0,
) -> Domain:
    d = Domain((name,), 0)
    d.order = order
    d.pod_count = pods
    d.slice_count = pods // slice_size
    d.leader_count = leaders
    d.pod_count_with_leader = pods if pods_with_leader is None else pods_with_leader
    d.slice_count_with_leader = d.pod_count_with_leader // slice_size
    return d


def ranked(*domains: Domain) -> list[Domain]:
    for rank, d in enumerate(domains):
        d.order = rank
    return list(domains)


def names(domains) -> list[str]:
    return [d.values[0] for d in domains]


def test_entropy_ties_only_on_equal_distributions():
    """Children 2+2 (entropy 1) rank before 3+1 (entropy 0.81) whatever the level values;
    entropy is only rounded far below any real difference."""
    balanced_children = domain("z", 0, leaders=1, pods_with_leader=5)
    skewed_children = domain("a", 0, leaders=1, pods_with_leader=5)
    for parent, pods in ((balanced_children, (2, 2)), (skewed_children, (3, 1))):
        for count in pods:
            child = Domain((*parent.values, str(count)), 1)
            child.pod_count = count
            parent.children.append(child)
    assert _children_entropy(balanced_children) == 1.0
    assert 0.81 < _children_entropy(skewed_children) < 0.82
    ordered = sorted([skewed_children, balanced_children], key=_capacity_and_entropy_key)
    assert names(ordered) == ["z", "a"]


def test_greedy_counts_the_leader_domain_then_the_largest_workers():
    domains = ranked(
        domain("lead", 5, leaders=1, pods_with_leader=4), domain("a", 3), domain("b", 2)
    )
    fits, used, last_with_leader, last = evaluate_greedy(domains, 7, 1)
    assert (fits, used, names([last_with_leader, last])) == (True, 2, ["lead", "a"])


def test_greedy_counts_every_leader_domain():
    domains = ranked(
        domain("l1", 3, leaders=1, pods_with_leader=2),
        domain("l2", 3, leaders=1, pods_with_leader=2),
        domain("w", 3),
    )
    fits, used, last_with_leader, last = evaluate_greedy(domains, 7, 2)
    assert (fits, used, last_with_leader.values, last.values) == (True, 3, ("l2",), ("w",))


@pytest.mark.parametrize(
    ("domains", "slices", "leaders"),
    [
        pytest.param(lambda: [], 1, 1, id="no domains"),
        pytest.param(lambda: [domain("w", 9)], 2, 1, id="no domain can host the leader"),
        pytest.param(lambda: [domain("a", 2), domain("b", 2)], 5, 0, id="too few slices"),
    ],
)
def test_greedy_that_does_not_fit_reports_nothing(domains, slices, leaders):
    assert evaluate_greedy(domains(), slices, leaders) == (False, 0, None, None)


def test_knapsack_never_picks_a_domain_without_slices():
    """Slices of 2: the empty d1 would close the pod count (0 + 3 + 5 = 8) with one slice short;
    Kueue only counts domains holding a slice."""
    domains = ranked(*(domain(f"d{i}", p, slice_size=2) for i, p in enumerate((2, 0, 3, 5))))
    assert names(select_optimal_domain_set(domains, 4, 0, 2, False)) == ["d0", "d2", "d3"]


def test_knapsack_does_not_grow_a_set_that_already_covers_the_pods():
    """Greedy needs 3 domains for 5 slices of 2, but d0 + d1 already hold the 10 pods; Kueue
    never extends such a set, so no 3-domain set is found (balanced placement then gives up)."""
    domains = ranked(*(domain(f"d{i}", p, slice_size=2) for i, p in enumerate((5, 5, 2))))
    assert select_optimal_domain_set(domains, 5, 0, 2, False) is None


def test_place_balanced_gives_the_leader_one_slot_on_its_domain():
    domains = ranked(domain("lead", 6, leaders=1, pods_with_leader=5), domain("w", 6))
    placed = place_slices_balanced(domains, 9, 1, 1, 4)
    assert names(placed) == ["lead", "w"]
    assert [counts_of(d) for d in placed] == [(5, 5, 4, 5, 1), (4, 4, 4, 4, 0)]


@pytest.mark.parametrize(
    ("domains", "slices", "leaders", "slice_size", "threshold", "reason"),
    [
        pytest.param(
            lambda: [domain("a", 2)],
            3,
            0,
            1,
            1,
            "Cannot find optimal domain set to fit the request",
            id="no set fits",
        ),
        pytest.param(
            lambda: [domain("a", 5), domain("b", 5)],
            7,
            0,
            1,
            4,
            "Not enough slices to meet the threshold",
            id="threshold too high",
        ),
        pytest.param(
            lambda: [domain(n, p, slice_size=2) for n, p in (("a", 5), ("b", 3), ("c", 3))],
            3,
            0,
            2,
            1,
            "Not all slices or leaders could be placed",
            id="set covers the pods but not the slices",
        ),
        pytest.param(
            lambda: [domain("a", 4, leaders=2, pods_with_leader=3)],
            2,
            2,
            1,
            1,
            "Not all slices or leaders could be placed",
            id="one leader per domain",
        ),
    ],
)
def test_place_balanced_failure_reasons(domains, slices, leaders, slice_size, threshold, reason):
    """Fresh domains per run: placement changes their counts even on its way to failing, and
    mutmut forks every mutant's run from a process that already ran the tests once."""
    with pytest.raises(BalancedPlacementFailed) as failure:
        place_slices_balanced(ranked(*domains()), slices, leaders, slice_size, threshold)
    assert str(failure.value) == PREFIX + reason
