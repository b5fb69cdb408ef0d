"""`tas solve` and `tas simulate` for people and for scripts: a summary on a terminal, the
report (byte for byte as before there was a choice) in a pipe or with `-o json`, and `-o yaml`.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tas import cli
from tas.offline import scenario, summary
from tas.offline.reader import parse_scenario
from tas.offline.simulate import run
from tas.offline.simulate import trace as tracefile
from tas.offline.yaml_loader import load_document, read_text
from tests.unit.offline.simulate.test_cli import spread_or_packed
from tests.unit.offline.test_solve import RACK, base_scenario

ROOT = Path(__file__).parents[3]
TESTDATA = Path(__file__).with_name("testdata")
SCENARIOS = sorted((ROOT / "examples" / "scenarios").glob("*.yaml"))
SMALL_TRACE = TESTDATA / "small-trace.json"
# What varies from run to run (decision times) or with the gates registry (every gate's value).
VARYING = re.compile(r'("(?:medianMs|p90Ms|maxMs)": )[0-9.e-]+|"featureGates": \{[^}]*\}', re.S)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def solve_main(path: Path | str, stream: io.StringIO, output: str | None = None) -> str:
    err = io.StringIO()
    assert scenario.main(str(path), stream, err, output=output) == 0, err.getvalue()
    return stream.getvalue()


def simulate_main(path: Path | str, stream: io.StringIO, **flags: Any) -> str:
    err = io.StringIO()
    assert run.main(str(path), stream, err, **flags) == 0, err.getvalue()
    return stream.getvalue()


def masked(text: str) -> str:
    return VARYING.sub(lambda m: (m.group(1) or '"featureGates": ') + "#", text)


# ---- piped: the contract, unchanged ------------------------------------------------------------


def test_piped_solve_prints_the_json_of_before_byte_for_byte() -> None:
    """The golden file is `tas solve` of the example before the summaries existed."""
    path = ROOT / "examples" / "scenarios" / "preemption.yaml"
    assert solve_main(path, io.StringIO()) == (TESTDATA / "solve-preemption.json").read_text()


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
@pytest.mark.parametrize("output", [None, summary.JSON])
def test_piped_or_json_solve_is_the_indented_report(path: Path, output: str | None) -> None:
    expected = scenario.solve(parse_scenario(load_document(read_text(str(path)))))
    stream = Terminal() if output else io.StringIO()  # -o json wins over a terminal
    assert solve_main(path, stream, output) == json.dumps(expected, indent=2) + "\n"


def test_piped_simulate_prints_the_report_of_before_byte_for_byte() -> None:
    """The golden file is `tas simulate` of the trace before the summaries existed; the
    decision times and the gates registry are masked."""
    golden = (TESTDATA / "simulate-small-trace.json").read_text()
    assert masked(simulate_main(SMALL_TRACE, io.StringIO())) == masked(golden)


@pytest.mark.parametrize("compare", [None, "TASProfileMixed=false"])
def test_json_simulate_is_the_report_with_a_terminal_too(compare: str | None) -> None:
    out = simulate_main(SMALL_TRACE, Terminal(), compare_gates=compare, output=summary.JSON)
    trace = tracefile.read(str(SMALL_TRACE))
    if compare is None:
        expected = run.simulate(trace)
    else:
        other = tracefile.read(str(SMALL_TRACE), {"TASProfileMixed": False})
        expected = run.compare(trace, other) | {"gates": compare}
    assert masked(out) == masked(run.dumps(expected) + "\n")


@pytest.mark.parametrize("command", ["solve", "simulate"])
def test_yaml_holds_what_the_json_holds(command: str) -> None:
    path = str(SCENARIOS[0] if command == "solve" else SMALL_TRACE)
    main = solve_main if command == "solve" else simulate_main
    as_yaml = yaml.safe_load(main(path, Terminal(), output=summary.YAML))
    as_json = json.loads(main(path, io.StringIO()))
    if command == "simulate":
        as_yaml.pop("decisions"), as_json.pop("decisions")
    assert as_yaml == as_json


def test_the_command_line_takes_o(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["solve", str(SCENARIOS[0]), "-o", "yaml"]) == 0
    assert "workloads" in yaml.safe_load(capsys.readouterr().out)
    assert cli.main(["simulate", str(SMALL_TRACE), "--output", "text"]) == 0
    assert capsys.readouterr().out.startswith("5 workloads, 18 pods on 4 nodes")
    with pytest.raises(SystemExit):
        cli.main(["solve", str(SCENARIOS[0]), "-o", "xml"])


def test_a_malformed_file_is_still_one_line_on_a_terminal(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("topology: {levels: []}\nnodes: []\nworkloads: []\n")
    out, err = Terminal(), io.StringIO()
    assert scenario.main(str(path), out, err) == 1
    assert out.getvalue() == "" and err.getvalue().count("\n") == 1


# ---- tas solve on a terminal -------------------------------------------------------------------


def two_rack_scenario() -> dict[str, Any]:
    """Racks r1 (x1, x2) and r2 (x3, x4) of 2 cpu; w1 takes 3 pods in a rack, `big` asks for
    more than a rack has."""
    document = base_scenario()
    big = json.loads(json.dumps(document["workloads"][0]))
    big["name"], big["podSets"][0]["count"] = "big", 5
    document["workloads"].append(big)
    return document


def test_solve_says_where_each_workload_went_or_why_not(tmp_path: Path) -> None:
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(two_rack_scenario()))
    report = json.loads(solve_main(path, io.StringIO()))
    lines = solve_main(path, Terminal()).splitlines()
    placed, refused = report["workloads"]
    assert lines[0].startswith("w1 ") and lines[1].startswith("big ")
    hosts = {
        d["values"][0]: d["count"] for d in placed["podSets"][0]["topologyAssignment"]["domains"]
    }
    racks = {"x1": "r1", "x2": "r1", "x3": "r2", "x4": "r2"}
    (rack,) = {racks[host] for host in hosts}  # required: one rack
    assert f"admitted to default: main 3 pods · block b1 · rack {rack} · hostname " in lines[0]
    assert lines[0].endswith(", ".join(f"{host} ({n})" for host, n in sorted(hosts.items())))
    assert lines[1].endswith(f"waiting: {refused['message']}")
    assert lines[2] == "1 of 2 workloads admitted"


def test_solve_with_queues_names_the_queue_and_the_preemptions() -> None:
    path = ROOT / "examples" / "scenarios" / "preemption.yaml"
    report = json.loads(solve_main(path, io.StringIO()))
    lines = solve_main(path, Terminal()).splitlines()
    for workload, line in zip(report["workloads"], lines, strict=False):
        assert line.split()[:2] == [workload["name"], "admitted"]
        assert f"in {workload['clusterQueue']} to default" in line
        if workload.get("evicted"):
            assert f"evicted by {workload['preemptedBy']} ({workload['preemptionReason']})" in line
        for victim in workload.get("preempted", ()):
            assert victim in line
    evicted = sum(1 for w in report["workloads"] if w.get("evicted"))
    total = len(report["workloads"])
    assert f"{total - evicted} of {total} workloads admitted, {evicted} more" in "\n".join(lines)
    for queue in report["clusterQueues"]:
        assert f"clusterQueue {queue['name']}: cpu={queue['usage']['cpu']} used" in lines


def test_many_domains_are_counted_not_listed() -> None:
    domains = [{"values": [f"h{i:02}"], "count": 1} for i in range(summary.MAX_VALUES + 3)]
    result = {
        "workloads": [
            {
                "name": "w",
                "admitted": True,
                "podSets": [
                    {
                        "name": "main",
                        "count": len(domains),
                        "topologyAssignment": {"levels": ["h"], "domains": domains},
                    }
                ],
            }
        ]
    }
    line = summary.solve_text(result, ["h"], {}, "f").splitlines()[0]
    assert line.endswith("h05 (1) and 3 more")


def test_an_assignment_of_full_paths_names_every_level() -> None:
    assignment = {
        "levels": ["block", RACK],
        "domains": [{"values": ["b1", "r1"], "count": 2}, {"values": ["b1", "r2"], "count": 1}],
    }
    podset = {"name": "main", "count": 3, "topologyAssignment": assignment}
    result = {"workloads": [{"name": "w", "admitted": True, "podSets": [podset]}]}
    line = summary.solve_text(result, ["block", RACK], {}, "f").splitlines()[0]
    assert line.endswith("main 3 pods · block b1 · rack r1 (2), r2 (1)")


# ---- tas simulate on a terminal ----------------------------------------------------------------


def test_simulate_summary_holds_the_reports_numbers() -> None:
    report = json.loads(simulate_main(SMALL_TRACE, io.StringIO()))
    text = simulate_main(SMALL_TRACE, Terminal())
    lines = text.splitlines()
    assert len(lines) < 12
    failure = report["firstFailure"]
    assert lines[0] == (
        f"{report['workloads']} workloads, {report['pods']} pods on {report['nodes']} nodes "
        f"over {report['end']:g} s (solver admission)"
    )
    assert lines[1] == (
        f"pods before the first failure: {report['podsPlacedBeforeFirstFailure']}; "
        f"at {failure['time']:g} s {failure['workload']} did not fit:"
    )
    assert lines[2] == "  " + failure["message"]
    assert lines[3] == (
        f"pods placed: {report['podsPlaced']}; workloads admitted {report['workloadsAdmitted']}, "
        f"never admitted {report['workloadsNeverAdmitted']}"
    )
    assert f"decisions: {report['decisions']['count']}, median " in text


def test_utilisation_is_the_mean_over_time_and_the_peak() -> None:
    """Each timeline entry holds until the next event: 100% for 10 s then 0% for 30 s is a
    25% mean."""
    timeline = [
        {"time": 0.0, "utilisation": {"pods": 0.5, "cpu": 1.0}},
        {"time": 10.0, "utilisation": {"pods": 0.0, "cpu": 0.0}},
    ]
    report = {
        "admission": "solver",
        "nodes": 1,
        "workloads": 1,
        "pods": 1,
        "end": 40.0,
        "podsPlacedBeforeFirstFailure": 1,
        "firstFailure": None,
        "podsPlaced": 1,
        "workloadsAdmitted": 1,
        "workloadsNeverAdmitted": 0,
        "evictions": 2,
        "waitSeconds": {"median": 90.0, "p90": 7200.0, "max": 3 * 86400.0},
        "decisions": {"count": 1, "medianMs": 0.5, "p90Ms": 0.5, "maxMs": 0.5},
        "timeline": timeline,
    }
    lines = summary.simulate_text(report).splitlines()
    assert lines[1] == "pods before the first failure: 1 (no workload failed on arrival)"
    assert lines[2].endswith("; evictions 2")
    assert lines[3] == "utilisation, mean / peak: cpu 25% / 100%, pods 12.5% / 50%"
    assert lines[4] == "waits: median 1.5 min, p90 2 h, max 3 d"


def test_compare_shows_both_runs_and_the_ratio() -> None:
    out = simulate_main(SMALL_TRACE, io.StringIO(), compare_gates="TASProfileMixed=false")
    text = simulate_main(SMALL_TRACE, Terminal(), compare_gates="TASProfileMixed=false")
    report = json.loads(out)
    assert "with the trace's gates:" in text and "with TASProfileMixed=false:" in text
    for run_report in (report["base"], report["compared"]):
        before = run_report["podsPlacedBeforeFirstFailure"]
        assert f"  pods before the first failure: {before};" in text
    ratio = report["podsPlacedBeforeFirstFailureRatio"]
    assert f"pods before the first failure, compared / base: {ratio:g}" in text


def test_spread_or_packed_keeps_its_numbers_in_the_summary(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(spread_or_packed()))
    assert "pods before the first failure: 5; at 2 s pair did not fit" in simulate_main(
        path, Terminal()
    )
