"""A snapshot kept up to date node by node equals one built afresh from the same nodes.

The cache keeps one TopologySnapshot per flavor and feeds it every node change (upsert_node,
remove_node) and every admission (add_usage); a change that keeps the node's leaf, labels and
taints refreshes that leaf's capacity in place, any other change rebuilds the tree. Random
sequences of changes, with placements in between (which build the tree), must leave the same
remaining capacity per leaf and the same placements as a snapshot built from the final nodes.
Mutation testing found this in-place path unchecked: a refresh that wrote every leaf, kept a
node's old labels or taints, lost a resource new to the snapshot, or overflowed past 2**62.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from tas.solver import (
    DomainAssignment,
    FlavorSpec,
    Node,
    PodSetRequest,
    SolverOptions,
    Taint,
    Toleration,
    TopologyAssignment,
    TopologyRequest,
    TopologySnapshot,
)
from tas.solver.types import HOSTNAME_LEVEL as HOST

BLOCK, RACK, GPU = "example.com/block", "example.com/rack", "example.com/gpu"
NAMES = ("n0", "n1", "n2", "n3", "n4")
HUGE = 2**63 + 7  # past int64: the capacity arrays switch to Python integers
TAINT = Taint("maintenance", "NoSchedule")

PROBES = [
    PodSetRequest("any", 3, {"cpu": 1000}, TopologyRequest(unconstrained=True)),
    PodSetRequest("gpus", 2, {"cpu": 1000, GPU: 1000}, TopologyRequest(required=RACK)),
    PodSetRequest(
        "pool-a", 2, {"cpu": 1000}, TopologyRequest(preferred=RACK), node_selector={"pool": "a"}
    ),
    PodSetRequest(
        "tolerant",
        2,
        {"cpu": 1000},
        TopologyRequest(required=BLOCK),
        tolerations=(Toleration(key="maintenance", operator="Exists"),),
    ),
    PodSetRequest("big", 1, {"memory": 2**62}, TopologyRequest(unconstrained=True)),
]


@st.composite
def nodes(draw, name=None, huge=True):
    name = name or draw(st.sampled_from(NAMES))
    labels = {HOST: name, "pool": draw(st.sampled_from("ab"))}
    if draw(st.integers(0, 9)):  # now and then a node without a rack does not count
        labels[RACK] = draw(st.sampled_from(("r0", "r1")))  # the same rack names in each block
    labels[BLOCK] = draw(st.sampled_from(("b0", "b1")))
    allocatable = {"cpu": 1000 * draw(st.integers(0, 6))}
    if draw(st.booleans()):
        allocatable[GPU] = 1000 * draw(st.integers(0, 3))
    if draw(st.booleans()):
        allocatable["memory"] = draw(st.sampled_from((2**30, HUGE) if huge else (2**30,)))
    return Node(
        name,
        labels,
        allocatable,
        usage={"cpu": 1000 * draw(st.integers(0, 1))},
        taints=(TAINT,) if draw(st.integers(0, 3)) == 0 else (),
        ready=draw(st.integers(0, 9)) > 0,
    )


def usage_assignment(levels, values: tuple[str, ...], count: int) -> TopologyAssignment:
    assigned_levels = (HOST,) if levels[-1] == HOST else levels
    return TopologyAssignment(assigned_levels, (DomainAssignment(values, count),))


def free_by_leaf(snapshot: TopologySnapshot) -> dict:
    """Remaining capacity per leaf and resource, zeros left out (as exact Python ints)."""
    snapshot.build()
    free = snapshot._free
    return {
        key: {
            name: int(free[row, index])
            for name, row in snapshot._rows.items()
            if free[row, index] != 0
        }
        for index, key in enumerate(snapshot._leaf_keys)
    }


def resized(draw, node: Node) -> Node:
    """The same node with other capacity: its leaf is refreshed in place."""
    allocatable = dict(node.allocatable, cpu=1000 * draw(st.integers(0, 6)))
    extra = draw(st.sampled_from((None, GPU, "memory")))
    if extra == GPU:
        allocatable[GPU] = 1000 * draw(st.integers(0, 3))
    elif extra == "memory":
        allocatable["memory"] = draw(st.sampled_from((2**30, HUGE)))
    return replace(node, allocatable=allocatable, usage={"cpu": 1000 * draw(st.integers(0, 1))})


@settings(max_examples=200)
@given(st.sampled_from(((BLOCK, RACK, HOST), (BLOCK, RACK))), st.booleans(), st.data())
def test_updates_in_place_equal_a_snapshot_built_afresh(levels, feasibility, data):
    """`feasibility`: TASNodeFeasibilityForAllLevels (nodes as leaves below a rack, whose
    usage the rack keeps)."""
    draw = data.draw
    options = SolverOptions(node_feasibility_all_levels=feasibility)
    start = draw(st.lists(st.sampled_from(NAMES), unique=True, min_size=1, max_size=5))
    # int64 capacity at first: a node resized past 2**62 must switch the arrays over
    current = {name: draw(nodes(name, huge=False)) for name in start}
    flavor = FlavorSpec(topology_name="default")
    live = TopologySnapshot(levels, current.values(), flavor, options)
    for probe in PROBES:  # as the admission loop would: the eligibility caches are warm
        live.find_assignments([probe])
    leaves = st.sampled_from(NAMES).map(lambda n: (n,))
    if levels[-1] != HOST:
        leaves = st.tuples(st.sampled_from(("b0", "b1")), st.sampled_from(("r0", "r1")))
    kinds = ("resize", "relabel", "taint", "upsert", "remove", "usage", "place")
    usages = []
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(kinds))
        if kind in ("resize", "relabel", "taint") and current:
            old = current[draw(st.sampled_from(sorted(current)))]
            if kind == "resize":
                node = resized(draw, old)
            elif kind == "relabel":
                flipped = "b" if old.labels["pool"] == "a" else "a"
                node = replace(old, labels={**old.labels, "pool": flipped})
            else:
                node = replace(old, taints=() if old.taints else (TAINT,))
            live.upsert_node(node)
            current[node.name] = node
        elif kind == "upsert":
            node = draw(nodes())
            live.upsert_node(node)
            current[node.name] = node
        elif kind == "remove":
            name = draw(st.sampled_from((*NAMES, "never-seen")))
            live.remove_node(name)
            current.pop(name, None)
        elif kind == "usage":
            usage = usage_assignment(levels, draw(leaves), draw(st.integers(1, 2)))
            live.add_usage(usage, {"cpu": 1000})
            usages.append(usage)
        else:
            live.find_assignments([draw(st.sampled_from(PROBES))])
    fresh = TopologySnapshot(levels, current.values(), flavor, options)
    for usage in usages:
        fresh.add_usage(usage, {"cpu": 1000})
    assert free_by_leaf(live) == free_by_leaf(fresh)
    for probe in PROBES:
        assert live.find_assignments([probe]) == fresh.find_assignments([probe]), probe.name


def test_resizing_one_node_of_a_rack_leaf_keeps_its_neighbours():
    """With racks as leaves a leaf holds several nodes; refreshing it replaces only the one."""
    labels = {BLOCK: "b0", RACK: "r0", "pool": "a"}
    x1 = Node("x1", {**labels, HOST: "x1"}, {"cpu": 2000})
    x2 = Node("x2", {**labels, HOST: "x2"}, {"cpu": 5000})
    live = TopologySnapshot((BLOCK, RACK), [x1, x2], FlavorSpec(topology_name="default"))
    live.build()
    live.upsert_node(replace(x1, allocatable={"cpu": 3000}))
    assert free_by_leaf(live)[("b0", "r0")]["cpu"] == 8000


def test_a_node_resized_past_2_to_the_62_is_counted_exactly():
    x1 = Node("x1", {BLOCK: "b0", RACK: "r0", HOST: "x1"}, {"memory": 2**30})
    live = TopologySnapshot((BLOCK, RACK, HOST), [x1], FlavorSpec(topology_name="default"))
    live.build()
    live.upsert_node(replace(x1, allocatable={"memory": HUGE}))
    assert free_by_leaf(live)[("x1",)]["memory"] == HUGE


def test_a_resource_new_to_the_snapshot_is_counted_after_a_resize_in_place():
    x1 = Node("x1", {BLOCK: "b0", RACK: "r0", HOST: "x1"}, {"cpu": 2000})
    live = TopologySnapshot((BLOCK, RACK, HOST), [x1], FlavorSpec(topology_name="default"))
    live.build()
    live.upsert_node(replace(x1, allocatable={"cpu": 2000, GPU: 4000}))
    assert free_by_leaf(live)[("x1",)][GPU] == 4000
