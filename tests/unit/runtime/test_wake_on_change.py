"""The queue objects' watch handlers wake the admission loop only when something admission reads
changed. Our own status writes to ClusterQueues, Cohorts and LocalQueues come back as watch
events; each woke a cycle that walked every pending workload for nothing (0.45 s at 50,000)."""

from __future__ import annotations

import asyncio
import copy

import pytest

from tas.admission.admission_fair_sharing import LocalQueueUsage
from tas.api.fairsharing import AdmissionFairSharing
from tas.cache.state import ClusterState
from tas.runtime.watches import on_cluster_queue, on_cohort, on_local_queue
from tests.unit.admission.fixtures import cluster_queue


class Loop:
    def __init__(self, fair: LocalQueueUsage) -> None:
        self.woken = 0
        self.fair = fair

    def wake(self) -> None:
        self.woken += 1


class Rt:
    def __init__(self, config: AdmissionFairSharing | None = None) -> None:
        self.state = ClusterState()
        self.state.bind_to_current_thread()
        self.admission = Loop(LocalQueueUsage(self.state, config, wake=lambda: None))


def local_queue(weight: str | None = None) -> dict:
    spec: dict = {"clusterQueue": "cq"}
    if weight is not None:
        spec["fairSharing"] = {"weight": weight}
    return {"metadata": {"name": "lq", "namespace": "ns"}, "spec": spec}


def cohort() -> dict:
    groups = cluster_queue("x", cpu="8")["spec"]["resourceGroups"]
    return {"metadata": {"name": "co"}, "spec": {"resourceGroups": groups}}


def with_status(obj: dict, status: dict) -> dict:
    out = copy.deepcopy(obj)
    out["status"] = status
    return out


def with_spec(obj: dict, **changes) -> dict:
    out = copy.deepcopy(obj)
    out["spec"].update(changes)
    return out


CASES = {
    "ClusterQueue": (
        on_cluster_queue,
        cluster_queue("cq", cpu="4"),
        {"pendingWorkloads": 3, "admittedWorkloads": 1},
        {"queueingStrategy": "StrictFIFO"},
    ),
    "Cohort": (on_cohort, cohort(), {"fairSharing": {"weightedShare": 250}}, {"parentName": "r"}),
    "LocalQueue": (
        on_local_queue,
        local_queue(),
        {"pendingWorkloads": 3, "admittedWorkloads": 1},
        {"clusterQueue": "other"},
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_status_write_does_not_wake_admission_but_a_spec_change_and_a_deletion_do(case):
    handler, obj, status, spec_change = case

    async def go() -> list[int]:
        rt = Rt()
        seen = []
        for kind, event in (
            ("ADDED", obj),
            ("MODIFIED", with_status(obj, status)),  # our own status write, seen again
            ("MODIFIED", with_spec(obj, **spec_change)),
            ("DELETED", obj),
            ("DELETED", obj),  # already gone: nothing changes
        ):
            await handler(rt, kind, event)
            seen.append(rt.admission.woken)
        return seen

    assert asyncio.run(go()) == [1, 1, 2, 3, 3]


def test_a_local_queue_weight_change_reorders_and_wakes():
    """Admission fair sharing orders LocalQueues by usage over weight."""

    async def go() -> list[int]:
        rt = Rt(AdmissionFairSharing())
        seen = []
        for obj in (local_queue("1"), local_queue("1"), local_queue("2")):
            await on_local_queue(rt, "MODIFIED", obj)
            seen.append(rt.admission.woken)
        return seen

    assert asyncio.run(go()) == [1, 1, 2]
