"""Kueue's placement rules that no ported case pins on its own, one rule per test.

Each test holds on both paths (vectorized and plain reference) and names the Kueue code it
follows (kubernetes-sigs/kueue pkg/cache/scheduler/tas_flavor_snapshot.go at ff69552e). A
plausible one-line change to the rule fails the test; mutation testing found them unchecked.
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
from tests.unit.solver.solver_test_helpers import HOST, ONE_LEVEL, assignment

BLOCK, RACK, SWITCH = "example.com/block", "example.com/rack", "example.com/switch"


def host(name: str, cpu: int, *, pods: int = 110, memory: int = 0, **levels: str) -> Node:
    """A node with `cpu` whole cpus; `levels` maps BLOCK/RACK/SWITCH keywords to values."""
    keys = {"block": BLOCK, "rack": RACK, "switch": SWITCH}
    labels = {keys[key]: value for key, value in levels.items()} | {HOST: name}
    return Node(name, labels, {"cpu": cpu * 1000, "memory": memory * 1000, "pods": pods * 1000})


def place(levels, nodes, podsets, options=SolverOptions()):  # noqa: B008 - frozen
    """find_assignments on both paths; they must agree. {pod set: [(host, count)]} or failure."""
    answers = []
    for reference in (False, True):
        snapshot = TopologySnapshot(
            levels, nodes, FlavorSpec(topology_name="default"), options, reference=reference
        )
        answers.append(snapshot.find_assignments(podsets))
    fast, plain = answers
    assert fast == plain
    if fast.failure is not None:
        return fast.failure
    return {p.name: [(d.values[-1], d.count) for d in p.assignment.domains] for p in fast.podsets}


def pods(name: str, count: int, cpu: int = 1, memory: int = 0, **topology) -> PodSetRequest:
    requests = {"cpu": cpu * 1000} | ({"memory": memory * 1000} if memory else {})
    return PodSetRequest(name, count, requests, TopologyRequest(**topology))


# -- TASProfileMixed ----------------------------------------------------------------------------

THREE_HOSTS = [host("x1", 1), host("x2", 2), host("x3", 3)]


@pytest.mark.parametrize(
    "topology",
    [
        pytest.param({"unconstrained": True}, id="unconstrained"),
        pytest.param({}, id="implied"),
        pytest.param({"slice_layers": (SliceLayer(HOST, 1),)}, id="slice-only"),
    ],
)
def test_profile_mixed_places_unconstrained_requests_least_free_first(topology):
    """useLeastFreeCapacityAlgorithm: unconstrained (implied, slice-only) && TASProfileMixed.
    Without the gate every request is BestFit: the fullest hosts first."""
    request = [pods("main", 5, **topology)]
    mixed = place(ONE_LEVEL, THREE_HOSTS, request, SolverOptions(profile_mixed=True))
    assert mixed == {"main": [("x1", 1), ("x2", 2), ("x3", 2)]}
    best_fit = place(ONE_LEVEL, THREE_HOSTS, request, SolverOptions(profile_mixed=False))
    assert best_fit == {"main": [("x2", 2), ("x3", 3)]}


def test_profile_mixed_leaves_required_and_preferred_on_best_fit():
    for topology in ({"required": HOST}, {"preferred": HOST}):
        request = [pods("main", 2, **topology)]
        for mixed in (True, False):
            assert place(ONE_LEVEL, THREE_HOSTS, request, SolverOptions(profile_mixed=mixed)) == {
                "main": [("x2", 2)]
            }


def test_least_free_capacity_takes_the_smallest_host_that_holds_the_request():
    request = [pods("main", 2, unconstrained=True)]
    assert place(ONE_LEVEL, THREE_HOSTS, request) == {"main": [("x2", 2)]}


# -- preferred: climb to the next level before spreading ----------------------------------------

BLOCKS = [
    host("a1", 3, block="b1", rack="r1"),
    host("a2", 3, block="b1", rack="r2"),
    host("c1", 4, block="b2", rack="r1"),
    host("c2", 1, block="b2", rack="r2"),
]


def test_a_preferred_rack_request_too_big_for_any_rack_stays_in_one_block():
    """findLevelWithFitDomains: no rack holds 6 pods, so it climbs to the blocks (b1 holds 6,
    b2 only 5) instead of spreading over racks of both blocks (c1's 4 first)."""
    request = [pods("main", 6, preferred=RACK)]
    assert place((BLOCK, RACK, HOST), BLOCKS, request) == {"main": [("a1", 3), ("a2", 3)]}


def test_a_preferred_request_spreads_over_blocks_only_at_the_top():
    request = [pods("main", 9, preferred=RACK)]
    assert place((BLOCK, RACK, HOST), BLOCKS, request) == {
        "main": [("a1", 3), ("a2", 2), ("c1", 4)]
    }


def test_a_required_rack_request_never_climbs():
    request = [pods("main", 6, required=RACK)]
    assert place((BLOCK, RACK, HOST), BLOCKS, request) == (
        'topology "default" allows to fit only 4 out of 6 pod(s)'
    )


# -- leader and workers --------------------------------------------------------------------------


def test_a_domains_leader_penalty_is_the_smallest_of_its_children():
    """fillInCountsHelper: podCountWithLeader = podCount - min over leader-capable children of
    (childPods - childPodsWithLeader). h1 loses no worker to the leader (the leader asks for
    memory only), h2 loses one (its pods run out); the rack holds 1 leader + 4 workers."""
    rack = [
        host("h1", 2, memory=1, block="b1", rack="r1"),
        host("h2", 2, memory=1, pods=2, block="b1", rack="r1"),
    ]
    group = {"required": RACK, "group_name": "g"}
    request = [
        PodSetRequest("leader", 1, {"memory": 1000}, TopologyRequest(**group)),
        pods("workers", 4, **group),
    ]
    assert place((BLOCK, RACK, HOST), rack, request) == {
        "leader": [("h1", 1)],
        "workers": [("h1", 2), ("h2", 2)],
    }
    # one more worker than that does not fit: the leader costs h2 a slot, and h1 has no more
    too_many = [request[0], pods("workers", 5, **group)]
    assert place((BLOCK, RACK, HOST), rack, too_many) == (
        'topology "default" allows to fit only 4 out of 5 pod(s)'
    )


def test_racks_tied_on_slices_stay_tied_on_pods_whatever_order_their_hosts_come_in():
    """The same minimum decides the with-leader pod count, the tie-break between domains of
    equal capacity: r1 and r2 each have a host that loses a worker to the leader (pods=2) and
    one that loses none, in the opposite order. Taking the last child's penalty instead of the
    smallest would make r2 look tighter and win the tie that r1 wins by name."""
    nodes = [
        host("a1", 2, memory=1, pods=2, block="b1", rack="r1"),
        host("a2", 2, memory=1, block="b1", rack="r1"),
        host("b1", 2, memory=1, block="b1", rack="r2"),
        host("b2", 2, memory=1, pods=2, block="b1", rack="r2"),
    ]
    group = {"preferred": RACK, "group_name": "g"}
    request = [
        PodSetRequest("leader", 1, {"memory": 1000}, TopologyRequest(**group)),
        pods("workers", 3, **group),
    ]
    assert place((BLOCK, RACK, HOST), nodes, request) == {
        "leader": [("a1", 1)],
        "workers": [("a1", 1), ("a2", 2)],
    }


def test_with_equal_counts_the_second_pod_set_leads():
    """The leader is the pod set with the smaller count; on a tie, the second one. Here the
    leader's requests decide which host both go to: the host left tightest for the workers."""
    rack = [
        host("h1", 1, memory=5, block="b1", rack="r1"),
        host("h2", 5, memory=1, block="b1", rack="r1"),
    ]
    group = {"required": RACK, "group_name": "g"}
    cpu_set = PodSetRequest("cpu", 1, {"cpu": 1000}, TopologyRequest(**group))
    memory_set = PodSetRequest("memory", 1, {"memory": 1000}, TopologyRequest(**group))
    # memory leads: cpu workers fit 1 beside it on h1, 5 on h2: best fit is h1
    assert place((BLOCK, RACK, HOST), rack, [cpu_set, memory_set]) == {
        "cpu": [("h1", 1)],
        "memory": [("h1", 1)],
    }
    # cpu leads: memory workers fit 5 beside it on h1, 1 on h2: best fit is h2
    assert place((BLOCK, RACK, HOST), rack, [memory_set, cpu_set]) == {
        "memory": [("h2", 1)],
        "cpu": [("h2", 1)],
    }


def test_the_smaller_pod_set_leads_whatever_its_place():
    rack = [host("h1", 3, block="b1", rack="r1"), host("h2", 1, block="b1", rack="r1")]
    group = {"required": RACK, "group_name": "g"}
    leader = PodSetRequest("leader", 1, {"cpu": 1000}, TopologyRequest(**group))
    workers = pods("workers", 3, **group)
    for order in ([leader, workers], [workers, leader]):
        result = place((BLOCK, RACK, HOST), rack, order)
        assert result["leader"] == [("h1", 1)] or result["leader"] == [("h2", 1)]
        assert sum(c for _, c in result["workers"]) == 3
        assert place((BLOCK, RACK, HOST), rack, order) == result


# -- node replacement: which slice layer the replacement keeps ----------------------------------


def test_a_replacement_keeps_the_innermost_slice_layer_that_divides_the_missing_pods():
    """findReplacementAssignment: the missing pods are placed with the innermost constraint
    whose size divides them (slices.Backward over the constraints), confined to the rack of
    the broken slice. 4 pods are missing under layers rack 8 / switch 4 / host 2, and rack r1
    has 2 free hosts of 2 in different switches: as host slices of 2 they fit; as a switch
    slice of 4 (the outer layer that also divides 4) they would not. The workload's surviving
    pods are held in the snapshot (the caller's choice, as the operator makes it)."""
    levels = (BLOCK, RACK, SWITCH, HOST)
    nodes = [
        host("x1", 2, block="b1", rack="r1", switch="s1"),
        host("x2", 2, block="b1", rack="r1", switch="s1"),
        host("x10", 2, block="b1", rack="r1", switch="s1"),
        Node("x3", {BLOCK: "b1", RACK: "r1", SWITCH: "s2", HOST: "x3"}, {"cpu": 4000}, ready=False),
        host("x4", 2, block="b1", rack="r1", switch="s2"),
        *(
            host(f"x{i}", 2, block="b1", rack="r2", switch=f"s{3 + (i - 5) // 2}")
            for i in (5, 6, 7, 8)
        ),
    ]
    surviving = [(("x1",), 2), (("x2",), 2)] + [((f"x{i}",), 2) for i in (5, 6, 7, 8)]
    existing = assignment((HOST,), [*surviving[:2], (("x3",), 4), *surviving[2:]])
    request = PodSetRequest(
        "main",
        16,
        {"cpu": 1000},
        TopologyRequest(
            required=BLOCK,
            slice_layers=(SliceLayer(RACK, 8), SliceLayer(SWITCH, 4), SliceLayer(HOST, 2)),
        ),
    )
    for reference in (False, True):
        snapshot = TopologySnapshot(levels, nodes, reference=reference)
        snapshot.add_usage(assignment((HOST,), surviving), {"cpu": 1000})
        result = snapshot.find_replacement(request, existing, "x3")
        assert result.failure is None, result.failure
        assert result.added == assignment((HOST,), [(("x10",), 2), (("x4",), 2)])
        assert [(d.values[0], d.count) for d in result.assignment.domains] == [
            ("x1", 2),
            ("x10", 2),
            ("x2", 2),
            ("x4", 2),
            ("x5", 2),
            ("x6", 2),
            ("x7", 2),
            ("x8", 2),
        ]
