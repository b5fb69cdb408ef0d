"""Kueue's metrics as the admission loop reports them: the real cache and loop run a sequence
(admissions, a workload left pending, a preemption, a node failure, queues deleted), and the
samples read back from prometheus_client's registry must be those Kueue v0.17.0 reports for
the same sequence (names, labels, label values, units, buckets)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import REGISTRY

from tas import metrics
from tas.admission.decide import decide
from tas.admission.loop import AdmissionLoop
from tas.cache import projections as proj
from tas.workload import transitions
from tests.unit.admission.fixtures import (
    RACK,
    cluster_queue,
    make_state,
    node,
    two_racks,
    workload,
)
from tests.unit.admission.test_loop import FakeWriter, add, admitted, cycle
from tests.unit.admission.test_loop_preemption import Cluster, preempting, rack_job
from tests.unit.metric_samples import (
    exposed_names,
    fresh_metrics,  # noqa: F401 (a fixture, used by name)
    sample,
)

pytestmark = pytest.mark.usefixtures("fresh_metrics")

CQ, LQ = {"cluster_queue": "cq"}, {"name": "lq", "namespace": "ns"}
NO_PRIORITY = {"priority_class": ""}


def ago(seconds: float) -> str:
    return (datetime.now(UTC) - timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def unique(obj: dict) -> dict:
    """A uid of its own: the first-eviction count remembers uids across tests."""
    obj["metadata"]["uid"] = str(uuid.uuid4())
    return obj


def attempts(result: str) -> float:
    """Admission cycles so far: one counter for the process, kept across tests."""
    return sample("kueue_admission_attempts_total", result=result) or 0


def pending(queue: dict = CQ, local: bool = False) -> tuple[float | None, float | None]:
    name = "kueue_local_queue_pending_workloads" if local else "kueue_pending_workloads"
    return tuple(sample(name, **queue, status=s) for s in ("active", "inadmissible"))


def test_two_admitted_and_one_left_inadmissible():
    state = make_state(two_racks())
    for name in ("a", "b", "c"):  # 8 pods of 1 cpu in one rack: two racks hold two of them
        obj = workload(name, pods=8, annotations_request={"required": RACK}, created=ago(100))
        if name == "a":
            ref = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"}
            obj["spec"]["priorityClassRef"] = ref
        add(state, unique(obj))
    writer = FakeWriter()
    loop = AdmissionLoop(state, writer)
    before = attempts("success"), attempts("inadmissible")
    cycle(loop)
    assert len(admitted(writer)) == 2

    for name in ("kueue_admitted_workloads_total", "kueue_quota_reserved_workloads_total"):
        assert sample(name, **CQ, priority_class="high") == 1
        assert sample(name, **CQ, **NO_PRIORITY) == 1
    # Waited 100 s since creation: in the bucket that ends at 160, not in the one ending at 80.
    for name in ("kueue_admission_wait_time_seconds", "kueue_quota_reserved_wait_time_seconds"):
        assert sample(name + "_bucket", **CQ, priority_class="high", le="80.0") == 0
        assert sample(name + "_bucket", **CQ, priority_class="high", le="160.0") == 1
    assert (attempts("success"), attempts("inadmissible")) == (before[0] + 1, before[1])
    duration = sample("kueue_admission_attempt_duration_seconds_count", result="success")
    assert duration == attempts("success")  # observed once per attempt
    assert pending() == (0, 1)
    assert sample("kueue_reserving_active_workloads", **CQ) == 2
    assert sample("kueue_admitted_active_workloads", **CQ) == 2
    statuses = {
        s: sample("kueue_cluster_queue_status", **CQ, status=s)
        for s in ("pending", "active", "terminating")
    }
    assert statuses == {"pending": 0, "active": 1, "terminating": 0}

    # The LocalQueue's view of the same.
    assert pending(LQ, local=True) == (0, 1)
    assert sample("kueue_local_queue_admitted_workloads_total", **LQ, priority_class="high") == 1
    assert sample("kueue_local_queue_admission_wait_time_seconds_count", **LQ, **NO_PRIORITY) == 1
    assert sample("kueue_local_queue_reserving_active_workloads", **LQ) == 2
    assert sample("kueue_local_queue_admitted_active_workloads", **LQ) == 2
    assert sample("kueue_local_queue_status", **LQ, active="True") == 1
    assert sample("kueue_local_queue_status", **LQ, active="False") == 0

    # Nothing changed: Kueue pops no inadmissible workload, so there is no attempt at all.
    cycle(loop)
    assert (attempts("success"), attempts("inadmissible")) == (before[0] + 1, before[1])
    assert pending() == (0, 1)


def test_quota_and_usage_in_kueue_units():
    """cpu in cores, memory in bytes, as Kueue's resourceFloat; limits 0 when unset."""
    cq = cluster_queue(cpu="100")
    cq["spec"]["cohortName"] = "co"
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] = "2500m"
    state = make_state(two_racks(), cq)
    add(state, unique(workload("a", pods=3, cpu="500m")))
    cycle(AdmissionLoop(state, FakeWriter()))
    cpu = {"cohort": "co", **CQ, "flavor": "tas", "resource": "cpu"}
    memory = {**cpu, "resource": "memory"}
    assert sample("kueue_cluster_queue_nominal_quota", **cpu) == 100.0
    assert sample("kueue_cluster_queue_nominal_quota", **memory) == 2.0**40  # 1Ti
    assert sample("kueue_cluster_queue_borrowing_limit", **cpu) == 2.5
    assert sample("kueue_cluster_queue_lending_limit", **cpu) == 0
    assert sample("kueue_cluster_queue_resource_reservation", **cpu) == 1.5
    assert sample("kueue_cluster_queue_resource_usage", **cpu) == 1.5
    assert sample("kueue_cluster_queue_resource_usage", **memory) == 0
    lq_cpu = {**LQ, "flavor": "tas", "resource": "cpu"}
    assert sample("kueue_local_queue_resource_reservation", **lq_cpu) == 1.5
    assert sample("kueue_local_queue_resource_usage", **lq_cpu) == 1.5
    # Kueue reports the cohort's subtree in its own integers: milli-cores.
    co_cpu = {"cohort": "co", "flavor": "tas", "resource": "cpu"}
    assert sample("kueue_cohort_subtree_quota", **co_cpu) == 100_000
    assert sample("kueue_cohort_subtree_resource_reservations", **co_cpu) == 1500


def five_cpus_for_one_namespace(strict: bool) -> dict:
    cq = cluster_queue(cpu="5", strict=strict)
    cq["spec"]["namespaceSelector"] = {"matchLabels": {"dep": "eng"}}
    return cq


# Kueue's scheduler integration tests (test/integration/singlecluster/scheduler): wl1 2 cpu
# (priority 100), wl2 5 cpu (10), wl3 1 cpu (1) in a 5-cpu ClusterQueue.
@pytest.mark.parametrize(
    "strict, wl2_namespace, admitted_names, expected_pending",
    [
        (True, "ns", {"wl1"}, (2, 0)),  # wl3 waits behind wl2, both in the queue
        (False, "ns", {"wl1", "wl3"}, (0, 1)),  # wl2 tried, did not fit: inadmissible
        (True, "other", {"wl1", "wl3"}, (0, 1)),  # wl2's namespace not selected
    ],
    ids=["strict-fifo-holds-the-line", "best-effort-fifo", "namespace-not-selected"],
)
def test_pending_workloads_are_active_or_inadmissible_as_in_kueue(
    strict, wl2_namespace, admitted_names, expected_pending
):
    state = make_state(two_racks(), five_cpus_for_one_namespace(strict))
    state.upsert_namespace("ns", {"dep": "eng"})
    state.upsert_namespace("other", {})
    state.upsert_local_queue("other", "lq", "cq")
    for name, cpu, priority, namespace in (
        ("wl1", "2", 100, "ns"),
        ("wl2", "5", 10, wl2_namespace),
        ("wl3", "1", 1, "ns"),
    ):
        add(state, unique(workload(name, pods=1, cpu=cpu, priority=priority, namespace=namespace)))
    writer = FakeWriter()
    cycle(AdmissionLoop(state, writer))
    assert set(admitted(writer)) == admitted_names
    assert pending() == expected_pending
    assert sample("kueue_reserving_active_workloads", **CQ) == len(admitted_names)
    assert sample("kueue_admitted_workloads_total", **CQ, **NO_PRIORITY) == len(admitted_names)


def test_an_inactive_queue_counts_every_pending_workload_inadmissible():
    state = make_state(two_racks(), cluster_queue(flavor="missing"))  # no such ResourceFlavor
    add(state, unique(workload("a", pods=1)))
    add(state, unique(workload("b", pods=1)))
    before = attempts("success") + attempts("inadmissible")
    cycle(AdmissionLoop(state, FakeWriter()))
    assert pending() == (0, 2)
    assert sample("kueue_cluster_queue_status", **CQ, status="pending") == 1
    assert sample("kueue_cluster_queue_status", **CQ, status="active") == 0
    assert sample("kueue_local_queue_status", **LQ, active="False") == 1
    assert attempts("success") + attempts("inadmissible") == before  # none popped


def test_preemption_counts_the_victim_once_and_the_preemptor_by_its_queue():
    c = Cluster(preempting())
    c.submit(unique(rack_job("low", 8, 0, ago(50))))
    c.submit(unique(rack_job("other", 8, 5, ago(50))))
    c.cycle()
    c.submit(unique(rack_job("high", 8, 10, ago(10))))
    before = attempts("success"), attempts("inadmissible")
    c.cycle()  # "low" is evicted; its pods still hold the quota

    assert (
        sample(
            "kueue_preempted_workloads_total",
            preempting_cluster_queue="cq",
            reason="InClusterQueue",
        )
        == 1
    )
    evicted = {**CQ, "reason": "Preempted", **NO_PRIORITY}
    assert sample("kueue_evicted_workloads_total", **evicted, underlying_cause="") == 1
    assert sample("kueue_evicted_workloads_once_total", **evicted, detailed_reason="") == 1
    assert (
        sample(
            "kueue_local_queue_evicted_workloads_total",
            **LQ,
            reason="Preempted",
            underlying_cause="",
            **NO_PRIORITY,
        )
        == 1
    )
    assert (attempts("success"), attempts("inadmissible")) == (before[0], before[1] + 1)
    c.cycle()  # the eviction as the watch shows it
    assert pending() == (1, 0)  # a preemptor stays in the queue (Kueue: PendingPreemption)
    assert sample("kueue_reserving_active_workloads", **CQ) == 2  # the victim still reserves
    assert sample("kueue_admitted_active_workloads", **CQ) == 1  # ...but is not admitted

    c.release("low")
    c.cycle()
    c.cycle()
    assert admitted(c.writer)[-1] == "high"
    assert sample("kueue_admitted_workloads_total", **CQ, **NO_PRIORITY) == 3
    assert sample("kueue_evicted_workloads_total", **evicted, underlying_cause="") == 1


def test_a_failed_node_without_replacement_is_an_eviction_for_node_failures():
    state = make_state([node("x1", "b1", "r1"), node("x2", "b1", "r1"), node("y1", "b1", "r2")])
    obj = unique(workload("train", pods=4, cpu="2", annotations_request={"required": RACK}))
    decision = decide(state, proj.workload_from_object(obj), state.cluster_queues["cq"])
    obj["status"] = transitions.admitted(
        proj.workload_from_object(obj), decision.admission, decision.message
    )
    add(state, obj)
    down = node("x1", "b1", "r1")
    down["status"]["conditions"][0]["status"] = "False"
    state.upsert_node(proj.node_from_object(down))
    obj["status"]["unhealthyNodes"] = [{"name": "x1"}]
    add(state, obj)
    before = attempts("success")
    cycle(AdmissionLoop(state, FakeWriter()))  # no room left in r1: evicted (fail fast)
    evicted = {**CQ, "reason": "NodeFailures", **NO_PRIORITY}
    assert sample("kueue_evicted_workloads_total", **evicted, underlying_cause="") == 1
    assert sample("kueue_evicted_workloads_once_total", **evicted, detailed_reason="") == 1
    assert attempts("success") == before + 1  # an eviction is a success, as in Kueue


def two_queues_in_a_cohort():
    """ClusterQueues a (LocalQueue lq) and b (lq-b), 8 cpu each, in cohort co under root."""
    a, b = cluster_queue("a", cpu="8"), cluster_queue("b", cpu="8")
    a["spec"]["cohortName"] = b["spec"]["cohortName"] = "co"
    state = make_state(two_racks(), a)
    state.upsert_cluster_queue(proj.cluster_queue_from_object(b))
    state.upsert_local_queue("ns", "lq-b", "b")
    cohort = {"metadata": {"name": "co"}, "spec": {"parentName": "root"}}
    state.upsert_cohort(proj.cohort_from_object(cohort))
    return state


def test_cohort_subtree_metrics_sum_every_queue_below():
    state = two_queues_in_a_cohort()
    add(state, unique(workload("a1", pods=4)))  # in "lq", of ClusterQueue a
    cycle(AdmissionLoop(state, FakeWriter()))
    for cohort in ("co", "root"):  # root's only child is co, which lends it all
        cpu = {"cohort": cohort, "flavor": "tas", "resource": "cpu"}
        assert sample("kueue_cohort_subtree_quota", **cpu) == 16_000
        assert sample("kueue_cohort_subtree_resource_reservations", **cpu) == 4_000
        assert (
            sample("kueue_cohort_subtree_admitted_workloads_total", cohort=cohort, **NO_PRIORITY)
            == 1
        )
        assert sample("kueue_cohort_subtree_admitted_active_workloads", cohort=cohort) == 1
    memory = {"cohort": "co", "flavor": "tas", "resource": "memory"}
    assert sample("kueue_cohort_subtree_quota", **memory) == 2 * 2**40
    assert sample("kueue_cohort_subtree_resource_reservations", **memory) is None  # 0: none


def test_a_cluster_queue_moved_to_another_cohort_leaves_no_series_under_the_old_one():
    state = two_queues_in_a_cohort()
    loop = AdmissionLoop(state, FakeWriter())
    cycle(loop)
    labels = {"cluster_queue": "a", "flavor": "tas", "resource": "cpu"}
    assert sample("kueue_cluster_queue_nominal_quota", cohort="co", **labels) == 8
    moved = cluster_queue("a", cpu="8")
    moved["spec"]["cohortName"] = "elsewhere"
    state.upsert_cluster_queue(proj.cluster_queue_from_object(moved))
    cycle(loop)
    assert sample("kueue_cluster_queue_nominal_quota", cohort="co", **labels) is None
    assert sample("kueue_cluster_queue_nominal_quota", cohort="elsewhere", **labels) == 8
    co_cpu = {"cohort": "co", "flavor": "tas", "resource": "cpu"}
    assert sample("kueue_cohort_subtree_quota", **co_cpu) == 8_000  # b alone


def test_deleted_queues_and_cohorts_leave_no_series():
    state = two_queues_in_a_cohort()
    add(state, unique(workload("a1", pods=4)))
    add(state, unique(workload("big", pods=20)))  # stays pending in a
    loop = AdmissionLoop(state, FakeWriter())
    cycle(loop)
    assert sample("kueue_local_queue_admitted_workloads_total", **LQ, **NO_PRIORITY) == 1

    state.delete_local_queue("ns", "lq")
    cycle(loop)
    for name, labels in (
        ("kueue_local_queue_admitted_workloads_total", {**LQ, **NO_PRIORITY}),
        ("kueue_local_queue_pending_workloads", {**LQ, "status": "inadmissible"}),
        ("kueue_local_queue_status", {**LQ, "active": "True"}),
        ("kueue_local_queue_resource_usage", {**LQ, "flavor": "tas", "resource": "cpu"}),
    ):
        assert sample(name, **labels) is None, name
    lq_b = {"name": "lq-b", "namespace": "ns"}
    assert sample("kueue_local_queue_status", **lq_b, active="True") == 1  # the other stays

    state.delete_cluster_queue("a")
    state.delete_cluster_queue("b")
    cycle(loop)
    a = {"cluster_queue": "a"}
    for name, labels in (
        ("kueue_admitted_workloads_total", {**a, **NO_PRIORITY}),
        ("kueue_admission_wait_time_seconds_count", {**a, **NO_PRIORITY}),
        ("kueue_pending_workloads", {**a, "status": "active"}),
        ("kueue_cluster_queue_status", {**a, "status": "active"}),
        ("kueue_reserving_active_workloads", a),
        (
            "kueue_cluster_queue_nominal_quota",
            {"cohort": "co", **a, "flavor": "tas", "resource": "cpu"},
        ),
    ):
        assert sample(name, **labels) is None, name
    assert REGISTRY.get_sample_value("tas_pending_workloads", {"cluster_queue": "a"}) is None
    state.delete_cohort("co")
    cycle(loop)
    assert (
        sample("kueue_cohort_subtree_admitted_workloads_total", cohort="co", **NO_PRIORITY) is None
    )


def test_a_requeued_workload_waits_from_its_requeue_not_its_creation():
    state = make_state(two_racks())
    obj = unique(workload("a", pods=1, created=ago(5000)))
    obj["status"] = {
        "conditions": [
            {
                "type": "Requeued",
                "status": "True",
                "reason": "Evicted",
                "message": "",
                "lastTransitionTime": ago(3),
            }
        ]
    }
    add(state, obj)
    cycle(AdmissionLoop(state, FakeWriter()))
    wait = {**CQ, **NO_PRIORITY}
    assert sample("kueue_admission_wait_time_seconds_bucket", **wait, le="5.0") == 1
    assert sample("kueue_admission_wait_time_seconds_bucket", **wait, le="2.5") == 0


def test_without_the_gate_no_local_queue_metric_is_exposed_and_the_role_labels_every_sample():
    metrics.configure(replica_role=metrics.ROLE_LEADER, local_queue_metrics=False)
    state = make_state(two_racks())
    add(state, unique(workload("a", pods=1)))
    cycle(AdmissionLoop(state, FakeWriter()))
    assert not {n for n in exposed_names() if n.startswith("kueue_local_queue_")}
    assert sample("kueue_admitted_workloads_total", role="leader", **CQ, **NO_PRIORITY) == 1
    assert sample("kueue_admitted_workloads_total", **CQ, **NO_PRIORITY) is None
    metrics.configure(replica_role=metrics.ROLE_LEADER, local_queue_metrics=True)
    assert "kueue_local_queue_pending_workloads" in exposed_names()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    jobs=st.lists(
        st.tuples(st.integers(1, 10), st.sampled_from(["1", "2"]), st.booleans()),
        min_size=1,
        max_size=6,
    ),
    quota=st.integers(4, 40),
)
def test_counts_add_up(jobs, quota):
    """Whatever fits: admitted + pending = submitted, each admission counted once and holding
    quota, the LocalQueue's counts equal the ClusterQueue's, and the reserved cpu is what the
    admitted workloads request."""
    metrics.end_round((), (), ())
    state = make_state(two_racks(), cluster_queue(cpu=str(quota)))
    requested = {}
    for i, (pods, cpu, rack) in enumerate(jobs):
        request = {"required": RACK} if rack else None
        add(state, unique(workload(f"w{i}", pods=pods, cpu=cpu, annotations_request=request)))
        requested[f"w{i}"] = pods * int(cpu)
    writer = FakeWriter()
    before = attempts("success"), attempts("inadmissible")
    cycle(AdmissionLoop(state, writer))
    landed = admitted(writer)
    assert sum(pending()) == len(jobs) - len(landed)
    assert pending(LQ, local=True) == pending()
    for name in ("kueue_admitted_workloads_total", "kueue_quota_reserved_workloads_total"):
        assert (sample(name, **CQ, **NO_PRIORITY) or 0) == len(landed)
    assert sample("kueue_reserving_active_workloads", **CQ) == len(landed)
    assert sample("kueue_local_queue_admitted_active_workloads", **LQ) == len(landed)
    cpu = {"cohort": "", **CQ, "flavor": "tas", "resource": "cpu"}
    reserved = sample("kueue_cluster_queue_resource_reservation", **cpu)
    assert reserved == sum(requested[n] for n in landed) <= quota
    after = attempts("success"), attempts("inadmissible")
    assert after == (before[0] + 1, before[1]) if landed else (before[0], before[1] + 1)


def test_cohorts_whose_parents_loop_are_left_out_as_kueue_leaves_them_out():
    cq = cluster_queue()
    cq["spec"]["cohortName"] = "x"
    state = make_state(two_racks(), cq)
    for name, parent in (("x", "y"), ("y", "x"), ("z", None)):
        spec = {"parentName": parent} if parent else {}
        state.upsert_cohort(proj.cohort_from_object({"metadata": {"name": name}, "spec": spec}))
    cycle(AdmissionLoop(state, FakeWriter()))
    assert sample("kueue_cohort_subtree_admitted_active_workloads", cohort="z") == 0
    for cohort in ("x", "y"):
        assert sample("kueue_cohort_subtree_admitted_active_workloads", cohort=cohort) is None
    assert sample("kueue_cluster_queue_status", **CQ, status="pending") == 1
