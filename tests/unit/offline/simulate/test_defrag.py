"""`tas simulate` with the gate TASDefragmentation: the trace's movable annotations, the
moves, and the report's defragmentation counts."""

from __future__ import annotations

import pytest

from tas.offline.fields import ScenarioError
from tas.offline.simulate.trace import parse_trace
from tests.unit.offline.simulate.traces import RACK, job, simulate, two_racks

MOVABLE = {"tas-operator.io/movable": "true", "tas-operator.io/movable-after": "1m"}
YOUNG = {"tas-operator.io/movable": "true", "tas-operator.io/movable-after": "10m"}


def scattered(gate: bool, annotations: dict | None = MOVABLE, gang_at: float = 200) -> dict:
    """Rack r0 holds `big` (6 of 8 one-cpu pods) and r1 `small` (1 pod) after `filler` left:
    the 8-pod gang that requires a rack fits only once `small` moves to r0."""
    small = job("small", 2, 1, "1", duration=10_000)
    if annotations is not None:
        small["annotations"] = annotations
    return two_racks(
        [
            job("big", 0, 6, "1", duration=10_000, level=RACK),
            job("filler", 1, 7, "1", duration=100, level=RACK),
            small,
            job("gang", gang_at, 8, "1", duration=1_000, level=RACK),
        ],
        featureGates={"TASDefragmentation": gate},
    )


def test_the_small_workload_moves_and_the_gang_runs_at_once() -> None:
    report = simulate(scattered(True))
    assert report["firstFailure"] is None
    assert report["defragmentation"]["moves"] == 1
    assert report["evictions"] == 1
    assert report["podsPlaced"] == 6 + 7 + 1 + 8  # the moved pod counted once


@pytest.mark.parametrize(
    ("gate", "annotations", "gang_at"),
    [
        pytest.param(False, MOVABLE, 200, id="gate-off"),
        pytest.param(True, None, 200, id="not-movable"),
        pytest.param(True, YOUNG, 200, id="too-young"),  # small movable from 602s
    ],
)
def test_nothing_moves(gate: bool, annotations: dict | None, gang_at: float) -> None:
    report = simulate(scattered(gate, annotations, gang_at))
    assert report["evictions"] == 0
    assert report["firstFailure"]["workload"] == "gang"
    assert ("defragmentation" in report) == gate


@pytest.mark.parametrize(
    ("annotations", "field"),
    [
        pytest.param({"tas-operator.io/movable": "yes"}, "tas-operator.io/movable", id="bool"),
        pytest.param(
            {"tas-operator.io/movable-after": "5 minutes"},
            "tas-operator.io/movable-after",
            id="duration",
        ),
    ],
)
def test_a_bad_annotation_names_it(annotations: dict, field: str) -> None:
    with pytest.raises(ScenarioError) as error:
        parse_trace(scattered(True, annotations))
    assert str(error.value).startswith(f'workloads[2].annotations["{field}"]')
