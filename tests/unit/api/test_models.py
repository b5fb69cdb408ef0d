"""The CRD models: Kueue's field names and JSON shapes, defaults, parsing and round trips."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from tas.api import conversion
from tas.api.constants import BEST_EFFORT_FIFO, HOSTNAME_LABEL
from tas.api.models import ClusterQueue, LocalQueue, ResourceFlavor, Topology, Workload, v1beta1
from tas.api.models.common import ObjectMeta
from tests.unit.api.kueue_objects import (
    cluster_queues,
    flavors,
    local_queues,
    topologies,
    workloads,
)
from tests.workloads import admitted_workload

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "kueue-tas"


def load(name: str) -> dict[str, Any]:
    return yaml.safe_load((EXAMPLES / name).read_text())


def is_contained(given: Any, dumped: Any) -> bool:
    """Every key and value of `given` is in `dumped` (which may add defaults)."""
    if isinstance(given, dict):
        return isinstance(dumped, dict) and all(
            k in dumped and is_contained(v, dumped[k]) for k, v in given.items()
        )
    if isinstance(given, list):
        return (
            isinstance(dumped, list)
            and len(given) == len(dumped)
            and all(is_contained(a, b) for a, b in zip(given, dumped, strict=True))
        )
    return given == dumped and type(given) is type(dumped)


# --- Kueue's documented TAS examples ------------------------------------------------------------
@pytest.mark.parametrize(
    ("file", "model"),
    [
        ("topology.yaml", Topology),
        ("resource-flavor.yaml", ResourceFlavor),
        ("cluster-queue.yaml", ClusterQueue),
        ("local-queue.yaml", LocalQueue),
    ],
)
def test_seed_examples_parse_and_dump_back(file: str, model: type) -> None:
    doc = load(file)
    obj = model.model_validate(doc)
    assert is_contained(doc, obj.to_kube())


def test_seed_topology_levels() -> None:
    topo = Topology.model_validate(load("topology.yaml"))
    assert topo.api_version == "kueue.x-k8s.io/v1alpha1"
    assert topo.name == "default"
    assert topo.spec.node_labels == [
        "cloud.provider.com/topology-block",
        "cloud.provider.com/topology-rack",
        HOSTNAME_LABEL,
    ]


def test_seed_cluster_queue_fields() -> None:
    cq = ClusterQueue.model_validate(load("cluster-queue.yaml"))
    group = cq.spec.resource_groups[0]
    assert group.covered_resources == ["cpu", "memory"]
    quotas = {r.name: r.nominal_quota for r in group.flavors[0].resources}
    assert quotas == {"cpu": 100, "memory": "100Gi"}  # kept as written
    assert cq.spec.queueing_strategy == BEST_EFFORT_FIFO
    # {} selects every namespace; it must not turn into "absent" (which selects none).
    assert cq.spec.namespace_selector is not None
    assert cq.to_kube()["spec"]["namespaceSelector"] == {}


def test_seed_flavor_and_local_queue() -> None:
    rf = ResourceFlavor.model_validate(load("resource-flavor.yaml"))
    assert rf.spec.topology_name == "default"
    assert rf.spec.node_labels == {"cloud.provider.com/node-group": "tas-group"}
    lq = LocalQueue.model_validate(load("local-queue.yaml"))
    assert (lq.namespace, lq.spec.cluster_queue) == ("default", "tas-cluster-queue")


# --- defaults -------------------------------------------------------------------------------------
def test_defaults() -> None:
    cq = ClusterQueue.model_validate({"metadata": {"name": "cq"}})
    assert cq.spec.queueing_strategy == "BestEffortFIFO"
    assert cq.spec.namespace_selector is None
    assert cq.status.pending_workloads == cq.status.admitted_workloads == 0
    wl = Workload.model_validate({"spec": {"podSets": [{"template": {}}]}})
    assert (wl.spec.pod_sets[0].name, wl.spec.pod_sets[0].count) == ("main", 1)
    assert wl.api_version == "kueue.x-k8s.io/v1beta2" and wl.kind == "Workload"
    old = v1beta1.Workload.model_validate({"spec": {"podSets": [{"template": {}}]}})
    assert old.api_version == "kueue.x-k8s.io/v1beta1"
    assert wl.status.admission is None and not wl.admitted


def test_snake_case_and_camel_case_both_accepted() -> None:
    a = ResourceFlavor.model_validate({"spec": {"topologyName": "t", "nodeLabels": {"a": "b"}}})
    b = ResourceFlavor.model_validate({"spec": {"topology_name": "t", "node_labels": {"a": "b"}}})
    assert a == b


def test_unknown_fields_ignored_but_metadata_kept() -> None:
    doc = {
        "metadata": {"name": "x", "managedFields": [{"manager": "kubectl"}]},
        "spec": {"clusterQueue": "cq", "stopPolicy": "None"},
    }
    lq = LocalQueue.model_validate(doc)
    out = lq.to_kube()
    assert "stopPolicy" not in out["spec"]
    assert out["metadata"]["managedFields"] == [{"manager": "kubectl"}]


# --- validation mirrors the CRD ---------------------------------------------------------------
def topology(*labels: str) -> dict[str, Any]:
    return {"metadata": {"name": "t"}, "spec": {"levels": [{"nodeLabel": x} for x in labels]}}


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        ((), "at least 1 item"),
        (tuple(f"example.com/l{i}" for i in range(17)), "at most 16 items"),
        (("rack", "rack"), "must be unique"),
        ((HOSTNAME_LABEL, "rack"), "can only be the lowest"),
        (("Not A Label",), "should match pattern"),
    ],
    ids=["empty", "17-levels", "duplicate", "hostname-not-lowest", "bad-label"],
)
def test_invalid_topology(labels: tuple[str, ...], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Topology.model_validate(topology(*labels))


def test_sixteen_levels_with_hostname_last_is_valid() -> None:
    labels = [f"example.com/l{i}" for i in range(15)] + [HOSTNAME_LABEL]
    assert len(Topology.model_validate(topology(*labels)).spec.levels) == 16


def test_flavor_with_topology_needs_node_labels() -> None:
    with pytest.raises(ValidationError, match="at least one entry in nodeLabels"):
        ResourceFlavor.model_validate({"spec": {"topologyName": "default"}})
    with pytest.raises(ValidationError):
        ResourceFlavor.model_validate({"spec": {"topologyName": "Not_DNS"}})


@pytest.mark.parametrize("quota", [1, 0, "1", "100Gi", "500m", "1.5", "1e3"])
def test_quantity_kept_as_written(quota: int | str) -> None:
    cq = ClusterQueue.model_validate(
        {
            "spec": {
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [
                            {"name": "f", "resources": [{"name": "cpu", "nominalQuota": quota}]}
                        ],
                    }
                ]
            }
        }
    )
    dumped = cq.to_kube()["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    assert dumped["nominalQuota"] == quota and type(dumped["nominalQuota"]) is type(quota)


@pytest.mark.parametrize("quota", [-1, "-1", "-100Gi"])
def test_negative_quota_refused(quota: int | str) -> None:
    flavor = {"name": "f", "resources": [{"name": "cpu", "nominalQuota": quota}]}
    with pytest.raises(ValidationError):
        ClusterQueue.model_validate(
            {"spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [flavor]}]}}
        )


@pytest.mark.parametrize("bad", ["lots", "1 Gi", "", "Gi"])
def test_bad_quantity_refused(bad: str) -> None:
    with pytest.raises(ValidationError):
        Workload.model_validate(
            {
                "spec": {"podSets": [{"template": {}}]},
                "status": {
                    "admission": {
                        "clusterQueue": "cq",
                        "podSetAssignments": [{"name": "main", "resourceUsage": {"cpu": bad}}],
                    }
                },
            }
        )


@pytest.mark.parametrize(
    "podset",
    [
        {"template": {}, "count": -1},
        {"template": {}, "count": 2, "minCount": 0},
        {"template": {}, "name": "Main"},
        {"template": {}, "topologyRequest": {"podSetSliceSize": 0}},
        {"count": 1},
    ],
    ids=["negative-count", "zero-min-count", "uppercase-name", "zero-slice-size", "no-template"],
)
def test_invalid_podset(podset: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Workload.model_validate({"spec": {"podSets": [podset]}})


def test_workload_needs_a_podset() -> None:
    with pytest.raises(ValidationError):
        Workload.model_validate({"spec": {"podSets": []}})


def test_topology_assignment_values_match_levels() -> None:
    with pytest.raises(ValidationError, match="2 values for 1 levels"):
        v1beta1.TopologyAssignment.model_validate(
            {"levels": [HOSTNAME_LABEL], "domains": [{"values": ["a", "b"], "count": 1}]}
        )
    with pytest.raises(ValidationError):
        v1beta1.TopologyAssignment.model_validate(
            {"levels": [HOSTNAME_LABEL], "domains": [{"values": ["a"], "count": 0}]}
        )


# --- a full Workload, Kueue-shaped ------------------------------------------------------------
ADMITTED_WORKLOAD = admitted_workload()


def test_admitted_workload_round_trips_exactly() -> None:
    wl = v1beta1.Workload.model_validate(ADMITTED_WORKLOAD)
    assert wl.to_kube() == ADMITTED_WORKLOAD
    assert wl.quota_reserved and wl.admitted and not wl.finished
    assignment = wl.status.admission.pod_set_assignments[0].topology_assignment
    assert [(d.values, d.count) for d in assignment.domains] == [(["node-1"], 4), (["node-2"], 2)]
    request = wl.spec.pod_sets[0].topology_request
    assert [(x.topology, x.size) for x in request.podset_slice_required_topology_constraints] == [
        ("cloud.provider.com/topology-rack", 6),
        (HOSTNAME_LABEL, 2),
    ]
    assert wl.status.requeue_state.requeue_at == datetime(2026, 11, 21, 9, 59, tzinfo=UTC)


def test_admitted_workload_in_v1beta2_round_trips_exactly() -> None:
    stored = conversion.convert(ADMITTED_WORKLOAD, conversion.V1BETA2)
    wl = Workload.model_validate(stored)
    assert wl.to_kube() == stored
    assert wl.quota_reserved and wl.admitted and not wl.finished
    (assigned,) = wl.status.admission.pod_set_assignments[0].topology_assignment.slices
    assert assigned.domain_count == 2
    assert assigned.pod_counts.individual == [4, 2]


def test_times_are_rfc3339_utc_seconds() -> None:
    meta = ObjectMeta(creation_timestamp=datetime(2026, 1, 2, 3, 4, 5, 678, tzinfo=UTC))
    assert meta.to_kube() == {"creationTimestamp": "2026-01-02T03:04:05Z"}
    naive = ObjectMeta.model_validate({"creationTimestamp": "2026-01-02T03:04:05"})
    assert naive.to_kube()["creationTimestamp"] == "2026-01-02T03:04:05Z"


def test_dump_is_json_serialisable_and_camel_case() -> None:
    text = json.dumps(v1beta1.Workload.model_validate(ADMITTED_WORKLOAD).to_kube())
    for key in ("podSets", "topologyRequest", "podSetAssignments", "topologyAssignment"):
        assert f'"{key}"' in text
    assert "_" not in "".join(k for k in json.loads(text)["spec"]["podSets"][0])


# --- hypothesis: Kueue-shaped JSON -> model -> JSON, and model -> JSON -> model ---------------
ROUND_TRIPS = [
    (Topology, topologies()),
    (ResourceFlavor, flavors()),
    (ClusterQueue, cluster_queues()),
    (LocalQueue, local_queues()),
    (Workload, workloads()),
]


@pytest.mark.parametrize(("model", "docs"), ROUND_TRIPS, ids=[m.__name__ for m, _ in ROUND_TRIPS])
@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_round_trip(
    model: type, docs: st.SearchStrategy, version: str, data: st.DataObject
) -> None:
    """Each version's documents through that version's model (v1beta2's are the v1beta1
    documents converted)."""
    doc = data.draw(docs)
    if version == "v1beta1":
        model = v1beta1.MODELS.get(model, model)
    else:
        doc = conversion.convert(doc, conversion.V1BETA2)
    obj = model.model_validate(doc)
    dumped = obj.to_kube()
    # JSON -> model -> JSON keeps every field as Kueue spells it (defaults may be added) ...
    assert is_contained(doc, dumped)
    # ... and model -> JSON -> model is the identity, also through a JSON string.
    assert model.model_validate(dumped) == obj
    assert model.model_validate_json(json.dumps(dumped)) == obj
