"""Conversion between v1beta1 and v1beta2, as Kueue's conversion functions do it: every field
that differs, round trips that lose nothing, Kueue's deliberate losses, and the
ConversionReview the API server sends."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.api import conversion
from tas.api.conversion import V1BETA1, V1BETA2, ConversionError, convert, review
from tas.api.models import (
    ClusterQueue,
    Cohort,
    LocalQueue,
    ResourceFlavor,
    Topology,
    Workload,
    WorkloadPriorityClass,
    v1beta1,
)
from tests.unit.api.kueue_objects import (
    cluster_queues,
    flavors,
    local_queues,
    topologies,
    workloads,
)

KINDS = {
    "Topology": (Topology, topologies()),
    "ResourceFlavor": (ResourceFlavor, flavors()),
    "ClusterQueue": (ClusterQueue, cluster_queues()),
    "LocalQueue": (LocalQueue, local_queues()),
    "Workload": (Workload, workloads()),
}


def schema_valid(obj: dict[str, Any], model: type) -> None:
    """The object is what that version's CRD schema accepts (the models mirror it)."""
    version = obj["apiVersion"].rsplit("/", 1)[1]
    if version == "v1beta1":
        model = v1beta1.MODELS.get(model, model)
    model.model_validate(obj)


# --- round trips ------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", sorted(KINDS))
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_v1beta1_to_v1beta2_and_back_is_the_identity(kind: str, data: st.DataObject) -> None:
    model, docs = KINDS[kind]
    doc = data.draw(docs)
    doc["apiVersion"] = V1BETA1  # (topologies may come as v1alpha1)
    before = copy.deepcopy(doc)
    stored = convert(doc, V1BETA2)
    assert doc == before, "the input is left alone"
    assert stored["apiVersion"] == V1BETA2
    schema_valid(stored, model)
    back = convert(stored, V1BETA1)
    assert back == doc
    schema_valid(back, model)


@pytest.mark.parametrize("kind", sorted(KINDS))
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_v1beta2_to_v1beta1_and_back_is_the_identity(kind: str, data: st.DataObject) -> None:
    """On v1beta2 objects as we and Kueue write them (the assignment in the canonical
    encoding)."""
    _, docs = KINDS[kind]
    doc = data.draw(docs)
    doc["apiVersion"] = V1BETA1
    stored = convert(doc, V1BETA2)
    assert convert(convert(stored, V1BETA1), V1BETA2) == stored


@settings(max_examples=40, deadline=None)
@given(doc=topologies())
def test_topology_v1alpha1_converts_to_every_version(doc: dict[str, Any]) -> None:
    for version in (f"{conversion.GROUP}/v1alpha1", V1BETA1, V1BETA2):
        out = convert(doc, version)
        assert out == {**doc, "apiVersion": version}


def test_same_version_is_a_copy() -> None:
    obj = {"apiVersion": V1BETA2, "kind": "Workload", "spec": {"podSets": []}}
    out = convert(obj, V1BETA2)
    assert out == obj and out is not obj and out["spec"] is not obj["spec"]


def test_kinds_without_differences_change_only_apiversion() -> None:
    for kind, model in (("Cohort", Cohort), ("WorkloadPriorityClass", WorkloadPriorityClass)):
        obj = {"apiVersion": V1BETA1, "kind": kind, "metadata": {"name": "x"}}
        if kind == "WorkloadPriorityClass":
            obj["value"] = 5
        out = convert(obj, V1BETA2)
        assert out == {**obj, "apiVersion": V1BETA2}
        model.model_validate(out)


# --- field by field ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("source", "ref"),
    [
        (
            "kueue.x-k8s.io/workloadpriorityclass",
            {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"},
        ),
        (
            "scheduling.k8s.io/priorityclass",
            {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "high"},
        ),
    ],
    ids=["workload-priority-class", "priority-class"],
)
def test_priority_class(source: str, ref: dict[str, str]) -> None:
    old = {
        "apiVersion": V1BETA1,
        "kind": "Workload",
        "spec": {"priority": 7, "priorityClassName": "high", "priorityClassSource": source},
    }
    new = convert(old, V1BETA2)
    assert new["spec"] == {"priority": 7, "priorityClassRef": ref}
    assert convert(new, V1BETA1) == old


def test_priority_class_without_a_known_source_is_dropped_as_kueue_does() -> None:
    for source in ({}, {"priorityClassSource": ""}):
        old = {
            "apiVersion": V1BETA1,
            "kind": "Workload",
            "spec": {"priority": 7, "priorityClassName": "high", **source},
        }
        assert convert(old, V1BETA2)["spec"] == {"priority": 7}


def test_cluster_queue_cohort_and_old_fungibility_names() -> None:
    old = {
        "apiVersion": V1BETA1,
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": {
            "cohort": "team",
            "flavorFungibility": {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"},
        },
    }
    new = convert(old, V1BETA2)
    assert new["spec"] == {
        "cohortName": "team",
        # Kueue's deprecated names become their v1beta2 meaning and stay so.
        "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"},
    }
    ClusterQueue.model_validate(new)
    assert convert(new, V1BETA1)["spec"]["cohort"] == "team"
    assert "cohortName" not in convert(new, V1BETA1)["spec"]


def test_local_queue_usage_field_name() -> None:
    usage = [{"name": "f", "resources": [{"name": "cpu", "total": "3"}]}]
    old = {"apiVersion": V1BETA1, "kind": "LocalQueue", "status": {"flavorUsage": usage}}
    new = convert(old, V1BETA2)
    assert new["status"] == {"flavorsUsage": usage}
    assert convert(new, V1BETA1) == old


def test_topology_assignment_domains_and_slices() -> None:
    old = {
        "apiVersion": V1BETA1,
        "kind": "Workload",
        "status": {
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [
                    {"name": "no-topology", "count": 2},
                    {
                        "name": "main",
                        "topologyAssignment": {
                            "levels": ["kubernetes.io/hostname"],
                            "domains": [
                                {"values": ["node-1"], "count": 4},
                                {"values": ["node-2"], "count": 4},
                                {"values": ["node-3"], "count": 4},
                            ],
                        },
                    },
                ],
            }
        },
    }
    new = convert(old, V1BETA2)
    first, second = new["status"]["admission"]["podSetAssignments"]
    assert first == {"name": "no-topology", "count": 2}
    ta = second["topologyAssignment"]
    assert "domains" not in ta and ta["levels"] == ["kubernetes.io/hostname"]
    (one,) = ta["slices"]
    assert one["domainCount"] == 3 and one["podCounts"] == {"universal": 4}
    assert convert(new, V1BETA1) == old


# --- errors: a clear message, nothing half-converted ---------------------------------------------
@pytest.mark.parametrize(
    ("obj", "version", "message"),
    [
        ({"apiVersion": "kueue.x-k8s.io/v2", "kind": "Workload"}, V1BETA2, "apiVersion"),
        ({"apiVersion": V1BETA1, "kind": "Workload"}, "batch/v1", "desiredAPIVersion"),
        ("a string", V1BETA2, "object"),
        (
            {
                "apiVersion": V1BETA2,
                "kind": "Workload",
                "status": {
                    "admission": {
                        "podSetAssignments": [
                            {"name": "m", "topologyAssignment": {"levels": ["h"], "slices": 3}}
                        ]
                    }
                },
            },
            V1BETA1,
            "status.admission.podSetAssignments[0].topologyAssignment",
        ),
    ],
    ids=["unknown-source", "unknown-target", "not-an-object", "bad-assignment"],
)
def test_refused_with_the_field_named(obj: Any, version: str, message: str) -> None:
    with pytest.raises(ConversionError, match=message.replace("[", r"\[").replace("]", r"\]")):
        convert(obj, version)


# --- the ConversionReview -----------------------------------------------------------------------
def conversion_review(objects: list, desired: str = V1BETA2) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "u-1", "desiredAPIVersion": desired, "objects": objects},
    }


def test_review_converts_every_object() -> None:
    objects = [
        {"apiVersion": V1BETA1, "kind": "LocalQueue", "metadata": {"name": f"q{i}"}}
        for i in range(3)
    ]
    answer = review(conversion_review(objects))
    assert answer["apiVersion"] == "apiextensions.k8s.io/v1"
    assert answer["kind"] == "ConversionReview"
    response = answer["response"]
    assert response["uid"] == "u-1" and response["result"] == {"status": "Success"}
    assert [o["apiVersion"] for o in response["convertedObjects"]] == [V1BETA2] * 3
    assert [o["metadata"]["name"] for o in response["convertedObjects"]] == ["q0", "q1", "q2"]


def test_review_failure_names_the_object_and_converts_nothing() -> None:
    bad = {"apiVersion": "x/v1", "kind": "LocalQueue", "metadata": {"name": "b", "namespace": "n"}}
    good = {"apiVersion": V1BETA1, "kind": "LocalQueue", "metadata": {"name": "a"}}
    response = review(conversion_review([good, bad]))["response"]
    assert response["result"]["status"] == "Failure"
    assert "objects[1] (LocalQueue n/b)" in response["result"]["message"]
    assert "convertedObjects" not in response


@pytest.mark.parametrize(
    "body",
    [{}, {"request": "x"}, {"request": {"objects": "x"}}, "nonsense"],
    ids=["empty", "request-not-object", "objects-not-list", "not-an-object"],
)
def test_review_of_a_malformed_body(body: Any) -> None:
    try:
        answer = review(body)
    except ConversionError:
        return  # no request to answer: the server says 400
    assert answer["response"]["result"]["status"] == "Failure"
