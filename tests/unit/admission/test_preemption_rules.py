"""The small rules of preemption on their own: policies, the victim's message, which
candidates use a resource short of room, and the order of candidates never admitted."""

from __future__ import annotations

from datetime import datetime

import pytest

from tas.admission import preemption
from tas.cache import projections as proj
from tas.cache.state import Charge, PodSetCharge
from tests.unit.admission.fixtures import workload


def wl(
    name: str, priority: int, created: str = "2026-01-01T00:00:00Z", **status
) -> proj.WorkloadInfo:
    obj = workload(name, pods=1, priority=priority, created=created)
    if status:
        obj["status"] = status
    return proj.workload_from_object(obj)


@pytest.mark.parametrize(
    ("policy", "candidate", "allowed"),
    [
        ("LowerPriority", wl("c", 4), True),
        ("LowerPriority", wl("c", 5), False),
        ("LowerPriority", wl("c", 6), False),
        ("LowerOrNewerEqualPriority", wl("c", 4), True),
        ("LowerOrNewerEqualPriority", wl("c", 5, "2026-01-02T00:00:00Z"), True),
        ("LowerOrNewerEqualPriority", wl("c", 5, "2026-01-01T00:00:00Z"), False),
        ("LowerOrNewerEqualPriority", wl("c", 5, "2025-12-31T00:00:00Z"), False),
        ("LowerOrNewerEqualPriority", wl("c", 6, "2026-01-02T00:00:00Z"), False),
        ("Any", wl("c", 9), True),
        ("Never", wl("c", 0), False),
    ],
)
def test_policies(policy, candidate, allowed):
    preemptor = wl("p", 5, "2026-01-01T00:00:00Z")
    assert preemption.allowed(policy, preemptor, candidate) is allowed


def test_the_message_says_unknown_for_what_is_missing():
    known = wl("p", 1)
    text = preemption.message(known, "InCohortReclamation", "/co/a", "/co/b")
    assert text == (
        "Preempted to accommodate a workload (UID: uid-p, JobUID: UNKNOWN) due to "
        "reclamation within the cohort; preemptor path: /co/a; preemptee path: /co/b"
    )
    anonymous = proj.workload_from_object(
        {**workload("p", pods=1), "metadata": {"name": "p", "namespace": "ns", "uid": ""}}
    )
    assert preemption.message(anonymous, "Other", "", "") == (
        "Preempted to accommodate a workload (UID: UNKNOWN, JobUID: UNKNOWN) due to UNKNOWN; "
        "preemptor path: UNKNOWN; preemptee path: UNKNOWN"
    )
    labelled = workload("p", pods=1)
    labelled["metadata"]["labels"] = {"kueue.x-k8s.io/job-uid": "job-1"}
    text = preemption.message(
        proj.workload_from_object(labelled), "InCohortReclaimWhileBorrowing", "/a", "/b"
    )
    assert "JobUID: job-1) due to reclamation within the cohort while borrowing;" in text


def charge(**per_pod: int) -> Charge:
    return Charge("cq", (PodSetCharge("main", "f", 2, per_pod, None),))


def test_a_candidate_uses_a_short_resource_only_with_a_request_for_it():
    assert preemption.uses(charge(cpu=1000, pods=1000), frozenset({("f", "cpu")}))
    assert not preemption.uses(charge(cpu=0, pods=1000), frozenset({("f", "cpu")}))
    assert not preemption.uses(charge(cpu=1000), frozenset({("g", "cpu")}))
    assert not preemption.uses(charge(cpu=1000), frozenset({("f", "memory")}))
    assert preemption.uses(charge(memory=1, cpu=0), frozenset({("f", "cpu"), ("f", "memory")}))


def test_a_candidate_without_a_reservation_time_counts_as_admitted_now():
    now = datetime(2026, 6, 1)
    reserved = {
        "conditions": [
            {
                "type": "QuotaReserved",
                "status": "True",
                "lastTransitionTime": "2026-05-01T00:00:00Z",
            }
        ]
    }
    old = wl("old", 0, **reserved)
    unknown = wl("unknown", 0)  # no QuotaReserved time: Kueue takes the current time
    key = preemption.candidate_order("cq", now)
    ordered = sorted([(old, charge()), (unknown, charge())], key=key)
    assert [w.name for w, _ in ordered] == ["unknown", "old"]  # most recently admitted first
    assert unknown.reserved_at is None and old.reserved_at == datetime(2026, 5, 1)
