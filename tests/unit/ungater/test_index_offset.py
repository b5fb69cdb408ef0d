"""`kueue.x-k8s.io/pod-index-offset` in rank order (Kueue's topology_ungater.go reads it from
the pod set's first pod and subtracts it from the pods' index, on top of a pod-set group's
offset; a value strconv.Atoi refuses fails the reconcile before any pod is ungated).

Ported from topology_ungater_test.go: "ranks: support rank-based ordering for kubeflow with
valid offset annotation - for all Pods" and "... with invalid offset annotation - for all
Pods", through the whole path (pod objects, the cache, the worker), and the MPIJob webhook's
own shape (launcher and workers not grouped, workers offset by 1)."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.api.topologyassignment import v1beta1_to_v1beta2
from tas.cache import projections as proj
from tas.solver.types import TopologyRequest
from tas.ungater.plan import plan
from tas.ungater.ranks import IndexOffsetError, index_offset, pod_set_rule
from tests.unit.admission.fixtures import make_state, node
from tests.unit.ungater.test_ranks import assignment, labelled
from tests.unit.ungater.test_worker import FakeKube

HOST = "kubernetes.io/hostname"
REPLICA_INDEX = "training.kubeflow.org/replica-index"
OFFSET = "kueue.x-k8s.io/pod-index-offset"
RACK = "cloud.com/rack"


def pod_set(name: str, count: int, group: str | None) -> dict:
    request = {"podIndexLabel": REPLICA_INDEX}
    if group:
        request["podSetGroupName"] = group
    template = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
    return {"name": name, "count": count, "template": template, "topologyRequest": request}


def assigned(name: str, hosts: list[str]) -> dict:
    domains = [{"values": [h], "count": 1} for h in hosts]
    return {
        "name": name,
        "flavors": {"cpu": "tas"},
        "count": len(hosts),
        "topologyAssignment": v1beta1_to_v1beta2({"levels": [HOST], "domains": domains}),
    }


def mpijob_workload(group: str | None, workers: list[str]) -> dict:
    """An MPIJob's Workload, admitted: its launcher on x1, its workers on `workers` in order."""
    conditions = [
        {"type": t, "status": "True", "reason": t, "message": ""}
        for t in ("QuotaReserved", "Admitted")
    ]
    return {
        "metadata": {
            "name": "mpi",
            "namespace": "ns",
            "uid": "uid-mpi",
            "resourceVersion": "10",
            "generation": 1,
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {
            "queueName": "lq",
            "podSets": [pod_set("launcher", 1, group), pod_set("worker", len(workers), group)],
        },
        "status": {
            "conditions": conditions,
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [assigned("launcher", ["x1"]), assigned("worker", workers)],
            },
        },
    }


def mpijob_pod(name: str, pod_set_name: str, index: int, offset: str | None) -> dict:
    annotations = {"kueue.x-k8s.io/workload": "mpi"}
    if offset is not None:
        annotations[OFFSET] = offset
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": name,
            "annotations": annotations,
            "labels": {"kueue.x-k8s.io/podset": pod_set_name, REPLICA_INDEX: str(index)},
        },
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
            "schedulingGates": [{"name": "kueue.x-k8s.io/topology"}],
        },
        "status": {"phase": "Pending"},
    }


def sync(group: str | None, workers: list[str], pods: list[dict]) -> list[tuple[str, str]]:
    """(pod, host) for every pod the ungater sends, after one sync of the workload."""
    from tas.ungater.worker import Ungater

    state = make_state([node(f"x{i}", "b1", "r1") for i in range(1, 5)])
    state.upsert_workload(proj.workload_from_object(mpijob_workload(group, workers)))
    for pod in pods:
        state.upsert_pod(proj.pod_from_object(pod))
    kube = FakeKube()
    asyncio.run(Ungater(state, kube).sync(("ns", "mpi")))
    return sorted(
        (path.rsplit("/", 1)[1], body["spec"]["nodeSelector"][HOST]) for path, body in kube.patches
    )


# Workers named against their index, so that name order (the fallback) is not rank order.
SHUFFLED = [("w-c", 1), ("w-a", 2), ("w-b", 3)]


@pytest.mark.parametrize(
    ("group", "workers", "want"),
    [
        pytest.param(
            "mpijob-group",
            [("w1", 1), ("w2", 2), ("w3", 3)],
            [("l0", "x1"), ("w1", "x1"), ("w2", "x2"), ("w3", "x3")],
            id="ranks: support rank-based ordering for kubeflow with valid offset annotation"
            " - for all Pods",
        ),
        pytest.param(
            None,
            SHUFFLED,
            [("l0", "x1"), ("w-a", "x3"), ("w-b", "x4"), ("w-c", "x2")],
            id="the MPIJob webhook's shape: no group, workers 1..3 take slots 0..2",
        ),
    ],
)
def test_a_valid_offset_places_the_workers_by_their_index_less_the_offset(group, workers, want):
    hosts = ["x1", "x2", "x3"] if group else ["x2", "x3", "x4"]
    pods = [mpijob_pod("l0", "launcher", 0, None)]
    pods += [mpijob_pod(name, "worker", index, "1") for name, index in workers]
    assert sync(group, hosts, pods) == want


def test_without_the_offset_the_shuffled_workers_fall_back_to_name_order():
    """The control for the case above: index 3 of 3 pods is out of range, so no ranks."""
    pods = [mpijob_pod("l0", "launcher", 0, None)]
    pods += [mpijob_pod(name, "worker", index, None) for name, index in SHUFFLED]
    assert sync(None, ["x2", "x3", "x4"], pods) == [
        ("l0", "x1"),
        ("w-a", "x2"),
        ("w-b", "x3"),
        ("w-c", "x4"),
    ]


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(
            "invalid",
            id="ranks: support rank-based ordering for kubeflow with invalid"
            " offset annotation - for all Pods",
        ),
        pytest.param("", id="empty"),
        pytest.param(" 1", id="space (Atoi refuses it, Python's int would not)"),
        pytest.param("1_0", id="underscore"),
        pytest.param("1.0", id="decimal"),
        pytest.param("9223372036854775808", id="beyond int64"),
        pytest.param("\u0661", id="a non-ASCII digit"),
    ],
)
def test_a_malformed_offset_ungates_none_of_the_workloads_pods_and_says_why(value):
    pods = [mpijob_pod("l0", "launcher", 0, None)]
    pods += [mpijob_pod(f"w{i}", "worker", i, value) for i in range(3)]
    state = make_state([node(f"x{i}", "b1", "r1") for i in range(1, 5)])
    state.upsert_workload(
        proj.workload_from_object(mpijob_workload("mpijob-group", ["x1", "x2", "x3"]))
    )
    for pod in pods:
        state.upsert_pod(proj.pod_from_object(pod))
    kube = FakeKube()
    from tas.ungater.worker import Ungater

    with pytest.raises(
        IndexOffsetError, match=rf"ns/w[0-2]: annotation {OFFSET}: .* not an integer"
    ):
        asyncio.run(Ungater(state, kube).sync(("ns", "mpi")))
    assert kube.patches == []  # not even the launcher, whose pod set comes first


@pytest.mark.parametrize(
    ("value", "want"),
    [(None, 0), ("1", 1), ("+2", 2), ("-1", -1), ("007", 7), ("9223372036854775807", 2**63 - 1)],
)
def test_index_offset_reads_what_atoi_reads(value, want):
    pod = labelled("p", {})
    assert index_offset([proj.PodInfo(**{**pod.__dict__, "index_offset": value})]) == want


def test_index_offset_reads_the_first_pod_not_finished():
    base = labelled("p", {}).__dict__
    done = proj.PodInfo(**{**base, "name": "done", "phase": "Failed", "index_offset": "x"})
    live = proj.PodInfo(**{**base, "name": "live", "index_offset": "2"})
    assert index_offset([done, live]) == 2
    assert index_offset([done]) == 0
    assert index_offset([]) == 0


def test_the_offset_adds_to_the_groups_offset_and_bound():
    request = TopologyRequest(pod_index_label=REPLICA_INDEX)
    pods = [proj.PodInfo(**{**labelled("p", {}).__dict__, "index_offset": "2"})]
    rule = pod_set_rule(request, 3, pods, group=(1, 4))
    assert rule is not None and (rule.offset, rule.max_index) == (3, 6)
    alone = pod_set_rule(request, 3, pods)
    assert alone is not None and (alone.offset, alone.max_index) == (2, 5)


def with_offset(pod: proj.PodInfo, offset: int) -> proj.PodInfo:
    return proj.PodInfo(**{**pod.__dict__, "index_offset": str(offset)})


@settings(max_examples=150, deadline=None)
@given(
    counts=st.lists(st.integers(1, 3), min_size=1, max_size=5),
    offset=st.integers(1, 5),
    group=st.booleans(),
    data=st.data(),
)
def test_offset_indexes_place_as_indexes_from_zero(counts, offset, group, data):
    """Indexes k..k+n-1 with offset k: every pod gets its own slot, and the placement is that
    of indexes 0..n-1 without an offset (with or without a pod-set group in front)."""
    a = assignment(*[((f"r{i}",), c) for i, c in enumerate(counts)], levels=(RACK,))
    n = sum(counts)
    order = data.draw(st.permutations(range(n)))  # names, and so the fallback, out of rank
    request = TopologyRequest(pod_index_label=REPLICA_INDEX)
    lead = data.draw(st.integers(1, 3)) if group else 0
    window = (lead, lead + n) if group else None

    def placement(shift: int) -> dict[int, tuple[str, ...]]:
        pods = [labelled(f"p{order[i]:02}", {REPLICA_INDEX: lead + shift + i}) for i in range(n)]
        pods = [with_offset(p, shift) if shift else p for p in pods]
        rule = pod_set_rule(request, n, pods, window)
        result = plan(a, pods, rule=rule)
        assert len({u.pod.uid for u in result}) == n  # every pod placed, once
        return {u.pod.index_labels[REPLICA_INDEX] - lead - shift: u.domain for u in result}

    shifted, plain = placement(offset), placement(0)
    slots = [d.values for d in a.domains for _ in range(d.count)]  # rank i -> slot i
    assert shifted == plain == dict(enumerate(slots))
