from tas.admission.decide import decide
from tas.api.topologyassignment import v1beta2_to_v1beta1
from tas.cache import projections as proj
from tests.unit.admission.fixtures import HOST, RACK, make_state, two_racks, workload


def cq_of(state):
    return state.cluster_queues["cq"]


def test_admits_with_a_topology_assignment_and_resource_usage():
    state = make_state(two_racks())
    wl = proj.workload_from_object(workload("a", pods=6, annotations_request={"required": RACK}))
    d = decide(state, wl, cq_of(state))
    assert d.admitted, d.message
    ps = d.admission["podSetAssignments"][0]
    assert ps["flavors"] == {"cpu": "tas"}
    assert ps["resourceUsage"] == {"cpu": "6"}
    domains = v1beta2_to_v1beta1(ps["topologyAssignment"])["domains"]
    assert sum(x["count"] for x in domains) == 6
    hosts = {x["values"][0] for x in domains}
    assert hosts in ({"x1", "x2"}, {"x3", "x4"})  # one rack


def test_topology_shortfall_is_reported_in_numbers():
    state = make_state(two_racks())
    wl = proj.workload_from_object(workload("a", pods=9, annotations_request={"required": RACK}))
    d = decide(state, wl, cq_of(state))
    assert not d.admitted and not d.invalid
    assert (
        d.message
        == 'couldn\'t assign flavors to pod set main: topology "default" allows to fit only 8 out of 9 pod(s)'
    )


def test_quota_shortfall_names_resource_flavor_and_amount():
    from tests.unit.admission.fixtures import cluster_queue

    state = make_state(two_racks(), cluster_queue(cpu="4"))
    wl = proj.workload_from_object(workload("a", pods=6))
    d = decide(state, wl, cq_of(state))
    assert "insufficient unused quota for cpu in flavor tas, 2 more needed" in d.message


def test_unknown_level_is_invalid_and_lists_the_valid_levels():
    state = make_state(two_racks())
    wl = proj.workload_from_object(
        workload("a", pods=1, annotations_request={"required": "example.com/zone"})
    )
    d = decide(state, wl, cq_of(state))
    assert d.invalid
    assert "example.com/zone" in d.message and RACK in d.message


def test_assumed_usage_is_seen_by_the_next_decision_and_forgetting_frees_it():
    state = make_state(two_racks())
    first = proj.workload_from_object(workload("a", pods=8, annotations_request={"required": RACK}))
    second = proj.workload_from_object(
        workload("b", pods=8, annotations_request={"required": RACK})
    )
    d1 = decide(state, first, cq_of(state))
    state.assume(first, d1.charge)
    d2 = decide(state, second, cq_of(state))
    assert d2.admitted  # the other rack
    state.assume(second, d2.charge)
    third = proj.workload_from_object(workload("c", pods=1))
    assert not decide(state, third, cq_of(state)).admitted  # 16 cpu all taken
    state.forget(second)
    assert decide(state, third, cq_of(state)).admitted


def test_pods_outside_tas_take_capacity():
    state = make_state(two_racks())
    for host in ("x1", "x2", "x3"):
        state.upsert_pod(
            proj.pod_from_object(
                {
                    "metadata": {"name": f"daemon-{host}", "namespace": "kube-system"},
                    "spec": {
                        "nodeName": host,
                        "containers": [{"name": "c", "resources": {"requests": {"cpu": "3"}}}],
                    },
                    "status": {"phase": "Running"},
                }
            )
        )
    wl = proj.workload_from_object(workload("a", pods=6, annotations_request={"required": RACK}))
    d = decide(state, wl, cq_of(state))
    assert not d.admitted
    assert "allows to fit only 5 out of 6" in d.message  # r2: x3 has 1 cpu left, x4 has 4


def test_cached_snapshot_follows_pod_and_node_changes_in_place():
    state = make_state(two_racks())
    wl = proj.workload_from_object(workload("a", pods=8, annotations_request={"required": RACK}))
    assert decide(state, wl, cq_of(state)).admitted  # builds and caches the snapshot
    daemon = {
        "metadata": {"name": "daemon", "namespace": "kube-system"},
        "spec": {
            "nodeName": "x1",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
        },
        "status": {"phase": "Running"},
    }
    state.upsert_pod(proj.pod_from_object(daemon))
    assert (
        "allows to fit only 7 out of 8" not in decide(state, wl, cq_of(state)).message
    )  # rack r2 still fits
    state.delete_node("x3")
    assert "allows to fit only 7 out of 8" in decide(state, wl, cq_of(state)).message
    daemon["status"]["phase"] = "Succeeded"
    state.upsert_pod(proj.pod_from_object(daemon))
    assert decide(state, wl, cq_of(state)).admitted


def test_required_node_affinity_keeps_pods_on_the_nodes_it_allows():
    """As Kueue: on a hostname topology each node is checked against the pod set's required
    node affinity (here: only x3 and x4), so no pod is assigned where it could not run."""
    state = make_state(two_racks())
    obj = workload("a", pods=6, cpu="1")
    obj["spec"]["podSets"][0]["template"]["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": HOST, "operator": "In", "values": ["x3", "x4"]}]}
                ]
            }
        }
    }
    d = decide(state, proj.workload_from_object(obj), cq_of(state))
    assert d.admitted, d.message
    domains = v1beta2_to_v1beta1(d.admission["podSetAssignments"][0]["topologyAssignment"])
    assert {x["values"][0] for x in domains["domains"]} == {"x3", "x4"}
    obj["spec"]["podSets"][0]["count"] = 9  # 8 cpu on x3 and x4
    d = decide(state, proj.workload_from_object(obj), cq_of(state))
    assert not d.admitted
