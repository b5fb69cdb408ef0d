"""What the webhooks accept, the Workload CRD accepts: the annotations are checked against the
limits the CRD models are made from (api/constants.py), so a Job is never admitted by the
webhook and then left suspended by a 422. And a placement-group annotation, whatever it holds,
is refused by the webhooks or made a condition on the Workload, never an exception that keeps
the Workload out of the cache."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.api import topologyrequest
from tas.api.annotations import TopologyRequestError, parse_topology_request
from tas.api.constants import (
    LABEL_KEY_MAX,
    PLACEMENT_GROUP,
    PLACEMENT_GROUP_MAX_PARTITIONS,
    PLACEMENT_GROUP_PARTITION_TOPOLOGY,
    PLACEMENT_GROUP_PARTITIONS,
    POD_SET_GROUP_NAME_MAX,
    PODSET_GROUP_NAME,
    PODSET_REQUIRED_TOPOLOGY,
    PODSET_SLICE_REQUIRED_TOPOLOGY,
    PODSET_SLICE_SIZE,
)
from tas.api.models.placementgroup import PlacementGroupSpec
from tas.api.models.workload import PodSetTopologyRequest
from tas.api.placementgroups import PlacementGroupError, parse_annotations, spec_to_object
from tas.cache import projections as proj
from tas.integrations.job.controller import JOB
from tas.integrations.pod import webhook as pod_webhook
from tas.jobframework.workload import build_workload
from tests.unit.gates import gates


def level_key(prefix_length: int, name_length: int) -> str:
    """A well-formed label key of the given part lengths (a DNS-subdomain prefix of labels of
    at most 63 characters)."""
    labels, left = [], prefix_length
    while left > 0:
        part = min(63, left if left != 1 else 1)
        if left - part == 1:  # a trailing "." needs a label after it
            part -= 1
        labels.append("a" * part)
        left -= part + 1
    prefix = ".".join(labels)
    return f"{prefix}/{'n' * name_length}" if prefix else "n" * name_length


def test_a_317_character_level_key_is_refused_where_the_crd_would_refuse_it():
    key = level_key(253, 63)
    assert len(key) == 317
    with pytest.raises(TopologyRequestError, match=f"at most {LABEL_KEY_MAX} characters"):
        parse_topology_request({PODSET_REQUIRED_TOPOLOGY: key}, 1)
    shorter = level_key(252, 63)
    request = parse_topology_request({PODSET_REQUIRED_TOPOLOGY: shorter}, 1)
    PodSetTopologyRequest.model_validate(topologyrequest.to_api(request))


def test_a_group_name_over_256_characters_is_refused_where_the_crd_would_refuse_it():
    def group(name: str) -> dict[str, str]:
        return {PODSET_REQUIRED_TOPOLOGY: "rack", PODSET_GROUP_NAME: name}

    with pytest.raises(TopologyRequestError, match=f"at most {POD_SET_GROUP_NAME_MAX}"):
        parse_topology_request(group("g" * (POD_SET_GROUP_NAME_MAX + 1)), 1)
    request = parse_topology_request(group("g" * POD_SET_GROUP_NAME_MAX), 1)
    PodSetTopologyRequest.model_validate(topologyrequest.to_api(request))


# Well-formed keys of every length up to Kubernetes' 317 (most near the top), and any text.
LEVEL_KEYS = st.one_of(
    st.builds(level_key, st.integers(0, 253), st.integers(1, 63)),
    st.builds(level_key, st.integers(240, 253), st.integers(50, 63)),
    st.text(st.sampled_from("ab.-/_9Z"), min_size=1, max_size=400),
)


@settings(max_examples=300, deadline=None)
@given(
    required=LEVEL_KEYS,
    slice_level=LEVEL_KEYS,
    group=st.text(st.sampled_from("gx-"), min_size=1, max_size=300) | st.just("g" * 257),
)
def test_whatever_the_webhook_accepts_the_crd_accepts(required, slice_level, group):
    """Property: a pod set's annotations that parse give a topologyRequest the Workload
    model (the CRD's source) validates."""
    annotations = {
        PODSET_REQUIRED_TOPOLOGY: required,
        PODSET_GROUP_NAME: group,
    }
    for extra in ({}, {PODSET_SLICE_REQUIRED_TOPOLOGY: slice_level, PODSET_SLICE_SIZE: "1"}):
        try:
            with gates(TASGroupedPodSetSlicing=True):
                request = parse_topology_request({**annotations, **extra}, 2)
        except TopologyRequestError:
            continue
        PodSetTopologyRequest.model_validate(topologyrequest.to_api(request))


# ---- placement-group annotations -------------------------------------------------------------


@pytest.mark.parametrize(
    "partitions",
    ["²", "٣", "\uff13", "1²", "-1", "0", "65", "+2", " 2", "2\n", "", "9" * 5000],
    ids=[
        "superscript-two",
        "arabic-three",
        "fullwidth-three",
        "digit-superscript",
        "negative",
        "zero",
        "over-the-most",
        "sign",
        "space",
        "newline",
        "empty",
        "five-thousand-digits",
    ],
)
def test_a_partition_count_is_ascii_digits_from_one_to_the_most(partitions):
    annotations = {
        PLACEMENT_GROUP: "g",
        PLACEMENT_GROUP_PARTITIONS: partitions,
        PLACEMENT_GROUP_PARTITION_TOPOLOGY: "rack",
    }
    with pytest.raises(PlacementGroupError, match=PLACEMENT_GROUP_PARTITIONS):
        parse_annotations(annotations)


def job(annotations: dict[str, str]) -> dict:
    return {
        "metadata": {
            "name": "j",
            "namespace": "ns",
            "uid": "u",
            "labels": {"kueue.x-k8s.io/queue-name": "q"},
        },
        "spec": {
            "parallelism": 2,
            "template": {
                "metadata": {"annotations": annotations},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
        },
    }


def grouped(partitions: str) -> dict[str, str]:
    return {
        PLACEMENT_GROUP: "g",
        PLACEMENT_GROUP_PARTITIONS: partitions,
        PLACEMENT_GROUP_PARTITION_TOPOLOGY: "rack",
    }


def test_the_webhooks_refuse_a_bad_placement_group_annotation_naming_it():
    with pytest.raises(TopologyRequestError, match=PLACEMENT_GROUP_PARTITIONS) as caught:
        build_workload(JOB, job(grouped("²")))  # the Job webhook's check
    assert '"\\u00b2"' in str(caught.value)  # quoted as JSON: which character it is
    pod = {
        "metadata": {"name": "p", "namespace": "ns", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
        "spec": {"containers": [{"name": "c"}]},
    }
    pod["metadata"]["annotations"] = grouped("٣")
    [error] = pod_webhook.validate(pod)
    assert PLACEMENT_GROUP_PARTITIONS in error
    assert build_workload(JOB, job(grouped("3")))["spec"]["podSets"][0]["count"] == 2


def workload_with(annotations: dict[str, str]) -> dict:
    return {
        "metadata": {"name": "w", "namespace": "ns", "resourceVersion": "1"},
        "spec": {
            "queueName": "q",
            "podSets": [
                {"name": "main", "count": 2, "template": {"metadata": {"annotations": annotations}}}
            ],
        },
    }


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.text(max_size=12),
        st.text(alphabet=st.characters(categories=("Nd", "No")), min_size=1, max_size=6),
        st.integers(min_value=-(10**9), max_value=10**9).map(str),
    )
)
def test_any_partition_count_is_read_or_made_a_problem_on_the_workload(partitions):
    """A Workload made while the webhooks were away enters the cache whatever it holds; what
    cannot be read is the problem admission reports on it as a condition."""
    info = proj.workload_from_object(workload_with(grouped(partitions)))
    readable = partitions.isascii() and partitions.isdigit() and len(partitions) <= 3
    if readable and 1 <= int(partitions) <= PLACEMENT_GROUP_MAX_PARTITIONS:
        assert info.placement_group is not None and info.placement_group_error is None
        assert info.placement_group.spec.partitions == int(partitions)
        PlacementGroupSpec.model_validate(spec_to_object(info.placement_group.spec))
    else:
        assert info.placement_group is None
        assert PLACEMENT_GROUP_PARTITIONS in (info.placement_group_error or "")
