"""TASPartialSlices and TASGroupedPodSetSlicing in annotation validation: with a gate off the
refusals are today's, word for word; with it on the request goes through. Cases marked Kueue's
are from pkg/controller/jobframework/tas_validation_test.go (v0.20)."""

from __future__ import annotations

import json
from contextlib import AbstractContextManager

import pytest

from tas.api.annotations import (
    TopologyRequestError,
    parse_topology_request,
    validate_pod_set_groups,
)
from tas.api.constants import (
    PODSET_GROUP_NAME,
    PODSET_REQUIRED_TOPOLOGY,
    PODSET_SLICE_REQUIRED_TOPOLOGY,
    PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS,
    PODSET_SLICE_SIZE,
)
from tas.solver.types import PodSetRequest, SliceLayer, TopologyRequest
from tests.unit.gates import gates

BLOCK = "cloud.com/block"
RACK = "cloud.com/rack"
HOST = "kubernetes.io/hostname"

PARTIAL_ON = {"TASPartialSlices": True}
GROUPED_ON = {"TASGroupedPodSetSlicing": True}


def constraints(*layers: tuple[str, int]) -> str:
    return json.dumps([{"topology": level, "size": size} for level, size in layers])


def gates_on(**on: bool) -> AbstractContextManager[None]:
    """The gates these cases run under: TASMultiLayerTopology on, and `on` over it."""
    return gates(TASMultiLayerTopology=True, **on)


def parse(annotations: dict[str, str], count: int, **on: bool) -> TopologyRequest:
    with gates_on(**on):
        return parse_topology_request(annotations, count)


def refused(annotations: dict[str, str], count: int, **on: bool) -> str:
    with pytest.raises(TopologyRequestError) as raised:
        parse(annotations, count, **on)
    return str(raised.value)


SINGLE = {PODSET_REQUIRED_TOPOLOGY: BLOCK, PODSET_SLICE_REQUIRED_TOPOLOGY: RACK}


# --- TASPartialSlices ---------------------------------------------------------------------------


def test_a_slice_size_that_does_not_divide_is_refused_with_the_gate_off() -> None:
    assert refused({**SINGLE, PODSET_SLICE_SIZE: "4"}, 10) == (
        f'annotation "{PODSET_SLICE_SIZE}": "4" must divide the pod set count 10'
    )


def test_a_slice_size_that_does_not_divide_leaves_a_partial_slice_with_the_gate_on() -> None:
    request = parse({**SINGLE, PODSET_SLICE_SIZE: "4"}, 10, **PARTIAL_ON)
    assert request.slice_layers == (SliceLayer(RACK, 4),)


def test_the_size_bound_holds_with_the_gate_on() -> None:
    assert refused({**SINGLE, PODSET_SLICE_SIZE: "11"}, 10, **PARTIAL_ON) == (
        f'annotation "{PODSET_SLICE_SIZE}": "11" must not be greater than the pod set count 10'
    )


@pytest.mark.parametrize(
    ("layers", "gates", "problem"),
    [
        pytest.param(
            ((RACK, 16), (HOST, 4)),
            {},
            "layer 0: size 16 must divide the pod set count 20",
            id="two layers, gate off",
        ),
        pytest.param(
            ((RACK, 16), (HOST, 4)),
            PARTIAL_ON,
            "layer 0: size 16 must divide the pod set count 20 when more than one layer is "
            "specified",
            id="Kueue's: partial slices, multi-layer outermost size does not divide the pod count",
        ),
        pytest.param(
            ((RACK, 16),),
            {},
            "layer 0: size 16 must divide the pod set count 20",
            id="one layer, gate off",
        ),
    ],
)
def test_constraints_that_do_not_divide(layers, gates, problem) -> None:
    text = constraints(*layers)
    annotations = {
        PODSET_REQUIRED_TOPOLOGY: BLOCK,
        PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS: text,
    }
    assert refused(annotations, 20, **gates) == (
        f'annotation "{PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS}": {json.dumps(text)} {problem}'
    )


def test_kueues_a_single_layer_may_leave_a_partial_slice() -> None:
    """Kueue's "valid: partial slices, a single layer may leave a partial slice"."""
    annotations = {
        PODSET_REQUIRED_TOPOLOGY: BLOCK,
        PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS: constraints((RACK, 16)),
    }
    request = parse(annotations, 20, **PARTIAL_ON)
    assert request.slice_layers == (SliceLayer(RACK, 16),)


# --- TASGroupedPodSetSlicing ---------------------------------------------------------------------

GROUPED = {PODSET_REQUIRED_TOPOLOGY: BLOCK, PODSET_GROUP_NAME: "group1"}


@pytest.mark.parametrize(
    ("slicing", "other"),
    [
        ({PODSET_SLICE_REQUIRED_TOPOLOGY: RACK, PODSET_SLICE_SIZE: "2"}, PODSET_SLICE_SIZE),
        ({PODSET_SLICE_REQUIRED_TOPOLOGY: RACK}, PODSET_SLICE_REQUIRED_TOPOLOGY),
    ],
    ids=["size and topology", "topology alone"],
)
def test_slice_annotations_in_a_group_are_refused_with_the_gate_off(slicing, other) -> None:
    assert refused({**GROUPED, **slicing}, 4) == (
        f'annotation "{PODSET_GROUP_NAME}": "group1" may not be set together with "{other}"'
    )


def test_slice_annotations_in_a_group_are_taken_with_the_gate_on() -> None:
    slicing = {PODSET_SLICE_REQUIRED_TOPOLOGY: RACK, PODSET_SLICE_SIZE: "2"}
    request = parse({**GROUPED, **slicing}, 4, **GROUPED_ON)
    assert (request.group_name, request.slice_layers) == ("group1", (SliceLayer(RACK, 2),))


def test_the_slice_rules_still_hold_in_a_group_with_the_gate_on() -> None:
    assert refused({**GROUPED, PODSET_SLICE_REQUIRED_TOPOLOGY: RACK}, 4, **GROUPED_ON) == (
        f'annotation "{PODSET_SLICE_SIZE}": must be set when '
        f'"{PODSET_SLICE_REQUIRED_TOPOLOGY}" is set'
    )


def test_kueues_constraints_with_a_group_name() -> None:
    """Kueue's "invalid: with podset-group-name when TASGroupedPodSetSlicing is disabled" and
    "valid: with podset-group-name when TASGroupedPodSetSlicing is enabled"."""
    text = constraints((RACK, 16))
    annotations = {**GROUPED, PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS: text}
    assert refused(annotations, 16) == (
        f'annotation "{PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS}": {json.dumps(text)} '
        f'may not be set together with "{PODSET_GROUP_NAME}"'
    )
    request = parse(annotations, 16, **GROUPED_ON)
    assert request.slice_layers == (SliceLayer(RACK, 16),)


def lws_pod_sets(**on: bool) -> list[PodSetRequest]:
    """A LeaderWorkerSet's pair: the leader, and 15 workers in rack slices of 4."""
    leader = parse(GROUPED, 1, **on)
    slicing = {PODSET_SLICE_REQUIRED_TOPOLOGY: RACK, PODSET_SLICE_SIZE: "4"}
    workers = parse({**GROUPED, **slicing}, 15, **PARTIAL_ON, **GROUPED_ON)
    return [
        PodSetRequest("leader", 1, {}, leader),
        PodSetRequest("workers", 15, {}, workers),
    ]


def test_a_sliced_group_is_refused_across_pod_sets_with_the_gate_off() -> None:
    pod_sets = lws_pod_sets()
    with gates_on(), pytest.raises(TopologyRequestError) as raised:
        validate_pod_set_groups(pod_sets)
    assert str(raised.value) == (
        f'annotation "{PODSET_GROUP_NAME}": "group1" may not be used with slices'
    )
    assert raised.value.podset_index == 1


def test_a_sliced_group_is_taken_across_pod_sets_with_the_gate_on() -> None:
    pod_sets = lws_pod_sets()
    with gates_on(**GROUPED_ON):
        validate_pod_set_groups(pod_sets)


def test_the_other_group_rules_hold_with_the_gate_on() -> None:
    leader, workers = lws_pod_sets()
    with gates_on(**GROUPED_ON):
        with pytest.raises(TopologyRequestError, match="exactly 2 pod sets, got 1"):
            validate_pod_set_groups([workers])
        with pytest.raises(TopologyRequestError, match="count 1"):
            validate_pod_set_groups([workers, PodSetRequest("second", 2, {}, leader.topology)])
