"""A Workload's node affinity (required and preferred) reaches the solver's PodSetRequest."""

from __future__ import annotations

from tas.cache.projections import workload_from_object
from tas.solver import NodeSelectorRequirement, NodeSelectorTerm, PreferredSchedulingTerm
from tas.solver.filters import matches_required_affinity

HOSTNAME = "kubernetes.io/hostname"


def _workload(pod_spec: dict) -> dict:
    return {
        "metadata": {"namespace": "ns", "name": "w"},
        "spec": {
            "queueName": "q",
            "podSets": [{"name": "main", "count": 2, "template": {"spec": pod_spec}}],
        },
    }


CONTAINERS = [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]


def test_preferred_terms_are_read_in_order_with_their_weights():
    preferred = [
        {
            "weight": 10,
            "preference": {
                "matchExpressions": [{"key": "region", "operator": "In", "values": ["west"]}]
            },
        },
        {"weight": 90, "preference": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}},
    ]
    spec = {
        "containers": CONTAINERS,
        "affinity": {
            "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}
        },
    }
    podset = workload_from_object(_workload(spec)).pod_sets[0]
    assert podset.preferred_affinity == (
        PreferredSchedulingTerm(
            10, NodeSelectorTerm((NodeSelectorRequirement("region", "In", ("west",)),))
        ),
        PreferredSchedulingTerm(90, NodeSelectorTerm((NodeSelectorRequirement("gpu", "Exists"),))),
    )


def test_no_affinity_is_no_term():
    assert (
        workload_from_object(_workload({"containers": CONTAINERS})).pod_sets[0].preferred_affinity
        == ()
    )


def test_a_term_without_weight_is_an_error_naming_the_pod_set():
    spec = {
        "containers": CONTAINERS,
        "affinity": {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [{"preference": {}}]
            }
        },
    }
    info = workload_from_object(_workload(spec))
    assert info.spec_error == (
        "spec.podSets[main]: affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
        "[0].weight: must be an integer, got None"
    )


def test_an_expression_without_an_operator_is_an_error_naming_it():
    preferred = [{"weight": 1, "preference": {"matchExpressions": [{"key": "gpu"}]}}]
    spec = {
        "containers": CONTAINERS,
        "affinity": {
            "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}
        },
    }
    assert workload_from_object(_workload(spec)).spec_error.endswith(
        "[0].preference.matchExpressions[0]: needs a key and an operator"
    )


def required(*terms: dict) -> dict:
    node_affinity = {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
    }
    return {"nodeAffinity": node_affinity}


def test_required_node_affinity_is_read_as_kueue_checks_it():
    """ORed terms, each its matchExpressions ANDed; matchFields on metadata.name name the
    node, read as its hostname label."""
    term = {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a", "b"]}]}
    by_name = {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["x1"]}]}
    (ps,) = workload_from_object(
        _workload({"containers": CONTAINERS, "affinity": required(term, by_name)})
    ).pod_sets
    assert ps.required_affinity == (
        NodeSelectorTerm((NodeSelectorRequirement("pool", "In", ("a", "b")),)),
        NodeSelectorTerm((NodeSelectorRequirement(HOSTNAME, "NotIn", ("x1",)),)),
    )
    assert matches_required_affinity({"pool": "a"}, ps.required_affinity)
    assert not matches_required_affinity({"pool": "c", HOSTNAME: "x1"}, ps.required_affinity)
    assert matches_required_affinity({"pool": "c", HOSTNAME: "x2"}, ps.required_affinity)


def test_a_malformed_required_term_names_its_field():
    bad = {"matchFields": [{"key": "metadata.labels", "operator": "In", "values": ["a"]}]}
    wl = workload_from_object(_workload({"containers": CONTAINERS, "affinity": required(bad)}))
    assert "nodeSelectorTerms[0].matchFields[0].key" in wl.spec_error
