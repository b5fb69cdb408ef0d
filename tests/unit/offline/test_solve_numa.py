"""`tas solve` with NUMA zones: nodes[].numa and podSets[].containers (gate TASNUMAZones)."""

from __future__ import annotations

import copy

import pytest

from tas.offline.fields import ScenarioError
from tas.offline.reader import parse_scenario
from tas.offline.scenario import solve

RACK = "example.com/rack"


def document(gate: bool = True) -> dict:
    def node(name: str) -> dict:
        return {
            "name": name,
            "labels": {RACK: "r1", "kubernetes.io/hostname": name},
            "allocatable": {"cpu": "32", "memory": "64Gi"},
            "numa": {
                "scope": "container",
                "zones": [
                    {"name": "node-0", "available": {"cpu": "4"}},
                    {"name": "node-1", "available": {"cpu": "4"}},
                ],
            },
        }

    def job(name: str, count: int, resources: dict) -> dict:
        return {
            "name": name,
            "podSets": [
                {
                    "name": "main",
                    "count": count,
                    "annotations": {"kueue.x-k8s.io/podset-required-topology": RACK},
                    "containers": [{"name": "main", "resources": resources}],
                }
            ],
        }

    guaranteed = {"limits": {"cpu": "3", "memory": "1Gi"}}
    return {
        "topology": {"levels": [{"nodeLabel": RACK}, {"nodeLabel": "kubernetes.io/hostname"}]},
        "featureGates": {"TASNUMAZones": gate},
        "nodes": [node("h0"), node("h1")],
        "workloads": [
            job("fits", 4, guaranteed),
            job("no-zone-left", 1, guaranteed),
            job("burstable", 1, {"requests": {"cpu": "3", "memory": "1Gi"}}),
        ],
    }


def results(doc: dict) -> list[dict]:
    return solve(parse_scenario(doc))["workloads"]


def test_zones_place_one_pod_per_zone_and_refuse_what_they_cannot_hold() -> None:
    fits, no_zone, burstable = results(document())
    assert fits["admitted"]
    assert fits["podSets"][0]["numaZones"] == {
        "h0": [["node-0"], ["node-1"]],
        "h1": [["node-0"], ["node-1"]],
    }
    assert not no_zone["admitted"]
    assert "NUMA zones" in no_zone["message"]
    assert burstable["admitted"] and "numaZones" not in burstable["podSets"][0]


def test_with_the_gate_off_zones_are_read_and_ignored() -> None:
    off = results(document(gate=False))
    without = copy.deepcopy(document(gate=False))
    for node in without["nodes"]:
        del node["numa"]
    assert off == results(without)
    assert all(w["admitted"] for w in off)  # node totals hold them all


def test_containers_give_the_requests_when_requests_are_absent() -> None:
    scenario = parse_scenario(document())
    podset = scenario.workloads[0].podsets[0]
    assert podset.requests == {"cpu": 3000, "memory": 1024**3 * 1000}
    assert podset.numa is not None and podset.numa.names == ("main",)


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda d: d["nodes"][0]["numa"].update(scope="socket"), "nodes[0].numa.scope"),
        (lambda d: d["nodes"][0]["numa"].update(zones=[]), "nodes[0].numa.zones"),
        (
            lambda d: d["nodes"][1]["numa"]["zones"][1].update(name="node-0"),
            "nodes[1].numa.zones[1].name",
        ),
        (
            lambda d: d["nodes"][0]["numa"]["zones"][0].update(available={"cpu": "x"}),
            "nodes[0].numa.zones[0].available",
        ),
        (
            lambda d: d["workloads"][0]["podSets"][0].update(containers=[]),
            "workloads[0].podSets[0].containers",
        ),
        (
            lambda d: d["workloads"][0]["podSets"][0]["containers"][0].update(
                resources={"limits": {"cpu": "-1"}}
            ),
            "workloads[0].podSets[0].containers[0].resources.limits",
        ),
    ],
)
def test_a_bad_numa_field_is_named(change, path: str) -> None:
    doc = document()
    change(doc)
    with pytest.raises(ScenarioError) as error:
        parse_scenario(doc)
    assert str(error.value).startswith(path), str(error.value)
