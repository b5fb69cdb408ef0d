"""Holds on their own: what a waiting preemptor's hold blocks, and how long it lasts."""

from __future__ import annotations

from tas.admission.decide import Decision
from tas.admission.holds import HELD_MESSAGE, OVERLAP_MESSAGE, Holds
from tas.admission.preemption import Preemption, Target
from tas.cache import projections as proj
from tas.cache.state import Charge, ClusterState, PodSetCharge
from tas.solver.types import DomainAssignment, TopologyAssignment, with_one_pod
from tests.unit.admission.fixtures import workload


def queue(name: str, cpu: str, cohort: str | None = None) -> dict:
    spec = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["cpu"],
                "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": cpu}]}],
            }
        ],
    }
    if cohort:
        spec["cohortName"] = cohort
    return {"metadata": {"name": name}, "spec": spec}


def state_with(*queues: dict) -> ClusterState:
    state = ClusterState()
    state.upsert_flavor(proj.FlavorInfo("f", {}, (), None))
    for q in queues:
        state.upsert_cluster_queue(proj.cluster_queue_from_object(q))
    return state


def charge(cq: str, cpu: int, hosts: tuple[str, ...] = ()) -> Charge:
    assignment = (
        TopologyAssignment(
            ("kubernetes.io/hostname",), tuple(DomainAssignment((h,), 1) for h in hosts)
        )
        if hosts
        else None
    )
    return Charge(cq, (PodSetCharge("main", "f", cpu, with_one_pod({"cpu": 1000}), assignment),))


def running(state: ClusterState, name: str, c: Charge) -> proj.WorkloadInfo:
    wl = proj.workload_from_object(workload(name, pods=1))
    state.upsert_workload(wl)
    state.assume(wl, c)
    return wl


def preempting(c: Charge, *victims: proj.WorkloadInfo) -> Decision:
    targets = tuple(Target(v, "InClusterQueue") for v in victims)
    return Decision(False, "", charge=c, preemption=Preemption(targets, {}))


def admitting(c: Charge) -> Decision:
    return Decision(True, "", admission={}, charge=c)


P, W, Q = ("ns", "p"), ("ns", "w"), ("ns", "q")


def test_the_held_quota_is_the_preemptors_beyond_what_its_victims_free():
    state = state_with(queue("cq", "8"), queue("other", "8"))
    victim = running(state, "v", charge("cq", 6))
    holds = Holds()
    holds.add(P, preempting(charge("cq", 8), victim))
    # 6 used by the victim, leaving with it; the preemptor takes 8 of 8: nothing is left.
    assert holds.blocks(state, W, admitting(charge("cq", 1))) == HELD_MESSAGE
    # Another queue's quota is not held; nor is anything against the preemptor itself.
    assert holds.blocks(state, W, admitting(charge("other", 8))) is None
    assert holds.blocks(state, P, admitting(charge("cq", 8))) is None
    # The victim has gone: its quota is not taken off twice.
    state.delete_workload(*victim.key)
    assert holds.blocks(state, W, admitting(charge("cq", 1))) == HELD_MESSAGE
    holds = Holds()
    holds.add(P, preempting(charge("cq", 4), running(state, "v2", charge("cq", 2))))
    # 2 used, leaving; 4 held: 4 of 8 left.
    assert holds.blocks(state, W, admitting(charge("cq", 4))) is None
    assert holds.blocks(state, W, admitting(charge("cq", 5))) == HELD_MESSAGE


def test_a_hold_counts_in_the_cohort():
    state = state_with(queue("a", "4", "co"), queue("b", "4", "co"))
    victim = running(state, "v", charge("b", 4))
    holds = Holds()
    holds.add(P, preempting(charge("b", 4), victim))
    # a may borrow b's quota, but b's preemptor holds it: a keeps only its own 4.
    assert holds.blocks(state, W, admitting(charge("a", 4))) is None
    assert holds.blocks(state, W, admitting(charge("a", 5))) == HELD_MESSAGE


def test_held_nodes_and_shared_victims():
    state = state_with(queue("cq", "100"))
    victim = running(state, "v", charge("cq", 2, ("x1", "x2")))
    holds = Holds()
    holds.add(P, preempting(charge("cq", 2, ("x1", "x3")), victim))
    assert holds.blocks(state, W, admitting(charge("cq", 1, ("x3",)))) == HELD_MESSAGE
    assert holds.blocks(state, W, admitting(charge("cq", 1, ("x4",)))) is None
    other = running(state, "o", charge("cq", 1, ("x5",)))
    assert holds.blocks(state, Q, preempting(charge("cq", 1, ("x6",)), victim)) == OVERLAP_MESSAGE
    assert holds.blocks(state, Q, preempting(charge("cq", 1, ("x6",)), other)) is None


def test_a_hold_lasts_until_it_is_not_renewed_for_a_cycle_or_released():
    state = state_with(queue("cq", "8"))
    victim = running(state, "v", charge("cq", 8))
    holds = Holds()
    holds.begin_cycle()
    holds.add(P, preempting(charge("cq", 8), victim))
    assert holds.end_cycle() is False  # renewed in this cycle
    holds.begin_cycle()
    assert holds.blocks(state, W, admitting(charge("cq", 1))) == HELD_MESSAGE  # still held
    assert holds.end_cycle() is True  # not renewed: dropped, and the loop is woken
    assert holds.blocks(state, W, admitting(charge("cq", 1))) is None
    holds.add(P, preempting(charge("cq", 8), victim))
    assert holds.release(P) is True and holds.release(P) is False
    assert holds.blocks(state, W, admitting(charge("cq", 8))) is None
