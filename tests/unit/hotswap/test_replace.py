from tas.admission.decide import decide
from tas.api.topologyassignment import v1beta2_to_v1beta1
from tas.cache import projections as proj
from tas.hotswap.replace import find_replacement, needs_replacement
from tas.workload import transitions
from tests.unit.admission.fixtures import RACK, make_state, node, workload


def admitted_workload(state, pods=4):
    obj = workload("train", pods=pods, cpu="2", annotations_request={"required": RACK})
    wl = proj.workload_from_object(obj)
    d = decide(state, wl, state.cluster_queues["cq"])
    assert d.admitted, d.message
    obj["status"] = {
        "admission": d.admission,
        "conditions": [
            {"type": "QuotaReserved", "status": "True"},
            {"type": "Admitted", "status": "True"},
        ],
    }
    state.upsert_workload(proj.workload_from_object(obj))
    return obj


def fail(state, obj, host):
    down = node(host, "b1", "r1")
    down["status"]["conditions"][0]["status"] = "False"
    state.upsert_node(proj.node_from_object(down))
    obj["status"]["unhealthyNodes"] = [*obj["status"].get("unhealthyNodes", []), {"name": host}]
    wl = proj.workload_from_object(obj)
    state.upsert_workload(wl)
    return wl


def hosts(assignment):
    return {d.values[-1]: d.count for d in assignment.domains}


def test_only_the_failed_nodes_pods_move_and_they_stay_in_the_rack():
    state = make_state(
        [
            node("x1", "b1", "r1"),
            node("x2", "b1", "r1"),
            node("x3", "b1", "r1"),
            node("y1", "b1", "r2"),
        ]
    )
    obj = admitted_workload(state)  # 4 pods x 2 cpu on two of r1's 4-cpu nodes
    before = hosts(proj.workload_from_object(obj).admissions[0].assignment)
    failed, kept = sorted(before)
    wl = fail(state, obj, failed)
    assert needs_replacement(wl) == [failed]
    result = find_replacement(state, wl, state.charges()[wl.key])
    assert result.failure is None
    after = hosts(result.assignments["main"])
    spare = ({"x1", "x2", "x3"} - set(before)).pop()
    assert after == {kept: 2, spare: 2}  # y1 is in the other rack: never used
    status = transitions.replaced(wl, result.assignments)
    assert status["unhealthyNodes"] is None
    stored = status["admission"]["podSetAssignments"][0]["topologyAssignment"]
    domains = v1beta2_to_v1beta1(stored)["domains"]
    assert {d["values"][0]: d["count"] for d in domains} == after


def test_no_room_in_the_required_domain_is_a_failure_and_eviction_releases_quota_later():
    state = make_state([node("x1", "b1", "r1"), node("x2", "b1", "r1"), node("y1", "b1", "r2")])
    obj = admitted_workload(state)
    wl = fail(state, obj, sorted(hosts(proj.workload_from_object(obj).admissions[0].assignment))[0])
    result = find_replacement(state, wl, state.charges()[wl.key])
    assert result.failure
    # Eviction stops the Job but keeps the quota while its pods may still be terminating...
    obj["status"].update(transitions.evicted(wl, "no room"))
    evicted = proj.workload_from_object(obj)
    conditions = {c["type"]: c for c in obj["status"]["conditions"]}
    assert (
        conditions["Evicted"]["reason"] == "NodeFailures"
        and conditions["Evicted"]["status"] == "True"
    )
    assert evicted.has_quota and not evicted.admitted
    state.upsert_workload(evicted)
    assert wl.key in state.charges()
    # ...and releases it once they are gone: the workload is back in its queue.
    obj["status"].update(transitions.released(evicted))
    requeued = proj.workload_from_object(obj)
    state.upsert_workload(requeued)
    assert requeued.pending and obj["status"]["admission"] is None
    assert wl.key not in state.charges()
