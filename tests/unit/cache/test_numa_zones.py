"""NUMA zones in the cache (gate TASNUMAZones): NodeResourceTopology projections, the zone
annotation, and the ledger that charges our pods until the node's report shows them.

Runs ClusterState and the admission decision on plain objects, as the watch delivers them.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.admission.decide import decide
from tas.api.numazones import format_numa_zones, parse_numa_zones
from tas.api.podrequests import numa_shape
from tas.cache import projections as proj
from tas.cache.state import ClusterState
from tas.solver.types import CONTAINER_SCOPE, POD_SCOPE, NumaShape
from tas.workload import transitions
from tests.unit.admission.fixtures import HOST, RACK, cluster_queue, make_state, node, workload

ZONE = "kueue.x-k8s.io/numa-zone"
_versions = itertools.count(100)


def nrt(name: str, *cpus: int, policy="single-numa-node", scope="container", available=None):
    return {
        "metadata": {"name": name, "uid": f"nrt-{name}"},
        "attributes": [
            {"name": "topologyManagerPolicy", "value": policy},
            {"name": "topologyManagerScope", "value": scope},
        ],
        "zones": [
            {
                "name": f"node-{i}",
                "type": "Node",
                "resources": [
                    {
                        "name": "cpu",
                        "capacity": str(c),
                        "allocatable": str(c),
                        "available": str(c if available is None else available[i]),
                    }
                ],
            }
            for i, c in enumerate(cpus)
        ],
    }


def guaranteed_workload(name: str, pods: int, cpu: str = "3", required: str = RACK) -> dict:
    obj = workload(name, pods=pods, annotations_request={"required": required})
    container = obj["spec"]["podSets"][0]["template"]["spec"]["containers"][0]
    container["resources"] = {"limits": {"cpu": cpu, "memory": "1Gi"}}
    obj["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": name,
            "uid": f"job-{name}",
            "controller": True,
        }
    ]
    return obj


def admit(state: ClusterState, obj: dict) -> proj.WorkloadInfo | str:
    info = proj.workload_from_object(obj)
    state.upsert_workload(info)
    decision = decide(state, info, state.cluster_queues["cq"])
    if not decision.admitted:
        return decision.message
    obj["status"] = transitions.admitted(info, decision.admission, decision.message)
    obj["metadata"]["resourceVersion"] = str(next(_versions))
    state.upsert_workload(proj.workload_from_object(obj))
    return state.workloads[info.key]


def numa_state(hosts: int = 2, cpu: str = "32") -> ClusterState:
    nodes = [node(f"h{i}", "b1", "r1", cpu=cpu) for i in range(hosts)]
    state = make_state(nodes)
    state.upsert_cluster_queue(proj.cluster_queue_from_object(cluster_queue(cpu="1000")))
    for i in range(hosts):
        state.upsert_numa_report(f"h{i}", proj.numa_from_object(nrt(f"h{i}", 4, 4)))
    return state


def pinned_pod(name: str, workload_name: str, host: str, zone: str, phase: str = "Running"):
    meta = {
        "name": name,
        "namespace": "ns",
        "uid": f"uid-{name}",
        "labels": {"kueue.x-k8s.io/podset": "main"},
        "annotations": {"kueue.x-k8s.io/workload": workload_name, ZONE: zone},
        "ownerReferences": [
            {
                "kind": "Job",
                "name": workload_name,
                "uid": f"job-{workload_name}",
                "controller": True,
            }
        ],
    }
    spec = {
        "nodeName": host,
        "nodeSelector": {HOST: host},
        "containers": [{"name": "c", "resources": {"limits": {"cpu": "3", "memory": "1Gi"}}}],
    }
    return proj.pod_from_object({"metadata": meta, "spec": spec, "status": {"phase": phase}})


# -- NodeResourceTopology ---------------------------------------------------------------------------


def test_a_single_numa_node_report_becomes_zones_with_the_scope() -> None:
    zones = proj.numa_from_object(nrt("h0", 4, 8, scope="pod", available=(3, 8)))
    assert zones.scope == POD_SCOPE
    assert [(z.name, dict(z.free)) for z in zones.zones] == [
        ("node-0", {"cpu": 3000}),
        ("node-1", {"cpu": 8000}),
    ]


@pytest.mark.parametrize("policy", ["none", "best-effort", "restricted"])
def test_other_policies_keep_node_totals(policy: str) -> None:
    assert proj.numa_from_object(nrt("h0", 4, 4, policy=policy)) is None


def test_the_deprecated_topology_policies_field_is_read() -> None:
    obj = nrt("h0", 4)
    del obj["attributes"]
    obj["topologyPolicies"] = ["SingleNUMANodePodLevel"]
    assert proj.numa_from_object(obj).scope == POD_SCOPE
    obj["topologyPolicies"] = ["SingleNUMANodeContainerLevel"]
    assert proj.numa_from_object(obj).scope == CONTAINER_SCOPE
    obj["topologyPolicies"] = ["BestEffort"]
    assert proj.numa_from_object(obj) is None


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (
            lambda o: o["zones"][1]["resources"][0].update(available="lots"),
            "zones[1].resources[0].available",
        ),
        (lambda o: o["zones"][0].pop("name"), "zones[0].name"),
        (lambda o: o["zones"][0]["resources"][0].pop("name"), "zones[0].resources[0].name"),
        (lambda o: o.update(zones=[]), "zones"),
        (lambda o: o["attributes"][1].update(value="socket"), "attributes[topologyManagerScope]"),
    ],
)
def test_an_unreadable_report_names_the_field(change, field: str) -> None:
    obj = nrt("h0", 4, 4)
    change(obj)
    with pytest.raises(proj.NumaReportError, match=field.replace("[", r"\[").replace("]", r"\]")):
        proj.numa_from_object(obj)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8) | st.floats(allow_nan=False),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["attributes", "topologyPolicies", "zones", "metadata"]), json_values
    ),
    st.data(),
)
def test_hostile_reports_give_zones_none_or_a_named_error(obj, data) -> None:
    """Whatever an object holds, reading it never raises anything but NumaReportError."""
    if data.draw(st.booleans()):
        obj["attributes"] = [{"name": "topologyManagerPolicy", "value": "single-numa-node"}]
    try:
        proj.numa_from_object(obj)
    except proj.NumaReportError as exc:
        assert str(exc)


# -- the pod's shape and its zone annotation ------------------------------------------------------


def test_only_guaranteed_pods_with_whole_cpus_have_a_shape() -> None:
    def spec(**resources):
        return {"containers": [{"name": "c", "resources": resources}]}

    assert numa_shape(spec(limits={"cpu": "2", "memory": "1Gi"})) == NumaShape(
        ({"cpu": 2000, "memory": 1024 * 1024**2 * 1000},), ("c",)
    )
    assert numa_shape(spec(limits={"cpu": "1500m", "memory": "1Gi"})) is None  # shared pool
    assert numa_shape(spec(requests={"cpu": "2", "memory": "1Gi"})) is None  # Burstable
    assert numa_shape(spec(requests={"cpu": "2"}, limits={"cpu": "4", "memory": "1Gi"})) is None
    assert numa_shape(spec(limits={"cpu": "2"})) is None  # no memory limit: not Guaranteed
    sidecar = {
        "name": "s",
        "restartPolicy": "Always",
        "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
    }
    init = {"name": "i", "resources": {"limits": {"cpu": "4", "memory": "1Gi"}}}
    both = spec(limits={"cpu": "2", "memory": "1Gi"}) | {"initContainers": [init, sidecar]}
    assert numa_shape(both).names == ("s", "c")  # plain init containers hand their CPUs on


@pytest.mark.parametrize(
    ("zones", "names", "text"),
    [
        (("node-1",), ("c",), "node-1"),
        (("node-0", "node-0"), ("a", "b"), "node-0"),
        (("node-0", "node-1"), ("a", "b"), "a=node-0,b=node-1"),
        (("node-0", ""), ("a", "b"), "a=node-0"),
        (("", ""), ("a", "b"), None),
    ],
)
def test_the_zone_annotation_round_trips(zones, names, text) -> None:
    shape = NumaShape(tuple({"cpu": 1000} for _ in names), names)
    assert format_numa_zones(zones, shape) == text
    if text is not None:
        parsed = parse_numa_zones(text, shape)
        assert parsed == tuple(z or (zones[0] if len(set(zones)) == 1 else "") for z in zones)


def test_an_unreadable_annotation_names_no_zone() -> None:
    shape = NumaShape(({"cpu": 1000},), ("c",))
    assert parse_numa_zones("", shape) == ()
    assert parse_numa_zones("x=node-0", shape) == ("",)


# -- the ledger: admitted, pinned, reported ---------------------------------------------------------


def zone_free(state: ClusterState, host: str) -> list[int]:
    """The zones as the snapshots get them."""
    with_usage = state._with_usage(state.nodes[host])
    return [z.free["cpu"] for z in with_usage.numa.zones]


def test_admitted_pods_take_their_zones_until_the_report_shows_them() -> None:
    state = numa_state(hosts=2)
    info = admit(state, guaranteed_workload("a", pods=4))
    assert not isinstance(info, str), info
    # 4 pods of 3 CPUs, one per zone: every zone has 1 CPU left by our records.
    assert zone_free(state, "h0") == [1000, 1000]
    assert zone_free(state, "h1") == [1000, 1000]
    assert isinstance(admit(state, guaranteed_workload("b", pods=1)), str)

    # The ungater pins them to the zones the cache planned.
    plans = state.numa_plans("h0")
    assert plans == {(("ns", "a"), "main"): [("node-0",), ("node-1",)]}
    for i, (zone,) in enumerate(plans[(("ns", "a"), "main")]):
        state.upsert_pod(pinned_pod(f"a-{i}", "a", "h0", zone, phase="Pending"))
    assert zone_free(state, "h0") == [1000, 1000]  # pinned now, still ours to charge
    assert state.numa_plans("h0") == {}

    # They run; the node agent reports them used: the report holds them, we stop charging.
    for i, zone in enumerate(("node-0", "node-1")):
        state.upsert_pod(pinned_pod(f"a-{i}", "a", "h0", zone, phase="Running"))
    state.upsert_numa_report("h0", proj.numa_from_object(nrt("h0", 4, 4, available=(1, 1))))
    assert zone_free(state, "h0") == [1000, 1000]

    # They finish, and so does the workload: the next report frees the zones.
    for i in range(2):
        state.delete_pod("ns", f"a-{i}")
    state.delete_workload("ns", "a")
    assert zone_free(state, "h0") == [1000, 1000]  # the report still has them
    state.upsert_numa_report("h0", proj.numa_from_object(nrt("h0", 4, 4)))
    assert zone_free(state, "h0") == [4000, 4000]


def test_a_pod_pinned_before_the_report_but_not_running_stays_charged() -> None:
    state = numa_state(hosts=1)
    assert not isinstance(admit(state, guaranteed_workload("a", pods=1)), str)
    state.upsert_pod(pinned_pod("a-0", "a", "h0", "node-0", phase="Pending"))
    state.upsert_numa_report("h0", proj.numa_from_object(nrt("h0", 4, 4)))
    assert zone_free(state, "h0") == [1000, 4000]


def test_a_gang_refused_by_zones_says_so() -> None:
    state = numa_state(hosts=2)
    message = admit(state, guaranteed_workload("a", pods=5))
    assert isinstance(message, str)
    assert "allows to fit only 4 out of 5 pod(s): NUMA zones" in message, message


def test_a_report_gone_or_of_another_policy_gives_back_node_totals() -> None:
    state = numa_state(hosts=1)
    assert isinstance(admit(state, guaranteed_workload("a", pods=3)), str)
    state.upsert_numa_report("h0", None)
    assert state._with_usage(state.nodes["h0"]).numa is None
    assert not isinstance(admit(state, guaranteed_workload("b", pods=3)), str)


def test_without_reports_nothing_changes() -> None:
    """The gate off: no report ever arrives, and Guaranteed pods are counted by totals."""
    state = make_state([node("h0", "b1", "r1", cpu="32")])
    state.upsert_cluster_queue(proj.cluster_queue_from_object(cluster_queue(cpu="1000")))
    info = admit(state, guaranteed_workload("a", pods=10, required=HOST))
    assert not isinstance(info, str), info
    assert state.numa.reports == {}
    assert state._with_usage(state.nodes["h0"]).numa is None
