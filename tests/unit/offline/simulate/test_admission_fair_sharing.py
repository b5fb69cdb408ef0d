"""`tas simulate` with Kueue's admission fair sharing: simulated time drives the decay."""

from __future__ import annotations

from typing import Any

import pytest

from tas.offline.fields import ScenarioError
from tas.offline.simulate.trace import parse_trace
from tests.unit.offline.simulate.traces import job, running_over_time, two_racks

USAGE_BASED = {"admissionMode": "UsageBasedAdmissionFairSharing"}


def trace(section: dict | None, scope: dict | None = USAGE_BASED, **gates: bool) -> dict:
    """One queue of 16 cpu (the whole pool): team-a runs 16 cpu for 100 s; meanwhile a-late
    (team-a) and then b-late (team-b) arrive for the whole pool."""
    queue: dict[str, Any] = {"name": "q", "nominalQuota": {"cpu": "16"}}
    if scope is not None:
        queue["admissionScope"] = scope
    workloads = [
        job("a-first", 0, 4, "4", duration=100, localQueue="team-a"),
        job("a-late", 50, 4, "4", duration=100, localQueue="team-a"),
        job("b-late", 51, 4, "4", duration=100, localQueue="team-b"),
    ]
    extra: dict[str, Any] = {"clusterQueues": [queue]}
    if section is not None:
        extra["admissionFairSharing"] = section
    if gates:
        extra["featureGates"] = gates
    return two_racks(workloads, **extra)


def admitted_at_100(document: dict) -> set[str]:
    return next(running for now, running in running_over_time(document) if now == 100)


SECTION = {"usageHalfLifeTime": "60s", "usageSamplingInterval": "10s"}


@pytest.mark.parametrize(
    ("document", "want"),
    [
        (trace(SECTION), {"b-late"}),
        (trace(None), {"a-late"}),
        (trace(SECTION, scope={"admissionMode": "NoAdmissionFairSharing"}), {"a-late"}),
        (trace(SECTION, scope=None), {"a-late"}),
        (trace(SECTION, AdmissionFairSharing=False), {"a-late"}),
    ],
    ids=["on", "no section", "no fair sharing scope", "no scope", "gate off"],
)
def test_the_local_queue_that_used_less_goes_first(document, want):
    assert admitted_at_100(document) == want


def test_with_a_half_life_of_zero_usage_is_forgotten_at_each_sample():
    """team-a's 100 s are forgotten at the next sample: the older a-late goes first again."""
    section = {"usageHalfLifeTime": "0s", "usageSamplingInterval": "10s"}
    assert admitted_at_100(trace(section)) == {"a-late"}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"admissionFairSharing": {"usageHalfLifeTime": "soon"}}, "usageHalfLifeTime"),
        ({"admissionFairSharing": {"bogus": 1}}, "admissionFairSharing.bogus"),
    ],
    ids=["bad duration", "unknown field"],
)
def test_a_bad_section_names_its_field(change, field):
    with pytest.raises(ScenarioError, match=field):
        parse_trace(trace(None) | change)


def test_a_bad_admission_mode_names_its_field():
    with pytest.raises(ScenarioError, match=r"clusterQueues\[0\].admissionScope.admissionMode"):
        parse_trace(trace(None, scope={"admissionMode": "Sometimes"}))
