"""Reading traces: the pool form, the trace's own fields, and one line on stderr naming the
field of a malformed one."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tas.offline.simulate import run
from tas.offline.simulate.trace import parse_trace
from tests.unit.offline.simulate.traces import BLOCK, HOST, RACK, job, two_racks


def simulate_file(tmp_path: Path, document: object) -> tuple[int, str, str]:
    path = tmp_path / "trace.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    stdout, stderr = io.StringIO(), io.StringIO()
    code = run.main(str(path), stdout, stderr)
    return code, stdout.getvalue(), stderr.getvalue()


def test_the_pool_is_blocks_of_racks_of_identical_hosts():
    trace = parse_trace(
        {
            "topology": {"levels": [{"nodeLabel": level} for level in (BLOCK, RACK, HOST)]},
            "pool": {
                "blocks": 2,
                "racksPerBlock": 3,
                "hostsPerRack": 4,
                "allocatable": {"cpu": "8"},
            },
            "workloads": [],
        }
    )
    nodes = trace.scenario.nodes
    assert len(nodes) == 24
    assert nodes[-1].name == "b1-r2-h3"
    assert dict(nodes[-1].labels) == {BLOCK: "b1", RACK: "b1-r2", HOST: "b1-r2-h3"}
    assert nodes[0].allocatable == {"cpu": 8000, "pods": 110_000}


def test_arrival_duration_and_gates_are_read():
    trace = parse_trace(
        two_racks(
            [job("a", 2.5, 1, "1", duration=30), job("b", 0, 1, "1")],
            featureGates={"TASBalancedPlacement": True},
        ),
        gate_overrides={"TASProfileMixed": False},
    )
    a, b = trace.workloads
    assert (a.arrival, a.duration, a.index, a.pods) == (2.5, 30.0, 0, 1)
    assert (b.arrival, b.duration) == (0.0, None)
    assert trace.scenario.options.balanced_placement
    assert not trace.scenario.options.profile_mixed  # the override reaches the solver
    assert trace.gates.as_dict()["TASProfileMixed"] is False


def malformed_cases():
    def with_workload(**fields):
        entry = job("w", 0, 1, "1") | fields
        return two_racks([entry])

    def without(key):
        document = two_racks([job("w", 0, 1, "1")])
        del document["workloads"][0][key]
        return document

    nodes_and_pool = two_racks([]) | {"nodes": []}
    bad_pool = two_racks([])
    bad_pool["pool"]["hostsPerRack"] = 0
    bad_quantity = two_racks([])
    bad_quantity["pool"]["allocatable"] = {"cpu": "lots"}
    two_levels = two_racks([])
    two_levels["topology"]["levels"] = two_levels["topology"]["levels"][1:]
    bad_count = with_workload()
    bad_count["workloads"][0]["podSets"][0]["count"] = 0
    return [
        (without("arrival"), "workloads[0].arrival: is required"),
        (with_workload(arrival="soon"), "workloads[0].arrival: must be a number"),
        (with_workload(arrival=-1), "workloads[0].arrival: must be a finite number"),
        ('{"topology": 1, "workloads": []}', "topology: must be a mapping"),
        (with_workload(duration=0), "workloads[0].duration: must be more than 0"),
        (with_workload(duration=True), "workloads[0].duration: must be a number"),
        (with_workload(group=5), "workloads[0].group: must be a string or a mapping"),
        (with_workload(running=True), "workloads[0].running: has no meaning in a trace"),
        (nodes_and_pool, "pool: give either nodes or pool"),
        (bad_pool, "pool.hostsPerRack: must be at least 1"),
        (bad_quantity, 'pool.allocatable["cpu"]:'),
        (two_levels, "pool: needs a topology of 3 levels"),
        (bad_count, "workloads[0].podSets[0].count: must be between 1"),
        ("workloads: [", "(document): not valid YAML or JSON"),
    ]


@pytest.mark.parametrize(("document", "start"), malformed_cases())
def test_a_malformed_trace_gives_one_line_naming_the_field(tmp_path, document, start):
    code, stdout, stderr = simulate_file(tmp_path, document)
    assert code == 1
    assert stdout == ""
    assert stderr.startswith(start)
    assert stderr.count("\n") == 1 and stderr.endswith("\n")


def test_a_nan_arrival_is_refused(tmp_path):
    document = json.dumps(two_racks([job("w", 0, 1, "1")])).replace(
        '"arrival": 0', '"arrival": NaN'
    )
    code, stdout, stderr = simulate_file(tmp_path, document)
    assert (code, stdout) == (1, "")
    assert stderr.startswith("workloads[0].arrival: must be a finite number")


def test_an_unreadable_file_is_one_line(tmp_path):
    stdout, stderr = io.StringIO(), io.StringIO()
    assert run.main(str(tmp_path / "absent.yaml"), stdout, stderr) == 1
    assert stdout.getvalue() == ""
    assert "absent.yaml: cannot read" in stderr.getvalue()
    assert stderr.getvalue().count("\n") == 1
