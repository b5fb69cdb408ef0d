"""Several failed nodes under one workload: Kueue's rules, with and without the gate Kueue
calls TASReplaceMultipleFailedNodes (ours: TASMultipleNodeReplacement).

Ported from Kueue's PR "add feature TASReplaceMultipleFailedNodes" (its workload_test.go
threshold cases, tas_cache_test.go replacement cases and the integration scenarios of
test/integration/singlecluster/tas/tas_test.go), run on the real in-memory state.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.api.constants import UNHEALTHY_NODES_EVICTION_THRESHOLD_ANNOTATION as THRESHOLD
from tas.cache import projections as proj
from tas.hotswap.replace import (
    ReplacementRules,
    eviction_threshold,
    evicts_on_another_failure,
    evicts_without_replacement,
    find_replacement,
)
from tests.unit.admission.fixtures import BLOCK, HOST, RACK, node
from tests.unit.hotswap.harness import Cluster, pod_set

GATE = ReplacementRules(multiple_nodes=True)
GATE_NO_FAIL_FAST = ReplacementRules(multiple_nodes=True, fail_fast=False)
NO_GATE = ReplacementRules(multiple_nodes=False)
NO_GATE_NO_FAIL_FAST = ReplacementRules(multiple_nodes=False, fail_fast=False)


def info(annotation: str | None = None, unhealthy: tuple[str, ...] = ()) -> proj.WorkloadInfo:
    meta: dict = {"name": "w", "namespace": "ns"}
    if annotation is not None:
        meta["annotations"] = {THRESHOLD: annotation}
    status = {"unhealthyNodes": [{"name": n} for n in unhealthy]}
    return proj.workload_from_object({"metadata": meta, "spec": {}, "status": status})


@pytest.mark.parametrize(
    ("annotation", "threshold", "valid"),
    [
        (None, 1, True),
        ("1", 1, True),
        ("3", 3, True),
        ("8", 8, True),
        ("0", 1, False),
        ("-1", 1, False),
        ("9", 1, False),
        ("abc", 1, False),
        (" 2", 1, False),
        ("1_0", 1, False),
        ("+2", 2, True),
    ],
    ids=[
        "absent annotation defaults to 1",
        "explicit threshold of 1",
        "explicit threshold greater than 1",
        "maximum threshold is valid",
        "zero falls back to default",
        "negative falls back to default",
        "above maximum falls back to default",
        "non-numeric falls back to default",
        "spaces are not a number, as Go's Atoi reads it",
        "nor are underscores",
        "a sign is",
    ],
)
def test_eviction_threshold_annotation(annotation, threshold, valid):
    value, problem = eviction_threshold(info(annotation))
    assert value == threshold
    assert (problem is None) == valid
    if problem:
        assert THRESHOLD in problem and repr(annotation) in problem


@pytest.mark.parametrize(
    ("multiple_nodes", "annotation", "listed", "evicts"),
    [
        (False, None, 0, False),
        (False, None, 1, True),
        (False, "3", 1, True),  # the annotation means nothing without the gate
        (True, None, 0, False),
        (True, None, 1, True),
        (True, "2", 1, False),
        (True, "2", 2, True),
        (True, "8", 7, False),
        (True, "8", 8, True),
        (True, "zero", 1, True),  # invalid: the default, 1
    ],
    ids=[
        "no gate, first failure listed",
        "no gate, second failure evicts",
        "no gate, threshold ignored",
        "gate, first failure listed",
        "gate, default threshold: second failure evicts",
        "gate, threshold 2: second failure listed",
        "gate, threshold 2: third failure evicts",
        "gate, threshold 8: eighth failure listed",
        "gate, threshold 8: ninth failure evicts",
        "gate, invalid threshold is 1",
    ],
)
def test_when_another_failed_node_evicts(multiple_nodes, annotation, listed, evicts):
    listed_nodes = tuple(f"n{i}" for i in range(listed))
    assert evicts_on_another_failure(info(annotation, listed_nodes), multiple_nodes) == evicts


@pytest.mark.parametrize(
    ("rules", "annotation", "listed", "evicts"),
    [
        (NO_GATE, None, 1, True),
        (NO_GATE_NO_FAIL_FAST, None, 1, False),
        (GATE, None, 1, False),  # within the threshold fail-fast waits
        (GATE, "2", 2, False),
        (GATE, "2", 3, True),  # only beyond it (the annotation lowered meanwhile)
        (GATE_NO_FAIL_FAST, "2", 3, False),
    ],
    ids=[
        "fail-fast",
        "no fail-fast",
        "gate suppresses fail-fast at the default threshold",
        "gate suppresses fail-fast within the threshold",
        "gate allows fail-fast beyond the threshold",
        "no fail-fast beyond the threshold either",
    ],
)
def test_when_no_replacement_evicts(rules, annotation, listed, evicts):
    listed_nodes = tuple(f"n{i}" for i in range(listed))
    assert evicts_without_replacement(info(annotation, listed_nodes), rules) == evicts


# ---- Kueue's replacement cases ------------------------------------------------------------------


def test_replacement_reusing_a_node_already_in_the_assignment():
    """node-1 (4) fails under 4 pods on node-1 and 4 on node-2 (6 cpu, 2 free); the only fit
    in block-1 is 2 more on node-2 and 2 on node-3 (2 cpu); counts of one node add up."""
    c = Cluster(
        [
            node("node-1", "block-1", "r", cpu="4"),
            node("node-2", "block-1", "r", cpu="6"),
            node("node-3", "block-1", "r", cpu="2"),
        ]
    )
    wl = c.admitted(
        "wl", [pod_set("main", {"node-1": 4, "node-2": 4}, request={"required": BLOCK})]
    )
    c.set_ready("node-1", False)
    c.objects["wl"]["status"]["unhealthyNodes"] = [{"name": "node-1"}]
    wl = c._watch("wl")
    result = find_replacement(c.state, wl, c.state.charges()[wl.key], GATE)
    assert result.failure is None
    domains = result.assignments["main"].domains
    assert {d.values[-1]: d.count for d in domains} == {"node-2": 6, "node-3": 2}


@pytest.mark.parametrize(
    ("rules", "listed"),
    [(GATE, ["node-1", "node-2"]), (GATE, ["node-1"]), (NO_GATE, ["node-1"])],
    ids=[
        "gate: a listed tail node that is gone does not block the head",
        "gate: nor one that failed before the list caught up",
        "no gate: a gone node makes the assignment stale",
    ],
)
def test_replacement_with_another_node_of_the_assignment_gone(rules, listed):
    c = Cluster([node(f"node-{i}", "b", "r", cpu="1") for i in (1, 2, 3)])
    wl = c.admitted("wl", [pod_set("main", {"node-1": 1, "node-2": 1}, request={"required": HOST})])
    c.set_ready("node-1", False)
    c.set_ready("node-2", False)
    c.objects["wl"]["status"]["unhealthyNodes"] = [{"name": n} for n in listed]
    wl = c._watch("wl")
    result = find_replacement(c.state, wl, c.state.charges()[wl.key], rules)
    if not rules.multiple_nodes:
        assert result.failure and "stale domain" in result.failure
        return
    assert result.failure is None and result.node == "node-1"
    assert result.remaining == tuple(listed[1:])
    domains = result.assignments["main"].domains
    assert {d.values[-1]: d.count for d in domains} == {"node-2": 1, "node-3": 1}


def test_the_pod_sets_of_one_failed_node_are_placed_beside_each_other():
    """Two pod sets lose their pods on x1; the spare x2 has room for one of them. The second
    must see the first's new pods, or both land on x2 and over-commit it."""
    c = Cluster([node("x1", "b1", "r1"), node("x2", "b1", "r1")])
    rack = {"required": RACK}
    c.admitted("other", [pod_set("main", {"x2": 1}, cpu="2")])
    wl = c.admitted(
        "wl",
        [
            pod_set("a", {"x1": 1}, cpu="2", request=rack),
            pod_set("b", {"x1": 1}, cpu="2", request=rack),
        ],
    )
    c.set_ready("x1", False)
    c.objects["wl"]["status"]["unhealthyNodes"] = [{"name": "x1"}]
    wl = c._watch("wl")
    for rules in (GATE, NO_GATE):
        result = find_replacement(c.state, wl, c.state.charges()[wl.key], rules)
        assert result.failure is not None, result.assignments
    # The attempt held nothing back: x2 still takes exactly one more 2-cpu pod.
    c.admitted("third", [pod_set("main", {"x2": 1}, cpu="2")])
    snapshot = c.state.snapshot("tas")
    snapshot.build()
    assert snapshot._leaf_remaining(snapshot._leaf_by_key[("x2",)])["cpu"] == 0


# ---- Kueue's integration scenarios, on the node controller and the admission loop ----------------


def four_nodes(c_cpu: str = "1") -> Cluster:
    """Kueue's integration cluster: b1 = x1 (r2), x3 (r1); b2 = x2, x4; one cpu each."""
    return Cluster(
        [
            node("x3", "b1", "r1", cpu=c_cpu),
            node("x1", "b1", "r2", cpu=c_cpu),
            node("x4", "b2", "r1", cpu=c_cpu),
            node("x2", "b2", "r2", cpu=c_cpu),
        ]
    )


def fail(c: Cluster, host: str, rules: ReplacementRules) -> None:
    c.set_ready(host, False)
    c.node_check(host, rules)


def test_threshold_two_tolerates_two_unhealthy_nodes_and_evicts_on_the_third():
    c = four_nodes()
    annotations = {THRESHOLD: "2"}
    preferred = {"preferred": BLOCK}
    hosts = {"x1": 1, "x2": 1, "x3": 1, "x4": 1}
    c.admitted("wl", [pod_set("main", hosts, request=preferred)], annotations=annotations)
    fail(c, "x3", GATE)
    fail(c, "x1", GATE)
    wl = c.workload("wl")
    assert wl.unhealthy_nodes == ("x3", "x1") and wl.admitted
    c.replacement_pass(GATE)  # no spare: fail-fast waits within the threshold
    assert c.workload("wl").admitted and c.workload("wl").unhealthy_nodes == ("x3", "x1")
    fail(c, "x4", GATE)
    wl = c.workload("wl")
    assert wl.evicted
    evicted = wl.condition("Evicted")
    assert evicted["reason"] == "NodeFailures"
    assert evicted["message"] == (
        "Workload eviction triggered due to multiple TAS assigned node failures, "
        "including: x3, x1, x4"
    )


@pytest.mark.parametrize(
    "rules", [GATE_NO_FAIL_FAST, NO_GATE_NO_FAIL_FAST], ids=["gate, default threshold", "no gate"]
)
def test_the_default_threshold_evicts_on_a_second_failed_node(rules):
    """Kueue's "should evict when a second node failure exceeds the default eviction
    threshold": with no spare the first failed node stays listed; the second evicts."""
    c = four_nodes()
    c.state.delete_node("x4")
    c.state.delete_node("x2")
    c.admitted("wl", [pod_set("main", {"x3": 1, "x1": 1}, request={"preferred": BLOCK})])
    fail(c, "x3", rules)
    c.replacement_pass(rules)
    assert c.workload("wl").unhealthy_nodes == ("x3",) and c.workload("wl").admitted
    fail(c, "x1", rules)
    assert c.workload("wl").evicted


def test_queued_failed_nodes_are_replaced_one_pass_at_a_time_head_first():
    """Kueue's "should greedily replace queued failed nodes": a two-pod workload required in
    block b1 loses both nodes while b1 has no spare; both stay listed (threshold 2, fail-fast
    waiting); two new nodes in b1 then take them, the head first, one per pass."""
    c = four_nodes()
    required = {"required": BLOCK}
    c.admitted(
        "wl", [pod_set("main", {"x3": 1, "x1": 1}, request=required)], annotations={THRESHOLD: "2"}
    )
    for spare in ("x4", "x2"):
        c.state.delete_node(spare)
    fail(c, "x3", GATE)
    fail(c, "x1", GATE)
    c.replacement_pass(GATE)
    assert c.workload("wl").unhealthy_nodes == ("x3", "x1") and c.workload("wl").admitted
    c.add_node("x5", "b1", "r3", cpu="1")
    c.add_node("x6", "b1", "r4", cpu="1")
    c.replacement_pass(GATE)
    assert c.workload("wl").unhealthy_nodes == ("x1",)
    assert "x3" not in c.hosts("wl") and "x1" in c.hosts("wl")
    c.replacement_pass(GATE)
    wl = c.workload("wl")
    assert wl.unhealthy_nodes == () and wl.admitted and not wl.evicted
    assert c.hosts("wl") == {"x5": 1, "x6": 1}
    assert [reason for _, reason, _ in c.events] == ["UnhealthyNode"] * 2 + ["NodeReplaced"] * 2


def test_replacement_stays_in_the_required_domain_even_when_the_whole_pod_set_would_move():
    """Kueue's "should expose the greedy limitation": the healthy member pins the replacement
    to block b1, so it waits although block b2 could take the whole pod set."""
    c = four_nodes()
    before = {"x3": 1, "x1": 1}
    c.admitted(
        "wl", [pod_set("main", before, request={"required": BLOCK})], annotations={THRESHOLD: "2"}
    )
    fail(c, "x3", GATE)
    for _ in range(3):
        c.replacement_pass(GATE)
    wl = c.workload("wl")
    assert c.hosts("wl") == before and wl.unhealthy_nodes == ("x3",) and wl.admitted


failures = st.lists(st.sampled_from(["x1", "x2", "x3", "x4", "x5", "x6"]), max_size=6)


@settings(max_examples=50, deadline=None)
@given(failures, st.integers(1, 4), st.booleans())
def test_counts_add_up_and_no_node_is_double_booked(failed_nodes, threshold, spares):
    """Whatever fails, in whatever order: the assignment keeps the pod set's count, never two
    pods on a one-cpu node, and the list never holds more nodes than the threshold."""
    c = four_nodes()
    if spares:
        c.add_node("x5", "b1", "r3", cpu="1")
        c.add_node("x6", "b2", "r3", cpu="1")
    c.admitted(
        "wl",
        [pod_set("main", {"x3": 1, "x1": 1}, request={"preferred": BLOCK})],
        annotations={THRESHOLD: str(threshold)},
    )
    for host in failed_nodes:
        if host not in c.nodes:
            continue
        fail(c, host, GATE)
        c.replacement_pass(GATE_NO_FAIL_FAST)
        wl = c.workload("wl")
        if wl.evicted:
            assert len(wl.unhealthy_nodes) <= threshold
            return
        hosts = c.hosts("wl")
        assert sum(hosts.values()) == 2
        assert all(count == 1 for count in hosts.values())
        assert len(wl.unhealthy_nodes) <= threshold
        assert len(set(wl.unhealthy_nodes)) == len(wl.unhealthy_nodes)
