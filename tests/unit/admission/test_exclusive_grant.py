"""Exclusive placement groups are an administrator's grant, and cost what they hold (gate
TASPlacementGroups).

A group with an exclusive level keeps every other tenant out of whole domains. Only members
admitted through a ClusterQueue annotated `tas-operator.io/allow-exclusive-placement-groups:
"true"` may take domains that way, all through that one queue, and the whole capacity of the
domains the group holds counts against that queue's quota.

Real ClusterState, decide() and the admission loop, on plain objects as the watch delivers them.
"""

from __future__ import annotations

import pytest

from tas.admission.decide import decide
from tas.admission.loop import AdmissionLoop
from tas.api.constants import (
    ALLOW_EXCLUSIVE_PLACEMENT_GROUPS,
    PLACEMENT_GROUP,
    PLACEMENT_GROUP_ANTI_AFFINITY,
    PLACEMENT_GROUP_EXCLUSIVE,
)
from tas.cache import projections as proj
from tas.cache.state import ClusterState
from tas.solver.types import SolverOptions
from tests.unit.admission.fixtures import (
    BLOCK,
    allowing_exclusive_groups,
    cluster_queue,
    make_state,
    workload,
)
from tests.unit.admission.test_decide_groups import hosts, pool
from tests.unit.admission.test_loop import add, admitted, cycle
from tests.unit.admission.test_loop_groups import GroupWriter

BLOCK_CPU = 16_000  # a pool block: 2 racks x 2 hosts x 4 CPUs


def queue(name: str, cpu: str, *, granted: bool) -> proj.ClusterQueueInfo:
    obj = cluster_queue(name, cpu=cpu)
    return proj.cluster_queue_from_object(allowing_exclusive_groups(obj) if granted else obj)


def tenant_state(cpu: str = "2", *, granted: bool = False) -> ClusterState:
    """The pool (2 blocks of 16 CPUs); the tenant's namespace `t` on ClusterQueue `tenant`,
    everyone else's (`ns`) on `cq`."""
    state = make_state(pool())
    state.options = SolverOptions(placement_groups=True)
    state.upsert_cluster_queue(queue("tenant", cpu, granted=granted))
    state.upsert_namespace("t", {})
    state.upsert_local_queue("t", "lq", "tenant")
    return state


def member(name: str, group: str, pods: int = 1, **annotations: str) -> dict:
    obj = workload(name, pods=pods, namespace="t")
    constraints = {PLACEMENT_GROUP_EXCLUSIVE: BLOCK, **annotations}
    obj["spec"]["podSets"][0]["template"]["metadata"] = {
        "annotations": {PLACEMENT_GROUP: group, **constraints}
    }
    return obj


def decide_for(state: ClusterState, obj: dict, cq: str):
    info = proj.workload_from_object(obj)
    state.upsert_workload(info)
    return info, decide(state, info, state.cluster_queues[cq])


def admit(state: ClusterState, obj: dict, cq: str = "tenant"):
    info, decision = decide_for(state, obj, cq)
    assert decision.admitted, decision.message
    state.assume(info, decision.charge)
    return decision


def test_without_the_grant_a_tenant_cannot_hold_blocks_and_others_keep_their_room() -> None:
    """The issue's case, through the loop: a tenant with a 2-CPU queue submits two one-pod
    Jobs in exclusive groups; neither holds a block, and another namespace's 16-pod workload
    that needs a whole block is admitted."""
    state = tenant_state()
    writer = GroupWriter()
    loop = AdmissionLoop(state, writer)
    add(state, member("t1", "g1"))
    add(state, member("t2", "g2"))
    add(state, workload("other", pods=16, annotations_request={"requiredTopologyLevel": BLOCK}))
    cycle(loop)
    cycle(loop)
    assert admitted(writer) == ["other"]
    for name in ("t1", "t2"):
        (status,) = [status for wl, status in writer.statuses if wl == name]
        (condition,) = status["conditions"]
        assert condition["reason"] == "Inadmissible", condition
        assert ALLOW_EXCLUSIVE_PLACEMENT_GROUPS in condition["message"]
        assert "ClusterQueue tenant does not allow" in condition["message"]


def test_a_granted_queue_is_charged_the_whole_blocks_its_group_holds() -> None:
    state = tenant_state("40", granted=True)
    first = admit(
        state, member("t1", "g", **{PLACEMENT_GROUP_ANTI_AFFINITY: "kubernetes.io/hostname"})
    )
    assert state.quota_usage("tenant", "tas")["cpu"] == BLOCK_CPU
    (block,) = {h.split("-")[0] for h in hosts(first)}

    # A second member in the block the group holds costs nothing more.
    second = admit(
        state, member("t2", "g", **{PLACEMENT_GROUP_ANTI_AFFINITY: "kubernetes.io/hostname"})
    )
    assert {h.split("-")[0] for h in hosts(second)} == {block}
    assert state.quota_usage("tenant", "tas")["cpu"] == BLOCK_CPU

    # Members leaving give the block back.
    state.forget(state.workloads[("t", "t1")])
    state.forget(state.workloads[("t", "t2")])
    assert state.quota_usage("tenant", "tas").get("cpu", 0) == 0


@pytest.mark.parametrize(
    ("cpu", "admitted_blocks"),
    [pytest.param("2", 0, id="2 CPUs: no block"), pytest.param("20", 1, id="20 CPUs: one block")],
)
def test_a_granted_queue_holds_no_more_blocks_than_its_quota_pays_for(cpu, admitted_blocks) -> None:
    state = tenant_state(cpu, granted=True)
    taken = 0
    for i in range(2):  # each group takes a block of its own
        _, decision = decide_for(state, member(f"t{i}", f"g{i}"), "tenant")
        if decision.admitted:
            state.assume(state.workloads[("t", f"t{i}")], decision.charge)
            taken += 1
        else:
            assert not decision.invalid
            assert "placement group" in decision.message and "whole " + BLOCK in decision.message
            assert "counts against ClusterQueue tenant" in decision.message
    assert taken == admitted_blocks
    assert state.quota_usage("tenant", "tas").get("cpu", 0) == admitted_blocks * BLOCK_CPU


def test_an_exclusive_group_is_admitted_through_one_queue() -> None:
    state = tenant_state("40", granted=True)
    state.upsert_cluster_queue(queue("tenant-2", "40", granted=True))
    admit(state, member("t1", "g"))
    _, decision = decide_for(state, member("t2", "g"), "tenant-2")
    assert decision.invalid and not decision.admitted
    assert decision.message == (
        "placement group g holds its exclusive domains through ClusterQueue tenant: its "
        "members are admitted through that queue only"
    )
