"""`tas solve` and `tas simulate` with Kueue's fairSharing section and weights: the same order
and preemption as the operator, each ClusterQueue's weightedShare reported (and over time in
`tas simulate`); without the sections, nothing in the output changes."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from tas.offline.fields import ScenarioError
from tas.offline.simulate.trace import parse_trace
from tests.unit.offline.simulate.traces import RACK, job, simulate, two_racks
from tests.unit.offline.test_solve import assert_malformed, run

FAIR = {"fairSharing": {"preemptionStrategies": ["LessThanOrEqualToFinalShare"]}}


def teams(weights: dict[str, str] | None = None) -> dict:
    """Queues a and b with no quota of their own; the cohort holds all 16 cpu."""
    weights = weights or {}
    queues = []
    for name in ("a", "b"):
        entry = {
            "name": name,
            "cohort": "teams",
            "nominalQuota": {"cpu": "0"},
            "preemption": {"reclaimWithinCohort": "Any"},
        }
        if name in weights:
            entry["fairSharing"] = {"weight": weights[name]}
        queues.append(entry)
    return {"clusterQueues": queues, "cohorts": [{"name": "teams", "nominalQuota": {"cpu": "16"}}]}


def stream() -> list[dict]:
    """Team a fills the 16 cpu at once; team b's gangs (two 2-cpu pods in a rack) keep coming."""
    a = [job(f"a{i}", 0, 1, "2", clusterQueue="a") for i in range(8)]
    b = [job(f"b{i}", 1 + i, 2, "2", level=RACK, clusterQueue="b") for i in range(4)]
    return a + b


def test_simulate_converges_to_the_weights_and_reports_the_shares_over_time() -> None:
    report = simulate(two_racks(stream(), **teams({"b": "3"}), **FAIR))
    shares = report["fairSharing"]["weightedShare"]
    # a keeps 4 cpu (4/16 = 250), b takes 12 (12/16 over weight 3 = 250): a 1:3 split.
    assert {name: s["final"] for name, s in shares.items()} == {"a": 250, "b": 250}
    assert shares["a"]["max"] == 1000  # all 16 cpu before b came
    assert report["evictions"] == 6
    assert report["timeline"][0]["weightedShare"] == {"a": 1000, "b": 0}
    assert report["fairSharing"]["preemptionStrategies"] == ["LessThanOrEqualToFinalShare"]


def test_equal_weights_split_evenly() -> None:
    report = simulate(two_racks(stream(), **teams(), **FAIR))
    finals = {n: s["final"] for n, s in report["fairSharing"]["weightedShare"].items()}
    assert finals == {"a": 500, "b": 500}  # 8 cpu each


def test_without_the_section_the_report_is_unchanged_by_weights() -> None:
    plain = simulate(two_racks(stream(), **teams()))
    weighted = simulate(two_racks(stream(), **teams({"b": "3"})))
    for report in (plain, weighted):
        report.pop("decisions")  # wall-clock timings
    assert plain == weighted
    assert "fairSharing" not in plain and "weightedShare" not in plain["timeline"][0]


def scenario_document(fair: bool) -> dict:
    doc = two_racks(
        [
            *({**job(f"a{i}", 0, 1, "4", clusterQueue="a"), "running": True} for i in range(4)),
            job("b0", 0, 2, "4", level=RACK, clusterQueue="b"),
        ],
        **teams({"b": "3"}),
    )
    doc.pop("pool")
    doc["nodes"] = [
        {"name": f"h{i}", "labels": {RACK: f"r{i // 2}", "kubernetes.io/hostname": f"h{i}",
                                     "cloud.provider.com/topology-block": "b"},
         "allocatable": {"cpu": "4"}}
        for i in range(4)
    ]  # fmt: skip
    for w in doc["workloads"]:
        w.pop("arrival")
    # a's newest workloads alternate racks: a0 on h0, a1 on h2, a2 on h1, a3 on h3.
    for name, host in (("a0", "h0"), ("a1", "h2"), ("a2", "h1"), ("a3", "h3")):
        workload = next(w for w in doc["workloads"] if w["name"] == name)
        workload["podSets"][0]["nodeSelector"] = {"kubernetes.io/hostname": host}
    if fair:
        doc.update(FAIR)
    return doc


def test_solve_reports_the_weighted_share_only_with_fair_sharing(tmp_path: Path) -> None:
    with_section = run(tmp_path, scenario_document(True))
    assert with_section.returncode == 0, with_section.stderr
    queues = json.loads(with_section.stdout)["clusterQueues"]
    # b's gang evicts the two of a's workloads in one rack (8 of its 16 cpu): a 8/16 = 500,
    # b 8/16 over 3 = 167.
    assert [(q["name"], q["weightedShare"]) for q in queues] == [("a", 500), ("b", 167)]
    results = {w["name"]: w for w in json.loads(with_section.stdout)["workloads"]}
    evicted = {name for name, w in results.items() if w.get("evicted")}
    assert {results[n]["preemptionReason"] for n in evicted} == {"InCohortFairSharing"}
    # Taken newest first (a3, a2, a1) until one rack is free; a2, in the other rack, freed
    # nothing b0 can use and is put back: quota alone would have taken a3 and a2.
    assert evicted == {"a1", "a3"}
    hosts = [d["values"][0] for d in results["b0"]["podSets"][0]["topologyAssignment"]["domains"]]
    assert sorted(hosts) == ["h2", "h3"]
    without = run(tmp_path, scenario_document(False))
    assert all("weightedShare" not in q for q in json.loads(without.stdout)["clusterQueues"])


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"fairSharing": {"preemptionStrategies": ["Nope"]}}, "fairSharing.preemptionStrategies"),
        ({"fairSharing": {"preemptionStrategies": []}}, "fairSharing.preemptionStrategies"),
        ({"admissionFairSharing": {"usageHalfLifeTime": "soon"}},
         "admissionFairSharing.usageHalfLifeTime"),
    ],
)  # fmt: skip
def test_a_bad_section_names_its_field(tmp_path: Path, change: dict, field: str) -> None:
    doc = scenario_document(False) | change
    assert_malformed(run(tmp_path, doc), field)


def test_a_bad_weight_names_its_field() -> None:
    doc = copy.deepcopy(two_racks(stream(), **teams({"b": "-1"})))
    with pytest.raises(ScenarioError) as error:
        parse_trace(doc)
    assert error.value.path == "clusterQueues[1].fairSharing.weight"


def test_the_plot_gets_a_weighted_share_panel(tmp_path: Path, capsys) -> None:
    """The figure grows a fourth panel (taller) with fair sharing, and stays as it was without."""
    from PIL import Image

    from tas import cli

    heights = {}
    for fair in (True, False):
        doc = two_racks(stream(), **teams({"b": "3"}), **(FAIR if fair else {}))
        path = tmp_path / f"trace-{fair}.json"
        path.write_text(json.dumps(doc))
        png = tmp_path / f"plot-{fair}.png"
        assert cli.main(["simulate", str(path), "--plot", str(png), "-o", "json"]) == 0
        heights[fair] = Image.open(png).size[1]
    capsys.readouterr()
    assert heights == {True: 1000, False: 800}  # 10 by 8 (+2 for the panel) inches at 100 dpi
