"""Kueue's topology annotations -> TopologyRequest, with every rule accepted and refused."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.api.annotations import (
    TopologyRequestError,
    label_key_problem,
    parse_topology_request,
    validate_levels,
    validate_pod_set_groups,
)
from tas.api.constants import (
    PODSET_GROUP_NAME,
    PODSET_PREFERRED_TOPOLOGY,
    PODSET_REQUIRED_TOPOLOGY,
    PODSET_SLICE_REQUIRED_TOPOLOGY,
    PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS,
    PODSET_SLICE_SIZE,
    PODSET_UNCONSTRAINED_TOPOLOGY,
)
from tas.solver.types import PodSetRequest, SliceLayer, TopologyRequest
from tests.unit.gates import gates

BLOCK = "cloud.provider.com/topology-block"
RACK = "cloud.provider.com/topology-rack"
HOST = "kubernetes.io/hostname"
LEVELS = (BLOCK, RACK, HOST)

FAST = settings(max_examples=100, deadline=None)


@pytest.fixture(autouse=True, scope="module")
def _multi_layer_on() -> Iterator[None]:
    """Most cases here read the constraints annotation, which TASMultiLayerTopology allows."""
    with gates(TASMultiLayerTopology=True):
        yield


def refused(annotations: dict[str, str], count: int = 8, **kwargs: object) -> TopologyRequestError:
    with pytest.raises(TopologyRequestError) as raised:
        parse_topology_request(annotations, count, **kwargs)
    return raised.value


def constraints(*layers: tuple[str, int]) -> str:
    return json.dumps([{"topology": level, "size": size} for level, size in layers])


# --- modes: required / preferred / unconstrained / implied -----------------------------------


def test_no_annotation_is_implied() -> None:
    request = parse_topology_request({"unrelated": "x"}, 3)
    assert request == TopologyRequest()
    assert request.implied


def test_required_preferred_unconstrained_are_parsed() -> None:
    assert parse_topology_request({PODSET_REQUIRED_TOPOLOGY: RACK}, 4).required == RACK
    assert parse_topology_request({PODSET_PREFERRED_TOPOLOGY: BLOCK}, 4).preferred == BLOCK
    unconstrained = parse_topology_request({PODSET_UNCONSTRAINED_TOPOLOGY: "true"}, 4)
    assert unconstrained.unconstrained and not unconstrained.implied


def test_pod_index_label_is_carried() -> None:
    label = "batch.kubernetes.io/job-completion-index"
    assert parse_topology_request({}, 2, pod_index_label=label).pod_index_label == label


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (PODSET_REQUIRED_TOPOLOGY, PODSET_PREFERRED_TOPOLOGY),
        (PODSET_REQUIRED_TOPOLOGY, PODSET_UNCONSTRAINED_TOPOLOGY),
        (PODSET_PREFERRED_TOPOLOGY, PODSET_UNCONSTRAINED_TOPOLOGY),
    ],
)
def test_at_most_one_mode(first: str, second: str) -> None:
    values = {PODSET_REQUIRED_TOPOLOGY: RACK, PODSET_PREFERRED_TOPOLOGY: RACK}
    values[PODSET_UNCONSTRAINED_TOPOLOGY] = "true"
    error = refused({first: values[first], second: values[second]})
    assert error.annotation == second
    assert first in str(error)


def test_all_three_modes_refused() -> None:
    error = refused(
        {
            PODSET_REQUIRED_TOPOLOGY: RACK,
            PODSET_PREFERRED_TOPOLOGY: BLOCK,
            PODSET_UNCONSTRAINED_TOPOLOGY: "true",
        }
    )
    assert "may not be set together" in str(error)


GO_TRUE = ["1", "t", "T", "TRUE", "true", "True"]
GO_FALSE = ["0", "f", "F", "FALSE", "false", "False"]


@pytest.mark.parametrize("text", GO_TRUE + GO_FALSE)
def test_unconstrained_accepts_go_booleans(text: str) -> None:
    request = parse_topology_request({PODSET_UNCONSTRAINED_TOPOLOGY: text}, 1)
    assert request.unconstrained is (text in GO_TRUE)


@FAST
@given(st.text(max_size=6).filter(lambda text: text not in GO_TRUE + GO_FALSE))
def test_unconstrained_refuses_anything_else(text: str) -> None:
    error = refused({PODSET_UNCONSTRAINED_TOPOLOGY: text})
    assert error.annotation == PODSET_UNCONSTRAINED_TOPOLOGY
    assert error.value == text
    assert "boolean" in str(error)


# --- label keys --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key", [RACK, HOST, "rack", "a", "example.com/x_y.z-1", "A9", "x" * 63, "a.b/" + "c" * 63]
)
def test_valid_label_keys(key: str) -> None:
    assert label_key_problem(key) is None
    assert parse_topology_request({PODSET_REQUIRED_TOPOLOGY: key}, 1).required == key


@pytest.mark.parametrize(
    "key",
    [
        "",
        "Bad Key",
        "-rack",
        "rack-",
        "/rack",
        "a/",
        "UPPER.com/rack",
        "a..b/rack",
        "x" * 64,
        "a/b/c",
        ("a" * 254) + "/x",
    ],
)
@pytest.mark.parametrize(
    "annotation",
    [PODSET_REQUIRED_TOPOLOGY, PODSET_PREFERRED_TOPOLOGY, PODSET_SLICE_REQUIRED_TOPOLOGY],
)
def test_invalid_label_keys_are_refused(key: str, annotation: str) -> None:
    annotations = {annotation: key}
    if annotation == PODSET_SLICE_REQUIRED_TOPOLOGY:
        annotations[PODSET_SLICE_SIZE] = "1"
    error = refused(annotations)
    assert error.annotation == annotation
    assert error.value == key
    assert label_key_problem(key) is not None


_BAD_NAME = (
    "must be a label key: alphanumerics, '-', '_' or '.', starting and ending"
    " with an alphanumeric, with an optional DNS-subdomain prefix and '/'"
)


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("/rack", "must not start with '/'"),
        (("a" * 254) + "/x", "must have a prefix of at most 253 characters"),
        ((("a" * 63 + ".") * 3) + ("a" * 61) + "/x", None),  # a prefix of exactly 253
        (
            "UPPER.com/rack",
            "must have a prefix that is a DNS subdomain (lowercase, e.g. example.com)",
        ),
        ("", "must not be empty"),
        ("a/", "must not be empty"),
        ("x" * 64, "must have a name part of at most 63 characters"),
        ("x" * 63, None),
        ("rack-", _BAD_NAME),
    ],
)
def test_label_key_problems_say_what_is_wrong(key: str, problem: str | None) -> None:
    """The text the webhook and the Workload's condition show the user."""
    assert label_key_problem(key) == problem
    if problem is not None:
        error = refused({PODSET_REQUIRED_TOPOLOGY: key})
        assert error.problem == problem


# --- single-layer slices -----------------------------------------------------------------------


@FAST
@given(data=st.data(), count=st.integers(1, 64))
def test_slice_size_dividing_the_count_is_accepted(data: st.DataObject, count: int) -> None:
    size = data.draw(st.sampled_from([d for d in range(1, count + 1) if count % d == 0]))
    request = parse_topology_request(
        {
            PODSET_REQUIRED_TOPOLOGY: BLOCK,
            PODSET_SLICE_REQUIRED_TOPOLOGY: HOST,
            PODSET_SLICE_SIZE: str(size),
        },
        count,
    )
    assert request.slice_layers == (SliceLayer(HOST, size),)


@FAST
@given(data=st.data(), count=st.integers(3, 64))
def test_slice_size_not_dividing_the_count_is_refused(data: st.DataObject, count: int) -> None:
    """Kueue would admit only whole slices and leave the rest gated forever; we refuse."""
    size = data.draw(st.sampled_from([d for d in range(2, count) if count % d != 0] or [count - 1]))
    if count % size == 0:
        return
    error = refused(
        {
            PODSET_REQUIRED_TOPOLOGY: BLOCK,
            PODSET_SLICE_REQUIRED_TOPOLOGY: HOST,
            PODSET_SLICE_SIZE: str(size),
        },
        count,
    )
    assert error.annotation == PODSET_SLICE_SIZE
    assert f"must divide the pod set count {count}" in str(error)


@FAST
@given(count=st.integers(1, 64), excess=st.integers(1, 1000))
def test_slice_size_above_count_is_refused(count: int, excess: int) -> None:
    size = str(count + excess)
    error = refused({PODSET_SLICE_REQUIRED_TOPOLOGY: HOST, PODSET_SLICE_SIZE: size}, count)
    assert error.annotation == PODSET_SLICE_SIZE
    assert f"count {count}" in str(error)


@pytest.mark.parametrize("size", ["0", "-1", "-2147483648"])
def test_slice_size_below_one_is_refused(size: str) -> None:
    error = refused({PODSET_SLICE_REQUIRED_TOPOLOGY: HOST, PODSET_SLICE_SIZE: size})
    assert str(error) == f'annotation "{PODSET_SLICE_SIZE}": "{size}" must be at least 1'


@pytest.mark.parametrize("size", ["", "two", "1.5", " 2", "2 ", "0x2", "2147483648", "1e2"])
def test_slice_size_must_be_an_int32(size: str) -> None:
    error = refused({PODSET_SLICE_REQUIRED_TOPOLOGY: HOST, PODSET_SLICE_SIZE: size}, 10**10)
    assert "must be an integer" in str(error)


@pytest.mark.parametrize("size", ["+2", "002"])
def test_slice_size_takes_go_integer_forms(size: str) -> None:
    request = parse_topology_request(
        {PODSET_SLICE_REQUIRED_TOPOLOGY: HOST, PODSET_SLICE_SIZE: size}, 4
    )
    assert request.slice_layers == (SliceLayer(HOST, 2),)


def test_slice_topology_needs_a_size() -> None:
    error = refused({PODSET_REQUIRED_TOPOLOGY: BLOCK, PODSET_SLICE_REQUIRED_TOPOLOGY: HOST})
    assert error.annotation == PODSET_SLICE_SIZE
    assert error.value is None
    assert "must be set" in str(error)


def test_slice_size_needs_a_slice_topology() -> None:
    error = refused({PODSET_REQUIRED_TOPOLOGY: BLOCK, PODSET_SLICE_SIZE: "2"})
    assert error.annotation == PODSET_SLICE_SIZE
    assert PODSET_SLICE_REQUIRED_TOPOLOGY in str(error)


def test_slice_only_request_is_not_implied() -> None:
    request = parse_topology_request(
        {PODSET_SLICE_REQUIRED_TOPOLOGY: RACK, PODSET_SLICE_SIZE: "4"}, 8
    )
    assert not request.implied
    assert request.required is None and request.preferred is None


# --- multi-layer constraints ------------------------------------------------------------------


def test_constraints_are_parsed_outermost_first() -> None:
    text = constraints((BLOCK, 8), (RACK, 4), (HOST, 2))
    request = parse_topology_request(
        {PODSET_REQUIRED_TOPOLOGY: BLOCK, PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS: text}, 16
    )
    assert request.slice_layers == (SliceLayer(BLOCK, 8), SliceLayer(RACK, 4), SliceLayer(HOST, 2))


def test_constraints_keys_match_case_insensitively_like_go() -> None:
    text = json.dumps([{"Topology": RACK, "SIZE": 2, "extra": 1}])
    request = parse_topology_request({PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS: text}, 4)
    assert request.slice_layers == (SliceLayer(RACK, 2),)


def test_constraints_need_the_feature_gate() -> None:
    text = constraints((RACK, 2))
    with gates(TASMultiLayerTopology=False):
        error = refused({PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS: text})
    assert "TASMultiLayerTopology" in str(error)


@pytest.mark.parametrize(
    "other",
    [
        {PODSET_SLICE_REQUIRED_TOPOLOGY: HOST},
        {PODSET_SLICE_SIZE: "2"},
        {PODSET_SLICE_REQUIRED_TOPOLOGY: HOST, PODSET_SLICE_SIZE: "2"},
        {PODSET_REQUIRED_TOPOLOGY: BLOCK, PODSET_GROUP_NAME: "leader-workers"},
    ],
)
def test_constraints_exclude_single_layer_slices_and_groups(other: dict[str, str]) -> None:
    error = refused({PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS: constraints((RACK, 2)), **other})
    assert error.annotation in (PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS, PODSET_GROUP_NAME)
    assert "may not be set together" in str(error)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("not json", "JSON array"),
        ('{"topology": "rack", "size": 2}', "JSON array"),
        ("[]", "1 to 3 layers, got 0"),
        (constraints(("a", 8), ("b", 4), ("c", 2), ("d", 1)), "1 to 3 layers, got 4"),
        ("[1]", "must be an object"),
        ('[{"size": 2}]', "topology must be set"),
        ('[{"topology": 5, "size": 2}]', "must be a string"),
        ('[{"topology": "Bad Key", "size": 2}]', "label key"),
        ('[{"topology": "rack"}]', "size must be set"),
        ('[{"topology": "rack", "size": "2"}]', "must be an integer"),
        ('[{"topology": "rack", "size": 2.0}]', "must be an integer"),
        ('[{"topology": "rack", "size": true}]', "must be an integer"),
        ('[{"topology": "rack", "size": 0}]', "at least 1"),
        ('[{"topology": "rack", "size": -4}]', "at least 1"),
        (constraints(("rack", 4), ("rack", 2)), "appears twice"),
        (constraints(("block", 8), ("rack", 3)), "must divide"),
        (constraints(("block", 8), ("rack", 4), ("host", 3)), "must divide"),
        (constraints(("block", 9)), "greater than the pod set count 8"),
        (constraints(("block", 3)), "size 3 must divide the pod set count 8"),
        (constraints(("block", 6), ("rack", 3)), "size 6 must divide the pod set count 8"),
    ],
)
def test_constraints_refusals(text: str, problem: str) -> None:
    error = refused({PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS: text}, 8)
    assert error.annotation == PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS
    assert error.value == text
    assert problem in str(error)


@FAST
@given(
    sizes=st.lists(st.integers(1, 6), min_size=1, max_size=3),
)
def test_constraints_with_dividing_sizes_are_accepted(sizes: list[int]) -> None:
    # Build sizes outermost first so that each inner size divides the outer one.
    layered = []
    size = 1
    for factor in reversed(sizes):
        size *= factor
        layered.append(size)
    layered.reverse()
    levels = LEVELS[len(LEVELS) - len(layered) :]
    text = constraints(*zip(levels, layered, strict=True))
    request = parse_topology_request({PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS: text}, layered[0])
    assert [layer.size for layer in request.slice_layers] == layered
    validate_levels(request, LEVELS)


# --- group name ----------------------------------------------------------------------------------


def test_group_name_is_parsed_with_required_or_preferred() -> None:
    for mode in (PODSET_REQUIRED_TOPOLOGY, PODSET_PREFERRED_TOPOLOGY):
        request = parse_topology_request({mode: RACK, PODSET_GROUP_NAME: "lws"}, 1)
        assert request.group_name == "lws"


@FAST
@given(st.integers(0, 2**64 - 1))
def test_numeric_group_names_are_refused(number: int) -> None:
    error = refused({PODSET_REQUIRED_TOPOLOGY: RACK, PODSET_GROUP_NAME: str(number)})
    assert error.annotation == PODSET_GROUP_NAME
    assert "must not be a number" in str(error)


@pytest.mark.parametrize("name", ["g1", "-1", "+1", "1.0", str(2**64)])  # ParseUint refuses these
def test_non_numeric_group_names_are_accepted(name: str) -> None:
    request = parse_topology_request({PODSET_REQUIRED_TOPOLOGY: RACK, PODSET_GROUP_NAME: name}, 1)
    assert request.group_name == name


@pytest.mark.parametrize(
    "other",
    [
        {PODSET_SLICE_SIZE: "1"},
        {PODSET_SLICE_REQUIRED_TOPOLOGY: HOST},
        {PODSET_SLICE_REQUIRED_TOPOLOGY: HOST, PODSET_SLICE_SIZE: "1"},
    ],
)
def test_group_name_excludes_slices(other: dict[str, str]) -> None:
    error = refused({PODSET_REQUIRED_TOPOLOGY: RACK, PODSET_GROUP_NAME: "g", **other})
    assert error.annotation == PODSET_GROUP_NAME


@pytest.mark.parametrize("other", [{}, {PODSET_UNCONSTRAINED_TOPOLOGY: "true"}])
def test_group_name_needs_required_or_preferred(other: dict[str, str]) -> None:
    error = refused({PODSET_GROUP_NAME: "g", **other})
    assert error.annotation == PODSET_GROUP_NAME
    assert PODSET_REQUIRED_TOPOLOGY in str(error)


def podset(name: str, count: int, **annotations: str) -> PodSetRequest:
    keys = {
        "required": PODSET_REQUIRED_TOPOLOGY,
        "preferred": PODSET_PREFERRED_TOPOLOGY,
        "group": PODSET_GROUP_NAME,
    }
    parsed = parse_topology_request({keys[k]: v for k, v in annotations.items()}, count)
    return PodSetRequest(name=name, count=count, requests={}, topology=parsed)


def test_group_of_leader_and_workers_is_accepted() -> None:
    validate_pod_set_groups(
        [
            podset("leader", 1, required=RACK, group="g"),
            podset("workers", 7, required=RACK, group="g"),
            podset("other", 3, preferred=BLOCK),
        ]
    )
    validate_pod_set_groups(
        [podset("a", 1, preferred=BLOCK, group="g"), podset("b", 1, preferred=BLOCK, group="g")]
    )


@pytest.mark.parametrize("members", [1, 3])
def test_group_needs_exactly_two_pod_sets(members: int) -> None:
    podsets = [podset(f"p{i}", 1, required=RACK, group="g") for i in range(members)]
    with pytest.raises(TopologyRequestError, match=f"exactly 2 pod sets, got {members}") as raised:
        validate_pod_set_groups(podsets)
    assert raised.value.podset_index == members - 1


def test_group_needs_a_leader_with_count_one() -> None:
    podsets = [podset("a", 2, required=RACK, group="g"), podset("b", 3, required=RACK, group="g")]
    with pytest.raises(TopologyRequestError, match="counts 2 and 3") as raised:
        validate_pod_set_groups(podsets)
    assert raised.value.podset_index == 1


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ({"required": RACK}, {"required": BLOCK}),
        ({"required": RACK}, {"preferred": RACK}),
        ({"preferred": RACK}, {"preferred": BLOCK}),
    ],
)
def test_group_needs_the_same_topology(first: dict[str, str], second: dict[str, str]) -> None:
    podsets = [podset("a", 1, group="g", **first), podset("b", 4, group="g", **second)]
    with pytest.raises(TopologyRequestError, match="needs the same"):
        validate_pod_set_groups(podsets)


def test_group_refuses_slices_even_when_built_directly() -> None:
    sliced = TopologyRequest(required=RACK, group_name="g", slice_layers=(SliceLayer(HOST, 1),))
    podsets = [
        PodSetRequest("a", 1, {}, TopologyRequest(required=RACK, group_name="g")),
        PodSetRequest("b", 2, {}, sliced),
    ]
    with pytest.raises(TopologyRequestError, match="slices"):
        validate_pod_set_groups(podsets)


# --- levels of the topology ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "annotations",
    [
        {PODSET_REQUIRED_TOPOLOGY: RACK},
        {PODSET_PREFERRED_TOPOLOGY: HOST},
        {PODSET_UNCONSTRAINED_TOPOLOGY: "true"},
        {},
        {
            PODSET_REQUIRED_TOPOLOGY: RACK,
            PODSET_SLICE_REQUIRED_TOPOLOGY: RACK,
            PODSET_SLICE_SIZE: "4",
        },
        {
            PODSET_REQUIRED_TOPOLOGY: BLOCK,
            PODSET_SLICE_REQUIRED_TOPOLOGY: HOST,
            PODSET_SLICE_SIZE: "4",
        },
        {PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS: constraints((BLOCK, 8), (HOST, 2))},
        {
            PODSET_PREFERRED_TOPOLOGY: BLOCK,
            PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS: constraints((RACK, 8), (HOST, 4)),
        },
    ],
)
def test_levels_accepted(annotations: dict[str, str]) -> None:
    request = parse_topology_request(annotations, 8)
    validate_levels(request, LEVELS, annotations)


@pytest.mark.parametrize(
    ("annotations", "blamed", "problem"),
    [
        ({PODSET_REQUIRED_TOPOLOGY: "zone"}, PODSET_REQUIRED_TOPOLOGY, "not a level"),
        ({PODSET_PREFERRED_TOPOLOGY: "zone"}, PODSET_PREFERRED_TOPOLOGY, "not a level"),
        (
            {
                PODSET_REQUIRED_TOPOLOGY: RACK,
                PODSET_SLICE_REQUIRED_TOPOLOGY: "zone",
                PODSET_SLICE_SIZE: "2",
            },
            PODSET_SLICE_REQUIRED_TOPOLOGY,
            "not a level",
        ),
        (
            {
                PODSET_REQUIRED_TOPOLOGY: RACK,
                PODSET_SLICE_REQUIRED_TOPOLOGY: BLOCK,
                PODSET_SLICE_SIZE: "2",
            },
            PODSET_SLICE_REQUIRED_TOPOLOGY,
            "at or below",
        ),
        (
            {
                PODSET_REQUIRED_TOPOLOGY: RACK,
                PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS: constraints((BLOCK, 4)),
            },
            PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS,
            "at or below",
        ),
        (
            {PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS: constraints((RACK, 4), (BLOCK, 2))},
            PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS,
            "must be a lower level",
        ),
        (
            {PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS: constraints((RACK, 4), ("zone", 2))},
            PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS,
            "not a level",
        ),
    ],
)
def test_levels_refused(annotations: dict[str, str], blamed: str, problem: str) -> None:
    request = parse_topology_request(annotations, 8)
    with pytest.raises(TopologyRequestError, match=problem) as raised:
        validate_levels(request, LEVELS, annotations)
    assert raised.value.annotation == blamed


def test_unknown_level_lists_the_valid_levels() -> None:
    request = parse_topology_request({PODSET_REQUIRED_TOPOLOGY: "zone"}, 1)
    with pytest.raises(TopologyRequestError) as raised:
        validate_levels(request, LEVELS)
    assert f"levels: {BLOCK}, {RACK}, {HOST}" in str(raised.value)


@FAST
@given(
    required=st.sampled_from(LEVELS),
    slice_level=st.sampled_from(LEVELS),
)
def test_slice_level_must_not_be_above_the_required_level(required: str, slice_level: str) -> None:
    annotations = {
        PODSET_REQUIRED_TOPOLOGY: required,
        PODSET_SLICE_REQUIRED_TOPOLOGY: slice_level,
        PODSET_SLICE_SIZE: "2",
    }
    request = parse_topology_request(annotations, 4)
    if LEVELS.index(slice_level) >= LEVELS.index(required):
        validate_levels(request, LEVELS, annotations)
    else:
        with pytest.raises(TopologyRequestError, match="at or below"):
            validate_levels(request, LEVELS, annotations)
