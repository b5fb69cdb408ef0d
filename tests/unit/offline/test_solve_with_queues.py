"""`tas solve` with clusterQueues: quota, cohorts, priorities and preemption offline, through
the operator's own admission decision (a subprocess, as a user runs it)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tests.unit.offline.test_solve import BLOCK, HOST, PREFIX, assert_malformed, run

REQUIRED = PREFIX + "podset-required-topology"


def host(name: str, block: str) -> dict[str, Any]:
    return {"name": name, "labels": {BLOCK: block, HOST: name}, "allocatable": {"cpu": "8"}}


def job(name: str, pods: int, queue: str, priority: int = 0, **extra: Any) -> dict[str, Any]:
    podset: dict[str, Any] = {"name": "main", "count": pods, "requests": {"cpu": "1"}}
    if extra.pop("block", False):
        podset["annotations"] = {REQUIRED: BLOCK}
    return {"name": name, "clusterQueue": queue, "priority": priority, "podSets": [podset], **extra}


def scenario(workloads: list[dict], queues: list[dict] | None = None) -> dict[str, Any]:
    """Two blocks of two 8-cpu hosts; queues a and b share the cohort "team"."""
    return {
        "topology": {"levels": [{"nodeLabel": BLOCK}, {"nodeLabel": HOST}]},
        "nodes": [
            host("b1-h1", "b1"),
            host("b1-h2", "b1"),
            host("b2-h1", "b2"),
            host("b2-h2", "b2"),
        ],
        "clusterQueues": queues
        or [
            {
                "name": "a",
                "cohort": "team",
                "nominalQuota": {"cpu": "16"},
                "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
            },
            {"name": "b", "cohort": "team", "nominalQuota": {"cpu": "16"}},
        ],
        "workloads": workloads,
    }


def solve(tmp_path: Path, document: dict) -> dict[str, Any]:
    result = run(tmp_path, document)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_borrowing_shows_in_the_queues_usage(tmp_path):
    out = solve(tmp_path, scenario([job("big", 20, "b")]))
    assert out["workloads"][0]["admitted"] is True
    assert out["clusterQueues"] == [
        {"name": "a", "usage": {"cpu": "0"}, "borrowed": {"cpu": "0"}},
        {"name": "b", "usage": {"cpu": "20"}, "borrowed": {"cpu": "4"}},
    ]


def test_borrowing_limit_caps_what_a_queue_takes(tmp_path):
    doc = scenario([job("big", 20, "b")])
    doc["clusterQueues"][1]["borrowingLimit"] = {"cpu": "2"}
    out = solve(tmp_path, doc)
    w = out["workloads"][0]
    assert w["admitted"] is False
    assert "insufficient unused quota for cpu in flavor default, 2 more needed" in w["message"]


def test_the_owner_reclaims_what_it_lent(tmp_path):
    out = solve(tmp_path, scenario([job("borrower", 20, "b"), job("owner", 16, "a")]))
    borrower, owner = out["workloads"]
    assert owner["admitted"] is True and owner["preempted"] == ["borrower"]
    assert borrower["evicted"] is True
    assert borrower["preemptedBy"] == "owner"
    assert borrower["preemptionReason"] == "InCohortReclamation"
    assert out["clusterQueues"][0]["usage"] == {"cpu": "16"}


def test_a_high_priority_block_request_preempts_within_its_queue(tmp_path):
    doc = scenario(
        [
            job("low1", 9, "a", priority=1, running=True, block=True),
            job("low2", 8, "a", priority=0, block=True),  # 7 cpu left beside low1: the other block
            job("high", 16, "a", priority=9, block=True),
        ]
    )
    doc["clusterQueues"][0]["nominalQuota"] = {"cpu": "32"}
    out = solve(tmp_path, doc)
    low1, low2, high = out["workloads"]
    assert high["admitted"] is True
    # One block must be emptied: low2 (lowest priority) is enough once it is gone.
    assert high["preempted"] == ["low2"]
    assert "evicted" not in low1 and low2["preemptionReason"] == "InClusterQueue"
    domains = high["podSets"][0]["topologyAssignment"]["domains"]
    assert {d["values"][0][:2] for d in domains} == {
        low2["podSets"][0]["topologyAssignment"]["domains"][0]["values"][0][:2]
    }


def test_equal_priority_is_not_preempted_and_the_message_says_why(tmp_path):
    alone = {
        "name": "a",
        "nominalQuota": {"cpu": "16"},
        "preemption": {"withinClusterQueue": "LowerPriority"},
    }
    doc = scenario(
        [
            job("first", 16, "a", priority=5, block=True),
            job("second", 16, "a", priority=5, block=True),
        ],
        [alone],
    )
    out = solve(tmp_path, doc)
    second = out["workloads"][1]
    assert second["admitted"] is False
    assert ". No preemption: " in second["message"]


@pytest.mark.parametrize(
    ("change", "fragments"),
    [
        (
            lambda d: d["workloads"][0].update(clusterQueue="nope"),
            ["workloads[0].clusterQueue", "nope"],
        ),
        (lambda d: d["workloads"][0].update(priority="high"), ["workloads[0].priority", "integer"]),
        (lambda d: d["workloads"][0].update(priority=2**31), ["workloads[0].priority", "32-bit"]),
        (
            lambda d: d["clusterQueues"][0].update(preemption={"withinClusterQueue": "Always"}),
            ["clusterQueues[0].preemption.withinClusterQueue", "LowerPriority"],
        ),
        (
            lambda d: d["clusterQueues"][1].update(lendingLimit={"cpu": "20"}),
            ['clusterQueues[1].lendingLimit["cpu"]', "nominalQuota"],
        ),
        (
            lambda d: d["clusterQueues"][1].update(cohort=None, borrowingLimit={"cpu": "1"}),
            ["clusterQueues[1].borrowingLimit", "cohort"],
        ),
        (
            lambda d: d["clusterQueues"][0].update(
                preemption={"borrowWithinCohort": {"policy": "LowerPriority"}}
            ),
            ["clusterQueues[0].preemption.borrowWithinCohort", "reclaimWithinCohort=Never"],
        ),
        (
            lambda d: d["workloads"].insert(0, job("huge", 40, "a", running=True)),
            ["workloads[0].running", "does not fit"],
        ),
        (
            lambda d: d["clusterQueues"].append(copy.deepcopy(d["clusterQueues"][0])),
            ["appears twice"],
        ),
    ],
)
def test_malformed_queue_fields_name_the_field(tmp_path, change, fragments):
    doc = scenario([job("w", 2, "a")])
    change(doc)
    assert_malformed(run(tmp_path, doc), *fragments)


def test_the_example_scenario_runs(tmp_path):
    example = Path(__file__).parents[3] / "examples" / "scenarios" / "preemption.yaml"
    out = solve(tmp_path, example.read_text())
    by_name = {w["name"]: w for w in out["workloads"]}
    assert by_name["pretrain"]["admitted"] is True
    assert by_name["sweep"]["preemptionReason"] == "InCohortReclamation"
