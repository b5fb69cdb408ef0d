"""TASPartialSlices and TASGroupedPodSetSlicing reach every path that validates annotations:
the process's gates (tas.features, activated by the operator at start) are what the annotation
parsing reads, a Job's and a LeaderWorkerSet's webhook and Workload follow them, and admission
refuses a sliced group in a Workload only while the gate is off."""

from __future__ import annotations

import pytest

from tas import features
from tas.admission.decide import decide
from tas.cache import projections as proj
from tas.integrations.job.controller import build_workload
from tas.integrations.leaderworkerset import webhook as lws_webhook
from tas.integrations.leaderworkerset import workload as L
from tas.solver.types import SolverOptions
from tests.unit.admission.fixtures import BLOCK, RACK, make_state, node, workload
from tests.unit.gates import gates
from tests.unit.integrations.builders import GROUP, QUEUE, REQUIRED, SLICE_SIZE, SLICE_TOPOLOGY
from tests.unit.integrations.builders import leader_and_workers as leaderworkerset

BOTH_ON = {"TASPartialSlices": True, "TASGroupedPodSetSlicing": True}


@pytest.mark.parametrize(
    ("values", "want"),
    [
        ({}, {"TASPartialSlices": False, "TASGroupedPodSetSlicing": False}),
        ({"TASMultiLayerTopology": "true"}, {"TASMultiLayerTopology": True}),
        ({"TASPartialSlices": "true"}, {"TASPartialSlices": True}),
        ({"TASGroupedPodSetSlicing": "true"}, {"TASGroupedPodSetSlicing": True}),
        (
            {"TASGroupedPodSetSlicing": "true", "TopologyAwareScheduling": "false"},
            {"TASGroupedPodSetSlicing": False},
        ),
    ],
    ids=[
        "defaults",
        "multi-layer on",
        "partial on",
        "grouped on",
        "grouped needs TopologyAwareScheduling",
    ],
)
def test_the_activated_gates_are_what_validation_reads(values, want) -> None:
    with features.activated(features.from_mapping(values)):
        got = {name: features.enabled(name) for name in want}
    assert got == want


def test_activated_gates_are_restored_after_the_block_even_when_it_fails() -> None:
    with gates(TASPartialSlices=True):
        with pytest.raises(RuntimeError), gates(TASPartialSlices=False):
            raise RuntimeError
        inner_restored = features.enabled("TASPartialSlices")
    assert (inner_restored, features.enabled("TASPartialSlices")) == (True, False)


def test_the_gates_become_solver_options() -> None:
    defaults = features.defaults().solver_options()
    assert (defaults.partial_slices, defaults.grouped_pod_set_slicing) == (False, False)
    on = features.from_mapping(
        {"TASPartialSlices": True, "TASGroupedPodSetSlicing": True}
    ).solver_options()
    assert (on.partial_slices, on.grouped_pod_set_slicing) == (True, True)


def sliced_job(parallelism: int, size: int) -> dict:
    annotations = {REQUIRED: BLOCK, SLICE_TOPOLOGY: RACK, SLICE_SIZE: str(size)}
    return {
        "metadata": {"name": "j", "namespace": "ns", "uid": "u1", "labels": {QUEUE: "q"}},
        "spec": {
            "parallelism": parallelism,
            "suspend": True,
            "template": {
                "metadata": {"annotations": annotations},
                "spec": {"containers": [{"name": "c"}]},
            },
        },
    }


def test_a_jobs_workload_leaves_a_partial_slice_only_with_the_gate() -> None:
    with pytest.raises(ValueError, match="must divide the pod set count 10"):
        build_workload(sliced_job(10, 4))
    with gates(TASPartialSlices=True):
        [podset] = build_workload(sliced_job(10, 4))["spec"]["podSets"]
    assert podset["count"] == 10
    assert podset["topologyRequest"]["podSetSliceSize"] == 4


def lws_with_sliced_workers() -> dict:
    """16 pods per group: the leader, and 15 workers in rack slices of 4."""
    group = {REQUIRED: BLOCK, GROUP: "lws"}
    return leaderworkerset(
        size=16,
        leader_annotations=group,
        worker_annotations={**group, SLICE_TOPOLOGY: RACK, SLICE_SIZE: "4"},
    )


def test_the_lws_webhook_follows_the_gates() -> None:
    [error] = lws_webhook.validate(lws_with_sliced_workers())
    assert "workerTemplate.metadata.annotations" in error
    assert f'may not be set together with "{SLICE_SIZE}"' in error
    with gates(TASGroupedPodSetSlicing=True):
        [error] = lws_webhook.validate(lws_with_sliced_workers())
    assert "must divide the pod set count 15" in error
    with gates(**BOTH_ON):
        assert lws_webhook.validate(lws_with_sliced_workers()) == []


def test_the_lws_workload_carries_the_sliced_workers() -> None:
    with gates(**BOTH_ON):
        leader, workers = L.group_workload(lws_with_sliced_workers(), 0)["spec"]["podSets"]
    assert (leader["count"], workers["count"]) == (1, 15)
    assert workers["topologyRequest"]["podSetGroupName"] == "lws"
    assert workers["topologyRequest"]["podSetSliceSize"] == 4


def grouped_sliced_workload() -> proj.WorkloadInfo:
    """A Workload made by hand: a leader, and 6 workers in rack slices of 2, one group."""
    obj = workload("lws", pods=6)
    [workers] = obj["spec"]["podSets"]
    group = {"required": BLOCK, "podSetGroupName": "g"}
    workers["name"] = "workers"
    workers["topologyRequest"] = {
        **group,
        "podSetSliceRequiredTopology": RACK,
        "podSetSliceSize": 2,
    }
    leader = {**workers, "name": "leader", "count": 1, "topologyRequest": group}
    obj["spec"]["podSets"] = [leader, workers]
    return proj.workload_from_object(obj)


@pytest.mark.parametrize("on", [False, True], ids=["gate off", "gate on"])
def test_admission_refuses_a_sliced_group_only_with_the_gate_off(on: bool) -> None:
    state = make_state([node(f"h{i}", "b1", f"r{i // 2}") for i in range(4)])
    state.options = SolverOptions(grouped_pod_set_slicing=on)
    with gates(TASGroupedPodSetSlicing=on):
        decision = decide(state, grouped_sliced_workload(), state.cluster_queues["cq"])
    if on:
        assert decision.admitted, decision.message
    else:
        assert decision.invalid and not decision.admitted
        assert decision.message == (
            'annotation "kueue.x-k8s.io/podset-group-name": "g" may not be used with slices'
        )
