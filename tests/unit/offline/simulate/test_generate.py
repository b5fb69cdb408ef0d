"""The trace generator: its traces parse, match their shape, and repeat per seed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tas.offline.simulate import generate
from tas.offline.simulate.trace import parse_trace

REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"


@pytest.mark.parametrize("shape", ["training", "inference", "mixed"])
def test_a_generated_trace_parses_with_its_nodes_and_workloads(shape):
    document = generate.trace(shape, seed=3, nodes=256, workloads=40)
    trace = parse_trace(json.loads(generate.dumps(document)))
    assert len(trace.scenario.nodes) == 256
    assert len(trace.workloads) == 40
    arrivals = [t.arrival for t in trace.workloads]
    assert arrivals == sorted(arrivals)
    assert all(t.duration and t.duration >= 60 for t in trace.workloads)


def test_the_same_seed_gives_the_same_trace_and_another_seed_another():
    assert generate.trace("mixed", 7, 640) == generate.trace("mixed", 7, 640)
    assert generate.trace("mixed", 7, 640) != generate.trace("mixed", 8, 640)


def test_training_is_long_gangs_in_a_rack_or_a_block():
    trace = parse_trace(generate.trace("training", 1, 5120, workloads=60))
    for traced in trace.workloads:
        (podset,) = traced.workload.podsets
        assert podset.count >= 4
        assert podset.topology.required or podset.topology.preferred
        assert traced.duration >= 1800


def test_inference_is_short_small_replicas_preferring_a_rack():
    trace = parse_trace(generate.trace("inference", 1, 64, workloads=60))
    for traced in trace.workloads:
        (podset,) = traced.workload.podsets
        assert podset.count <= 32
        assert podset.topology.preferred == generate.RACK
    durations = sorted(t.duration for t in trace.workloads)
    assert durations[len(durations) // 2] < 3600  # minutes, not hours


def test_groups_are_services_with_rack_affinity_ha_replicas_and_an_exclusive_tenant():
    document = generate.trace("groups", 1, 256, workloads=120)
    assert document["featureGates"] == {"TASPlacementGroups": True}
    trace = parse_trace(json.loads(generate.dumps(document)))
    given = {}  # group -> the index of the member giving its constraints
    for traced, entry in zip(trace.workloads, document["workloads"], strict=True):
        if traced.group is None:
            continue
        name = traced.group.name
        if isinstance(entry["group"], dict):
            given.setdefault(name, traced.index)
        assert given[name] <= traced.index  # the first member gives them
        spec = traced.group.spec
        if name.startswith("svc-"):
            assert spec.affinity_topology == generate.RACK
        elif name.startswith("ha-"):
            assert spec.anti_affinity_topology == generate.RACK
            assert traced.pods == 1
        else:
            assert (name, spec.exclusive_topology) == ("tenant", generate.BLOCK)
            assert traced.workload.podsets[0].topology.required == generate.RACK
    assert {name.split("-")[0] for name in given} == {"svc", "ha", "tenant"}


def test_a_saturating_load_brings_the_same_work_sooner():
    calm = generate.trace("training", 2, 640, workloads=50, load=0.5)
    busy = generate.trace("training", 2, 640, workloads=50, load=2.0)
    last = [max(w["arrival"] for w in t["workloads"]) for t in (calm, busy)]
    assert last[1] == pytest.approx(last[0] / 4, rel=0.01)
    assert [w["podSets"] for w in calm["workloads"]] == [w["podSets"] for w in busy["workloads"]]


def test_the_command_writes_the_trace(capsys):
    assert generate.main(["--shape", "inference", "--seed", "5", "--nodes", "64"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(json.dumps(generate.trace("inference", 5, 64)))


SHIPPED = sorted((Path(__file__).parents[4] / "examples" / "traces").glob("*.json"))


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_each_shipped_trace_is_what_its_generator_key_makes(path):
    text = path.read_text()
    made_by = json.loads(text)["generator"]
    assert text == generate.dumps(
        generate.trace(
            made_by["shape"],
            made_by["seed"],
            made_by["nodes"],
            made_by["workloads"],
            made_by["load"],
            movable=made_by.get("movable", False),
        )
    )
    assert path.stat().st_size < 200_000  # small enough to commit
