"""bench/chaos.py's hostile mix, its pure parts: the cpu a pod is booked at, and the count of
Jobs asking for nothing that were charged less than their pods get from the LimitRange."""

from __future__ import annotations

import pytest
from bench import chaos


def workload(container: dict, owner: str = "j00001", admission: dict | None = None) -> dict:
    template = {"spec": {"containers": [container]}}
    out = {
        "metadata": {"name": "w", "ownerReferences": [{"kind": "Job", "name": owner}]},
        "spec": {"podSets": [{"name": "main", "count": 1, "template": template}]},
    }
    if admission:
        out["status"] = {"admission": admission}
    return out


@pytest.mark.parametrize(
    ("container", "cpu"),
    [
        ({"name": "c", "resources": {"requests": {"cpu": "2"}}}, 2.0),
        ({"name": "c", "resources": {"requests": {"cpu": "500m"}}}, 0.5),
        ({"name": "c"}, float(chaos.LIMIT_RANGE_CPU)),
        ({"name": "c", "resources": {}}, float(chaos.LIMIT_RANGE_CPU)),
        ({"name": "c", "resources": {"requests": {"memory": "1Gi"}}}, float(chaos.LIMIT_RANGE_CPU)),
    ],
    ids=["asks-2", "asks-500m", "no-resources", "empty-resources", "memory-only"],
)
def test_a_pod_is_booked_at_what_it_asks_or_what_the_limit_range_gives(container, cpu):
    assert chaos.template_cpu(workload(container)) == cpu


class FakeCluster:
    def __init__(self, items: list[dict]) -> None:
        self.items = items

    def get_json(self, *args: str) -> dict:
        return {"items": self.items}


def charged(cpu: str, count: int, owner: str = "h0001-no-requests") -> dict:
    psa = {"name": "main", "count": count, "resourceUsage": {"cpu": cpu}}
    return workload({"name": "c"}, owner, {"podSetAssignments": [psa]})


@pytest.mark.parametrize(
    ("workloads", "undercharged"),
    [
        ([charged("1", 1)], 0),
        ([charged("2250m", 2)], 0),
        ([charged("500m", 1)], 1),
        ([charged("1", 2)], 1),
        ([charged("0", 1), charged("1", 1), charged("100m", 3)], 2),
        ([charged("100m", 1, owner="j00001")], 0),  # one of the stream's: asks for its cpu
        ([workload({"name": "c"}, "h0002-no-requests")], 0),  # not admitted yet
    ],
    ids=["at-default", "over", "half", "two-pods-one-cpu", "mixed", "not-hostile", "pending"],
)
def test_no_request_jobs_charged_under_the_limit_range_default_are_counted(workloads, undercharged):
    hostile = chaos.Hostile(FakeCluster(workloads), op=None, stream=None, period=1)
    assert hostile.undercharged() == undercharged
