"""The admission loop's side of preemption: victims evicted once with Kueue's conditions and
events, the preemptor admitted only once they are gone, and the room it waits for held
against the workloads behind it."""

from __future__ import annotations

import asyncio

from tas.admission.holds import HELD_MESSAGE
from tas.admission.loop import AdmissionLoop
from tests.unit.admission.fixtures import RACK, cluster_queue, make_state, two_racks, workload
from tests.unit.admission.test_loop import FakeWriter, add, admitted, cycle


def preempting(policy: str = "LowerPriority") -> dict:
    cq = cluster_queue()
    cq["spec"]["preemption"] = {"withinClusterQueue": policy}
    return cq


class Cluster:
    """Workload objects kept as the watch would show them after each written status."""

    def __init__(self, cq: dict) -> None:
        self.state = make_state(two_racks(), cq)
        self.objects: dict[str, dict] = {}
        self.writer = FakeWriter()
        self.loop = AdmissionLoop(self.state, self.writer)
        self.seen = 0

    def submit(self, obj: dict) -> None:
        self.objects[obj["metadata"]["name"]] = obj
        add(self.state, obj)

    def cycle(self) -> None:
        cycle(self.loop)
        for name, status in self.writer.statuses[self.seen :]:
            obj = self.objects[name]
            merged = {**obj.get("status", {}), **status}
            obj["status"] = {k: v for k, v in merged.items() if v is not None}
            add(self.state, obj)
        self.seen = len(self.writer.statuses)

    def condition(self, name: str, type_: str) -> dict | None:
        conds = self.objects[name].get("status", {}).get("conditions", [])
        return next((c for c in conds if c["type"] == type_), None)

    def release(self, name: str) -> None:
        """The victim's pods are gone: the Job integration gives its quota back."""
        from tas.workload.transitions import released

        self.writer.statuses.append((name, released(self.state.workloads[("ns", name)])))


def rack_job(name: str, pods: int, priority: int, created: str) -> dict:
    return workload(
        name,
        pods=pods,
        priority=priority,
        created=created,
        annotations_request={"required": RACK},
    )


def test_victim_is_evicted_once_and_the_preemptor_admitted_when_it_is_gone():
    c = Cluster(preempting())
    c.submit(rack_job("low", 8, 0, "2026-01-01T00:00:00Z"))
    c.submit(rack_job("other", 8, 5, "2026-01-01T00:00:01Z"))
    c.cycle()
    assert sorted(admitted(c.writer)) == ["low", "other"]

    c.submit(rack_job("high", 8, 10, "2026-01-02T00:00:00Z"))
    c.cycle()
    evicted = c.condition("low", "Evicted")
    preempted = c.condition("low", "Preempted")
    assert (evicted["status"], evicted["reason"]) == ("True", "Preempted")
    assert (preempted["status"], preempted["reason"]) == ("True", "InClusterQueue")
    assert "due to prioritization in the ClusterQueue; preemptor path: /cq" in evicted["message"]
    assert c.condition("other", "Evicted") is None  # one victim is enough: the lowest
    assert ("low", "Preempted") in c.writer.events
    assert ("low", "EvictedDueToPreempted") in c.writer.events
    pending = c.condition("high", "QuotaReserved")
    assert pending["status"] == "False"
    assert pending["message"].endswith(". Pending the preemption of 1 workload(s)")
    assert "high" not in admitted(c.writer)

    # The victim's pods are still there: it keeps its quota, and is not evicted twice.
    writes = len(c.writer.statuses)
    c.cycle()
    assert [n for n, _ in c.writer.statuses[writes:]] == []
    assert "high" not in admitted(c.writer)

    c.release("low")
    c.cycle()  # the release lands
    c.cycle()  # capacity freed: the preemptor goes first
    assert admitted(c.writer)[-1] == "high"
    requeued = c.condition("low", "Requeued")
    assert requeued and requeued["status"] == "True"


def test_no_preemption_under_never_and_the_message_says_why_under_a_policy():
    for policy, why in (("Never", None), ("LowerPriority", "No preemption")):
        c = Cluster(preempting(policy))
        c.submit(rack_job("a", 8, 10, "2026-01-01T00:00:00Z"))
        c.submit(rack_job("b", 8, 10, "2026-01-01T00:00:01Z"))
        c.cycle()
        c.submit(rack_job("c", 8, 10, "2026-01-02T00:00:00Z"))  # equal priority: not a victim
        c.cycle()
        assert c.condition("a", "Evicted") is None and c.condition("b", "Evicted") is None
        message = c.condition("c", "QuotaReserved")["message"]
        if why is None:
            assert "No preemption" not in message
        else:
            assert f". {why}: " in message


def test_a_waiting_preemptor_holds_its_room_against_lower_priorities():
    c = Cluster(preempting())
    c.submit(rack_job("keep", 8, 1, "2026-01-01T00:00:00Z"))  # fills one rack
    c.submit(rack_job("low", 5, 0, "2026-01-01T00:00:01Z"))  # 5 of the other rack's 8
    c.cycle()
    assert sorted(admitted(c.writer)) == ["keep", "low"]

    c.submit(rack_job("high", 8, 10, "2026-01-02T00:00:00Z"))
    c.cycle()
    assert c.condition("low", "Evicted")["status"] == "True"
    assert c.condition("keep", "Evicted") is None  # the minimal set: one victim

    # 3 pods would fit beside the victim right now, but on the rack the preemptor waits for.
    c.submit(workload("mid", pods=3, priority=5, created="2026-01-03T00:00:00Z"))
    c.cycle()
    assert "mid" not in admitted(c.writer)
    assert c.condition("mid", "QuotaReserved")["message"] == HELD_MESSAGE

    c.release("low")
    c.cycle()
    c.cycle()
    assert "high" in admitted(c.writer)
    assert "mid" not in admitted(c.writer)  # no room left beside the two racks' owners


def test_preemption_write_failure_backs_off_the_preemptor():
    from tas.kube import KubeError

    c = Cluster(preempting())
    c.submit(rack_job("low", 8, 0, "2026-01-01T00:00:00Z"))
    c.submit(rack_job("low2", 8, 0, "2026-01-01T00:00:01Z"))
    c.cycle()
    c.submit(rack_job("high", 8, 10, "2026-01-02T00:00:00Z"))
    c.writer.raise_next = [KubeError(500, "boom")]
    asyncio.run(_cycle_quiet(c))
    assert c.loop._backing_off(("ns", "high"))
    assert not any(c.condition(n, "Evicted") for n in ("low", "low2"))


async def _cycle_quiet(c: Cluster) -> None:
    await c.loop.cycle()
    await c.loop.drain()


def cohort_queues() -> list[dict]:
    """a lends everything (nominal 0 of its own); b owns 8 cpu; both in cohort "co"."""
    queues = []
    for name, cpu in (("a", "0"), ("b", "8")):
        cq = cluster_queue(name=name, cpu=cpu)
        cq["spec"]["cohortName"] = "co"
        cq["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority"}
        queues.append(cq)
    return queues


def in_queue(obj: dict, queue: str) -> dict:
    obj["spec"]["queueName"] = queue
    return obj


def test_in_a_cohort_heads_within_nominal_go_first_and_a_preemptor_keeps_its_room():
    from tas.cache import projections as proj

    c = Cluster(preempting())
    for cq in cohort_queues():
        c.state.upsert_cluster_queue(proj.cluster_queue_from_object(cq))
        c.state.upsert_local_queue("ns", cq["metadata"]["name"], cq["metadata"]["name"])
    c.submit(in_queue(workload("victim", pods=8, priority=0), "b"))
    c.cycle()
    assert admitted(c.writer) == ["victim"]

    # Both arrive in one cycle: the borrower in a (walked first by name) and the preemptor in
    # b, which needs only its own quota: the preemptor is decided first and holds the room.
    c.submit(
        in_queue(workload("borrower", pods=4, priority=0, created="2026-01-01T00:00:00Z"), "a")
    )
    c.submit(in_queue(workload("owner", pods=8, priority=10, created="2026-01-02T00:00:00Z"), "b"))
    c.cycle()
    assert c.condition("victim", "Evicted")["status"] == "True"
    assert "borrower" not in admitted(c.writer)

    c.release("victim")
    c.cycle()  # the release lands: 8 cpu free in the cohort
    c.cycle()
    assert admitted(c.writer)[-1] == "owner"
    assert "borrower" not in admitted(c.writer)  # b's quota is the owner's now
    assert c.condition("owner", "Evicted") is None
