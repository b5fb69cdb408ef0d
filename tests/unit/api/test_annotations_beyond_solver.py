"""Our annotations and group rules behind TASRequiredWithPreferred and
TASMultiRolePodSetGroups: parsed with the gate, ignored (or Kueue's rules) without; every
refusal names the annotation."""

from __future__ import annotations

import pytest

from tas.api import topologyrequest
from tas.api.annotations import (
    TopologyRequestError,
    parse_topology_request,
    validate_levels,
    validate_pod_set_groups,
)
from tas.api.constants import (
    PODSET_GROUP_NAME,
    PODSET_PREFERRED_TOPOLOGY,
    PODSET_REQUIRED_TOPOLOGY,
    PODSET_SLICE_REQUIRED_TOPOLOGY,
    PODSET_SLICE_SIZE,
    TAS_PODSET_PREFERRED_TOPOLOGY,
)
from tas.solver.types import PodSetRequest
from tests.unit.gates import gates

LEVELS = ("block", "rack", "kubernetes.io/hostname")
REQUIRED_BLOCK = {PODSET_REQUIRED_TOPOLOGY: "block"}


def test_with_the_gate_the_lower_preferred_level_is_read():
    with gates(TASRequiredWithPreferred=True):
        request = parse_topology_request(
            {**REQUIRED_BLOCK, TAS_PODSET_PREFERRED_TOPOLOGY: "rack"}, 4
        )
        validate_levels(request, LEVELS)
    assert (request.required, request.inner_preferred) == ("block", "rack")


def test_without_the_gate_it_is_ignored():
    request = parse_topology_request({**REQUIRED_BLOCK, TAS_PODSET_PREFERRED_TOPOLOGY: "x y"}, 4)
    assert request.inner_preferred is None
    validate_levels(request, LEVELS)


@pytest.mark.parametrize(
    ("annotations", "problem"),
    [
        pytest.param({TAS_PODSET_PREFERRED_TOPOLOGY: "rack"}, "needs", id="no-required"),
        pytest.param(
            {PODSET_PREFERRED_TOPOLOGY: "block", TAS_PODSET_PREFERRED_TOPOLOGY: "rack"},
            "needs",
            id="beside-kueues-preferred",
        ),
        pytest.param(
            {**REQUIRED_BLOCK, TAS_PODSET_PREFERRED_TOPOLOGY: "not a key"},
            "label key",
            id="not-a-label-key",
        ),
    ],
)
def test_refused_at_the_webhook(annotations, problem):
    with gates(TASRequiredWithPreferred=True), pytest.raises(TopologyRequestError) as error:
        parse_topology_request(annotations, 4)
    assert error.value.annotation == TAS_PODSET_PREFERRED_TOPOLOGY
    assert problem in str(error.value)


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        pytest.param({TAS_PODSET_PREFERRED_TOPOLOGY: "block"}, "lower level", id="same-level"),
        pytest.param({TAS_PODSET_PREFERRED_TOPOLOGY: "zone"}, "not a level", id="unknown"),
        pytest.param(
            {
                TAS_PODSET_PREFERRED_TOPOLOGY: "kubernetes.io/hostname",
                PODSET_SLICE_REQUIRED_TOPOLOGY: "rack",
                PODSET_SLICE_SIZE: "2",
            },
            "slice level",
            id="below-the-slices",
        ),
    ],
)
def test_refused_against_the_topology(extra, problem):
    with gates(TASRequiredWithPreferred=True):
        request = parse_topology_request({**REQUIRED_BLOCK, **extra}, 4)
        with pytest.raises(TopologyRequestError) as error:
            validate_levels(request, LEVELS)
    assert error.value.annotation == TAS_PODSET_PREFERRED_TOPOLOGY
    assert problem in str(error.value)


def roles(*levels: str, slices: bool = False) -> list[PodSetRequest]:
    out = []
    for index, level in enumerate(levels):
        annotations = {PODSET_GROUP_NAME: "rl", PODSET_REQUIRED_TOPOLOGY: level}
        if slices:
            annotations |= {PODSET_SLICE_REQUIRED_TOPOLOGY: "rack", PODSET_SLICE_SIZE: "2"}
        request = parse_topology_request(annotations, 4)
        out.append(PodSetRequest(name=f"role{index}", count=4, requests={}, topology=request))
    return out


def test_three_roles_need_the_gate():
    with pytest.raises(TopologyRequestError, match="exactly 2 pod sets, got 3"):
        validate_pod_set_groups(roles("block", "block", "block"))
    with gates(TASMultiRolePodSetGroups=True):
        validate_pod_set_groups(roles("block", "block", "block", slices=True))


def test_roles_at_different_levels_are_refused():
    with gates(TASMultiRolePodSetGroups=True), pytest.raises(TopologyRequestError) as error:
        validate_pod_set_groups(roles("block", "block", "rack"))
    assert error.value.annotation == PODSET_GROUP_NAME
    assert error.value.podset_index == 2


def test_without_the_gate_a_role_may_not_have_slices():
    with pytest.raises(TopologyRequestError, match="podset-slice"):
        roles("block", slices=True)


def test_a_workload_carries_the_lower_level_in_its_template():
    """Kueue's topologyRequest has no field for it (required and preferred are exclusive):
    the Workload's pod template annotation is read, with the gate."""
    api = {"required": "block"}
    template = {TAS_PODSET_PREFERRED_TOPOLOGY: "rack"}
    assert topologyrequest.from_api(api, template).inner_preferred is None
    with gates(TASRequiredWithPreferred=True):
        request = topologyrequest.from_api(api, template)
    assert (request.required, request.inner_preferred) == ("block", "rack")
    assert topologyrequest.to_api(request) == api
