"""plan() and stranded() on multi-level assignments, one rule per test.

Levels (block, rack) with rack names repeated in every block, as real clusters name them: a
pod's nodeSelector must carry every level, or a pod ungated for rack r1 of block b1 could land
in rack r1 of block b2, and a pod already there would be counted against the wrong domain.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from tas.cache.projections import PodInfo
from tas.solver.types import DomainAssignment, TopologyAssignment
from tas.ungater.plan import domain_selectors, stranded
from tas.ungater.plan import plan as plan_with_rule
from tas.ungater.ranks import RankRule

BLOCK, RACK, HOST = "example.com/block", "example.com/rack", "kubernetes.io/hostname"
JOB_INDEX = "batch.kubernetes.io/job-completion-index"


def plan(assignment, pods, expected=None, unhealthy=()):
    """An Indexed Job's pod set: ranked by completion index."""
    count = sum(d.count for d in assignment.domains)
    return plan_with_rule(assignment, pods, expected, unhealthy, RankRule(JOB_INDEX, count))


def assignment(*domains: tuple[tuple[str, ...], int], levels=(BLOCK, RACK)) -> TopologyAssignment:
    return TopologyAssignment(
        levels=levels, domains=tuple(DomainAssignment(values, count) for values, count in domains)
    )


def pod(name, *, index=None, on=None, levels=(BLOCK, RACK), phase="Pending", node=None):
    """A gated pod, or with `on` (domain values) one ungated onto that domain."""
    return PodInfo(
        namespace="ns",
        name=name,
        uid=f"uid-{name}",
        node_name=node,
        phase=phase,
        requests={},
        workload="wl",
        pod_set="main",
        gated=on is None,
        node_selector=dict(zip(levels, on, strict=True)) if on else {},
        index_labels={} if index is None else {JOB_INDEX: index},
        deleting=False,
    )


def placed(result) -> dict[str, tuple[str, ...]]:
    return {u.pod.name: u.domain for u in result}


REPEATED = assignment((("b1", "r1"), 1), (("b2", "r1"), 1))


def test_the_node_selector_names_every_level_of_the_domain():
    [ungate] = plan(REPEATED, [pod("g")])
    assert ungate.domain == ("b1", "r1")
    assert ungate.node_selector == {BLOCK: "b1", RACK: "r1"}
    assert domain_selectors(REPEATED) == [
        (("b1", "r1"), {BLOCK: "b1", RACK: "r1"}, 1),
        (("b2", "r1"), {BLOCK: "b2", RACK: "r1"}, 1),
    ]


def test_a_domain_with_fewer_values_than_levels_is_refused_not_read_as_a_shorter_selector():
    # A status written by hand can carry one; a selector on the block alone would let the pod
    # land in any rack of it.
    short = TopologyAssignment(levels=(BLOCK, RACK), domains=(DomainAssignment(("b1",), 1),))
    with pytest.raises(ValueError):
        plan(short, [pod("g")])


def test_a_pod_already_in_a_repeated_rack_counts_against_its_own_block():
    # The pod in b2's rack r1 takes b2's slot, so the gated pod goes to b1's, not on top of it.
    result = plan(REPEATED, [pod("there", on=("b2", "r1")), pod("g")])
    assert placed(result) == {"g": ("b1", "r1")}
    assert result[0].node_selector == {BLOCK: "b1", RACK: "r1"}
    result = plan(REPEATED, [pod("there", on=("b1", "r1")), pod("g")])
    assert placed(result) == {"g": ("b2", "r1")}
    assert result[0].node_selector == {BLOCK: "b2", RACK: "r1"}


def test_a_pod_in_a_rack_of_another_block_takes_no_slot():
    only_b1 = assignment((("b1", "r1"), 1))
    result = plan(only_b1, [pod("elsewhere", on=("b3", "r1")), pod("g")])
    assert placed(result) == {"g": ("b1", "r1")}


def test_a_pod_in_a_rack_of_another_block_is_stranded():
    only_b1 = assignment((("b1", "r1"), 2))
    pods = [pod("elsewhere", on=("b3", "r1")), pod("home", on=("b1", "r1"))]
    assert [p.name for p in stranded(only_b1, pods)] == ["elsewhere"]


def test_stranded_leaves_deleting_running_gated_and_expected_pods_alone():
    """A pod bound there but not running yet is stranded too: it would run outside."""
    only_b1 = assignment((("b1", "r1"), 2))
    away = pod("away", on=("b3", "r1"))
    pods = [
        replace(away, name="bound", node_name="n1"),
        replace(away, name="deleting", deleting=True),
        replace(away, name="running", phase="Running", node_name="n1"),
        replace(away, name="gated", gated=True),
        replace(away, name="expected", uid="uid-expected"),
        away,
    ]
    expected = {"uid-expected": ("b3", "r1")}
    assert [p.name for p in stranded(only_b1, pods, expected)] == ["bound", "away"]
    assert [p.name for p in stranded(only_b1, pods)] == ["bound", "expected", "away"]


def test_mixed_indexed_and_unindexed_pods_fill_domains_in_order_by_name():
    # Kueue uses ranks only when every pod has one; else the greedy order for all of them.
    two_one = assignment((("b1", "r1"), 2), (("b2", "r1"), 1))
    pods = [pod("c", index=0), pod("b", index=2), pod("a")]
    assert placed(plan(two_one, pods)) == {
        "a": ("b1", "r1"),
        "b": ("b1", "r1"),
        "c": ("b2", "r1"),
    }


def test_ranks_map_to_slots_in_assignment_order():
    two_one = assignment((("b1", "r1"), 2), (("b2", "r1"), 1))
    pods = [pod("z", index=0), pod("y", index=1), pod("x", index=2)]
    assert placed(plan(two_one, pods)) == {"z": ("b1", "r1"), "y": ("b1", "r1"), "x": ("b2", "r1")}


def test_a_rank_whose_slot_is_taken_or_out_of_range_falls_back_to_the_first_free_domain():
    two_one = assignment((("b1", "r1"), 2), (("b2", "r1"), 1))
    # index 2's slot (b2) is taken by a pod already there; index 7 is beyond every slot
    pods = [pod("there", on=("b2", "r1")), pod("p2", index=2), pod("p7", index=7)]
    assert placed(plan(two_one, pods)) == {"p2": ("b1", "r1"), "p7": ("b1", "r1")}


def test_ranked_pods_are_taken_by_rank_not_by_arrival():
    one_one = assignment((("b1", "r1"), 1), (("b2", "r1"), 1))
    result = plan(one_one, [pod("late", index=1), pod("early", index=0)])
    assert [(u.pod.name, u.domain) for u in result] == [
        ("early", ("b1", "r1")),
        ("late", ("b2", "r1")),
    ]


def test_more_pods_than_slots_wait():
    result = plan(assignment((("b1", "r1"), 1)), [pod("a"), pod("b"), pod("c")])
    assert placed(result) == {"a": ("b1", "r1")}


def test_terminal_pods_free_their_slot_even_when_expected():
    one = assignment((("b1", "r1"), 1))
    done = replace(pod("done", on=("b1", "r1")), phase="Succeeded")
    result = plan(one, [done, pod("next")], {"uid-done": ("b1", "r1")})
    assert placed(result) == {"next": ("b1", "r1")}


def test_an_expected_pod_takes_the_slot_it_was_sent_to_not_the_one_it_shows():
    # Ungated onto b2 by us; the watch still shows it gated (no selector yet).
    result = plan(REPEATED, [pod("sent"), pod("g")], {"uid-sent": ("b2", "r1")})
    assert placed(result) == {"g": ("b1", "r1")}


def test_an_expected_domain_the_assignment_no_longer_has_takes_nothing():
    result = plan(REPEATED, [pod("sent"), pod("g"), pod("h")], {"uid-sent": ("b9", "r1")})
    assert placed(result) == {"g": ("b1", "r1"), "h": ("b2", "r1")}


def test_an_unhealthy_host_gets_nobody_and_its_slot_is_not_moved():
    hosts = assignment(
        (("x1",), 1), (("x2",), 1), levels=(HOST,)
    )  # hostname topologies report the host alone
    pods = [pod("a", levels=(HOST,)), pod("b", levels=(HOST,))]
    result = plan(hosts, pods, unhealthy={"x1"})
    assert placed(result) == {"a": ("x2",)}
    assert result[0].node_selector == {HOST: "x2"}


def test_pods_on_an_unhealthy_host_do_not_take_another_slot():
    hosts = assignment((("x1",), 1), (("x2",), 1), levels=(HOST,))
    pods = [pod("stuck", on=("x1",), levels=(HOST,)), pod("g", levels=(HOST,))]
    assert placed(plan(hosts, pods, unhealthy={"x1"})) == {"g": ("x2",)}
