"""`tas solve FILE` as a user runs it: a subprocess on scenario files (docs/reference/scenario-format.md)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

TAS = Path(sys.executable).with_name("tas")
BLOCK = "cloud.provider.com/topology-block"
RACK = "cloud.provider.com/topology-rack"
HOST = "kubernetes.io/hostname"
PREFIX = "kueue.x-k8s.io/"


def node(name: str, block: str, rack: str, cpu: str = "2", **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "labels": {BLOCK: block, RACK: rack, HOST: name},
        "allocatable": {"cpu": cpu, "memory": "4Gi", "pods": 10},
        **extra,
    }


def base_scenario() -> dict[str, Any]:
    """Two racks of two 2-cpu nodes in one block; x1 already has 600m taken."""
    return {
        "topology": {"levels": [{"nodeLabel": BLOCK}, {"nodeLabel": RACK}, {"nodeLabel": HOST}]},
        "nodes": [
            node("x1", "b1", "r1", usage={"cpu": "600m", "pods": 1}),
            node("x2", "b1", "r1"),
            node("x3", "b1", "r2"),
            node("x4", "b1", "r2"),
        ],
        "workloads": [
            {
                "name": "w1",
                "podSets": [
                    {
                        "name": "main",
                        "count": 3,
                        "requests": {"cpu": "1"},
                        "annotations": {PREFIX + "podset-required-topology": RACK},
                    }
                ],
            }
        ],
    }


def run(
    tmp_path: Path, document: Any, suffix: str = ".yaml", *flags: str
) -> subprocess.CompletedProcess[str]:
    path = tmp_path / f"scenario{suffix}"
    if isinstance(document, str):
        path.write_text(document)
    elif suffix == ".json":
        path.write_text(json.dumps(document))
    else:
        path.write_text(yaml.safe_dump(document))
    return subprocess.run(
        [str(TAS), "solve", *flags, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def solved(tmp_path: Path, document: Any, suffix: str = ".yaml") -> list[dict[str, Any]]:
    result = run(tmp_path, document, suffix)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return json.loads(result.stdout)["workloads"]


def assert_malformed(result: subprocess.CompletedProcess[str], *fragments: str) -> str:
    assert result.returncode != 0
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0]
    return lines[0]


# --- placement (needs the solver) -------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_required_rack_lands_in_one_rack_with_the_documented_shape(
    tmp_path: Path, suffix: str
) -> None:
    [workload] = solved(tmp_path, base_scenario(), suffix)
    assert workload["name"] == "w1"
    assert workload["admitted"] is True
    [podset] = workload["podSets"]
    assert podset["name"] == "main"
    assert podset["count"] == 3
    # x1 has 1.4 cpu left (1 pod), x2 2 pods: rack r1 holds 3, rack r2 holds 4. BestFit takes
    # the tightest rack that fits all 3 pods: r1.
    assert podset["topologyAssignment"] == {
        "levels": [HOST],
        "domains": [{"values": ["x1"], "count": 1}, {"values": ["x2"], "count": 2}],
    }


def test_admitted_workload_keeps_its_capacity_and_a_non_fit_explains_in_numbers(
    tmp_path: Path,
) -> None:
    scenario = base_scenario()
    scenario["workloads"][0]["podSets"][0]["count"] = 4  # fills rack r2 (x1 has only 1 cpu)
    second = copy.deepcopy(scenario["workloads"][0])
    second["name"] = "w2"
    scenario["workloads"].append(second)
    first, then = solved(tmp_path, scenario)
    assert first["admitted"] is True
    hosts = {domain["values"][0] for domain in first["podSets"][0]["topologyAssignment"]["domains"]}
    assert hosts == {"x3", "x4"}
    assert then["name"] == "w2"
    assert then["admitted"] is False
    assert "podSets" not in then
    # Rack r1 is all that is left: 1 pod on x1 + 2 on x2.
    assert "only 3 out of 4" in then["message"]
    assert RACK in then["message"]


def test_non_hostname_lowest_level_reports_full_paths(tmp_path: Path) -> None:
    scenario = base_scenario()
    scenario["topology"]["levels"] = [{"nodeLabel": BLOCK}, {"nodeLabel": RACK}]
    [workload] = solved(tmp_path, scenario)
    assignment = workload["podSets"][0]["topologyAssignment"]
    assert assignment["levels"] == [BLOCK, RACK]
    assert all(len(domain["values"]) == 2 for domain in assignment["domains"])


def test_pod_set_without_annotations_is_implied_and_placed(tmp_path: Path) -> None:
    scenario = base_scenario()
    del scenario["workloads"][0]["podSets"][0]["annotations"]
    scenario["workloads"][0]["podSets"][0]["count"] = 6
    [workload] = solved(tmp_path, scenario)
    assert workload["admitted"] is True
    domains = workload["podSets"][0]["topologyAssignment"]["domains"]
    assert sum(domain["count"] for domain in domains) == 6


def test_nodes_that_do_not_count_are_skipped(tmp_path: Path) -> None:
    scenario = base_scenario()
    scenario["nodes"][2]["ready"] = False
    scenario["nodes"][3]["unschedulable"] = True
    scenario["nodes"][1]["taints"] = [{"key": "gpu", "effect": "NoSchedule"}]
    scenario["workloads"][0]["podSets"][0]["count"] = 1
    scenario["workloads"][0]["podSets"][0]["annotations"] = {}
    [workload] = solved(tmp_path, scenario)
    hosts = [d["values"][0] for d in workload["podSets"][0]["topologyAssignment"]["domains"]]
    assert hosts == ["x1"]


def test_host_slices_stay_whole(tmp_path: Path) -> None:
    scenario = base_scenario()
    scenario["workloads"][0]["podSets"][0].update(
        count=4,
        annotations={
            PREFIX + "podset-required-topology": BLOCK,
            PREFIX + "podset-slice-required-topology": HOST,
            PREFIX + "podset-slice-size": "2",
        },
    )
    [workload] = solved(tmp_path, scenario)
    domains = workload["podSets"][0]["topologyAssignment"]["domains"]
    # x1 has room for only 1 pod, so it cannot hold a slice of 2.
    assert all(domain["count"] % 2 == 0 for domain in domains)
    assert sum(domain["count"] for domain in domains) == 4
    assert "x1" not in {domain["values"][0] for domain in domains}


def test_leader_and_workers_group_share_one_rack(tmp_path: Path) -> None:
    scenario = base_scenario()
    group = {PREFIX + "podset-required-topology": RACK, PREFIX + "podset-group-name": "g"}
    scenario["workloads"][0]["podSets"] = [
        {"name": "leader", "count": 1, "requests": {"cpu": "1"}, "annotations": group},
        {"name": "workers", "count": 3, "requests": {"cpu": "1"}, "annotations": group},
    ]
    [workload] = solved(tmp_path, scenario)
    assert workload["admitted"] is True
    assert [p["name"] for p in workload["podSets"]] == ["leader", "workers"]
    hosts = {
        domain["values"][0]
        for podset in workload["podSets"]
        for domain in podset["topologyAssignment"]["domains"]
    }
    # 4 pods need rack r2 (x3, x4: 2 each); rack r1 holds only 3.
    assert hosts == {"x3", "x4"}


def test_feature_gates_are_accepted(tmp_path: Path) -> None:
    scenario = base_scenario()
    scenario["featureGates"] = {"TASProfileMixed": False, "TASBalancedPlacement": True}
    [workload] = solved(tmp_path, scenario)
    assert workload["admitted"] is True


@pytest.mark.parametrize("gate", [True, False])
def test_node_feasibility_for_all_levels_follows_the_gate(tmp_path: Path, gate: bool) -> None:
    """Racks as the lowest level: r1's two 2-cpu nodes are tainted, r2's are not. With
    TASNodeFeasibilityForAllLevels a rack holds what the nodes a pod may run on hold (r1
    nothing); without it (Kueue v0.17) every rack sums its nodes whatever their taints."""
    scenario = base_scenario()
    scenario["topology"]["levels"] = [{"nodeLabel": BLOCK}, {"nodeLabel": RACK}]
    scenario["nodes"] = [
        node("x1", "b1", "r1", taints=[{"key": "gpu", "effect": "NoSchedule"}]),
        node("x2", "b1", "r1", taints=[{"key": "gpu", "effect": "NoSchedule"}]),
        node("x3", "b1", "r2"),
        node("x4", "b1", "r2"),
    ]
    scenario["workloads"][0]["podSets"][0]["count"] = 4
    scenario["featureGates"] = {"TASNodeFeasibilityForAllLevels": gate}
    [workload] = solved(tmp_path, scenario)
    assert workload["admitted"] is True
    # 4 pods need a whole rack: the untainted one with the gate; without it BestFit's
    # tightest of two equal racks, the first by name
    rack = "r2" if gate else "r1"
    assert workload["podSets"][0]["topologyAssignment"] == {
        "levels": [BLOCK, RACK],
        "domains": [{"values": ["b1", rack], "count": 4}],
    }


# --- malformed scenarios: exit != 0, one line on stderr naming the field, nothing on stdout ----


def edited(path: str, value: Any) -> dict[str, Any]:
    """The base scenario with one field (dotted path, list indexes as numbers) replaced."""
    document = base_scenario()
    *parents, last = path.split(".")
    target: Any = document
    for part in parents:
        target = target[int(part)] if part.isdigit() else target[part]
    key: Any = int(last) if last.isdigit() else last
    if value is DELETE:
        del target[key]
    else:
        target[key] = value
    return document


DELETE = object()
ANNOTATIONS = "workloads.0.podSets.0.annotations"


@pytest.mark.parametrize(
    ("path", "value", "fragments"),
    [
        (ANNOTATIONS, {PREFIX + "podset-required-topology": "zone"}, ["not a level", BLOCK]),
        (
            ANNOTATIONS,
            {
                PREFIX + "podset-slice-required-topology": HOST,
                PREFIX + "podset-slice-size": "0",
            },
            [
                f'workloads[0].podSets[0].annotations["{PREFIX}podset-slice-size"]:',
                "at least 1",
            ],
        ),
        (
            ANNOTATIONS,
            {PREFIX + "podset-required-topology": RACK, PREFIX + "podset-preferred-topology": RACK},
            ["podset-preferred-topology", "together"],
        ),
        (ANNOTATIONS, {PREFIX + "podset-unconstrained-topology": "maybe"}, ["boolean"]),
        (ANNOTATIONS, {PREFIX + "podset-slice-size": 2}, ["must be a string"]),
        ("nodes.0.allocatable.cpu", "two", ['nodes[0].allocatable["cpu"]', "'two'"]),
        ("nodes.0.usage", {"memory": "-1Gi"}, ['nodes[0].usage["memory"]', "negative"]),
        ("nodes.1.name", DELETE, ["nodes[1].name", "required"]),
        ("nodes.1.ready", "yes", ["nodes[1].ready", "true or false"]),
        ("nodes.1.labels", {RACK: 1}, [f'nodes[1].labels["{RACK}"]', "string"]),
        ("nodes.1.taints", [{"key": "k", "effect": "Sometimes"}], ["nodes[1].taints[0].effect"]),
        ("nodes.1.name", "x1", ["nodes[1].name", "twice"]),
        ("topology.levels", [], ["topology.levels"]),
        ("topology.levels.0.nodeLabel", "Not A Label", ["topology.levels[0].nodeLabel"]),
        ("topology.levels.0.nodeLabel", RACK, ["topology.levels[1].nodeLabel", "twice"]),
        (
            "topology.levels",
            [{"nodeLabel": HOST}, {"nodeLabel": RACK}],
            ["topology.levels[0].nodeLabel", "lowest level"],
        ),
        ("topology", DELETE, ["topology", "required"]),
        ("workloads.0.podSets.0.count", "3", ["workloads[0].podSets[0].count", "integer"]),
        ("workloads.0.podSets.0.count", True, ["workloads[0].podSets[0].count"]),
        ("workloads.0.podSets.0.count", 0, ["workloads[0].podSets[0].count", "between 1 and"]),
        ("workloads.0.podSets.0.count", 2**31, ["workloads[0].podSets[0].count", "between 1 and"]),
        (
            "workloads.0.podSets.0.requests",
            ["cpu"],
            ["workloads[0].podSets[0].requests", "mapping"],
        ),
        ("workloads.0.podSets.0.requests", {"pods": 1}, ["requests", "implicit"]),
        ("workloads.0.podSets", [], ["workloads[0].podSets"]),
        ("workloads.0.name", DELETE, ["workloads[0].name"]),
        ("featureGates", {"NoSuchGate": True}, ['featureGates["NoSuchGate"]', "unknown"]),
        ("featureGates", {"TASProfileMixed": "sometimes"}, ['featureGates["TASProfileMixed"]']),
        (
            "resourceFlavor",
            {"tolerations": [{"operator": "Equal"}]},
            ["resourceFlavor.tolerations[0]"],
        ),
        ("resourceFlavor", {"nodeLabels": []}, ["resourceFlavor.nodeLabels"]),
    ],
)
def test_malformed_field_is_named(
    tmp_path: Path, path: str, value: Any, fragments: list[str]
) -> None:
    assert_malformed(run(tmp_path, edited(path, value)), *fragments)


def test_multi_layer_annotation_follows_the_gate(tmp_path: Path) -> None:
    document = edited(
        ANNOTATIONS,
        {
            PREFIX + "podset-slice-required-topology-constraints": json.dumps(
                [{"topology": RACK, "size": 1}]
            )
        },
    )
    document["featureGates"] = {"TASMultiLayerTopology": False}
    assert_malformed(run(tmp_path, document), "TASMultiLayerTopology")


def test_group_rules_name_the_pod_set(tmp_path: Path) -> None:
    document = base_scenario()
    group = {PREFIX + "podset-required-topology": RACK, PREFIX + "podset-group-name": "g"}
    document["workloads"][0]["podSets"] = [
        {"name": "leader", "count": 2, "annotations": group},
        {"name": "workers", "count": 3, "annotations": group},
    ]
    assert_malformed(
        run(tmp_path, document),
        f'workloads[0].podSets[1].annotations["{PREFIX}podset-group-name"]',
        "count 1",
    )


@pytest.mark.parametrize(
    "text", ["topology: [unclosed", '{"topology": ', "- just\n- a list\n", "", "42"]
)
def test_unparseable_documents(tmp_path: Path, text: str) -> None:
    assert_malformed(run(tmp_path, text))


def test_missing_file(tmp_path: Path) -> None:
    result = subprocess.run(
        [str(TAS), "solve", str(tmp_path / "absent.yaml")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert_malformed(result, "absent.yaml")


def test_unknown_top_level_keys_are_ignored(tmp_path: Path) -> None:
    document = base_scenario()
    document["comment"] = "anything"
    [workload] = solved(tmp_path, document)
    assert workload["admitted"] is True


# --- --stats: timings on stderr, the answer unchanged ----------------------------------------


def test_stats_go_to_stderr_as_one_json_line_and_leave_the_answer_alone(tmp_path: Path) -> None:
    scenario = base_scenario()
    too_big = copy.deepcopy(scenario["workloads"][0])
    too_big.update(name="w2")
    too_big["podSets"][0]["count"] = 9
    scenario["workloads"].append(too_big)
    plain, timed = run(tmp_path, scenario), run(tmp_path, scenario, ".yaml", "--stats")
    assert timed.returncode == plain.returncode == 0
    assert timed.stdout == plain.stdout
    [line] = timed.stderr.splitlines()
    stats = json.loads(line)["stats"]
    assert min(stats["parse_ms"], stats["parse_cpu_ms"], stats["snapshot_ms"]) >= 0
    assert stats["placement"]["count"] == 2
    assert (stats["admitted"]["count"], stats["rejected"]["count"]) == (1, 1)
    for part in ("placement", "admitted", "rejected"):
        summary = stats[part]
        assert 0 <= summary["p50_ms"] <= summary["p99_ms"] <= summary["total_ms"]
        assert summary["cpu_total_ms"] >= 0


def test_stats_on_a_malformed_scenario_still_print_one_line(tmp_path: Path) -> None:
    result = run(tmp_path, edited("nodes.1.name", DELETE), ".yaml", "--stats")
    assert_malformed(result, "nodes[1].name")
