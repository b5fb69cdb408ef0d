"""decide(): quota, flavors and what the status records, one rule per test.

Each test pins one rule that a plausible one-line change would break (mutation testing found
them unchecked): quota counts what is already admitted, a request that exactly fills the rest
fits, `pods` is a quota like any other, a flavor without a topology refuses topology requests,
flavors are tried in order, and the status lists what Kueue lists.
"""

from __future__ import annotations

from tas.admission.decide import decide, pending_order
from tas.api.topologyassignment import v1beta2_to_v1beta1
from tas.cache import projections as proj
from tests.unit.admission.fixtures import BLOCK, HOST, RACK, make_state, node, two_racks, workload


def cq(*flavors: tuple[str, dict[str, str]], covered=("cpu", "memory"), name="cq") -> dict:
    """A ClusterQueue with one resource group: (flavor, {resource: nominalQuota}) in order."""
    return {
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": list(covered),
                    "flavors": [
                        {
                            "name": flavor,
                            "resources": [
                                {"name": r, "nominalQuota": q} for r, q in sorted(quota.items())
                            ],
                        }
                        for flavor, quota in flavors
                    ],
                }
            ],
        },
    }


def plain_flavor(state, name: str = "plain") -> None:
    """A flavor with no topology (Kueue's non-TAS flavor) over the same nodes."""
    state.upsert_flavor(
        proj.flavor_from_object(
            {"metadata": {"name": name}, "spec": {"nodeLabels": {"pool": "tas"}}}
        )
    )


def wl(name: str, pods: int, cpu: str = "1", request: dict | None = None):
    return proj.workload_from_object(
        workload(name, pods=pods, cpu=cpu, annotations_request=request)
    )


def admit(state, workload_info):
    decision = decide(state, workload_info, state.cluster_queues["cq"])
    assert decision.admitted, decision.message
    state.assume(workload_info, decision.charge)
    return decision


def test_quota_counts_what_is_already_admitted():
    state = make_state(two_racks(), cq(("tas", {"cpu": "10", "memory": "1Ti"})))
    admit(state, wl("first", 6))
    refused = decide(state, wl("second", 6), state.cluster_queues["cq"])
    assert not refused.admitted and not refused.invalid
    assert refused.message == (
        "couldn't assign flavors to pod set main: "
        "insufficient unused quota for cpu in flavor tas, 2 more needed"
    )


def test_a_workload_that_exactly_fills_the_remaining_quota_is_admitted():
    state = make_state(two_racks(), cq(("tas", {"cpu": "10", "memory": "1Ti"})))
    admit(state, wl("first", 6))
    admit(state, wl("exact", 4))
    assert not decide(state, wl("one-more", 1), state.cluster_queues["cq"]).admitted


def test_the_shortfall_is_what_is_missing_never_more_than_the_request():
    """Usage over the quota (quota lowered after admission) does not inflate the message."""
    state = make_state(two_racks(), cq(("tas", {"cpu": "4", "memory": "1Ti"})))
    admit(state, wl("first", 4))
    state.upsert_cluster_queue(
        proj.cluster_queue_from_object(cq(("tas", {"cpu": "2", "memory": "1Ti"})))
    )
    refused = decide(state, wl("second", 3), state.cluster_queues["cq"])
    assert refused.message.endswith(
        "insufficient unused quota for cpu in flavor tas, 3 more needed"
    )


def test_pods_is_a_quota_like_any_other_when_covered():
    quota = {"cpu": "100", "memory": "1Ti", "pods": "3"}
    state = make_state(two_racks(), cq(("tas", quota), covered=("cpu", "memory", "pods")))
    refused = decide(state, wl("four", 4), state.cluster_queues["cq"])
    assert refused.message.endswith(
        "insufficient unused quota for pods in flavor tas, 1 more needed"
    )
    admitted = admit(state, wl("three", 3))
    ps = admitted.admission["podSetAssignments"][0]
    # As Kueue: `pods` is listed (flavor and usage) because the ClusterQueue covers it.
    assert ps["flavors"] == {"cpu": "tas", "pods": "tas"}
    assert ps["resourceUsage"] == {"cpu": "3", "pods": "3"}
    assert admitted.charge.pod_sets[0].per_pod == {"cpu": 1000, "pods": 1000}
    assert decide(state, wl("one-more", 1), state.cluster_queues["cq"]).message.endswith(
        "insufficient unused quota for pods in flavor tas, 1 more needed"
    )


def test_pods_is_neither_listed_nor_limited_when_not_covered():
    state = make_state(two_racks(), cq(("tas", {"cpu": "100", "memory": "1Ti"})))
    admitted = admit(state, wl("a", 3))
    ps = admitted.admission["podSetAssignments"][0]
    assert ps["flavors"] == {"cpu": "tas"}
    assert ps["resourceUsage"] == {"cpu": "3"}
    assert ps["count"] == 3
    # the charge still takes one `pods` per pod from the nodes
    assert admitted.charge.pod_sets[0].per_pod == {"cpu": 1000, "pods": 1000}


def test_a_flavor_without_topology_refuses_topology_requests_and_the_next_flavor_takes_them():
    state = make_state(
        two_racks(),
        cq(("plain", {"cpu": "100", "memory": "1Ti"}), ("tas", {"cpu": "100", "memory": "1Ti"})),
    )
    plain_flavor(state)
    decision = admit(state, wl("topo", 2, request={"required": RACK}))
    ps = decision.admission["podSetAssignments"][0]
    assert ps["flavors"] == {"cpu": "tas"}
    assert "topologyAssignment" in ps


def test_a_flavor_without_topology_alone_says_why():
    state = make_state(two_racks(), cq(("plain", {"cpu": "100", "memory": "1Ti"})))
    plain_flavor(state)
    refused = decide(state, wl("topo", 2, request={"required": RACK}), state.cluster_queues["cq"])
    assert not refused.admitted and not refused.invalid
    assert refused.message == (
        "couldn't assign flavors to pod set main: "
        "flavor plain does not support TopologyAwareScheduling"
    )


def test_a_flavor_without_topology_admits_a_pod_set_without_topology_request():
    state = make_state(two_racks(), cq(("plain", {"cpu": "100", "memory": "1Ti"})))
    plain_flavor(state)
    decision = admit(state, wl("plain", 20))  # more than the nodes hold: no topology, no check
    ps = decision.admission["podSetAssignments"][0]
    assert ps["flavors"] == {"cpu": "plain"}
    assert "topologyAssignment" not in ps
    assert decision.charge.pod_sets[0].assignment is None
    assert decision.charge.pod_sets[0].flavor == "plain"
    assert decision.admission["clusterQueue"] == "cq"
    assert decision.message == "Quota reserved in ClusterQueue cq"


def test_flavors_are_tried_in_order_and_every_reason_is_reported():
    state = make_state(
        two_racks(),
        cq(("small", {"cpu": "2", "memory": "1Ti"}), ("tas", {"cpu": "100", "memory": "1Ti"})),
    )
    state.upsert_flavor(
        proj.flavor_from_object(
            {
                "metadata": {"name": "small"},
                "spec": {"nodeLabels": {"pool": "tas"}, "topologyName": "default"},
            }
        )
    )
    decision = admit(state, wl("a", 3))
    assert decision.admission["podSetAssignments"][0]["flavors"] == {"cpu": "tas"}
    refused = decide(state, wl("b", 20), state.cluster_queues["cq"])
    assert refused.admitted is False and refused.invalid is False
    assert refused.message == (
        "couldn't assign flavors to pod set main: "
        "insufficient unused quota for cpu in flavor small, 18 more needed; "
        'topology "default" allows to fit only 13 out of 20 pod(s)'
    )


def test_the_first_resource_group_covering_every_request_is_used():
    spec = cq(("tas", {"cpu": "100", "memory": "1Ti"}))
    spec["spec"]["resourceGroups"].insert(
        0,
        {
            "coveredResources": ["example.com/gpu"],
            "flavors": [
                {"name": "gpus", "resources": [{"name": "example.com/gpu", "nominalQuota": "8"}]}
            ],
        },
    )
    state = make_state(two_racks(), spec)
    assert admit(state, wl("a", 2)).admission["podSetAssignments"][0]["flavors"] == {"cpu": "tas"}


def test_a_resource_no_group_covers_is_named():
    state = make_state(two_racks(), cq(("tas", {"memory": "1Ti"}), covered=("memory",)))
    refused = decide(state, wl("a", 1), state.cluster_queues["cq"])
    assert refused.admitted is False and refused.invalid is False
    assert refused.message == "resource(s) cpu not covered by ClusterQueue cq"


def test_every_resource_no_group_covers_is_named():
    state = make_state(two_racks(), cq(("tas", {"pods": "10"}), covered=("pods",)))
    obj = workload("a", pods=1)
    obj["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"][
        "memory"
    ] = "1Gi"
    refused = decide(state, proj.workload_from_object(obj), state.cluster_queues["cq"])
    assert refused.message == "resource(s) cpu, memory not covered by ClusterQueue cq"


def test_a_group_covering_exactly_the_requested_resources_is_used():
    state = make_state(two_racks(), cq(("tas", {"cpu": "100"}), covered=("cpu",)))
    assert admit(state, wl("a", 2)).admission["podSetAssignments"][0]["flavors"] == {"cpu": "tas"}


def test_a_flavor_whose_topology_cannot_hold_the_workload_passes_it_to_the_next():
    state = make_state(
        two_racks(),
        cq(("one-host", {"cpu": "100", "memory": "1Ti"}), ("tas", {"cpu": "100", "memory": "1Ti"})),
    )
    state.upsert_flavor(
        proj.flavor_from_object(
            {
                "metadata": {"name": "one-host"},
                "spec": {"nodeLabels": {HOST: "x1"}, "topologyName": "default"},
            }
        )
    )
    decision = admit(state, wl("a", 6))  # x1 holds 4 of them
    assert decision.admission["podSetAssignments"][0]["flavors"] == {"cpu": "tas"}


def test_an_impossible_topology_request_is_invalid_and_refused():
    state = make_state(two_racks())
    refused = decide(
        state,
        wl("a", 1, request={"required": "example.com/no-such-level"}),
        state.cluster_queues["cq"],
    )
    assert refused.admitted is False and refused.invalid is True
    assert "example.com/no-such-level" in refused.message


def test_topology_assignments_are_recorded_per_pod_set_with_the_charge():
    nodes = [node(f"x{i}", "b1", "r1" if i < 3 else "r2") for i in range(1, 5)]
    state = make_state(nodes)
    obj = workload("two", pods=2, annotations_request={"required": RACK})
    second = dict(obj["spec"]["podSets"][0], name="second", count=3)
    obj["spec"]["podSets"].append(second)
    info = proj.workload_from_object(obj)
    decision = admit(state, info)
    names = [ps["name"] for ps in decision.admission["podSetAssignments"]]
    assert names == ["main", "second"]
    assert [charge.name for charge in decision.charge.pod_sets] == names
    for ps, charge in zip(
        decision.admission["podSetAssignments"], decision.charge.pod_sets, strict=True
    ):
        assert (
            ps["count"]
            == charge.count
            == sum(d["count"] for d in v1beta2_to_v1beta1(ps["topologyAssignment"])["domains"])
        )
        assert ps["topologyAssignment"]["levels"] == [HOST]
        assert [
            d["values"][0] for d in v1beta2_to_v1beta1(ps["topologyAssignment"])["domains"]
        ] == [d.values[0] for d in charge.assignment.domains]
    assert decision.admission["podSetAssignments"][1]["resourceUsage"] == {"cpu": "3"}


def test_a_spec_error_or_no_pod_sets_is_invalid():
    state = make_state(two_racks())
    obj = workload("empty", pods=1)
    obj["spec"]["podSets"] = []
    refused = decide(state, proj.workload_from_object(obj), state.cluster_queues["cq"])
    assert refused.admitted is False
    assert refused.invalid is True and refused.message == "spec.podSets is empty"
    obj = workload("unreadable", pods=1)
    obj["spec"]["podSets"][0]["count"] = "many"
    info = proj.workload_from_object(obj)
    assert info.spec_error and info.spec_error.startswith("spec.podSets[main]: ")
    refused = decide(state, info, state.cluster_queues["cq"])
    assert refused.admitted is False
    assert refused.invalid is True and refused.message == info.spec_error


def test_quota_counts_every_pod_set_of_the_workload():
    state = make_state(two_racks(), cq(("tas", {"cpu": "5", "memory": "1Ti"})))
    obj = workload("two", pods=3)
    obj["spec"]["podSets"].append(dict(obj["spec"]["podSets"][0], name="second", count=3))
    refused = decide(state, proj.workload_from_object(obj), state.cluster_queues["cq"])
    assert refused.message == (
        "couldn't assign flavors to pod set main, second: "
        "insufficient unused quota for cpu in flavor tas, 1 more needed"
    )


def test_a_covered_resource_the_workload_does_not_request_is_not_checked():
    state = make_state(two_racks(), cq(("tas", {"cpu": "10", "memory": "0"})))
    admit(state, wl("cpu-only", 2))


def test_a_covered_resource_without_quota_in_the_flavor_has_none():
    state = make_state(two_racks(), cq(("tas", {"cpu": "100"}), covered=("cpu", "pods")))
    refused = decide(state, wl("a", 2), state.cluster_queues["cq"])
    assert refused.message.endswith(
        "insufficient unused quota for pods in flavor tas, 2 more needed"
    )


def test_pending_order_is_priority_then_age_then_name():
    older = proj.workload_from_object(workload("b", pods=1, created="2026-01-01T00:00:00Z"))
    newer = proj.workload_from_object(workload("a", pods=1, created="2026-01-02T00:00:00Z"))
    same_time = proj.workload_from_object(workload("a", pods=1, created="2026-01-01T00:00:00Z"))
    urgent = proj.workload_from_object(
        workload("z", pods=1, priority=5, created="2026-01-03T00:00:00Z")
    )
    ordered = pending_order([newer, older, urgent, same_time])
    assert [(w.name, w.created) for w in ordered] == [
        ("z", urgent.created),
        ("a", same_time.created),
        ("b", older.created),
        ("a", newer.created),
    ]


def test_block_level_requests_are_checked_against_the_topology():
    state = make_state([node("x1", "b1", "r1"), node("x2", "b2", "r1")])
    decision = admit(state, wl("a", 2, request={"required": BLOCK}))
    stored = decision.admission["podSetAssignments"][0]["topologyAssignment"]
    domains = v1beta2_to_v1beta1(stored)["domains"]
    assert [d["count"] for d in domains] == [2]
