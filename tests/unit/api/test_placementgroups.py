"""Placement-group annotations: each bad value is refused with a message naming the annotation,
and hostile input never raises anything else."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.api.constants import (
    PLACEMENT_GROUP,
    PLACEMENT_GROUP_AFFINITY,
    PLACEMENT_GROUP_ANTI_AFFINITY,
    PLACEMENT_GROUP_EXCLUSIVE,
    PLACEMENT_GROUP_PARTITION_TOPOLOGY,
    PLACEMENT_GROUP_PARTITIONS,
)
from tas.api.placementgroups import (
    GroupRef,
    GroupSpec,
    PlacementGroupError,
    parse_annotations,
    rules_for,
    spec_from_object,
    spec_to_object,
)

KEYS = [
    PLACEMENT_GROUP,
    PLACEMENT_GROUP_AFFINITY,
    PLACEMENT_GROUP_ANTI_AFFINITY,
    PLACEMENT_GROUP_EXCLUSIVE,
    PLACEMENT_GROUP_PARTITIONS,
    PLACEMENT_GROUP_PARTITION_TOPOLOGY,
]


def test_no_group_annotation_is_no_group():
    assert parse_annotations({}) is None
    assert parse_annotations({"other": "x"}) is None


def test_a_name_alone_takes_the_constraints_from_the_group_object():
    assert parse_annotations({PLACEMENT_GROUP: "svc"}) == GroupRef("svc", None)


def test_every_constraint_is_read():
    ref = parse_annotations(
        {
            PLACEMENT_GROUP: "g",
            PLACEMENT_GROUP_AFFINITY: "block",
            PLACEMENT_GROUP_ANTI_AFFINITY: "example.com/rack",
            PLACEMENT_GROUP_PARTITIONS: "3",
            PLACEMENT_GROUP_PARTITION_TOPOLOGY: "example.com/rack",
            PLACEMENT_GROUP_EXCLUSIVE: "block",
        }
    )
    assert ref == GroupRef(
        "g", GroupSpec("block", "example.com/rack", 3, "example.com/rack", "block")
    )
    assert spec_from_object(spec_to_object(ref.spec)) == ref.spec


@pytest.mark.parametrize(
    ("annotations", "named"),
    [
        ({PLACEMENT_GROUP_AFFINITY: "rack"}, PLACEMENT_GROUP_AFFINITY),
        ({PLACEMENT_GROUP: "Not_A_Name"}, PLACEMENT_GROUP),
        ({PLACEMENT_GROUP: "g", PLACEMENT_GROUP_AFFINITY: "/rack"}, PLACEMENT_GROUP_AFFINITY),
        ({PLACEMENT_GROUP: "g", PLACEMENT_GROUP_EXCLUSIVE: "a b"}, PLACEMENT_GROUP_EXCLUSIVE),
        ({PLACEMENT_GROUP: "g", PLACEMENT_GROUP_PARTITIONS: "0"}, PLACEMENT_GROUP_PARTITIONS),
        ({PLACEMENT_GROUP: "g", PLACEMENT_GROUP_PARTITIONS: "65"}, PLACEMENT_GROUP_PARTITIONS),
        ({PLACEMENT_GROUP: "g", PLACEMENT_GROUP_PARTITIONS: "-1"}, PLACEMENT_GROUP_PARTITIONS),
        (
            {PLACEMENT_GROUP: "g", PLACEMENT_GROUP_PARTITIONS: "2"},
            PLACEMENT_GROUP_PARTITION_TOPOLOGY,
        ),
        (
            {PLACEMENT_GROUP: "g", PLACEMENT_GROUP_PARTITION_TOPOLOGY: "rack"},
            PLACEMENT_GROUP_PARTITIONS,
        ),
    ],
)
def test_a_bad_annotation_names_itself(annotations, named):
    with pytest.raises(PlacementGroupError, match=named):
        parse_annotations(annotations)


def test_a_level_the_topology_lacks_names_the_spec_field():
    with pytest.raises(PlacementGroupError, match=r"spec\.antiAffinityTopology"):
        rules_for(GroupSpec(anti_affinity_topology="zone"), ("block", "rack"))
    rules = rules_for(
        GroupSpec(affinity_topology="rack", exclusive_topology="block"), ("block", "rack")
    )
    assert (rules.affinity, rules.exclusive) == (1, 0)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(KEYS), st.text(max_size=80), max_size=6))
def test_hostile_annotations_parse_or_name_an_annotation(annotations):
    try:
        ref = parse_annotations(annotations)
    except PlacementGroupError as error:
        assert any(key in str(error) for key in KEYS), str(error)
        return
    if ref is not None:
        assert ref.name == annotations[PLACEMENT_GROUP]
