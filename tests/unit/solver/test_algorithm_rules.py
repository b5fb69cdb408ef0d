"""Rules of Kueue's findTopologyAssignment (solver/algorithm.py, and its numpy twin
solver/vectorized.py) that the ported cases leave unpinned, one rule per test.

They follow kubernetes-sigs/kueue pkg/cache/scheduler/tas_flavor_snapshot.go at ff69552e.
Tests through TopologySnapshot run on both paths (vectorized and plain reference); a few pin a
phase-1/phase-2 primitive directly where the snapshot cannot show it.
"""

from __future__ import annotations

import pytest

from tas.solver import (
    FlavorSpec,
    Node,
    PodSetRequest,
    SliceLayer,
    SolverOptions,
    TopologyRequest,
    TopologySnapshot,
)
from tas.solver.algorithm import roll_up, sorted_domains_with_leader, update_counts_to_minimum
from tas.solver.tree import Domain, DomainTree
from tests.unit.solver.solver_test_helpers import HOST

BLOCK, RACK = "example.com/block", "example.com/rack"
BOTH_PATHS = pytest.mark.parametrize("reference", [False, True], ids=["vectorized", "plain"])


def host(name: str, cpu: int, *, gpu: int = 0, memory: int = 0, **levels: str) -> Node:
    """A node with whole cpus (and gpus, memory); `levels` maps block/rack to values."""
    keys = {"block": BLOCK, "rack": RACK}
    labels = {keys[key]: value for key, value in levels.items()} | {HOST: name}
    allocatable = {"cpu": cpu * 1000, "pods": 110_000}
    allocatable |= {"example.com/gpu": gpu * 1000} if gpu else {}
    allocatable |= {"memory": memory * 1000} if memory else {}
    return Node(name, labels, allocatable)


def place(levels, nodes, podsets, reference, options=SolverOptions()):  # noqa: B008 - frozen
    """{pod set: [(host, count)]}, or the failure message."""
    snapshot = TopologySnapshot(
        levels, nodes, FlavorSpec(topology_name="default"), options, reference=reference
    )
    result = snapshot.find_assignments(podsets)
    if result.failure is not None:
        return result.failure
    # Kueue's counts are int32: a float (even a whole one) would not serialize as Kueue's
    assert all(type(d.count) is int for p in result.podsets for d in p.assignment.domains)
    return {p.name: [(d.values[-1], d.count) for d in p.assignment.domains] for p in result.podsets}


def group(workers: int, worker_requests: dict, leader_requests: dict, **topology):
    """A leader pod and `workers` worker pods sharing one topology request (a LWS group)."""
    leader = PodSetRequest(
        "leader", 1, leader_requests, TopologyRequest(group_name="g", **topology)
    )
    return [
        leader,
        PodSetRequest(
            "workers", workers, worker_requests, TopologyRequest(group_name="g", **topology)
        ),
    ]


def cpus(n: int) -> dict[str, int]:
    return {"cpu": n * 1000}


# -- phase 1: roll_up -----------------------------------------------------------------------------


def test_a_domain_without_leader_capable_children_has_no_capacity_with_leader():
    """fillInCountsHelper: without a child able to host the leader (no contributor), the
    domain's podCountWithLeader and sliceCountWithLeader are 0, not its plain counts."""
    tree = DomainTree(2, [("r1", "h1"), ("r1", "h2")])
    for leaf in tree.leaves:
        leaf.pod_count = leaf.pod_count_with_leader = 3
        leaf.leader_count = 0
    rack = tree.roots[0]
    roll_up(rack, 0, 1, 0, None, True)
    assert (rack.pod_count, rack.slice_count) == (6, 6)
    assert (rack.pod_count_with_leader, rack.slice_count_with_leader, rack.leader_count) == (
        0,
        0,
        0,
    )


@BOTH_PATHS
def test_inner_slice_layers_count_only_whole_inner_slices_below_an_upper_level(reference):
    """fillInCountsHelper rounds each child's pods down to whole inner slices: three hosts of 3
    pods hold three slices of 2, so rack r2 holds 6 pods (one slice of 4), not 9 (two). The
    rounding applies under a block level too (the block itself has no inner layer). The
    message counts, for the rack with the most slices, its own pods per outer slice and its
    hosts' pods per inner slice (countSlicesInSubtree), in that rack's subtree only."""
    levels = (BLOCK, RACK, HOST)
    nodes = [
        host("h1", 1, block="b1", rack="r1"),
        host("h2", 3, block="b1", rack="r2"),
        host("h3", 3, block="b1", rack="r2"),
        host("h4", 3, block="b1", rack="r2"),
        host("h5", 2, block="b2", rack="r3"),
    ]
    layers = (SliceLayer(RACK, 4), SliceLayer(HOST, 2))
    request = [PodSetRequest("w", 8, cpus(1), TopologyRequest(required=RACK, slice_layers=layers))]
    assert place(levels, nodes, request, reference) == (
        'topology "default" doesn\'t allow to fit; 1/2 slice(s) fit on level example.com/rack; '
        "3/4 slice(s) fit on level kubernetes.io/hostname"
    )


@BOTH_PATHS
def test_with_a_leader_inner_slice_layers_round_the_with_leader_pods_too(reference):
    """With a leader and an inner layer, a child's podCountWithLeader is rounded down to whole
    inner slices as well: each host holds 6 pods, or 5 with the leader, that is 4 in slices of
    2. The rack's penalty is 2, so it still holds 10 pods (two slices of 4) with the leader."""
    nodes = [host("h1", 6, rack="r1"), host("h2", 6, rack="r1")]
    layers = (SliceLayer(RACK, 4), SliceLayer(HOST, 2))
    podsets = group(8, cpus(1), cpus(1), required=RACK, slice_layers=layers)
    assert place((RACK, HOST), nodes, podsets, reference) == {
        "leader": [("h1", 1)],
        "workers": [("h1", 4), ("h2", 4)],
    }


@BOTH_PATHS
def test_with_a_leader_the_rounded_pods_with_leader_break_a_tie_between_racks(reference):
    """The rounded podCountWithLeader is also the sort key after the slices: r1 (host a: 6 pods,
    5 with the leader, i.e. 4 in slices of 2) and r2 (host b: 4 pods, 4 with the leader) tie on
    one slice and on 4 pods with the leader, so the first by name, r1, takes the group."""
    nodes = [host("a", 6, rack="r1"), host("b", 5, rack="r2")]
    layers = (SliceLayer(RACK, 4), SliceLayer(HOST, 2))
    podsets = group(4, cpus(1), cpus(1), required=RACK, slice_layers=layers)
    assert place((RACK, HOST), nodes, podsets, reference) == {
        "leader": [("a", 1)],
        "workers": [("a", 4)],
    }


@BOTH_PATHS
def test_a_rack_hands_its_slices_down_to_its_only_host_as_whole_pods(reference):
    nodes = [host("h1", 4, rack="r1"), host("h2", 1, rack="r2"), host("h3", 1, rack="r2")]
    request = PodSetRequest(
        "w", 4, cpus(1), TopologyRequest(required=RACK, slice_layers=(SliceLayer(RACK, 2),))
    )
    assert place((RACK, HOST), nodes, [request], reference) == {"w": [("h1", 4)]}


# -- ordering and best fit ------------------------------------------------------------------------


def test_least_free_capacity_with_a_leader_still_puts_leader_capable_domains_first():
    """sortedDomainsWithLeader: leaderCount descending comes before the capacity order in both
    profiles; LeastFreeCapacity only reverses the slice order after it."""
    able, unable = Domain(("a",), 0), Domain(("b",), 0)
    able.order, unable.order = 0, 1
    able.leader_count, unable.leader_count = 1, 0
    able.slice_count_with_leader = able.pod_count_with_leader = 9
    unable.slice_count_with_leader = unable.pod_count_with_leader = 1
    assert sorted_domains_with_leader([unable, able], True) == [able, unable]
    assert sorted_domains_with_leader([unable, able], False) == [able, unable]


@BOTH_PATHS
def test_least_free_capacity_with_a_leader_takes_the_first_domain_that_holds_it_with_the_leader(
    reference,
):
    """findLevelWithFitDomains, LeastFreeCapacity: with a leader, a candidate must host it and
    is measured by its capacity with the leader. x1 (2 pods, 0 with the leader) and x2 (3, 1)
    hold two workers only without it; x3 (4, 2) is the first that holds leader and workers."""
    nodes = [host("x1", 2), host("x2", 3), host("x3", 4)]
    podsets = group(2, cpus(1), cpus(2), unconstrained=True)
    assert place((HOST,), nodes, podsets, reference) == {
        "leader": [("x3", 1)],
        "workers": [("x3", 2)],
    }


@BOTH_PATHS
def test_least_free_capacity_places_the_leader_in_order_without_best_fit(reference):
    """consumeWithLeadersGeneric optimizes the leader's domain only under BestFit. Slice-only
    requests are LeastFreeCapacity: the hosts come fewest pods first (x: 4 gpu-bound, y: 5),
    x holds the leader and all 3 workers (4 with the leader), so x takes them, though y (3 with
    the leader) would be the tighter fit."""
    nodes = [host("x", 10, gpu=4, rack="r1"), host("y", 5, gpu=10, rack="r1")]
    worker = {"cpu": 1000, "example.com/gpu": 1000}
    podsets = group(3, worker, cpus(2), slice_layers=(SliceLayer(HOST, 1),))
    assert place((RACK, HOST), nodes, podsets, reference) == {
        "leader": [("x", 1)],
        "workers": [("x", 3)],
    }
    best_fit = place((RACK, HOST), nodes, podsets, reference, SolverOptions(profile_mixed=False))
    assert best_fit == {"leader": [("y", 1)], "workers": [("y", 3)]}


@BOTH_PATHS
def test_best_fit_for_the_leaders_domain_compares_slices_not_pods(reference):
    """findBestFitDomainForSlices in consumeWithLeadersGeneric: of the hosts holding both
    slices of 2 with the leader (a: 3 slices, b: 2), b is the tightest. c (3 pods, one slice)
    would be the tightest by pods but holds only one slice."""
    nodes = [
        host("a", 6, memory=1, rack="r1"),
        host("b", 5, memory=1, rack="r1"),
        host("c", 3, memory=1, rack="r1"),
    ]
    podsets = group(
        4, cpus(1), {"memory": 1000}, required=RACK, slice_layers=(SliceLayer(HOST, 2),)
    )
    assert place((RACK, HOST), nodes, podsets, reference) == {
        "leader": [("b", 1)],
        "workers": [("b", 4)],
    }


@BOTH_PATHS
def test_workers_after_the_leader_best_fit_on_pods_without_the_leader(reference):
    """Below the slice level pods are split per domain. Once the leader is placed (on a, with
    1 worker), the 3 workers left go to the tightest host by its plain pod count (b: 4, c: 5),
    not by its count with a leader (b: 2, c: 3): findBestFitDomain with leaderCount 0."""
    nodes = [host("a", 3, rack="r1"), host("b", 4, rack="r1"), host("c", 5, rack="r1")]
    podsets = group(4, cpus(1), cpus(2), required=RACK, slice_layers=(SliceLayer(RACK, 4),))
    assert place((RACK, HOST), nodes, podsets, reference) == {
        "leader": [("a", 1)],
        "workers": [("a", 1), ("b", 3)],
    }


# -- phase 2b: update_counts_to_minimum --------------------------------------------------------


def test_counts_to_minimum_yield_no_domains_when_none_can_host_the_leader():
    """updateCountsToMinimumGeneric: a leader no domain can host is never consumed, and Kueue
    reports the violated assumption by returning no domains."""
    unable = Domain(("a",), 0)
    unable.pod_count = unable.pod_count_with_leader = 5
    assert update_counts_to_minimum([unable], 3, 1, 1, True, False) == []


# -- failure messages -----------------------------------------------------------------------------


@BOTH_PATHS
def test_least_free_capacity_failure_counts_the_pods_of_the_last_domain_in_its_order(reference):
    """LeastFreeCapacity with a required level fails quoting the pods of the last domain in
    its order (most slices, then most pods): rack r3 (3 pods, one slice of 2) after r2 (2 pods,
    one slice) and r1 (1 pod). Kueue quotes that pod count against the slices asked for."""
    nodes = [host("h1", 1, rack="r1"), host("h2", 2, rack="r2"), host("h3", 3, rack="r3")]
    request = PodSetRequest(
        "w",
        4,
        cpus(1),
        TopologyRequest(required=RACK, unconstrained=True, slice_layers=(SliceLayer(RACK, 2),)),
    )
    assert place((RACK, HOST), nodes, [request], reference) == (
        'topology "default" allows to fit only 3 out of 2 slice(s)'
    )


@BOTH_PATHS
def test_a_leader_no_domain_can_host_fails_as_fitting_nothing(reference):
    """findLevelWithFitDomains, spreading at the top level: when no domain can host the leader,
    the message reports the leaders placed (0), as "doesn't allow to fit any"."""
    nodes = [host("h1", 2, rack="r1"), host("h2", 2, rack="r2")]
    podsets = group(3, cpus(1), cpus(4), preferred=RACK)
    assert place((RACK, HOST), nodes, podsets, reference) == (
        'topology "default" doesn\'t allow to fit any of 3 pod(s)'
    )


@BOTH_PATHS
def test_a_domain_left_without_the_leader_splits_its_pods_in_plain_order(reference):
    """prioritizeLeaderDomain does nothing without a leader to place. Rack r2 takes 4 workers
    but not the leader (r1 hosts it, 4 workers with it): its hosts keep their order (a: 2 pods,
    b: 3), although a could host a leader at a penalty r2's capacity could not absorb."""
    nodes = [
        host("l1", 6, memory=1, rack="r1"),
        host("a", 2, memory=1, rack="r2"),
        host("b", 3, rack="r2"),
    ]
    leader = {"cpu": 2000, "memory": 1000}
    podsets = group(8, cpus(1), leader, preferred=RACK, slice_layers=(SliceLayer(RACK, 1),))
    assert place((RACK, HOST), nodes, podsets, reference) == {
        "leader": [("l1", 1)],
        "workers": [("l1", 4), ("a", 2), ("b", 2)],
    }
