"""partial_slices.py's own rules, on hand-made inputs (the placements are in
test_kueue_slice_gates.py)."""

from __future__ import annotations

import pytest

from tas.solver.partial_slices import CheapestTwo, both_penalty, tail_last

R1, R2, R3 = ("r1",), ("r2",), ("r3",)


@pytest.mark.parametrize(
    ("keys", "counts", "want"),
    [
        pytest.param([R1, R2], [4, 4], [0, 1], id="whole slices: unchanged"),
        pytest.param([R1, R2], [4, 2], [0, 1], id="the tail already last"),
        pytest.param([R1, R1, R2], [1, 1, 4], [2, 0, 1], id="the tail's domains move last"),
        pytest.param([R1, R2, R3], [2, 4, 4], [1, 2, 0], id="the first holder of the remainder"),
        pytest.param([R1, R2], [2, 3], None, id="two short slices: refused"),
        pytest.param([R1, R2], [5, 5], None, id="remainders in two domains: refused"),
    ],
)
def test_tail_last_orders_or_refuses(keys, counts, want) -> None:
    assert tail_last(keys, counts, 4) == want


def test_cheapest_two_keeps_the_first_of_equal_lowest() -> None:
    cheapest = CheapestTwo()
    for index, penalty in enumerate([3, 1, 1]):
        cheapest.add(index, penalty)
    assert (cheapest.best_index, cheapest.best, cheapest.second) == (1, 1, 1)


@pytest.mark.parametrize(
    ("leader", "tail", "together", "want"),
    [
        pytest.param([(0, 1), (1, 5)], [(1, 2)], 99, 3, id="apart: cheapest of each"),
        pytest.param([(0, 1), (1, 5)], [(0, 2), (1, 4)], 99, 5, id="same child: next best"),
        pytest.param([(0, 1)], [(0, 2)], 2, 2, id="same child, nothing else: together"),
        pytest.param([(0, 1)], [(0, 2)], 2**31 - 1, 2**31 - 1, id="no way at all"),
    ],
)
def test_leader_and_tail_are_costed_together(leader, tail, together, want) -> None:
    leaders, tails = CheapestTwo(), CheapestTwo()
    for index, penalty in leader:
        leaders.add(index, penalty)
    for index, penalty in tail:
        tails.add(index, penalty)
    assert both_penalty(leaders, tails, together) == want
