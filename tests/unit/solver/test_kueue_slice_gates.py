"""TASGroupedPodSetSlicing and TASPartialSlices placements (kueue_slice_gates_cases.py) on both
paths, and what the same requests do with the gates off (today's behaviour, Kueue v0.17's)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import pytest

from tas import features
from tas.solver import FlavorSpec, PodSetRequest, TopologyRequest, TopologySnapshot
from tests.unit.solver.kueue_slice_gates_cases import (
    GROUPED_CASES,
    PARTIAL_CASES,
    hosts,
    sliced,
)
from tests.unit.solver.solver_test_helpers import BLOCK, HOST, RACK, THREE_LEVELS, KueueCase, node

CASES = GROUPED_CASES + PARTIAL_CASES


def snapshot_for(case: KueueCase, gates: Mapping[str, bool], reference: bool) -> TopologySnapshot:
    """Every other gate at its default (Kueue's), through the one gate -> option mapping."""
    return TopologySnapshot(
        case.levels,
        case.nodes,
        FlavorSpec(topology_name="default"),
        features.from_mapping(gates).solver_options(),
        reference=reference,
    )


@pytest.mark.parametrize("reference", [False, True], ids=["vectorized", "plain"])
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_placement_with_the_gates_on(case: KueueCase, reference: bool) -> None:
    result = snapshot_for(case, case.gates, reference).find_assignments(
        [ps.request for ps in case.podsets]
    )
    reason = next((ps.reason for ps in case.podsets if ps.reason), None)
    if reason is not None:
        assert result.failure == reason
        return
    assert result.failure is None
    got = {placement.name: placement.assignment for placement in result.podsets}
    assert got == {ps.request.name: ps.want for ps in case.podsets}


@pytest.mark.parametrize("case", PARTIAL_CASES, ids=[case.name for case in PARTIAL_CASES])
def test_a_partial_slice_is_refused_with_the_gate_off(case: KueueCase) -> None:
    """Gate off: a count that is not a whole number of slices is refused, as before."""
    workers = case.podsets[-1].request
    size = workers.topology.slice_layers[0].size
    result = snapshot_for(case, {}, reference=False).find_assignments(
        [ps.request for ps in case.podsets]
    )
    assert result.failure == (
        f"podSetSliceSize {size} must divide the pod set count {workers.count}"
    )


@pytest.mark.parametrize("case", GROUPED_CASES, ids=[case.name for case in GROUPED_CASES])
def test_grouped_slices_place_the_same_with_the_gate_off(case: KueueCase) -> None:
    """The gate decides what validation admits; placement is Kueue's either way (its
    scheduler does not read the gate)."""
    on = snapshot_for(case, case.gates, False).find_assignments([p.request for p in case.podsets])
    off = snapshot_for(case, {}, False).find_assignments([p.request for p in case.podsets])
    assert off == on and on.admitted


def test_a_dividing_count_places_the_same_with_partial_slices_on() -> None:
    """With no partial slice the gate changes nothing: Kueue's case "block required for
    podset; host required for slices; BestFit" (kueue_tas_cases.py) both ways."""
    nodes = tuple(
        node(f"b1-r1-{name}", {BLOCK: "b1", RACK: "r1", HOST: name}, {"cpu": "3", "pods": "10"})
        for name in ("x3", "x5", "x1")
    )
    case = KueueCase("dividing", THREE_LEVELS, nodes, ())
    request = [sliced(6, HOST, 2, required=BLOCK)]
    on = snapshot_for(case, {"TASPartialSlices": True}, False).find_assignments(request)
    off = snapshot_for(case, {}, False).find_assignments(request)
    assert on == off
    assert on.podsets[0].assignment == hosts(("x1", 2), ("x3", 2), ("x5", 2))


def test_replace_unhealthy_node_with_sliced_workers() -> None:
    """Kueue's "grouped with leader and sliced workers; replace unhealthy node with sliced
    workers": x2 (NotReady) held a slice of 2; x1 has room for none (its 500m is what the
    leader and 2 workers left), x4 and x5 for one worker each: the slice moves to x3."""
    nodes = (
        node("b1-r1-x1", {BLOCK: "b1", RACK: "r1", HOST: "x1"}, {"cpu": "500m", "pods": "10"}),
        node(
            "b1-r1-x2",
            {BLOCK: "b1", RACK: "r1", HOST: "x2"},
            {"cpu": "5", "pods": "10"},
            ready=False,
        ),
        node("b1-r1-x3", {BLOCK: "b1", RACK: "r1", HOST: "x3"}, {"cpu": "5", "pods": "10"}),
        node("b1-r2-x4", {BLOCK: "b1", RACK: "r2", HOST: "x4"}, {"cpu": "2", "pods": "10"}),
        node("b1-r2-x5", {BLOCK: "b1", RACK: "r2", HOST: "x5"}, {"cpu": "2", "pods": "10"}),
    )
    workers = GROUPED_CASES[0].podsets[1].request
    for gates in ({}, {"TASGroupedPodSetSlicing": True}):
        for reference in (False, True):
            case = KueueCase("replacement", THREE_LEVELS, nodes, ())
            result = snapshot_for(case, gates, reference).find_replacement(
                workers, hosts(("x1", 2), ("x2", 2)), "x2"
            )
            assert result.assignment == hosts(("x1", 2), ("x3", 2)), (gates, reference)


def test_replacing_a_node_keeps_the_partial_slice_whole_and_last() -> None:
    """Rack slices of 4 over 10 pods: r1 and r2 whole, the tail of 2 in r0 (a5 and x6),
    published last. x6 fails: r0, the last rack, is the one its pods plus the missing one
    make the tail again, so the pod goes back there (a5), and r0 stays last although it
    sorts first."""
    layout = (("r0", "a5"), ("r0", "x6"), ("r1", "x1"), ("r2", "x2"), ("r3", "x7"))
    nodes = [
        node(name, {RACK: rack, HOST: name}, {"cpu": "4"}, ready=name != "x6")
        for rack, name in layout
    ]
    existing = hosts(("x1", 4), ("x2", 4), ("a5", 1), ("x6", 1))
    options = features.from_mapping({"TASPartialSlices": True}).solver_options()
    for reference in (False, True):
        snapshot = TopologySnapshot((RACK, HOST), nodes, options=options, reference=reference)
        result = snapshot.find_replacement(sliced(10, RACK, 4), existing, "x6")
        assert result.added == hosts(("a5", 1)), reference
        assert result.assignment == hosts(("x1", 4), ("x2", 4), ("a5", 2)), reference


def test_leader_and_tail_share_a_rack_only_when_it_has_room_for_both() -> None:
    """Two racks of 3 one-cpu hosts; workers in rack slices of 3, count 5 (a slice and a tail
    of 2), and a leader. r1 holds a slice or the leader and the tail; r2 the other."""
    nodes = tuple(
        node(f"{rack}-h{i}", {BLOCK: "b1", RACK: rack, HOST: f"{rack}-h{i}"}, {"cpu": "1"})
        for rack in ("r1", "r2")
        for i in (1, 2, 3)
    )
    case = KueueCase("leader and tail", THREE_LEVELS, nodes, ())
    gates = {"TASPartialSlices": True}
    group = TopologyRequest(required=BLOCK, group_name="g")
    leader = PodSetRequest("leader", 1, {"cpu": 1000}, group)
    workers = replace(sliced(5, RACK, 3), name="workers")
    workers = replace(workers, topology=replace(workers.topology, required=BLOCK, group_name="g"))
    for reference in (False, True):
        result = snapshot_for(case, gates, reference).find_assignments([leader, workers])
        assert result.failure is None
        placed = {p.name: p.assignment for p in result.podsets}
        assert placed["leader"] == hosts(("r1-h1", 1))
        assert placed["workers"] == hosts(
            ("r2-h1", 1), ("r2-h2", 1), ("r2-h3", 1), ("r1-h2", 1), ("r1-h3", 1)
        )
