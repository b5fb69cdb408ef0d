"""The admission order across ClusterQueues with fair sharing on, against Kueue v0.17.0's
TestSchedule cases with `enableFairSharing` (pkg/scheduler/scheduler_test.go) whose queues
each have one pending head (Kueue takes one head per queue per cycle, as our loop then does),
and its TestEntryComparerLess; plus the statuses the cycle writes (weightedShare)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from tas import features
from tas.admission import fairshare_order
from tas.admission.loop import AdmissionLoop
from tas.api.constants import ANY, NEVER
from tas.api.models.fairsharing import MAX_WEIGHTED_SHARE
from tas.cache import projections as proj
from tas.cache.fairshare import DRS
from tas.features import Gate
from tests.unit.fairshare.kueue_objects import NOW, admitted, cohort, cq, state_of, workload


class Writer:
    def __init__(self) -> None:
        self.admitted: list[str] = []
        self.cq: dict[str, dict] = {}
        self.cohort: dict[str, dict] = {}

    async def write_status(self, wl, status):
        if "admission" in status:
            self.admitted.append(wl.name)
        return True

    async def settle(self, wl):
        return None

    async def record_event(self, wl, type_, reason, message):
        return None

    async def write_cluster_queue_status(self, name, status):
        self.cq[name] = status

    async def write_cohort_status(self, name, status):
        self.cohort[name] = status

    async def write_local_queue_status(self, namespace, name, status):
        return None


def run_cycle(state) -> Writer:
    writer = Writer()
    loop = AdmissionLoop(state, writer)

    async def go():
        await loop.cycle()
        await loop.drain()

    asyncio.run(go())
    return writer


def pending(name: str, queue: str, cpu: str, priority: int = 0, created=NOW) -> dict:
    return workload(name, cpu, priority, created, queue=f"lq-{queue}")


def in_a(name: str, weight: str | None = None, reclaim: str = NEVER) -> dict:
    return cq(name, "A", {"default": "0"}, reclaim=reclaim, weight=weight)


# name: (queues, cohorts, workloads, admitted in this order, left pending)
CASES = {
    "fair sharing schedule workload with lowest drf after admission": (
        [in_a("b"), in_a("c")],
        [cohort("A", cpu="100")],
        [admitted("b0", "b", "10"), pending("b1", "b", "50"), pending("c1", "c", "75")],
        ["b1"],
        {"c1"},
    ),
    "fair sharing two queues with weight 0 schedules workload which borrows less": (
        [in_a("b", "0", ANY), in_a("c", "0", ANY)],
        [cohort("A", cpu="8")],
        [admitted("b0", "b", "4"), pending("b1", "b", "4", 9001), pending("c1", "c", "4")],
        ["c1"],
        {"b1"},
    ),
    "fair sharing two queues with high weight schedules workload which borrows less": (
        [in_a("b", "123456789", ANY), in_a("c", "123456789", ANY)],
        [cohort("A", cpu="8")],
        [admitted("b0", "b", "4"), pending("b1", "b", "4", 9001), pending("c1", "c", "4")],
        ["c1"],
        {"b1"},
    ),
    "fair sharing schedule singleton cqs and cq without cohort": (
        [
            in_a("a"),
            cq("b", "B", {"default": "10"}),
            cq("c", None, {"default": "10"}),
        ],
        [cohort("A", cpu="10"), cohort("B")],
        [pending("a1", "a", "10"), pending("b1", "b", "10"), pending("c1", "c", "10")],
        None,  # all three, in an order Kueue leaves open
        set(),
    ),
    "fair sharing schedule highest priority first": (
        [in_a("b"), in_a("c")],
        [cohort("A", cpu="10"), cohort("B")],
        [pending("b1", "b", "10", 99), pending("c1", "c", "10", 101)],
        ["c1"],
        {"b1"},
    ),
    "fair sharing schedule earliest timestamp first": (
        [in_a("b"), in_a("c")],
        [cohort("A", cpu="10"), cohort("B")],
        [
            pending("b1", "b", "10", 101, NOW + timedelta(seconds=1)),
            pending("c1", "c", "10", 101, NOW),
        ],
        ["c1"],
        {"b1"},
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_schedule_with_fair_sharing(name: str) -> None:
    queues, cohorts, workloads, want, left = CASES[name]
    state = state_of(queues, cohorts, workloads)
    writer = run_cycle(state)
    if want is None:
        assert sorted(writer.admitted) == ["a1", "b1", "c1"]
    else:
        assert writer.admitted == want
    still = {w.name for k, w in state.workloads.items() if w.pending and not state.is_assumed(k)}
    assert still == left


def test_classical_order_would_admit_the_higher_priority_instead() -> None:
    """The same queues without fair sharing: b1's priority wins (the order really changed)."""
    queues, cohorts, workloads, _, _ = CASES[
        "fair sharing two queues with weight 0 schedules workload which borrows less"
    ]
    state = state_of(queues, cohorts, workloads)
    state.fair_sharing = None
    assert run_cycle(state).admitted == ["b1"]


def test_statuses_carry_the_weighted_share_only_with_fair_sharing_on() -> None:
    queues = [cq("b", "A", {"default": "2"}), cq("c", "A", {"default": "2"}, weight="0")]
    cohorts = [cohort("A", "root", "6", weight="2"), cohort("root")]
    workloads = [admitted("b0", "b", "4"), admitted("c0", "c", "3")]
    state = state_of(queues, cohorts, workloads)
    writer = run_cycle(state)
    # b uses 2 cpu beyond its quota; its parent A could get at most 10 (6 + 2 + 2): 200/1000.
    assert writer.cq["b"]["fairSharing"] == {"weightedShare": 200}
    assert writer.cq["c"]["fairSharing"] == {"weightedShare": MAX_WEIGHTED_SHARE}
    # A's subtree quota is 10 (6 + 2 + 2) and uses 7: within it, share 0; the root has none.
    assert writer.cohort == {
        "A": {"fairSharing": {"weightedShare": 0}},
        "root": {"fairSharing": {"weightedShare": 0}},
    }
    state.fair_sharing = None
    writer = run_cycle(state)
    assert writer.cq["b"]["fairSharing"] is None and writer.cohort == {}


# Kueue's TestEntryComparerLess, on the tournament's comparison.
CPU = ("default", "cpu")
BORROWING = DRS(ratio=0.0, borrowing=True, borrowed=frozenset({CPU}))


@pytest.mark.parametrize(
    ("a_share", "b_share", "a_requests", "b_requests", "a_first", "want"),
    [
        pytest.param(DRS(), BORROWING, {CPU: 1}, {CPU: 1}, False, True,
                     id="non-borrowing subtree preferred over borrowing subtree"),
        pytest.param(BORROWING, BORROWING, {CPU: 1}, {CPU: 1}, False, False,
                     id="both borrowing on requested flavors falls through to FIFO"),
        pytest.param(DRS(ratio=-1.0), DRS(), {}, {}, False, True,
                     id="lower DRS preferred over higher DRS"),
        pytest.param(DRS(), DRS(), {}, {}, True, True,
                     id="both non-borrowing falls through to FIFO"),
    ],
)  # fmt: skip
def test_entry_comparer_less(a_share, b_share, a_requests, b_requests, a_first, want) -> None:
    assert features.enabled(Gate.FAIR_SHARING_PRIORITIZE_NON_BORROWING)
    a_created, b_created = (NOW, NOW + timedelta(seconds=1))
    if not a_first:
        a_created, b_created = b_created, a_created
    heads = {
        "a": proj.workload_from_object(workload("a", created=a_created)),
        "b": proj.workload_from_object(workload("b", created=b_created)),
    }
    parent = ("cohort", "test-cohort")
    tournament = fairshare_order._Tournament(None, None, heads, True, True)  # type: ignore[arg-type]
    tournament.shares = {(parent, "a"): a_share, (parent, "b"): b_share}
    tournament.requested = {"a": a_requests, "b": b_requests}
    assert tournament.less("a", "b", parent) is want
