"""A workload that did not fit is tried again only when something that can let it in changed,
as Kueue's queue.Manager requeues its inadmissible workloads (QueueInadmissibleWorkloads on a
ClusterQueue's or cohort's change, QueueAssociatedInadmissibleWorkloadsAfter when a workload of
the cohort finishes, a TAS flavor's nodes changing). Nothing that can let it in is ever missed:
while its marker is unchanged, deciding it again would not admit it.

Two cohorts on two topology flavors: cohort "ca" holds ClusterQueues cqa and cqa2 on flavor fa
(nodes of pool a), cohort "cb" holds cqb on flavor fb (nodes of pool b)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tas.admission.loop as loop_module
from tas.admission.decide import decide
from tas.admission.loop import AdmissionLoop
from tas.cache import projections as proj
from tas.cache.state import ClusterState
from tas.workload import transitions
from tests.unit.admission.fixtures import BLOCK, HOST, RACK, cluster_queue, workload
from tests.unit.admission.test_loop import FakeWriter, add, admitted, cycle

QUEUES = {"lqa": ("cqa", "ca", "fa"), "lqa2": ("cqa2", "ca", "fa"), "lqb": ("cqb", "cb", "fb")}
_names = itertools.count()


def pool_node(pool: str, cpu: str = "4") -> dict:
    name = f"{pool}-{next(_names)}"
    return {
        "metadata": {"name": name, "labels": {BLOCK: "b1", RACK: "r1", HOST: name, "pool": pool}},
        "spec": {},
        "status": {
            "allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def filler(node: str, cpu: str) -> dict:
    """A running pod outside any queue, bound to the node."""
    name = f"fill-{next(_names)}"
    return {
        "metadata": {"name": name, "namespace": "other", "uid": name},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
        },
        "status": {"phase": "Running"},
    }


def queue(
    name: str, cohort: str, flavor: str, cpu: str = "4", strict: bool = False
) -> proj.ClusterQueueInfo:
    obj = cluster_queue(name, cpu=cpu, flavor=flavor, strict=strict)
    obj["spec"]["cohortName"] = cohort
    return proj.cluster_queue_from_object(obj)


def two_cohorts(nodes_per_pool: int = 2) -> ClusterState:
    state = ClusterState()
    state.upsert_topology("default", [BLOCK, RACK, HOST])
    for flavor, pool in (("fa", "a"), ("fb", "b")):
        obj = {"metadata": {"name": flavor}, "spec": {"nodeLabels": {"pool": pool}}}
        obj["spec"]["topologyName"] = "default"
        state.upsert_flavor(proj.flavor_from_object(obj))
    for lq, (cq, cohort, flavor) in QUEUES.items():
        state.upsert_cluster_queue(queue(cq, cohort, flavor))
        state.upsert_local_queue("ns", lq, cq)
    state.upsert_namespace("ns", {})
    for pool in ("a", "b"):
        for _ in range(nodes_per_pool):
            state.upsert_node(proj.node_from_object(pool_node(pool)))
    return state


def in_queue(name: str, lq: str, pods: int) -> dict:
    obj = workload(name, pods=pods, annotations_request={"required": BLOCK})
    obj["spec"]["queueName"] = lq
    return obj


def admit_directly(state: ClusterState, name: str, lq: str, pods: int) -> dict | None:
    """Another workload admitted (as the watch would show it), or None if it does not fit."""
    obj = in_queue(name, lq, pods)
    add(state, obj)
    info = state.workloads[("ns", name)]
    decision = decide(state, info, state.cluster_queues[QUEUES[lq][0]])
    if not decision.admitted:
        state.delete_workload("ns", name)
        return None
    obj["status"] = transitions.admitted(info, decision.admission, decision.message)
    add(state, obj)
    return obj


def finish(state: ClusterState, obj: dict) -> None:
    obj["status"]["conditions"].append({"type": "Finished", "status": "True"})
    add(state, obj)


def pods_on(state: ClusterState, pool: str) -> list[str]:
    return sorted(n for n, node in state.nodes.items() if node.labels["pool"] == pool)


class Tries:
    """Counts the loop's decisions per workload."""

    def __init__(self, monkeypatch):
        self.names: list[str] = []
        original = loop_module.decide

        def counted(state, wl, cq):
            self.names.append(wl.name)
            return original(state, wl, cq)

        monkeypatch.setattr(loop_module, "decide", counted)


def waiting_setup():
    """'w' (cqa) waits: its cohort's quota (4 + 4 cpu) is taken by 'used' (cqa2, 4 pods)
    and it asks for 5; 'other' runs in cohort cb; a filler runs on each flavor's first node."""
    state = two_cohorts()
    used = admit_directly(state, "used", "lqa2", 4)
    other = admit_directly(state, "other", "lqb", 2)
    assert used is not None and other is not None
    fillers = {}
    for pool in ("a", "b"):
        pod = filler(pods_on(state, pool)[0], "1")
        state.upsert_pod(proj.pod_from_object(pod))
        fillers[pool] = pod
    add(state, in_queue("w", "lqa", 5))
    return state, {"used": used, "other": other, "fillers": fillers}


def delete_filler(state, objs, pool):
    meta = objs["fillers"][pool]["metadata"]
    state.delete_pod(meta["namespace"], meta["name"])


def cq_changed(state, objs):
    state.upsert_cluster_queue(queue("cqa", "ca", "fa", cpu="5"))


def spec_changed(state, objs):
    obj = in_queue("w", "lqa", 5)
    obj["metadata"]["generation"] = 2
    add(state, obj)


def cohort_object_changed(state, objs):
    state.upsert_cohort(proj.cohort_from_object({"metadata": {"name": "ca"}, "spec": {}}))


UNRELATED = {
    "a node of another flavor added": lambda s, o: s.upsert_node(
        proj.node_from_object(pool_node("b"))
    ),
    "a pod on a node of another flavor deleted": lambda s, o: delete_filler(s, o, "b"),
    "a workload of another cohort finished": lambda s, o: finish(s, o["other"]),
    "a workload of another cohort admitted": lambda s, o: admit_directly(s, "more", "lqb", 1),
}

RELATED = {
    "a node of its flavor added": lambda s, o: s.upsert_node(proj.node_from_object(pool_node("a"))),
    "a pod on a node of its flavor deleted": lambda s, o: delete_filler(s, o, "a"),
    "a workload of its cohort finished": lambda s, o: finish(s, o["used"]),
    "its ClusterQueue changed": cq_changed,
    "a Cohort object changed": cohort_object_changed,
    "its own spec changed": spec_changed,
}


def tried_once_then(monkeypatch, change):
    state, objs = waiting_setup()
    writer = FakeWriter()
    loop = AdmissionLoop(state, writer)
    tries = Tries(monkeypatch)
    cycle(loop)
    assert tries.names == ["w"] and admitted(writer) == []
    tries.names.clear()
    change(state, objs)
    cycle(loop)
    return tries.names, admitted(writer)


@pytest.mark.parametrize("change", UNRELATED.values(), ids=UNRELATED.keys())
def test_a_change_that_cannot_let_it_in_does_not_try_it_again(monkeypatch, change):
    tried, _ = tried_once_then(monkeypatch, change)
    assert tried == []


@pytest.mark.parametrize("change", RELATED.values(), ids=RELATED.keys())
def test_a_change_that_can_let_it_in_tries_it_again(monkeypatch, change):
    tried, _ = tried_once_then(monkeypatch, change)
    assert tried == ["w"]


def test_quota_released_in_its_cohort_admits_it(monkeypatch):
    _, admitted_now = tried_once_then(monkeypatch, RELATED["a workload of its cohort finished"])
    assert admitted_now == ["w"]


def test_capacity_freed_on_its_flavor_admits_it(monkeypatch):
    """'w' fits its queue's quota, not its flavor's nodes, until a pod on them goes."""
    state = two_cohorts()
    for name in pods_on(state, "a"):
        state.upsert_pod(proj.pod_from_object(filler(name, "3")))
    add(state, in_queue("w", "lqa", 3))
    writer = FakeWriter()
    loop = AdmissionLoop(state, writer)
    cycle(loop)
    assert admitted(writer) == []
    state.upsert_node(proj.node_from_object(pool_node("b", cpu="8")))
    cycle(loop)
    assert admitted(writer) == []
    blocker = next(key for key, pod in state.pods.items() if pod.node_name in pods_on(state, "a"))
    state.delete_pod(*blocker)
    cycle(loop)
    assert admitted(writer) == ["w"]


OPS = st.one_of(
    st.tuples(st.just("node"), st.sampled_from("ab"), st.sampled_from(["1", "2", "4"])),
    st.tuples(st.just("fill"), st.integers(0, 20), st.sampled_from(["500m", "1", "2"])),
    st.tuples(st.just("unfill"), st.integers(0, 20)),
    st.tuples(st.just("admit"), st.sampled_from(["lqa2", "lqb"]), st.integers(1, 4)),
    st.tuples(st.just("finish"), st.integers(0, 20)),
)


def apply(state: ClusterState, op: tuple, running: list[dict], pods: list[tuple]) -> None:
    kind = op[0]
    if kind == "node":
        state.upsert_node(proj.node_from_object(pool_node(op[1], op[2])))
    elif kind == "fill":
        names = sorted(state.nodes)
        pod = proj.pod_from_object(filler(names[op[1] % len(names)], op[2]))
        state.upsert_pod(pod)
        pods.append((pod.namespace, pod.name))
    elif kind == "unfill" and pods:
        state.delete_pod(*pods.pop(op[1] % len(pods)))
    elif kind == "admit":
        obj = admit_directly(state, f"x{next(_names)}", op[1], op[2])
        if obj is not None:
            running.append(obj)
    elif kind == "finish" and running:
        finish(state, running.pop(op[1] % len(running)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(OPS, min_size=1, max_size=12))
def test_while_its_marker_is_unchanged_it_cannot_be_admitted(ops):
    """Whatever happens, a workload the loop does not try again would not be let in if it
    were: no change that can let it in is missed (no workload starves)."""
    state, objs = waiting_setup()
    loop = AdmissionLoop(state, FakeWriter())
    cycle(loop)
    running, pods = [objs["used"], objs["other"]], []
    for op in ops:
        apply(state, op, running, pods)
        w = state.workloads[("ns", "w")]
        if not w.pending or state.is_assumed(w.key):
            return  # admitted
        if loop._tried_unchanged(w):
            now = decide(state, w, state.cluster_queues["cqa"])
            # Admissions beside it may make its message stale (as in Kueue), never let it in.
            assert not now.admitted and now.preemption is None
        else:
            cycle(loop)


def test_a_waiting_workload_is_not_tried_while_nothing_changes(monkeypatch):
    state, _ = waiting_setup()
    loop = AdmissionLoop(state, FakeWriter())
    tries = Tries(monkeypatch)
    for _ in range(3):
        cycle(loop)
    assert tries.names == ["w"]


class Ordered:
    """Counts the workloads the loop puts in queue order, per name."""

    def __init__(self, monkeypatch):
        self.names: list[str] = []
        original = loop_module.queue_order_key

        def counted(wl):
            self.names.append(wl.name)
            return original(wl)

        monkeypatch.setattr(loop_module, "queue_order_key", counted)


def test_an_idle_cycle_does_not_even_order_what_cannot_fit(monkeypatch):
    state, objs = waiting_setup()
    loop = AdmissionLoop(state, FakeWriter())
    cycle(loop)
    ordered = Ordered(monkeypatch)
    cycle(loop)
    assert ordered.names == []  # passed over as Kueue's inadmissible list is
    delete_filler(state, objs, "a")  # room on its flavor: it is in the queue's order again
    cycle(loop)
    assert ordered.names == ["w"]


def test_a_strict_fifo_head_that_cannot_fit_still_holds_the_queue(monkeypatch):
    state, _ = waiting_setup()
    state.upsert_cluster_queue(queue("cqa", "ca", "fa", strict=True))
    writer = FakeWriter()
    loop = AdmissionLoop(state, writer)
    cycle(loop)
    add(state, in_queue("y", "lqa", 1))  # fits alone, but queued behind 'w'
    for _ in range(2):
        cycle(loop)
    assert admitted(writer) == []
