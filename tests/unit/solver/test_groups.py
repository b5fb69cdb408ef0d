"""Placement groups (solver/groups.py): each constraint on its own, then random sequences of
members arriving and leaving with every invariant checked after each step."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.solver.groups import (
    GroupPlacementFailure,
    GroupRules,
    GroupState,
    Layout,
    excluded_leaves,
    place,
)

LEVELS = ("block", "rack", "host")
BLOCK, RACK, HOST = 0, 1, 2


def layout(blocks: int = 2, racks: int = 2, hosts: int = 2) -> Layout:
    paths = [
        (f"b{b}", f"b{b}-r{r}", f"b{b}-r{r}-h{h}")
        for b in range(blocks)
        for r in range(racks)
        for h in range(hosts)
    ]
    return Layout(LEVELS, paths)


def at(path: tuple[str, ...], depth: int) -> tuple[str, ...]:
    return path[: depth + 1]


def test_affinity_first_member_chooses_and_later_members_follow():
    lay = layout()
    cap = np.full(8, 2)
    rules = GroupRules(affinity=RACK)
    state = GroupState()
    first = place(lay, cap, 3, rules, state)
    state.add(first)
    racks = {at(p, RACK) for p in first.pods}
    assert len(racks) == 1
    for leaf in first.pods:
        cap[lay.leaf_of[leaf]] -= first.pods[leaf]
    second = place(lay, cap, 1, rules, state)
    assert {at(p, RACK) for p in second.pods} == racks
    state.add(second)
    for leaf in second.pods:
        cap[lay.leaf_of[leaf]] -= second.pods[leaf]
    # the rack is full now: a third member waits even though other racks are empty
    with pytest.raises(GroupPlacementFailure, match="rack"):
        place(lay, cap, 1, rules, state)


def test_affinity_domain_is_released_when_the_group_empties():
    lay = layout()
    cap = np.full(8, 2)
    rules = GroupRules(affinity=RACK)
    state = GroupState()
    first = place(lay, cap, 4, rules, state)
    state.add(first)
    (rack,) = {at(p, RACK) for p in first.pods}
    state.remove(first.pods)
    assert state.empty
    # the old rack is now closed to the pods (its capacity taken by others): a new member may go
    for leaf in range(8):
        if at(lay.leaf_paths[leaf], RACK) == rack:
            cap[leaf] = 0
    again = place(lay, cap, 4, rules, state)
    assert {at(p, RACK) for p in again.pods} != {rack}


def test_anti_affinity_puts_each_pod_in_its_own_rack_and_remembers_them():
    lay = layout()
    cap = np.full(8, 4)
    rules = GroupRules(anti_affinity=RACK)
    state = GroupState()
    first = place(lay, cap, 3, rules, state)
    assert sum(first.pods.values()) == 3
    assert len({at(p, RACK) for p in first.pods}) == 3
    state.add(first)
    second = place(lay, cap, 1, rules, state)
    assert not {at(p, RACK) for p in second.pods} & {at(p, RACK) for p in first.pods}
    state.add(second)
    with pytest.raises(GroupPlacementFailure):
        place(lay, cap, 1, rules, state)


def test_partitions_stay_balanced_and_apart():
    lay = layout(blocks=1, racks=4, hosts=2)
    cap = np.full(8, 3)
    rules = GroupRules(partitions=2, partition_level=RACK)
    state = GroupState()
    first = place(lay, cap, 5, rules, state)
    assert sorted(first.partition_counts.values()) == [2, 3]
    state.add(first)
    owners: dict[tuple[str, ...], set[int]] = {}
    for leaf, partition in first.partition_of_leaf.items():
        owners.setdefault(at(leaf, RACK), set()).add(partition)
    assert all(len(p) == 1 for p in owners.values())
    second = place(lay, cap, 1, rules, state)
    state.add(second)
    assert sorted(state.partition_sizes.values()) == [3, 3]


def test_partitions_unbalanced_by_departures_fill_the_smallest_first():
    lay = layout(blocks=1, racks=4, hosts=2)
    state = GroupState(
        pods={("b0", "b0-r0", "b0-r0-h0"): 3, ("b0", "b0-r0", "b0-r0-h1"): 2},
        partition_of={("b0", "b0-r0"): 1},
        partition_sizes={1: 5, 2: 0},
    )
    rules = GroupRules(partitions=2, partition_level=RACK)
    small = place(lay, np.full(8, 3), 2, rules, state)
    assert small.partition_counts == {2: 2}  # not enough to rebalance: the smallest first
    enough = place(lay, np.full(8, 3), 6, rules, state)
    assert enough.partition_counts == {1: 1, 2: 5}  # 6 and 5: within 1 again


def test_exclusive_group_takes_only_empty_blocks_and_others_keep_out():
    lay = layout()
    cap = np.full(8, 2)
    occupied = np.zeros(8, dtype=bool)
    occupied[0] = True  # a foreign pod in block b0
    rules = GroupRules(exclusive=BLOCK)
    state = GroupState()
    member = place(lay, cap, 2, rules, state, occupied=occupied)
    assert {at(p, BLOCK) for p in member.pods} == {("b1",)}
    state.add(member)
    foreign = excluded_leaves(lay, {BLOCK: state.domains_at(BLOCK)})
    other = place(lay, cap, 2, GroupRules(), GroupState(), foreign=foreign)
    assert {at(p, BLOCK) for p in other.pods} == {("b0",)}


def test_combination_rack_affinity_and_host_anti_affinity():
    lay = layout(blocks=1, racks=2, hosts=4)
    cap = np.array([5, 5, 5, 5, 1, 1, 1, 1])
    rules = GroupRules(affinity=RACK, anti_affinity=HOST)
    state = GroupState()
    member = place(lay, cap, 4, rules, state)
    assert len(member.pods) == 4
    assert all(n == 1 for n in member.pods.values())
    assert len({at(p, RACK) for p in member.pods}) == 1


# -- random sequences ----------------------------------------------------------------------------

RULES = st.sampled_from(
    [
        GroupRules(),
        GroupRules(affinity=RACK),
        GroupRules(affinity=BLOCK),
        GroupRules(anti_affinity=HOST),
        GroupRules(anti_affinity=RACK),
        GroupRules(partitions=2, partition_level=RACK),
        GroupRules(partitions=3, partition_level=RACK),
        GroupRules(affinity=RACK, anti_affinity=HOST),
        GroupRules(affinity=BLOCK, anti_affinity=RACK),
        GroupRules(exclusive=RACK),
        GroupRules(affinity=BLOCK, exclusive=RACK),
    ]
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(RULES, min_size=1, max_size=4),
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(1, 6), st.booleans()), min_size=1, max_size=25
    ),
    st.integers(1, 3),
)
def test_every_constraint_holds_after_every_request(group_rules, steps, slots):
    lay = layout(blocks=2, racks=3, hosts=3)
    leaves = len(lay.leaf_paths)
    free = np.full(leaves, slots)
    states = [GroupState() for _ in group_rules]
    members: list[tuple[int, dict, dict]] = []  # (group, pods, partition of each leaf)
    for group, count, leave in steps:
        group %= len(group_rules)
        rules = group_rules[group]
        if leave and members:
            g, pods, _ = members.pop(0)
            states[g].remove(pods, group_rules[g].partition_level)
            for path, n in pods.items():
                free[lay.leaf_of[path]] += n
            continue
        occupied = free < slots
        owned: dict[int, set] = {}
        for g, (r, s) in enumerate(zip(group_rules, states, strict=True)):
            if g != group and r.exclusive is not None:
                owned.setdefault(r.exclusive, set()).update(s.domains_at(r.exclusive))
        foreign = excluded_leaves(lay, owned)
        if rules.partitions:
            sizes = [
                states[group].partition_sizes.get(p, 0) for p in range(1, rules.partitions + 1)
            ]
            count = max(count, max(sizes) * rules.partitions - sum(sizes))
        was_empty_domains = None
        if rules.exclusive is not None:
            was_empty_domains = {
                at(lay.leaf_paths[leaf], rules.exclusive) for leaf in np.flatnonzero(occupied)
            }
        try:
            placement = place(
                lay, free.copy(), count, rules, states[group], occupied=occupied, foreign=foreign
            )
        except GroupPlacementFailure:
            continue
        assert sum(placement.pods.values()) == count
        for path, n in placement.pods.items():
            leaf = lay.leaf_of[path]
            assert n <= free[leaf], "a leaf over capacity"
            assert not foreign[leaf], "a pod inside another group's exclusive domain"
            if was_empty_domains is not None:
                domain = at(path, rules.exclusive)
                assert domain in states[group].domains_at(rules.exclusive) or (
                    domain not in was_empty_domains
                ), "an exclusive group took a domain that held other pods"
            free[leaf] -= n
        states[group].add(placement)
        members.append((group, placement.pods, placement.partition_of_leaf))
        # the group's invariants over all its members
        state = states[group]
        if rules.affinity is not None:
            assert len(state.domains_at(rules.affinity)) == 1
        if rules.anti_affinity is not None:
            per_domain: dict = {}
            for path, n in state.pods.items():
                key = at(path, rules.anti_affinity)
                per_domain[key] = per_domain.get(key, 0) + n
            assert all(n == 1 for n in per_domain.values()), "two members share a domain"
        if rules.partitions:
            sizes = [state.partition_sizes.get(p, 0) for p in range(1, rules.partitions + 1)]
            assert max(sizes) - min(sizes) <= 1, sizes
            assert sum(sizes) == sum(state.pods.values())
            holders: dict = {}
            for g, _, partition_of_leaf in members:
                if g == group:
                    for path, partition in partition_of_leaf.items():
                        holders.setdefault(at(path, rules.partition_level), set()).add(partition)
            assert all(len(p) == 1 for p in holders.values()), "a rack with two partitions"


def test_the_fragmentation_aware_profile_opens_an_affinity_domain_in_the_fullest_parent():
    lay = layout(blocks=2, racks=2, hosts=2)
    # rack room: b0-r0 3, b0-r1 4 (block 7); b1-r0 4, b1-r1 0 (block 4)
    cap = np.array([1, 2, 2, 2, 2, 2, 0, 0])
    rules = GroupRules(affinity=RACK)
    bestfit = place(lay, cap, 3, rules, GroupState())
    assert {at(p, RACK) for p in bestfit.pods} == {("b0", "b0-r0")}  # the tightest rack
    ours = place(lay, cap, 3, rules, GroupState(), fragmentation_aware=True)
    assert {at(p, RACK) for p in ours.pods} == {("b1", "b1-r0")}  # b1 has the least room


def test_whole_domains_are_only_empty_ones_even_for_the_group():
    lay = layout(blocks=1, racks=2, hosts=2)
    rules = GroupRules(exclusive=RACK, whole=True)
    state = GroupState(pods={("b0", "b0-r0", "b0-r0-h0"): 1})  # the group's rack, one host free
    occupied = np.array([True, False, False, False])
    placed = place(lay, np.array([0, 1, 1, 1]), 2, rules, state, occupied=occupied)
    assert {at(p, RACK) for p in placed.pods} == {("b0", "b0-r1")}


def test_reserved_domains_are_used_only_when_nothing_else_fits():
    lay = layout(blocks=2, racks=2, hosts=2)
    cap = np.array([1, 1, 1, 1, 2, 2, 2, 2])
    reserved = lay.leaves_under(BLOCK, {("b0",)})  # another group's block, kept to grow in
    rules = GroupRules(affinity=BLOCK)
    # BestFit takes the tighter block b0; with the profile, b1 while it has room
    assert {at(p, BLOCK) for p in place(lay, cap, 3, rules, GroupState()).pods} == {("b0",)}
    ours = place(lay, cap, 3, rules, GroupState(), fragmentation_aware=True, reserved=reserved)
    assert {at(p, BLOCK) for p in ours.pods} == {("b1",)}
    # 9 pods fit only in... none without b0 (b1 holds 8): still refused, b0 holds 4
    with pytest.raises(GroupPlacementFailure):
        place(lay, cap, 9, rules, GroupState(), fragmentation_aware=True, reserved=reserved)
    # a reserved block is used when nothing else fits: b1 is full
    full_b1 = np.array([1, 1, 1, 1, 0, 0, 0, 0])
    again = place(lay, full_b1, 3, rules, GroupState(), fragmentation_aware=True, reserved=reserved)
    assert {at(p, BLOCK) for p in again.pods} == {("b0",)}
