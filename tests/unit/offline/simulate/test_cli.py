"""`tas simulate` as a user runs it: the command line, --compare, --plot, the shipped traces."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tas import cli
from tests.unit.offline.simulate.traces import RACK, job, two_racks

TAS = Path(sys.executable).with_name("tas")
EXAMPLES = Path(__file__).parents[4] / "examples" / "traces"


def write(tmp_path: Path, document: dict) -> str:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(document))
    return str(path)


def spread_or_packed() -> dict:
    """Four 4-cpu hosts in two racks. `gap` takes 1 cpu of the first host. With
    TASProfileMixed (the default) the unconstrained `spread` goes to the least free hosts: the
    gap's host, its rack neighbour and one host of the other rack, leaving room for one 3-cpu
    pod only: `pair` fails after 5 pods. Without it BestFit packs `spread` in the empty rack,
    and `pair` fits in the first one: 7 pods before the first failure."""
    unconstrained = {"kueue.x-k8s.io/podset-unconstrained-topology": "true"}
    spread = job("spread", 1, 4, "2")
    spread["podSets"][0]["annotations"] = unconstrained
    return two_racks(
        [
            job("gap", 0, 1, "1"),
            spread,
            job("pair", 2, 2, "3"),
            job("rack", 3, 2, "1", duration=5, level=RACK),
        ]
    )


def test_the_command_prints_the_report(tmp_path, capsys):
    assert cli.main(["simulate", write(tmp_path, spread_or_packed())]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["podsPlacedBeforeFirstFailure"] == 5
    assert report["firstFailure"]["workload"] == "pair"
    assert report["featureGates"]["TASProfileMixed"] is True


def test_compare_runs_the_trace_twice_and_gives_the_ratio(tmp_path, capsys):
    path = write(tmp_path, spread_or_packed())
    assert cli.main(["simulate", path, "--compare", "TASProfileMixed=false"]) == 0
    out = json.loads(capsys.readouterr().out)
    base, compared = out["base"], out["compared"]
    assert out["gates"] == "TASProfileMixed=false"
    assert base["featureGates"]["TASProfileMixed"] is True
    assert compared["featureGates"]["TASProfileMixed"] is False
    assert base["podsPlacedBeforeFirstFailure"] == 5
    assert compared["podsPlacedBeforeFirstFailure"] == 7
    assert out["podsPlacedBeforeFirstFailureRatio"] == 1.4


@pytest.mark.parametrize("gates", ["NoSuchGate=true", "TASProfileMixed=maybe", ""])
def test_a_bad_compare_is_one_line_and_nothing_on_stdout(tmp_path, capsys, gates):
    assert cli.main(["simulate", write(tmp_path, spread_or_packed()), "--compare", gates]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("tas simulate: --compare:")
    assert captured.err.count("\n") == 1


def test_plot_writes_a_png(tmp_path, capsys):
    png = tmp_path / "out.png"
    assert cli.main(["simulate", write(tmp_path, spread_or_packed()), "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads(capsys.readouterr().out)["podsPlacedBeforeFirstFailure"] == 5


def test_plot_draws_both_runs_of_a_compare(tmp_path, capsys):
    png = tmp_path / "both.png"
    path = write(tmp_path, spread_or_packed())
    code = cli.main(["simulate", path, "--plot", str(png), "--compare", "TASProfileMixed=false"])
    assert code == 0
    assert png.stat().st_size > 1000
    assert "compared" in json.loads(capsys.readouterr().out)


def test_a_plot_that_cannot_be_written_is_one_line(tmp_path, capsys):
    png = tmp_path / "no-such-directory" / "out.png"
    assert cli.main(["simulate", write(tmp_path, spread_or_packed()), "--plot", str(png)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("tas simulate: --plot: cannot write")


def test_end_to_end_in_a_process_on_a_shipped_trace():
    traces = sorted(EXAMPLES.glob("*.json"))
    assert len(traces) >= 3
    smallest = min(traces, key=lambda p: p.stat().st_size)
    result = subprocess.run(
        [str(TAS), "simulate", str(smallest)], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    report = json.loads(result.stdout)
    assert report["workloadsAdmitted"] > 0
    assert 0 < report["podsPlacedBeforeFirstFailure"] <= report["podsPlaced"]


def test_the_malformed_line_in_a_process(tmp_path):
    document = two_racks([job("w", 0, 1, "1")])
    document["workloads"][0]["duration"] = "long"
    result = subprocess.run(
        [str(TAS), "simulate", write(tmp_path, document)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == "workloads[0].duration: must be a number of seconds, got 'long'\n"
