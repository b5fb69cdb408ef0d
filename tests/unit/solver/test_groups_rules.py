"""Placement groups (solver/groups.py), rule by rule: the edges of each constraint, the BestFit
descent's choices, partition bookkeeping across requests and the reasons a request is refused."""

from __future__ import annotations

import numpy as np
import pytest

from tas.solver.groups import (
    GroupPlacementFailure,
    GroupRules,
    GroupState,
    Layout,
    _no_scope_reason,
    _partition_needs,
    _Plan,
    excluded_leaves,
    place,
)

# layout(): leaves in path order, leaf index = (b * racks + r) * hosts + h
from tests.unit.solver.test_groups import BLOCK, HOST, LEVELS, RACK, at, layout


def leaf(b: int, r: int, h: int) -> tuple[str, str, str]:
    return (f"b{b}", f"b{b}-r{r}", f"b{b}-r{r}-h{h}")


def rack(b: int, r: int) -> tuple[str, str]:
    return (f"b{b}", f"b{b}-r{r}")


def blocks_of(pods) -> set[tuple[str, ...]]:
    return {at(p, BLOCK) for p in pods}


def refusal(*args, **kwargs) -> str:
    with pytest.raises(GroupPlacementFailure) as failure:
        place(*args, **kwargs)
    return str(failure.value)


# -- rules and state ------------------------------------------------------------------------------


def test_partitions_and_their_level_are_given_together():
    GroupRules(partitions=1, partition_level=RACK)  # a single partition is still a partitioning
    with pytest.raises(ValueError) as no_level:
        GroupRules(partitions=2)
    assert str(no_level.value) == "partitions and partition_level go together"
    with pytest.raises(ValueError) as no_count:
        GroupRules(partition_level=RACK)
    assert str(no_count.value) == "partitions and partition_level go together"


def test_a_leaf_listed_with_zero_pods_holds_no_domain():
    """Member pod lists may name a leaf with no pods left: it pins no domain for the group."""
    state = GroupState(pods={leaf(0, 0, 0): 0, leaf(1, 1, 0): 2})
    assert state.domains_at(RACK) == {rack(1, 1)}
    assert GroupState(pods={leaf(0, 0, 0): 0}).domains_at(BLOCK) == set()


def test_removing_pods_the_group_does_not_hold_changes_nothing():
    state = GroupState(pods={leaf(0, 0, 0): 2})
    state.remove({leaf(0, 1, 0): 1, leaf(1, 0, 0): 0})
    assert state.pods == {leaf(0, 0, 0): 2}


def test_a_partition_with_no_recorded_size_counts_as_empty_when_members_leave():
    state = GroupState(
        pods={leaf(0, 0, 0): 1, leaf(0, 0, 1): 1},
        partition_of={rack(0, 0): 1},
        partition_sizes={},
    )
    state.remove({leaf(0, 0, 1): 0}, RACK)  # a member listing a leaf it no longer uses
    assert state.partition_sizes == {1: 0}
    state.remove({leaf(0, 0, 1): 1}, RACK)
    assert state.partition_sizes == {1: 0}
    assert state.partition_of == {rack(0, 0): 1}  # still holds a pod on h0
    state.remove({leaf(0, 0, 0): 1}, RACK)
    assert state.partition_of == {}


def test_layout_children_are_in_path_order_whatever_the_leaf_order():
    lay = Layout(LEVELS, [leaf(0, 1, 0), leaf(0, 0, 1), leaf(0, 0, 0)])
    (racks,) = lay.children[0]
    assert [lay.domains[RACK][c] for c in racks] == [rack(0, 0), rack(0, 1)]
    hosts = lay.children[RACK][lay.code_of[RACK][rack(0, 0)]]
    assert [lay.domains[HOST][c] for c in hosts] == [leaf(0, 0, 0), leaf(0, 0, 1)]


def test_excluded_leaves_cover_the_domains_owned_at_every_level():
    lay = layout()
    out = excluded_leaves(lay, {BLOCK: {("b0",)}, RACK: {rack(1, 1)}})
    assert out.tolist() == [True, True, True, True, False, False, True, True]


# -- inputs ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("count", [0, -1])
def test_a_request_for_no_pods_is_refused(count):
    assert refusal(layout(), np.full(8, 2), count, GroupRules(), GroupState()) == (
        "nothing to place"
    )


def test_negative_capacity_is_no_room_rather_than_a_debt():
    """An over-committed host (negative room) must not cancel its neighbours' room."""
    lay = layout(blocks=1, racks=1, hosts=2)
    placed = place(lay, np.array([-5, 3]), 3, GroupRules(), GroupState())
    assert placed.pods == {leaf(0, 0, 1): 3}


def test_fractional_capacity_counts_whole_pods_only():
    lay = layout(blocks=1, racks=1, hosts=2)
    cap = np.array([1.5, 1.5])
    assert place(lay, cap, 2, GroupRules(), GroupState()).pods == {
        leaf(0, 0, 0): 1,
        leaf(0, 0, 1): 1,
    }
    assert refusal(lay, cap, 3, GroupRules(), GroupState()) == (
        "room for 2 of 3 pods under the group's constraints"
    )


def test_a_plain_placement_carries_no_partition_bookkeeping():
    placed = place(layout(), np.full(8, 2), 3, GroupRules(), GroupState())
    assert sum(placed.pods.values()) == 3
    assert placed.partition_of_leaf == {}
    assert placed.new_partition_domains == {}
    assert placed.partition_counts == {}


# -- refusals -------------------------------------------------------------------------------------


def test_a_refusal_says_how_much_room_there_was():
    assert refusal(layout(), np.ones(8), 9, GroupRules(), GroupState()) == (
        "room for 8 of 9 pods under the group's constraints"
    )


def test_a_required_level_keeps_the_member_in_one_domain_of_it():
    lay = layout(blocks=1, racks=2, hosts=2)
    cap = np.ones(4)
    # 3 pods fit in the block, but no rack holds them all
    assert refusal(lay, cap, 3, GroupRules(), GroupState(), required=RACK) == (
        "no rack has room for all the pods"
    )
    placed = place(lay, np.array([1, 0, 1, 1]), 2, GroupRules(), GroupState(), required=RACK)
    assert placed.pods == {leaf(0, 1, 0): 1, leaf(0, 1, 1): 1}


def test_a_first_affinity_member_needs_one_domain_with_room_for_all():
    lay = layout(blocks=1, racks=2, hosts=2)
    assert refusal(lay, np.ones(4), 3, GroupRules(affinity=RACK), GroupState()) == (
        "no rack has room for all the pods"
    )


def test_the_fallback_reason_without_any_level():
    assert _no_scope_reason(layout(), GroupRules(), GroupState(), None) == (
        "not enough room for the pods"
    )


def test_block_anti_affinity_holds_at_most_one_pod_per_block():
    lay = layout(blocks=2, racks=2, hosts=2)
    rules = GroupRules(anti_affinity=BLOCK)
    assert refusal(lay, np.full(8, 3), 3, rules, GroupState()) == (
        "room for 2 of 3 pods under the group's constraints"
    )
    placed = place(lay, np.full(8, 3), 2, rules, GroupState())
    assert blocks_of(placed.pods) == {("b0",), ("b1",)}
    assert sum(placed.pods.values()) == 2


# -- affinity and exclusivity ---------------------------------------------------------------------


def test_block_affinity_follows_the_held_block_even_when_another_fits_tighter():
    lay = layout()
    state = GroupState(pods={leaf(1, 0, 0): 1})
    cap = np.array([1, 1, 1, 1, 3, 3, 3, 3])  # b0 is the tighter fit for one more pod
    placed = place(lay, cap, 1, GroupRules(affinity=BLOCK), state)
    assert blocks_of(placed.pods) == {("b1",)}


def test_whole_domains_are_only_empty_ones_even_for_a_single_pod():
    """With `whole`, the group's own partly used rack is not reused, though it fits tighter."""
    lay = layout(blocks=1, racks=2, hosts=2)
    state = GroupState(pods={leaf(0, 0, 0): 1})
    occupied = np.array([True, False, False, False])
    cap = np.array([0, 1, 1, 1])
    whole = place(lay, cap, 1, GroupRules(exclusive=RACK, whole=True), state, occupied=occupied)
    assert {at(p, RACK) for p in whole.pods} == {rack(0, 1)}
    # without `whole`, the group's own rack is its to fill: BestFit takes its last host
    shared = place(lay, cap, 1, GroupRules(exclusive=RACK), state, occupied=occupied)
    assert shared.pods == {leaf(0, 0, 1): 1}


def test_an_exclusive_group_may_take_any_domain_when_occupancy_is_unknown():
    lay = layout(blocks=1, racks=2, hosts=2)
    placed = place(lay, np.array([0, 0, 1, 2]), 2, GroupRules(exclusive=RACK), GroupState())
    assert placed.pods == {leaf(0, 1, 1): 2}


def test_reserved_room_does_not_steer_bestfit():
    """Reserved leaves are kept for other groups by the fragmentation-aware profile only
    (test_groups.py covers that side); BestFit still takes the tightest block."""
    lay = layout()
    cap = np.array([1, 1, 1, 1, 2, 2, 2, 2])
    reserved = lay.leaves_under(BLOCK, {("b0",)})
    rules = GroupRules(affinity=BLOCK)
    bestfit = place(lay, cap, 3, rules, GroupState(), reserved=reserved)
    assert blocks_of(bestfit.pods) == {("b0",)}  # the tightest block, reserved or not


# -- the BestFit descent --------------------------------------------------------------------------


def test_descent_takes_the_child_that_fits_exactly():
    lay = layout(blocks=1, racks=2, hosts=1)
    placed = place(lay, np.array([3, 2]), 2, GroupRules(), GroupState())
    assert placed.pods == {leaf(0, 1, 0): 2}


def test_descent_takes_the_tightest_fitting_child_not_the_first():
    lay = layout(blocks=1, racks=3, hosts=1)
    placed = place(lay, np.array([4, 9, 2]), 2, GroupRules(), GroupState())
    assert placed.pods == {leaf(0, 2, 0): 2}


def test_descent_takes_the_largest_children_first_when_none_holds_the_rest():
    lay = layout(blocks=1, racks=3, hosts=1)
    placed = place(lay, np.array([1, 3, 2]), 5, GroupRules(), GroupState())
    # r1 (3) first, then the 2 left fit r2 exactly; r0 untouched
    assert placed.pods == {leaf(0, 1, 0): 3, leaf(0, 2, 0): 2}


def test_descent_repeats_largest_first_until_the_rest_fits():
    lay = layout(blocks=1, racks=3, hosts=1)
    placed = place(lay, np.array([3, 2, 2]), 6, GroupRules(), GroupState())
    # r0 (3), then r1 (2, the first by path of the two largest), then 1 in r2
    assert placed.pods == {leaf(0, 0, 0): 3, leaf(0, 1, 0): 2, leaf(0, 2, 0): 1}


def test_descending_for_no_pods_takes_nothing():
    lay = layout()
    plan = _Plan(lay, GroupRules(), GroupState(), False)
    assert plan._descend(np.zeros(8, dtype=np.int64), 0) == {}


# -- partitions -----------------------------------------------------------------------------------


def test_a_partition_never_seen_counts_as_empty():
    assert _partition_needs(2, {1: 1}, 1) == {1: 0, 2: 1}
    assert _partition_needs(3, {2: 2}, 3) == {1: 2, 2: 0, 3: 1}


def test_partitions_refill_their_own_racks_before_claiming_new_ones():
    lay = layout(blocks=1, racks=3, hosts=2)
    state = GroupState(
        pods={leaf(0, 0, 0): 1, leaf(0, 1, 0): 1},
        partition_of={rack(0, 0): 1, rack(0, 1): 2},
        partition_sizes={1: 1, 2: 1},
    )
    cap = np.array([0, 2, 0, 2, 1, 0])  # the free rack r2 would be the tighter fit
    placed = place(lay, cap, 2, GroupRules(partitions=2, partition_level=RACK), state)
    assert placed.pods == {leaf(0, 0, 1): 1, leaf(0, 1, 1): 1}
    assert placed.partition_of_leaf == {leaf(0, 0, 1): 1, leaf(0, 1, 1): 2}
    assert placed.new_partition_domains == {}
    assert placed.partition_counts == {1: 1, 2: 1}


def test_a_partition_short_of_room_in_its_racks_spills_into_a_new_one():
    lay = layout(blocks=1, racks=3, hosts=2)
    state = GroupState(
        pods={leaf(0, 0, 0): 1, leaf(0, 1, 0): 3},
        partition_of={rack(0, 0): 1, rack(0, 1): 2},
        partition_sizes={1: 1, 2: 3},
    )
    cap = np.array([0, 1, 0, 0, 2, 2])
    placed = place(lay, cap, 2, GroupRules(partitions=2, partition_level=RACK), state)
    assert placed.partition_counts == {1: 2}
    assert placed.pods[leaf(0, 0, 1)] == 1
    assert sum(placed.pods.values()) == 2
    assert {at(p, RACK) for p in placed.pods} == {rack(0, 0), rack(0, 2)}
    assert placed.new_partition_domains == {rack(0, 2): 1}
    assert set(placed.partition_of_leaf.values()) == {1}


def test_the_partition_needing_most_chooses_its_racks_first():
    """Partition 2 needs 2 pods, partition 1 one: partition 2 gets the rack that fits it
    exactly, partition 1 the other."""
    lay = layout(blocks=1, racks=3, hosts=1)
    state = GroupState(
        pods={leaf(0, 0, 0): 1}, partition_of={rack(0, 0): 1}, partition_sizes={1: 1}
    )
    placed = place(
        lay, np.array([0, 3, 2]), 3, GroupRules(partitions=2, partition_level=RACK), state
    )
    assert placed.partition_counts == {1: 1, 2: 2}
    assert placed.partition_of_leaf == {leaf(0, 2, 0): 2, leaf(0, 1, 0): 1}
    assert placed.pods == {leaf(0, 2, 0): 2, leaf(0, 1, 0): 1}
    assert placed.new_partition_domains == {rack(0, 2): 2, rack(0, 1): 1}


def test_a_partitioned_group_with_block_affinity_keeps_every_partition_in_its_block():
    lay = layout(blocks=2, racks=2, hosts=2)
    cap = np.array([3, 3, 3, 3, 0, 0, 0, 0])  # b1 is full
    rules = GroupRules(affinity=BLOCK, partitions=2, partition_level=RACK)
    placed = place(lay, cap, 2, rules, GroupState())
    assert blocks_of(placed.pods) == {("b0",)}
    assert placed.partition_counts == {1: 1, 2: 1}
    assert set(placed.new_partition_domains) == {rack(0, 0), rack(0, 1)}


def test_partitions_of_one_request_see_each_others_anti_affinity_domains():
    """Block anti-affinity with rack partitions: the second partition's pod may not join the
    first's block through another rack of it."""
    lay = layout(blocks=2, racks=2, hosts=1)
    rules = GroupRules(anti_affinity=BLOCK, partitions=2, partition_level=RACK)
    placed = place(lay, np.ones(4), 2, rules, GroupState())
    assert blocks_of(placed.pods) == {("b0",), ("b1",)}
    assert placed.partition_counts == {1: 1, 2: 1}


def test_a_partition_whose_block_is_taken_by_anti_affinity_claims_a_rack_elsewhere():
    """Block anti-affinity: partition 1's rack still has room, but its block already holds a
    pod of the group, so its next pod opens a rack in an untouched block."""
    lay = layout(blocks=3, racks=2, hosts=1)
    state = GroupState(
        pods={leaf(0, 0, 0): 1, leaf(1, 0, 0): 1},
        partition_of={rack(0, 0): 1, rack(1, 0): 2},
        partition_sizes={1: 1, 2: 1},
    )
    rules = GroupRules(anti_affinity=BLOCK, partitions=2, partition_level=RACK)
    placed = place(lay, np.full(6, 2), 1, rules, state)
    assert placed.partition_counts == {1: 1}
    assert blocks_of(placed.pods) == {("b2",)}
    assert placed.new_partition_domains == {rack(2, 0): 1}
