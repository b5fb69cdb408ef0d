"""TASProfileFragmentationAware (solver/profile.py): among the domains that fit, the one whose
parents have the least room; off, Kueue's BestFit (the tightest anywhere)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.solver import Node, PodSetRequest, SolverOptions, TopologyRequest, TopologySnapshot
from tas.solver.groups import Layout
from tas.solver.profile import choose_domain

LEVELS = ("block", "rack", "kubernetes.io/hostname")


def layout(blocks: int, racks: int, hosts: int) -> Layout:
    return Layout(
        LEVELS,
        [
            (f"b{b}", f"b{b}-r{r}", f"b{b}-r{r}-h{h}")
            for b in range(blocks)
            for r in range(racks)
            for h in range(hosts)
        ],
    )


def test_the_rack_in_the_fullest_block_wins_over_the_tightest_rack():
    lay = layout(2, 2, 2)
    # b0: racks of 3 and 4 free (7); b1: a rack of 2 and a full rack (2+0)... b1 is fuller
    capacity = np.array([2, 1, 2, 2, 1, 1, 0, 0])
    # a 2-pod rack request fits b0-r0 (3), b0-r1 (4) and b1-r0 (2): b1 has the least room
    assert lay.domains[1][choose_domain(lay, capacity, 1, 2)] == ("b1", "b1-r0")
    # 3 pods fit only in b0's racks: the tighter of them
    assert lay.domains[1][choose_domain(lay, capacity, 1, 3)] == ("b0", "b0-r0")


def test_the_one_fitting_domain_is_chosen_and_none_when_nothing_fits():
    lay = layout(2, 1, 2)
    assert choose_domain(lay, np.array([1, 1, 0, 0]), 1, 2) == 0
    assert choose_domain(lay, np.array([0, 0, 1, 1]), 1, 2) == 1
    assert choose_domain(lay, np.array([0, 0, 0, 0]), 1, 1) is None


def test_slices_count_per_slice_domain():
    lay = layout(2, 2, 2)
    # b0 has 6 pods of room but only one rack holds a slice of 4; b1 holds two slices
    capacity = np.array([2, 2, 1, 1, 2, 2, 2, 2])
    assert choose_domain(lay, capacity, 0, 8, slice_level=1, slice_size=4) == 1
    assert choose_domain(lay, capacity, 0, 4, slice_level=1, slice_size=4) == 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=12, max_size=12), st.integers(1, 12), st.integers(0, 1))
def test_the_choice_always_fits_and_sits_in_a_parent_with_the_least_room(caps, count, level):
    lay = layout(2, 2, 3)
    capacity = np.array(caps)
    chosen = choose_domain(lay, capacity, level, count)
    room = np.bincount(lay.codes[level], weights=capacity, minlength=len(lay.domains[level]))
    fitting = [c for c in range(len(room)) if room[c] >= count]
    if not fitting:
        assert chosen is None
        return
    assert room[chosen] >= count
    if level == 1:
        blocks = np.bincount(lay.codes[0], weights=capacity)
        block_of = {c: lay.code_of[0][lay.domains[1][c][:1]] for c in fitting}
        assert blocks[block_of[chosen]] == min(blocks[block_of[c]] for c in fitting)


USED = {  # cpu used per host (of 4): rack room b0-r0 5, b0-r1 8, b1-r0 6, b1-r1 0
    "b0-r0-h0": 1000,
    "b0-r0-h1": 2000,
    "b1-r0-h0": 1000,
    "b1-r0-h1": 1000,
    "b1-r1-h0": 4000,
    "b1-r1-h1": 4000,
}


def nodes() -> list[Node]:
    out = []
    for b in range(2):
        for r in range(2):
            for h in range(2):
                name = f"b{b}-r{r}-h{h}"
                labels = {"block": f"b{b}", "rack": f"b{b}-r{r}", "kubernetes.io/hostname": name}
                used = {"cpu": USED[name]} if name in USED else {}
                out.append(Node(name, labels, {"cpu": 4000}, used))
    return out


def racks_of(snapshot: TopologySnapshot, pods: int) -> set[str]:
    request = PodSetRequest("main", pods, {"cpu": 1000}, TopologyRequest(required="rack"))
    placed = snapshot.find_assignments([request])
    assert placed.admitted, placed.failure
    return {d.values[-1].rsplit("-", 1)[0] for d in placed.podsets[0].assignment.domains}


def test_the_gate_switches_the_choice_on_the_snapshot():
    kueue = TopologySnapshot(LEVELS, nodes(), options=SolverOptions())
    ours = TopologySnapshot(LEVELS, nodes(), options=SolverOptions(fragmentation_aware=True))
    # 5 pods: BestFit takes the tightest rack anywhere, b0-r0 (exactly 5), cutting into the
    # block with the most room; ours keeps b0 and fills b1 (6 of room in all): b1-r0.
    assert racks_of(kueue, 5) == {"b0-r0"}
    assert racks_of(ours, 5) == {"b1-r0"}
    # 7 pods fit only in b0-r1: both agree.
    assert racks_of(kueue, 7) == racks_of(ours, 7) == {"b0-r1"}


def test_a_block_with_room_but_no_whole_slice_does_not_fit():
    lay = layout(3, 2, 2)
    # rooms per rack: b0 3 and 2 (5, no rack holds a slice of 4); b1 4 and 4 (8, two slices);
    # b2 4 and 2 (6, one slice)
    capacity = np.array([2, 1, 1, 1, 2, 2, 2, 2, 2, 2, 1, 1])
    # pods alone: every block fits 4, and b0 has the least room
    assert choose_domain(lay, capacity, 0, 4) == 0
    # slices of 4: b0 holds none, b2 holds one and has less room than b1
    assert choose_domain(lay, capacity, 0, 4, slice_level=1, slice_size=4) == 2


def test_slices_of_two_leave_out_the_odd_pod_of_each_rack():
    lay = layout(2, 2, 2)
    # b0: racks of 3 and 3 (6 pods, but 2 slices of 2 per rack: 4); b1: racks of 4 and 2 (6: 6)
    capacity = np.array([2, 1, 2, 1, 2, 2, 2, 0])
    assert choose_domain(lay, capacity, 0, 5) == 0  # pods alone: both fit, b0 comes first
    assert choose_domain(lay, capacity, 0, 5, slice_level=1, slice_size=2) == 1  # only b1


def test_a_slice_size_without_a_slice_level_and_a_slice_level_of_size_one_change_nothing():
    lay = layout(2, 2, 2)
    capacity = np.array([2, 1, 2, 1, 2, 2, 2, 0])
    plain = choose_domain(lay, capacity, 0, 5)
    assert plain == 0
    assert choose_domain(lay, capacity, 0, 5, slice_size=2) == plain
    assert choose_domain(lay, capacity, 0, 5, slice_level=1) == plain


def test_ties_on_every_room_go_to_the_first_path_not_to_a_host_deeper_down():
    lay = layout(1, 2, 2)
    # two racks of 2 in one block; the first rack's room sits on its last host, the second's
    # on its first: only the path tells them apart
    capacity = np.array([0, 2, 2, 0])
    assert lay.domains[1][choose_domain(lay, capacity, 1, 2)] == ("b0", "b0-r0")


def test_a_host_is_chosen_by_its_block_before_its_rack():
    lay = layout(2, 2, 3)
    # b0 (room 4): one rack of two 2-pod hosts; b1 (room 5): a rack with one 2-pod host (room
    # 2) and a rack of 1-pod hosts. The fullest block wins even though b1's rack is tighter.
    capacity = np.array([2, 2, 0, 0, 0, 0, 2, 0, 0, 1, 1, 1])
    chosen = lay.domains[2][choose_domain(lay, capacity, 2, 2)]
    assert chosen == ("b0", "b0-r0", "b0-r0-h0")
