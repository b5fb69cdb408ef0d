"""The live view of the cache: occupancy adds up, every admitted pod is drawn once, nodes are
marked as the solver sees them, and a waiting workload says why in its condition's words."""

import asyncio
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.admission.decide import decide
from tas.cache import projections as proj
from tas.cache.state import ClusterState
from tas.pacing import Pacer
from tas.solver.types import PODS
from tas.view import live
from tas.view.model import CORDONED, NOT_READY, TAINTED, ClusterView, DomainView, HostView
from tas.workload import transitions
from tests.unit.admission.fixtures import BLOCK, HOST, RACK, make_state, node, workload

_versions = itertools.count(100)
JOB = "job-uid"


def submit(state: ClusterState, name: str, pods: int, cpu: str = "1", **kw) -> bool:
    """Decide as the loop does; write back the admission, or the pending condition."""
    obj = workload(name, pods=pods, cpu=cpu, **kw)
    obj["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": name,
            "uid": f"{JOB}-{name}",
            "controller": True,
        }
    ]
    info = proj.workload_from_object(obj)
    state.upsert_workload(info)
    decision = decide(state, info, state.cluster_queues["cq"])
    if decision.admitted:
        obj["status"] = transitions.admitted(info, decision.admission, decision.message)
    else:
        obj["status"] = transitions.pending(info, decision.message)
    obj["metadata"]["resourceVersion"] = str(next(_versions))
    state.upsert_workload(proj.workload_from_object(obj))
    return decision.admitted


def outside_pod(name: str, node_name: str, cpu: int) -> proj.PodInfo:
    """A pod no workload of ours holds: it counts on its node."""
    return proj.pod_from_object(
        {
            "metadata": {"name": name, "namespace": "other", "uid": f"uid-{name}"},
            "spec": {
                "nodeName": node_name,
                "containers": [{"name": "c", "resources": {"requests": {"cpu": f"{cpu}m"}}}],
            },
            "status": {"phase": "Running"},
        }
    )


def hosts_of(view: ClusterView) -> dict[str, HostView]:
    out = {}

    def walk(domain: DomainView) -> None:
        for child in domain.domains:
            walk(child)
        for host in domain.hosts:
            out[host.name] = host

    for flavor in view.flavors:
        for domain in flavor.domains:
            walk(domain)
    return out


def resources(*maps) -> set[str]:
    return {name for m in maps for name in m}


# ---- a random cluster -----------------------------------------------------------------------

node_specs = st.lists(
    st.tuples(
        st.integers(0, 1),  # block
        st.integers(0, 1),  # rack
        st.integers(1, 8),  # cpu
        st.sampled_from(["ok", "ok", "cordoned", "not-ready", "tainted"]),
    ),
    min_size=1,
    max_size=8,
)
jobs = st.lists(st.tuples(st.integers(1, 6), st.sampled_from([None, "rack", "block"])), max_size=5)
outside = st.lists(st.tuples(st.integers(0, 7), st.integers(100, 6000)), max_size=4)


def random_cluster(specs, job_list, outside_pods) -> tuple[ClusterState, dict, dict]:
    nodes, marks = [], {}
    for i, (b, r, cpu, kind) in enumerate(specs):
        obj = node(f"h{i}", f"b{b}", f"b{b}-r{r}", cpu=str(cpu))
        marks[f"h{i}"] = set()
        if kind == "cordoned":
            obj["spec"]["unschedulable"] = True
            marks[f"h{i}"].add(CORDONED)
        elif kind == "not-ready":
            obj["status"]["conditions"][0]["status"] = "False"
            marks[f"h{i}"].add(NOT_READY)
        elif kind == "tainted":
            obj["spec"]["taints"] = [{"key": "gpu", "value": "x", "effect": "NoSchedule"}]
            marks[f"h{i}"].add(TAINTED)
        nodes.append(obj)
    state = make_state(nodes)
    level = {"rack": RACK, "block": BLOCK}
    for j, (pods, required) in enumerate(job_list):
        request = {"required": level[required]} if required else None
        submit(state, f"w{j}", pods, annotations_request=request)
    added = {}
    for k, (index, milli) in enumerate(outside_pods):
        name = f"h{index % len(specs)}"
        state.upsert_pod(outside_pod(f"p{k}", name, milli))
        added[name] = added.get(name, 0) + milli
    return state, marks, added


@settings(max_examples=60, deadline=None)
@given(node_specs, jobs, outside)
def test_occupancy_adds_up_on_every_host_and_domain(specs, job_list, outside_pods):
    """Per host: uses + free == allocatable on every resource, except that free stays at 0
    where pods outside TAS over-commit the host; a host the solver does not count has nothing
    free. Per domain: the sums of its hosts."""
    state, marks, added = random_cluster(specs, job_list, outside_pods)
    view = live.build(state, now=0.0)
    hosts = hosts_of(view)
    assert set(hosts) == set(marks)
    for name, host in hosts.items():
        assert set(host.marks) == marks[name]
        outside_use = [u for u in host.uses if u.workload is None]
        assert sum(u.requests.get("cpu", 0) for u in outside_use) == added.get(name, 0)
        if CORDONED in host.marks or NOT_READY in host.marks:
            assert host.free == {}
            continue
        for resource in resources(host.allocatable, host.free, *(u.requests for u in host.uses)):
            used = sum(u.requests.get(resource, 0) for u in host.uses)
            allocatable = host.allocatable.get(resource, 0)
            assert host.free.get(resource, 0) == max(0, allocatable - used), (name, resource)

    def check(domain: DomainView) -> list[HostView]:
        below = [h for child in domain.domains for h in check(child)] + list(domain.hosts)
        for resource in resources(domain.allocatable, *(h.allocatable for h in below)):
            assert domain.allocatable.get(resource, 0) == sum(
                h.allocatable.get(resource, 0) for h in below
            )
            assert domain.free.get(resource, 0) == sum(h.free.get(resource, 0) for h in below)
        return below

    for flavor in view.flavors:
        for domain in flavor.domains:
            check(domain)


@settings(max_examples=60, deadline=None)
@given(node_specs, jobs, outside)
def test_every_admitted_pod_is_drawn_once_and_free_is_the_solvers(specs, job_list, outside_pods):
    state, _, _ = random_cluster(specs, job_list, outside_pods)
    view = live.build(state, now=0.0)
    hosts = hosts_of(view)
    drawn: dict[str, int] = {}
    for host in hosts.values():
        for use in host.uses:
            if use.workload is not None:
                drawn[use.workload] = drawn.get(use.workload, 0) + use.pods
    admitted = {w.key: w for w in view.workloads if w.admitted}
    expected = {
        f"{ns}/{name}": sum(ps.count for ps in charge.pod_sets)
        for (ns, name), charge in state.charges().items()
    }
    assert drawn == expected
    assert {k: w.pods for k, w in admitted.items()} == expected
    for key, w in admitted.items():
        assert set(w.hosts) == {
            h.name for h in hosts.values() if any(u.workload == key for u in h.uses)
        }
    # the solver's own remaining capacity, read independently of the view
    snapshot = state.snapshot("tas")
    for (leaf,), remaining in snapshot.remaining().items():
        for resource, value in remaining.items():
            assert hosts[leaf].free.get(resource, 0) == max(0, value)
    pending = [w for w in view.workloads if not w.admitted]
    assert view.workloads[: len(admitted)] == tuple(admitted.values())
    assert all(w.reason for w in pending)  # each says why, as its condition does


def test_a_taint_the_flavor_tolerates_is_no_mark():
    nodes = [node("x1", "b1", "r1"), node("x2", "b1", "r1")]
    for n in nodes:
        n["spec"]["taints"] = [{"key": "gpu", "value": "x", "effect": "NoSchedule"}]
    nodes[1]["spec"]["taints"].append({"key": "soft", "effect": "PreferNoSchedule"})
    state = make_state(nodes)
    state.upsert_flavor(
        proj.flavor_from_object(
            {
                "metadata": {"name": "tas"},
                "spec": {
                    "nodeLabels": {"pool": "tas"},
                    "topologyName": "default",
                    "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
                },
            }
        )
    )
    assert {h.marks for h in hosts_of(live.build(state)).values()} == {()}


@pytest.mark.parametrize(
    ("conditions", "reason"),
    [
        (
            [
                {
                    "type": "QuotaReserved",
                    "status": "False",
                    "reason": "Pending",
                    "message": "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor tas, 4 more needed",
                }
            ],
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor tas, 4 more needed",
        ),
        (
            [
                {
                    "type": "QuotaReserved",
                    "status": "True",
                    "message": "Quota reserved in ClusterQueue cq",
                },
                {
                    "type": "Admitted",
                    "status": "False",
                    "message": "The workload has failed admission checks",
                },
            ],
            "The workload has failed admission checks",
        ),
        (
            [{"type": "Admitted", "status": "False", "message": "Waiting for admission checks"}],
            "Waiting for admission checks",
        ),
        ([], ""),
    ],
    ids=[
        "quota-reserved-false",
        "quota-reserved-then-admitted-false",
        "admitted-false",
        "no-condition",
    ],
)
def test_the_reason_is_the_conditions_message_verbatim(conditions, reason):
    state = make_state([node("x1", "b1", "r1")])
    obj = workload("w", pods=1)
    obj["status"] = {"conditions": conditions}
    state.upsert_workload(proj.workload_from_object(obj))
    pending = [w for w in live.build(state).workloads if not w.admitted]
    assert [w.reason for w in pending] == [reason]


def test_a_workload_that_does_not_fit_waits_with_the_deciders_words():
    state = make_state([node("x1", "b1", "r1"), node("x2", "b1", "r2")])
    assert not submit(state, "big", 6, annotations_request={"required": RACK})
    (view,) = live.build(state).workloads
    written = state.workloads[("ns", "big")].condition("QuotaReserved")
    assert view.reason == written["message"]
    assert view.reason.endswith("allows to fit only 4 out of 6 pod(s)")  # Kueue's words
    assert view.needs == "6 pods of cpu=1, required in one rack"


def test_admitted_first_then_pending_by_priority_then_creation():
    state = make_state([node("x1", "b1", "r1", cpu="2")])
    assert submit(state, "running", 2, created="2026-01-02T00:00:00Z")
    for name, priority, created in [
        ("late-high", 5, "2026-01-03T00:00:00Z"),
        ("early-low", 0, "2026-01-01T00:00:00Z"),
        ("late-low", 0, "2026-01-04T00:00:00Z"),
    ]:
        assert not submit(state, name, 1, priority=priority, created=created)
    keys = [(w.key, w.admitted) for w in live.build(state).workloads]
    assert keys == [
        ("ns/running", True),
        ("ns/late-high", False),
        ("ns/early-low", False),
        ("ns/late-low", False),
    ]


def test_a_topology_without_hostname_draws_the_workloads_on_the_lowest_domain():
    state = make_state([node("x1", "b1", "r1"), node("x2", "b1", "r1"), node("x3", "b1", "r2")])
    state.upsert_topology("default", [BLOCK, RACK])
    assert submit(state, "w", 6, annotations_request={"required": RACK})
    (flavor,) = live.build(state).flavors
    (block,) = flavor.domains
    r1, r2 = block.domains
    assert [(u.workload, u.pods) for u in r1.uses] == [("ns/w", 6)] and not r2.uses
    assert r1.free["cpu"] == 8000 - 6000 and r2.free["cpu"] == 4000
    assert all(u.workload is None for h in r1.hosts for u in h.uses)


def test_a_topology_of_hosts_alone_lists_them_on_the_flavor():
    state = make_state([node("x1", "b1", "r1"), node("x2", "b1", "r1")])
    state.upsert_topology("default", [HOST])
    (flavor,) = live.build(state).flavors
    assert flavor.domains == () and [h.name for h in flavor.hosts] == ["x1", "x2"]


def test_the_paced_build_gives_way_and_the_same_view():
    nodes = [node(f"h{i}", f"b{i // 100}", f"r{i // 10}") for i in range(600)]
    state = make_state(nodes)
    assert submit(state, "w", 40, annotations_request={"required": RACK})
    pacer = Pacer(slice_seconds=0.0)  # every chance is taken
    paced = asyncio.run(live.build_paced(state, pacer, now=1.0))
    assert paced == live.build(state, now=1.0)
    assert pacer.yields >= (len(nodes) - 1) // live.PACE_EVERY  # a chance per 200 hosts
    assert sum(h.uses[0].pods for h in hosts_of(paced).values() if h.uses) == 40
    assert PODS in paced.flavors[0].domains[0].allocatable
