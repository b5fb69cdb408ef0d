"""Flavors whose nodeLabels select the same nodes (TASHandleOverlappingFlavors).

Two flavors can share nodes: one flavor a whole pool and another a subset of it, or two flavors
over the same nodes with different tolerations. With the gate (on by default, as in Kueue since
v0.18) a charge placed on nodes counts in the snapshot of every flavor whose topology ends at
hostname, so no node is handed out twice; off, each flavor counts only its own charges and the
same node can be given away once per flavor, as Kueue did before.

Scenarios ported from Kueue's pkg/cache/scheduler/snapshot_test.go (the three
TASHandleOverlappingFlavors cases), then the admission path (decide, the admission loop,
preemption) and hot swap on top of the shared usage.
"""

from __future__ import annotations

import asyncio
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.admission.decide import decide
from tas.admission.loop import AdmissionLoop
from tas.cache import projections as proj
from tas.cache.state import ClusterState
from tas.hotswap.replace import find_replacement
from tas.workload import transitions
from tests.unit.admission.fixtures import BLOCK, HOST, RACK, cluster_queue, node, workload
from tests.unit.admission.test_loop import FakeWriter, admitted

_versions = itertools.count(100)
HOST_ONLY = "hosts"  # a one-level topology: [hostname]
RACKS = "racks"  # a topology ending at rack: its leaves are racks, not nodes
NODE_ID = "node-ids"  # one level on a label other than hostname that names each node alike
NODE_ID_LABEL = "example.com/node-id"


def cluster(
    flavors: dict[str, dict[str, str]],
    *,
    overlapping: bool = True,
    nodes: list[dict] | None = None,
    topology: str = "default",
    tolerations: dict[str, list[dict]] | None = None,
) -> ClusterState:
    """Nodes x1..x4 (4 cpu, block b1, racks r1/r2, labels pool=tas and zone=a on x1, x2), the
    given flavors (name -> nodeLabels) on `topology`, and per flavor a ClusterQueue `cq-F`
    with a LocalQueue `lq-F`."""
    state = ClusterState(overlapping_flavors=overlapping)
    state.upsert_topology("default", [BLOCK, RACK, HOST])
    state.upsert_topology(HOST_ONLY, [HOST])
    state.upsert_topology(RACKS, [BLOCK, RACK])
    state.upsert_topology(NODE_ID, [NODE_ID_LABEL])
    state.upsert_namespace("ns", {})
    for name, labels in flavors.items():
        spec = {"nodeLabels": labels, "topologyName": topology}
        if tolerations and name in tolerations:
            spec["tolerations"] = tolerations[name]
        state.upsert_flavor(proj.flavor_from_object({"metadata": {"name": name}, "spec": spec}))
        state.upsert_cluster_queue(
            proj.cluster_queue_from_object(cluster_queue(f"cq-{name}", flavor=name))
        )
        state.upsert_local_queue("ns", f"lq-{name}", f"cq-{name}")
    for n in nodes or four_nodes():
        state.upsert_node(proj.node_from_object(n))
    return state


def four_nodes() -> list[dict]:
    out = [node("x1", "b1", "r1"), node("x2", "b1", "r1"), node("x3", "b1", "r2")]
    out.append(node("x4", "b1", "r2"))
    for n in out:
        n["metadata"]["labels"][NODE_ID_LABEL] = n["metadata"]["name"]
    for n in out[:2]:
        n["metadata"]["labels"]["zone"] = "a"
    return out


def submit(state: ClusterState, name: str, flavor: str, pods: int, cpu: str = "1", **extra) -> dict:
    obj = workload(name, pods=pods, cpu=cpu, **extra)
    obj["spec"]["queueName"] = f"lq-{flavor}"
    state.upsert_workload(proj.workload_from_object(obj))
    return obj


def admit(state: ClusterState, name: str, flavor: str, pods: int, cpu: str = "1", **extra):
    """Decide in flavor's own ClusterQueue; when admitted, the watch brings the admitted
    version back (as the loop and the watch do). Returns the decision."""
    obj = submit(state, name, flavor, pods, cpu, **extra)
    info = proj.workload_from_object(obj)
    decision = decide(state, info, state.cluster_queues[f"cq-{flavor}"])
    if decision.admitted:
        obj["status"] = transitions.admitted(info, decision.admission, decision.message)
        obj["metadata"]["resourceVersion"] = str(next(_versions))
        state.upsert_workload(proj.workload_from_object(obj))
    return decision


def hosts(decision) -> dict[str, int]:
    return {d.values[-1]: d.count for d in decision.charge.pod_sets[0].assignment.domains}


def held_cpu(state: ClusterState, flavor: str) -> dict[str, int]:
    """Milli-cpu of TAS usage on each leaf the flavor's snapshot holds (Kueue's wantTASUsage)."""
    snapshot = state.snapshot(flavor)
    snapshot.build()
    usage = {key[-1]: u.get("cpu", 0) for key, u in snapshot._tas_usage.items()}
    return {k: v for k, v in usage.items() if (k,) in snapshot._leaf_by_key and v}


def node_load(state: ClusterState) -> dict[str, int]:
    """Milli-cpu every charge puts on each node, whatever its flavor."""
    load: dict[str, int] = {}
    for charge in state.charges().values():
        for ps in charge.pod_sets:
            for d in ps.assignment.domains if ps.assignment else ():
                load[d.values[-1]] = load.get(d.values[-1], 0) + d.count * ps.per_pod["cpu"]
    return load


# ---- Kueue's snapshot cases ----------------------------------------------------------------


def test_flavors_selecting_disjoint_nodes_take_only_their_own_usage():
    state = cluster({"zone-a": {"zone": "a"}, "zone-b": {"zone": "b"}}, topology=HOST_ONLY)
    for n in four_nodes()[2:]:
        n["metadata"]["labels"]["zone"] = "b"
        state.upsert_node(proj.node_from_object(n))
    a = admit(state, "a", "zone-a", pods=1)
    b = admit(state, "b", "zone-b", pods=1)
    assert held_cpu(state, "zone-a") == {h: 1000 for h in hosts(a)}
    assert held_cpu(state, "zone-b") == {h: 1000 for h in hosts(b)}


def test_flavors_differing_only_in_tolerations_share_the_usage_of_their_nodes():
    toleration = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
    state = cluster(
        {"shared": {"zone": "a"}, "dedicated": {"zone": "a"}},
        topology=HOST_ONLY,
        tolerations={"dedicated": toleration},
    )
    admit(state, "a", "shared", pods=2, cpu="2")  # BestFit: both on one node
    admit(state, "b", "dedicated", pods=1, cpu="2")
    expected = node_load(state)
    assert sum(expected.values()) == 6000
    assert held_cpu(state, "shared") == expected == held_cpu(state, "dedicated")


def test_a_flavor_moved_to_other_nodes_still_counts_on_the_node_holding_its_usage():
    """Kueue filters shared usage by the leaves a flavor holds, not by its nodeLabels: a
    flavor relabelled away from a node keeps its running workload there, and the flavor still
    selecting the node must count it."""
    state = cluster({"stay": {"zone": "a"}, "moved": {"zone": "a"}}, topology=HOST_ONLY)
    admit(state, "s", "stay", pods=1, cpu="3")
    moved = admit(state, "m", "moved", pods=1, cpu="3")
    (host,) = hosts(moved)
    state.upsert_flavor(proj.FlavorInfo("moved", {"zone": "b"}, (), HOST_ONLY))
    assert held_cpu(state, "moved") == {}  # no node left: it accounts nothing
    assert held_cpu(state, "stay") == node_load(state)
    assert node_load(state)[host] == 3000
    # x1 and x2 hold 3 cpu each: a 2-cpu pod no longer fits in `stay`.
    assert not admit(state, "late", "stay", pods=1, cpu="2").admitted


# ---- the admission path ------------------------------------------------------------------------

SAME_NODES = {"a": {"pool": "tas"}, "b": {"pool": "tas"}}
POOL_AND_SUBSET = {"a": {"pool": "tas"}, "b": {"zone": "a"}}
SUBSET_AND_POOL = {"a": {"zone": "a"}, "b": {"pool": "tas"}}


@pytest.mark.parametrize(
    ("flavors", "first", "second"),
    [
        (SAME_NODES, 4, 4),
        (SAME_NODES, 2, 2),
        (SAME_NODES, 3, 2),
        (POOL_AND_SUBSET, 4, 1),
        (POOL_AND_SUBSET, 2, 2),
        (SUBSET_AND_POOL, 2, 3),
        (SUBSET_AND_POOL, 2, 2),
    ],
    ids=[
        "same-nodes-full",
        "same-nodes-half",
        "same-nodes-one-left",
        "pool-then-subset-full",
        "pool-then-subset-half",
        "subset-then-pool-short",
        "subset-then-pool-fits",
    ],
)
def test_two_queues_over_overlapping_flavors_never_share_a_node(flavors, first, second):
    """Each pod takes a whole 4-cpu node. With the gate, the second workload is admitted only
    when the second flavor's nodes the first left are enough; without it, the second flavor
    does not see the first flavor's workload and gives its nodes away again (Kueue before
    TASHandleOverlappingFlavors)."""
    selected = {n["metadata"]["name"] for n in four_nodes() if _selects(flavors["b"], n)}
    state = cluster(flavors)
    taken = set(hosts(admit(state, "first", "a", pods=first, cpu="4")))
    decision = admit(state, "second", "b", pods=second, cpu="4")
    assert decision.admitted == (len(selected - taken) >= second), decision.message
    assert all(load <= 4000 for load in node_load(state).values()), node_load(state)

    without = cluster(flavors, overlapping=False)
    taken = set(hosts(admit(without, "first", "a", pods=first, cpu="4")))
    over = admit(without, "second", "b", pods=second, cpu="4")
    assert over.admitted == (len(selected) >= second), over.message
    if over.admitted and taken & set(hosts(over)):
        assert max(node_load(without).values()) > 4000  # the node was given twice


def _selects(labels: dict[str, str], n: dict) -> bool:
    return all(n["metadata"]["labels"].get(k) == v for k, v in labels.items())


def test_one_queue_with_both_flavors_moves_on_to_the_second_only_where_it_has_room():
    """One ClusterQueue, flavors a then b over the same nodes: a full flavor a is not escaped
    by trying b, whose nodes are the same."""
    state = cluster(SAME_NODES)
    both = cluster_queue("cq-both", flavor="a")
    group = both["spec"]["resourceGroups"][0]
    group["flavors"].append({**group["flavors"][0], "name": "b"})
    state.upsert_cluster_queue(proj.cluster_queue_from_object(both))
    state.upsert_local_queue("ns", "lq-both", "cq-both")
    assert admit(state, "first", "a", pods=3, cpu="4").admitted
    obj = submit(state, "second", "both", pods=2, cpu="4")
    decision = decide(state, proj.workload_from_object(obj), state.cluster_queues["cq-both"])
    assert not decision.admitted
    assert decision.message.count("allows to fit only 1 out of 2 pod(s)") == 2, decision.message


@pytest.mark.parametrize(
    ("topology_a", "topology_b"),
    [(RACKS, RACKS), ("default", RACKS), (RACKS, "default"), ("default", NODE_ID)],
    ids=["both-end-at-rack", "hosts-then-racks", "racks-then-hosts", "hosts-then-node-label"],
)
def test_topologies_that_do_not_end_at_hostname_are_not_shared_as_in_kueue(topology_a, topology_b):
    """Kueue shares usage only between flavors whose topologies both end at hostname: a
    rack-level leaf of one flavor says nothing of which of its nodes another flavor may use,
    and a flavor whose lowest level is another label takes no node-level usage, even when
    that label's values are the node names."""
    state = cluster(SAME_NODES)
    state.upsert_flavor(proj.FlavorInfo("a", SAME_NODES["a"], (), topology_a))
    state.upsert_flavor(proj.FlavorInfo("b", SAME_NODES["b"], (), topology_b))
    assert admit(state, "first", "a", pods=4, cpu="4").admitted
    assert admit(state, "second", "b", pods=4, cpu="4").admitted


def test_a_host_level_charge_counts_in_a_sibling_on_another_hostname_topology():
    """The shared usage is keyed by node: a flavor on [block, rack, hostname] and one on
    [hostname] still see each other's pods."""
    state = cluster({"a": {"pool": "tas"}})
    state.upsert_flavor(proj.FlavorInfo("b", {"pool": "tas"}, (), HOST_ONLY))
    state.upsert_cluster_queue(proj.cluster_queue_from_object(cluster_queue("cq-b", flavor="b")))
    state.upsert_local_queue("ns", "lq-b", "cq-b")
    first = admit(state, "first", "a", pods=3, cpu="4")
    assert held_cpu(state, "b") == {h: 4000 for h in hosts(first)}
    assert not admit(state, "second", "b", pods=2, cpu="4").admitted


def test_one_admission_cycle_sees_what_it_admitted_in_the_sibling_flavor():
    """The loop assumes each admission before deciding the next: the sibling flavor's cached
    snapshot takes it at once, so two queues cannot share a node within one cycle."""
    state = cluster(SAME_NODES)
    for name, flavor in (("first", "a"), ("second", "b")):
        obj = submit(state, name, flavor, pods=3, cpu="4")
        obj["metadata"]["resourceVersion"] = str(next(_versions))
        state.upsert_workload(proj.workload_from_object(obj))
    state.snapshot("a").build()
    state.snapshot("b").build()  # cached before the cycle: updated in place, not rebuilt
    writer = FakeWriter()
    loop = AdmissionLoop(state, writer)

    async def go():
        await loop.cycle()
        await loop.drain()

    asyncio.run(go())
    assert len(admitted(writer)) == 1, writer.statuses
    assert all(load <= 4000 for load in node_load(state).values())


def test_preemption_in_one_flavor_places_the_preemptor_beside_the_other_flavors_usage():
    """The victim is in the preemptor's flavor; the other flavor's workload on the same nodes
    is no candidate and keeps its nodes, so the preemptor must fit where the victim was."""
    state = cluster(SAME_NODES)
    spec = cluster_queue("cq-b", flavor="b")
    spec["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority"}
    state.upsert_cluster_queue(proj.cluster_queue_from_object(spec))
    other = admit(state, "other", "a", pods=2, cpu="4")
    victim = admit(state, "victim", "b", pods=2, cpu="4")
    assert set(hosts(other)).isdisjoint(hosts(victim))
    obj = submit(state, "urgent", "b", pods=2, cpu="4", priority=10)
    decision = decide(state, proj.workload_from_object(obj), state.cluster_queues["cq-b"])
    assert decision.preemption is not None, decision.message
    assert [t.workload.name for t in decision.preemption.targets] == ["victim"]
    placed = {d.values[-1] for d in decision.preemption.placements["main"].domains}
    assert placed == set(hosts(victim))


def test_a_replacement_node_is_never_one_the_other_flavor_filled():
    required = {"required": RACK}
    for overlapping in (True, False):
        state = cluster(POOL_AND_SUBSET, overlapping=overlapping)
        obj = submit(state, "mine", "b", pods=1, cpu="4", annotations_request=required)
        info = proj.workload_from_object(obj)
        mine = decide(state, info, state.cluster_queues["cq-b"])
        (failed,) = hosts(mine)  # x1 or x2: rack r1, zone a
        spare = ({"x1", "x2"} - {failed}).pop()
        obj["status"] = transitions.admitted(info, mine.admission, mine.message)
        obj["metadata"]["resourceVersion"] = str(next(_versions))
        state.upsert_workload(proj.workload_from_object(obj))
        theirs = admit(state, "theirs", "a", pods=3, cpu="4")
        down = next(n for n in four_nodes() if n["metadata"]["name"] == failed)
        down["status"]["conditions"][0]["status"] = "False"
        state.upsert_node(proj.node_from_object(down))
        obj["status"]["unhealthyNodes"] = [{"name": failed}]
        obj["metadata"]["resourceVersion"] = str(next(_versions))
        broken = proj.workload_from_object(obj)
        state.upsert_workload(broken)
        result = find_replacement(state, broken, state.charges()[broken.key])
        if overlapping:  # `theirs` went around `mine`, onto the spare: nowhere left
            assert spare in hosts(theirs) and failed not in hosts(theirs)
            assert result.failure is not None
        else:  # flavor b does not see `theirs`: the spare is free to it
            assert result.failure is None
            assert {d.values[-1] for d in result.assignments["main"].domains} == {spare}


# ---- properties ------------------------------------------------------------------------------

FLAVOR_LABELS = {
    "pool": {"pool": "tas"},
    "zone": {"zone": "a"},
    "pool-too": {"pool": "tas"},
}
steps = st.lists(
    st.tuples(
        st.sampled_from(sorted(FLAVOR_LABELS)),
        st.integers(1, 4),  # pods
        st.sampled_from(["1", "2", "3"]),  # cpu per pod
        st.booleans(),  # finish an earlier workload first
    ),
    min_size=1,
    max_size=10,
)


@settings(max_examples=60, deadline=None)
@given(steps)
def test_no_node_is_ever_over_committed_across_overlapping_flavors(plan):
    state = cluster(FLAVOR_LABELS)
    live: list[str] = []
    for i, (flavor, pods, cpu, finish) in enumerate(plan):
        if finish and live:
            state.delete_workload("ns", live.pop(0))
        if admit(state, f"w{i}", flavor, pods, cpu).admitted:
            live.append(f"w{i}")
        load = node_load(state)
        assert all(v <= 4000 for v in load.values()), load


@settings(max_examples=60, deadline=None)
@given(steps)
def test_incrementally_kept_snapshots_equal_fresh_ones(plan):
    """Assumptions and releases update every cached snapshot in place; the result equals
    building each flavor's snapshot from scratch."""
    state = cluster(FLAVOR_LABELS)
    for flavor in FLAVOR_LABELS:
        state.snapshot(flavor).build()
    live: list[str] = []
    for i, (flavor, pods, cpu, finish) in enumerate(plan):
        if finish and live:
            state.delete_workload("ns", live.pop(0))
        if admit(state, f"w{i}", flavor, pods, cpu).admitted:
            live.append(f"w{i}")
    kept = {f: held_cpu(state, f) for f in FLAVOR_LABELS}
    state._snapshots.clear()
    assert {f: held_cpu(state, f) for f in FLAVOR_LABELS} == kept
    load = node_load(state)
    assert kept["pool"] == load
    assert kept["zone"] == {h: v for h, v in load.items() if h in ("x1", "x2")}
