"""decide() with placement groups (gate TASPlacementGroups): members see what earlier members
hold in the cache, exclusive domains keep others out, bad annotations name themselves, and with
the gate off the annotations change nothing."""

from __future__ import annotations

from tas.admission.decide import decide
from tas.api.constants import (
    PLACEMENT_GROUP,
    PLACEMENT_GROUP_AFFINITY,
    PLACEMENT_GROUP_ANTI_AFFINITY,
    PLACEMENT_GROUP_EXCLUSIVE,
    PLACEMENT_GROUP_PARTITION_TOPOLOGY,
    PLACEMENT_GROUP_PARTITIONS,
)
from tas.cache import placementgroups
from tas.cache import projections as proj
from tas.solver.types import SolverOptions
from tas.workload.transitions import admitted
from tests.unit.admission.fixtures import (
    BLOCK,
    HOST,
    RACK,
    allowing_exclusive_groups,
    cluster_queue,
    make_state,
    node,
    workload,
)


def pool() -> list[dict]:
    """2 blocks x 2 racks x 2 hosts of 4 cpu."""
    return [
        node(f"{b}-{r}-h{h}", b, f"{b}-{r}", "4")
        for b in ("b1", "b2")
        for r in ("r1", "r2")
        for h in (1, 2)
    ]


def state_with_groups(on: bool = True):
    state = make_state(pool(), allowing_exclusive_groups(cluster_queue()))
    state.options = SolverOptions(placement_groups=on)
    return state


def member(name: str, pods: int, group: str, **annotations: str):
    obj = workload(name, pods=pods)
    obj["spec"]["podSets"][0]["template"]["metadata"] = {
        "annotations": {PLACEMENT_GROUP: group, **annotations}
    }
    info = proj.workload_from_object(obj)
    return info


def admit(state, info):
    decision = decide(state, info, state.cluster_queues["cq"])
    assert decision.admitted, decision.message
    state.upsert_workload(info)
    state.assume(info, decision.charge)
    return decision


def hosts(decision) -> list[str]:
    (ps,) = decision.charge.pod_sets
    return [d.values[-1] for d in ps.assignment.domains for _ in range(d.count)]


def rack_of(host: str) -> str:
    return host.rsplit("-", 1)[0]


def test_affinity_members_share_the_first_members_rack_then_wait_for_it():
    state = state_with_groups()
    first = admit(state, member("a", 3, "g", **{PLACEMENT_GROUP_AFFINITY: RACK}))
    (rack,) = {rack_of(h) for h in hosts(first)}
    second = admit(state, member("b", 4, "g", **{PLACEMENT_GROUP_AFFINITY: RACK}))
    assert {rack_of(h) for h in hosts(second)} == {rack}
    refused = decide(
        state, member("c", 2, "g", **{PLACEMENT_GROUP_AFFINITY: RACK}), state.cluster_queues["cq"]
    )
    assert not refused.admitted and not refused.invalid
    assert "placement group" in refused.message and rack in refused.message


def test_anti_affinity_spreads_members_over_hosts():
    state = state_with_groups()
    seen: list[str] = []
    for i in range(8):
        decision = admit(state, member(f"m{i}", 1, "ha", **{PLACEMENT_GROUP_ANTI_AFFINITY: HOST}))
        seen += hosts(decision)
    assert len(set(seen)) == 8
    refused = decide(
        state,
        member("m8", 1, "ha", **{PLACEMENT_GROUP_ANTI_AFFINITY: HOST}),
        state.cluster_queues["cq"],
    )
    assert not refused.admitted


def test_an_exclusive_block_keeps_other_workloads_out():
    state = state_with_groups()
    tenant = admit(state, member("t", 1, "tenant", **{PLACEMENT_GROUP_EXCLUSIVE: BLOCK}))
    (tenant_block,) = {h.split("-")[0] for h in hosts(tenant)}
    # 15 pods of a required block: BestFit alone would take the tenant's block (15 free)
    other = proj.workload_from_object(
        workload("o", pods=15, annotations_request={"requiredTopologyLevel": BLOCK})
    )
    decision = admit(state, other)
    assert {h.split("-")[0] for h in hosts(decision)} == {"b1", "b2"} - {tenant_block}


def test_the_gate_off_ignores_the_annotations():
    state = state_with_groups(on=False)
    tenant = admit(state, member("t", 1, "tenant", **{PLACEMENT_GROUP_EXCLUSIVE: BLOCK}))
    (tenant_block,) = {h.split("-")[0] for h in hosts(tenant)}
    other = proj.workload_from_object(
        workload("o", pods=15, annotations_request={"requiredTopologyLevel": BLOCK})
    )
    decision = admit(state, other)
    assert {h.split("-")[0] for h in hosts(decision)} == {tenant_block}


def test_a_bad_annotation_is_an_invalid_decision_naming_it():
    state = state_with_groups()
    refused = decide(
        state, member("x", 1, "g", **{PLACEMENT_GROUP_PARTITIONS: "0"}), state.cluster_queues["cq"]
    )
    assert refused.invalid and PLACEMENT_GROUP_PARTITIONS in refused.message
    refused = decide(
        state,
        member("y", 1, "g", **{PLACEMENT_GROUP_AFFINITY: "example.com/no-such-level"}),
        state.cluster_queues["cq"],
    )
    assert refused.invalid and "spec.affinityTopology" in refused.message


def test_a_member_disagreeing_with_the_group_object_names_the_field():
    state = state_with_groups()
    state.upsert_placement_group(
        proj.placement_group_from_object(
            {"metadata": {"name": "g", "namespace": "ns"}, "spec": {"affinityTopology": RACK}}
        )
    )
    refused = decide(
        state, member("x", 1, "g", **{PLACEMENT_GROUP_AFFINITY: BLOCK}), state.cluster_queues["cq"]
    )
    assert refused.invalid and "spec.affinityTopology" in refused.message


def test_partitions_are_balanced_and_recorded_for_the_write():
    state = state_with_groups()
    annotations = {PLACEMENT_GROUP_PARTITIONS: "2", PLACEMENT_GROUP_PARTITION_TOPOLOGY: RACK}
    first = member("p1", 3, "shards", **annotations)
    decision = admit(state, first)
    assert decision.group is not None
    new = decision.group.new_partitions
    assert sorted(new.values()) == [1, 2]
    state.assumed_partitions[decision.group.key][first.key] = dict(new)
    status = placementgroups.status_now(state, ("ns", "shards"), decision.group.spec)
    assert sorted(p["pods"] for p in status["partitions"]) == [1, 2]
    second = admit(state, member("p2", 1, "shards", **annotations))
    state.assumed_partitions[second.group.key][("ns", "p2")] = dict(second.group.new_partitions)
    status = placementgroups.status_now(state, ("ns", "shards"), decision.group.spec)
    assert [p["pods"] for p in status["partitions"]] == [2, 2]
    racks = [tuple(d) for p in status["partitions"] for d in p["domains"]]
    assert len(racks) == len(set(racks))  # no rack in two partitions


def test_a_member_that_does_not_fit_its_group_never_preempts():
    from tests.unit.admission.fixtures import cluster_queue

    cq = cluster_queue()
    cq["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority"}
    state = make_state(pool(), cq)
    state.options = SolverOptions(placement_groups=True)
    anti_rack = {PLACEMENT_GROUP: "ha", PLACEMENT_GROUP_ANTI_AFFINITY: RACK}
    objects: dict[str, dict] = {}

    def whole_host(name: str, pods: int, priority: int = 0, annotations=None):
        obj = workload(name, pods=pods, cpu="4", priority=priority)
        if annotations:
            obj["spec"]["podSets"][0]["template"]["metadata"] = {"annotations": annotations}
        objects[name] = obj
        return proj.workload_from_object(obj)

    def admit_written(info):
        """Admitted as the watch shows it after the write (candidates must be stored)."""
        decision = decide(state, info, state.cluster_queues["cq"])
        assert decision.admitted, decision.message
        obj = {**objects[info.name], "status": admitted(info, decision.admission, decision.message)}
        obj["metadata"] = {**obj["metadata"], "resourceVersion": "2"}
        state.upsert_workload(proj.workload_from_object(obj))

    for i in range(4):  # one host in each of the 4 racks
        admit_written(whole_host(f"m{i}", 1, annotations=anti_rack))
    admit_written(whole_host("low", 4))  # the other 4 hosts
    decision = decide(state, whole_host("m4", 1, 10, anti_rack), state.cluster_queues["cq"])
    # evicting `low` would free hosts, all in racks the group already holds
    assert not decision.admitted and decision.preemption is None, decision.message


def test_members_disagreeing_before_the_object_is_seen_are_refused():
    state = state_with_groups()
    admit(state, member("a", 1, "g", **{PLACEMENT_GROUP_AFFINITY: RACK}))
    refused = decide(
        state,
        member("b", 1, "g", **{PLACEMENT_GROUP_ANTI_AFFINITY: HOST}),
        state.cluster_queues["cq"],
    )
    assert refused.invalid and "spec.affinityTopology" in refused.message


def test_a_member_on_a_cordoned_node_still_holds_its_domain():
    state = state_with_groups()
    first = admit(state, member("a", 1, "ha", **{PLACEMENT_GROUP_ANTI_AFFINITY: RACK}))
    (host,) = hosts(first)
    cordoned = next(n for n in pool() if n["metadata"]["name"] == host)
    cordoned["spec"] = {"unschedulable": True}
    state.upsert_node(proj.node_from_object(cordoned))
    seen = {rack_of(host)}
    for i in range(3):
        decision = admit(state, member(f"b{i}", 1, "ha", **{PLACEMENT_GROUP_ANTI_AFFINITY: RACK}))
        (other,) = hosts(decision)
        assert rack_of(other) not in seen
        seen.add(rack_of(other))
