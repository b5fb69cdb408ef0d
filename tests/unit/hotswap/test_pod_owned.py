"""SkipReassignmentForPodOwnedWorkloads: a Workload owned by a single Pod keeps its assignment
when a node under it fails, and is never requeued after an eviction.

Ported from Kueue's TestFindTopologyAssignments cases for the gate (pkg/cache/scheduler/
tas_cache_test.go, PR "TAS: add SkipReassignmentForPodOwnedWorkloads feature gate") and its
integration tests (test/integration/singlecluster/tas/tas_test.go).
"""

from __future__ import annotations

import pytest

from tas.api.constants import IS_GROUP_WORKLOAD_ANNOTATION
from tas.cache import projections as proj
from tas.hotswap.replace import ReplacementRules, find_replacement
from tas.integrations.pod import group as g
from tas.workload import transitions
from tests.unit.admission.fixtures import BLOCK, HOST, node
from tests.unit.hotswap.harness import JOB, POD, Cluster, pod_set
from tests.unit.integrations import builders

SECOND_POD = {**POD, "name": "p2", "uid": "pod-uid-2"}
REQUIRED_HOST = {"required": HOST}
GATE_ON = ReplacementRules(keep_pod_owned=True)
GATE_OFF = ReplacementRules(keep_pod_owned=False)


def two_nodes() -> Cluster:
    """Kueue's case: x1 (to fail) and x2, one cpu each."""
    return Cluster([node("x1", "b1", "r1", cpu="1"), node("x2", "b1", "r1", cpu="1")])


@pytest.mark.parametrize(
    ("rules", "owners", "annotations", "kept"),
    [
        (GATE_ON, [POD], None, True),
        (GATE_ON, [JOB], None, False),
        (GATE_ON, [POD, SECOND_POD], None, False),
        (GATE_ON, [POD], {IS_GROUP_WORKLOAD_ANNOTATION: "true"}, False),
        (GATE_OFF, [POD], None, False),
    ],
    ids=[
        "node replacement skipped for single-Pod-owned workload; gate on",
        "node replaced for Job-owned workload; gate on",
        "node replaced for pod-group workload with two Pod owners; gate on",
        "node replaced for size-1 pod-group workload (is-group-workload annotation); gate on",
        "node replaced for single-Pod-owned workload; gate off",
    ],
)
def test_kueue_cases(rules, owners, annotations, kept):
    c = two_nodes()
    wl = c.admitted(
        "wl",
        [pod_set("main", {"x1": 1}, request=REQUIRED_HOST)],
        owners=owners,
        annotations=annotations,
    )
    c.set_ready("x1", False)
    c.objects["wl"]["status"]["unhealthyNodes"] = [{"name": "x1"}]
    wl = c._watch("wl")
    result = find_replacement(c.state, wl, c.state.charges()[wl.key], rules)
    assert result.failure is None
    assert result.kept == kept
    moved = result.assignments.get("main")
    final = moved if moved is not None else wl.admissions[0].assignment
    assert {d.values[-1]: d.count for d in final.domains} == ({"x1": 1} if kept else {"x2": 1})


def test_owned_by_single_pod_is_kueues_rule():
    def info(owners, annotations=None):
        meta = {"name": "w", "namespace": "ns", "ownerReferences": owners}
        if annotations:
            meta["annotations"] = annotations
        return proj.workload_from_object({"metadata": meta, "spec": {}})

    assert info([POD]).owned_by_single_pod
    assert not info([{**POD, "apiVersion": "v2"}]).owned_by_single_pod
    assert not info([JOB]).owned_by_single_pod
    assert not info([]).owned_by_single_pod
    assert not info([POD, SECOND_POD]).owned_by_single_pod
    assert not info([POD], {IS_GROUP_WORKLOAD_ANNOTATION: "true"}).owned_by_single_pod


def test_the_pod_integrations_own_workloads_follow_the_rule():
    """A plain pod's Workload (as the pod integration makes it) is owned by its pod alone; a
    pod group's, even of one pod, is not."""
    single = proj.workload_from_object(g.single_workload(builders.pod("alone")))
    assert single.owned_by_single_pod
    group = g.Group("ns", "solo", "solo", (builders.pod("m", group="solo", total=1),))
    assert not proj.workload_from_object(g.group_workload(group)).owned_by_single_pod


def spread_cluster() -> Cluster:
    """Kueue's integration layout in small: two blocks, the workload on x1 and x3 of b1."""
    return Cluster(
        [
            node("x1", "b1", "r1"),
            node("x2", "b1", "r1"),
            node("x3", "b1", "r2"),
            node("x4", "b2", "r1"),
        ]
    )


@pytest.mark.parametrize(
    ("owners", "kept"),
    [([POD], True), ([JOB], False)],
    ids=["single-pod keeps its assignment", "job-owned gets a replacement"],
)
def test_a_failed_node_is_taken_off_the_list_and_the_assignment_kept_or_replaced(owners, kept):
    """The node controller lists the node, the next pass settles it: the unhealthy node goes
    off the list either way; only a Job's workload moves its pods."""
    c = spread_cluster()
    preferred = {"preferred": BLOCK}
    c.admitted("wl", [pod_set("main", {"x1": 1, "x3": 1}, request=preferred)], owners=owners)
    before = c.hosts("wl")
    c.set_ready("x1", False)
    c.node_check("x1", GATE_ON)
    assert c.workload("wl").unhealthy_nodes == ("x1",)
    c.replacement_pass(GATE_ON)
    after = c.workload("wl")
    assert after.unhealthy_nodes == ()
    assert after.admitted and not after.evicted
    if kept:
        assert c.hosts("wl") == before
        assert c.events[-1][1] == "NodeReplacementSkipped"
    else:
        assert "x1" not in c.hosts("wl") and sum(c.hosts("wl").values()) == 2
        assert c.events[-1][1] == "NodeReplaced"


def test_a_single_pod_workload_is_not_evicted_when_no_replacement_exists():
    """Fail-fast evicts a workload whose failed node has no replacement; a single Pod's
    workload needs none, so it stays admitted (its pod ends or comes back with the node)."""
    c = Cluster([node("x1", "b1", "r1")])
    c.admitted("wl", [pod_set("main", {"x1": 2})], owners=[POD])
    c.set_ready("x1", False)
    c.node_check("x1", GATE_ON)
    c.replacement_pass(GATE_ON)
    assert c.workload("wl").admitted and c.hosts("wl") == {"x1": 2}
    c.admitted("other", [pod_set("main", {"x1": 2})], owners=[JOB])  # no room anywhere
    c.objects["other"]["status"]["unhealthyNodes"] = [{"name": "x1"}]
    c._watch("other")
    c.replacement_pass(GATE_ON)
    assert c.workload("other").evicted  # the contrast: a Job's workload is evicted


@pytest.mark.parametrize(
    ("owners", "annotations", "requeued"),
    [
        ([POD], None, False),
        ([JOB], None, None),
        ([POD, SECOND_POD], None, None),
        ([POD], {IS_GROUP_WORKLOAD_ANNOTATION: "true"}, None),
    ],
    ids=["single-pod", "job", "two-pod-owners", "pod-group-of-one"],
)
@pytest.mark.parametrize("preempted", [True, False], ids=["preempted", "node-failures"])
def test_an_evicted_single_pod_workload_says_it_is_not_requeued(
    owners, annotations, requeued, preempted
):
    c = two_nodes()
    wl = c.admitted("wl", [pod_set("main", {"x1": 1})], owners=owners, annotations=annotations)
    if preempted:
        status = transitions.preempted(wl, "InClusterQueue", "Preempted to accommodate x")
    else:
        status = transitions.evicted(wl, "no replacement")
    conditions = {cond["type"]: cond for cond in status["conditions"]}
    if requeued is None:
        assert "Requeued" not in conditions
        return
    evicted = conditions["Evicted"]
    assert conditions["Requeued"]["status"] == "False"
    assert conditions["Requeued"]["reason"] == evicted["reason"]
    assert conditions["Requeued"]["message"] == evicted["message"]
