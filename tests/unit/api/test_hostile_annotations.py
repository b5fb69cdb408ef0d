"""Hostile annotations: every input is a TopologyRequestError naming the annotation, or a
request; never another exception, and never a message that echoes unbounded input."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tas.api.annotations import TopologyRequestError, parse_topology_request
from tas.api.constants import (
    PODSET_GROUP_NAME,
    PODSET_PREFERRED_TOPOLOGY,
    PODSET_REQUIRED_TOPOLOGY,
    PODSET_SLICE_REQUIRED_TOPOLOGY,
    PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS,
    PODSET_SLICE_SIZE,
    PODSET_UNCONSTRAINED_TOPOLOGY,
)
from tests.unit.gates import gates

KEYS = [
    PODSET_REQUIRED_TOPOLOGY,
    PODSET_PREFERRED_TOPOLOGY,
    PODSET_UNCONSTRAINED_TOPOLOGY,
    PODSET_SLICE_REQUIRED_TOPOLOGY,
    PODSET_SLICE_SIZE,
    PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS,
    PODSET_GROUP_NAME,
]
MAX_MESSAGE = 2_000

nasty_text = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        ["", " ", "0", "-1", "1e3", "+2", "٣", "\uff11", "²", "true", "rack", "a/b", "/x"]
    ),
    st.integers(4_000, 6_000).map(lambda n: "9" * n),  # past Python's int() digit limit
    st.integers(1_000, 300_000).map(lambda n: "x" * n),  # huge, to be echoed
    st.integers(100, 5_000).map(lambda n: "[" * n + "]" * n),  # deep JSON
    st.integers(100, 5_000).map(lambda n: '{"a":' * n + "1" + "}" * n),
    st.just(json.dumps([{"topology": "rack", "size": 10**30}])),
    st.just(json.dumps([{"topology": "rack", "size": "4"}, {"topology": "host", "size": 2}])),
    st.just(json.dumps([{"topology": "", "size": 2}])),
)


def check(annotations, count):
    try:
        with gates(TASMultiLayerTopology=True):
            parse_topology_request(annotations, count)
    except TopologyRequestError as exc:
        assert exc.annotation in KEYS
        assert len(str(exc)) <= MAX_MESSAGE, len(str(exc))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(KEYS), nasty_text, max_size=4), st.integers(0, 2**31))
def test_any_annotations_give_a_request_or_a_clear_error(annotations, count):
    check(annotations, count)


def test_the_known_crashes():
    big = "9" * 5_000
    for annotations in (
        {PODSET_REQUIRED_TOPOLOGY: "rack", PODSET_GROUP_NAME: big},
        {PODSET_SLICE_REQUIRED_TOPOLOGY: "rack", PODSET_SLICE_SIZE: big},
        {PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS: "[" * 100_000 + "]" * 100_000},
        {PODSET_REQUIRED_TOPOLOGY: "x" * 300_000},
    ):
        check(annotations, 4)


def test_non_ascii_digits_are_not_a_slice_size():
    for digits in ("٣", "\uff11", "²", "3\u0663"):
        try:
            parse_topology_request(
                {PODSET_SLICE_REQUIRED_TOPOLOGY: "rack", PODSET_SLICE_SIZE: digits}, 8
            )
        except TopologyRequestError as exc:
            assert exc.annotation == PODSET_SLICE_SIZE
        else:
            raise AssertionError(f"{digits!r} accepted as a slice size")


def test_an_empty_group_name_is_refused_not_dropped():
    try:
        parse_topology_request({PODSET_REQUIRED_TOPOLOGY: "rack", PODSET_GROUP_NAME: ""}, 2)
    except TopologyRequestError as exc:
        assert exc.annotation == PODSET_GROUP_NAME
    else:
        raise AssertionError("empty group name accepted")


# ---- the validating webhook's path: a whole Job, shaped as the API server lets it through -----

int32 = st.integers(0, 2**31 - 1)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(st.sampled_from(KEYS), nasty_text, max_size=4),
    st.none() | int32,
    st.none() | int32,
    st.sampled_from(["NonIndexed", "Indexed", None]),
)
def test_the_webhooks_job_check_refuses_cleanly(annotations, parallelism, completions, mode):
    from tas.integrations.job.controller import build_workload

    spec = {
        "template": {
            "metadata": {"annotations": annotations},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
        }
    }
    for key, value in (("parallelism", parallelism), ("completions", completions)):
        if value is not None:
            spec[key] = value
    if mode:
        spec["completionMode"] = mode
    job = {
        "metadata": {
            "name": "j",
            "namespace": "ns",
            "uid": "u",
            "labels": {"kueue.x-k8s.io/queue-name": "q"},
        },
        "spec": spec,
    }
    try:
        with gates(TASMultiLayerTopology=True):
            build_workload(job)
    except TopologyRequestError as exc:
        assert len(str(exc)) <= MAX_MESSAGE
