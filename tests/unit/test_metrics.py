"""Kueue's metrics as declared and recorded by tas.metrics: names, types and label names as in
Kueue v0.17.0's pkg/metrics/metrics.go, its buckets and units, its first-eviction count, and
the removal of every series of a queue or cohort that is gone (Kueue's Clear*Metrics, ported
from its metrics_test.go)."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from tas import metrics
from tests.unit.metric_samples import (
    exposed_names,
    fresh_metrics,  # noqa: F401 (a fixture, used by name)
    sample,
)

pytestmark = pytest.mark.usefixtures("fresh_metrics")

ROLE = "replica_role"
CQ = ("cluster_queue",)
LQ = ("name", "namespace")
CQ_RESOURCE = ("cohort", "cluster_queue", "flavor", "resource", ROLE)

# Kueue v0.17.0 (pkg/metrics/metrics.go, InitMetricVectors without custom labels).
KUEUE_DECLARATIONS = [
    ("kueue_admission_attempts_total", "counter", ("result", ROLE)),
    ("kueue_admission_attempt_duration_seconds", "histogram", ("result", ROLE)),
    ("kueue_pending_workloads", "gauge", (*CQ, "status", ROLE)),
    ("kueue_quota_reserved_workloads_total", "counter", (*CQ, "priority_class", ROLE)),
    ("kueue_quota_reserved_wait_time_seconds", "histogram", (*CQ, "priority_class", ROLE)),
    ("kueue_admitted_workloads_total", "counter", (*CQ, "priority_class", ROLE)),
    ("kueue_admission_wait_time_seconds", "histogram", (*CQ, "priority_class", ROLE)),
    (
        "kueue_evicted_workloads_total",
        "counter",
        (*CQ, "reason", "underlying_cause", "priority_class", ROLE),
    ),
    (
        "kueue_evicted_workloads_once_total",
        "counter",
        (*CQ, "reason", "detailed_reason", "priority_class", ROLE),
    ),
    ("kueue_preempted_workloads_total", "counter", ("preempting_cluster_queue", "reason", ROLE)),
    ("kueue_reserving_active_workloads", "gauge", (*CQ, ROLE)),
    ("kueue_admitted_active_workloads", "gauge", (*CQ, ROLE)),
    ("kueue_cluster_queue_status", "gauge", (*CQ, "status", ROLE)),
    ("kueue_cluster_queue_resource_reservation", "gauge", CQ_RESOURCE),
    ("kueue_cluster_queue_resource_usage", "gauge", CQ_RESOURCE),
    ("kueue_cluster_queue_nominal_quota", "gauge", CQ_RESOURCE),
    ("kueue_cluster_queue_borrowing_limit", "gauge", CQ_RESOURCE),
    ("kueue_cluster_queue_lending_limit", "gauge", CQ_RESOURCE),
    ("kueue_cohort_subtree_quota", "gauge", ("cohort", "flavor", "resource", ROLE)),
    ("kueue_cohort_subtree_resource_reservations", "gauge", ("cohort", "flavor", "resource", ROLE)),
    (
        "kueue_cohort_subtree_admitted_workloads_total",
        "counter",
        ("cohort", "priority_class", ROLE),
    ),
    ("kueue_cohort_subtree_admitted_active_workloads", "gauge", ("cohort", ROLE)),
    ("kueue_cluster_queue_weighted_share", "gauge", ("cluster_queue", "cohort", ROLE)),
    ("kueue_cohort_weighted_share", "gauge", ("cohort", ROLE)),
    ("kueue_local_queue_pending_workloads", "gauge", (*LQ, "status", ROLE)),
    ("kueue_local_queue_quota_reserved_workloads_total", "counter", (*LQ, "priority_class", ROLE)),
    (
        "kueue_local_queue_quota_reserved_wait_time_seconds",
        "histogram",
        (*LQ, "priority_class", ROLE),
    ),
    ("kueue_local_queue_admitted_workloads_total", "counter", (*LQ, "priority_class", ROLE)),
    ("kueue_local_queue_admission_wait_time_seconds", "histogram", (*LQ, "priority_class", ROLE)),
    (
        "kueue_local_queue_evicted_workloads_total",
        "counter",
        (*LQ, "reason", "underlying_cause", "priority_class", ROLE),
    ),
    ("kueue_local_queue_reserving_active_workloads", "gauge", (*LQ, ROLE)),
    ("kueue_local_queue_admitted_active_workloads", "gauge", (*LQ, ROLE)),
    ("kueue_local_queue_status", "gauge", (*LQ, "active", ROLE)),
    ("kueue_local_queue_resource_reservation", "gauge", (*LQ, "flavor", "resource", ROLE)),
    ("kueue_local_queue_resource_usage", "gauge", (*LQ, "flavor", "resource", ROLE)),
]


def declared() -> dict[str, tuple[str, tuple[str, ...]]]:
    """Every kueue_* metric in the registry: exposed name -> (type, label names)."""
    out = {}
    for name in dir(metrics):
        metric = getattr(metrics, name)
        if name.startswith("KUEUE_") and hasattr(metric, "_labelnames"):
            family = next(iter(metric.describe()))
            exposed = family.name + ("_total" if family.type == "counter" else "")
            out[exposed] = (family.type, tuple(metric._labelnames))
    return out


@pytest.mark.parametrize(
    "name, type_, labels", KUEUE_DECLARATIONS, ids=[d[0] for d in KUEUE_DECLARATIONS]
)
def test_each_metric_is_declared_as_kueue_declares_it(name, type_, labels):
    assert declared()[name] == (type_, labels)


def test_no_kueue_metric_beyond_those_of_kueue():
    assert set(declared()) == {d[0] for d in KUEUE_DECLARATIONS}


def test_wait_time_buckets_are_kueues():
    """Kueue's TestGenerateExponentialBuckets."""
    expected = [1, 2.5, 5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560, 5120, 10240]
    assert list(metrics.kueue_buckets(14)) == expected


def bucket_bounds(family_name: str, **labels: str) -> list[str]:
    """The bucket bounds of one series (other tests may have recorded others)."""
    family = next(f for f in REGISTRY.collect() if f.name == family_name)
    return [
        s.labels["le"]
        for s in family.samples
        if s.name.endswith("_bucket") and labels.items() <= s.labels.items()
    ]


@pytest.mark.parametrize(
    "family, highest, count",
    [
        ("kueue_admission_wait_time_seconds", "40960.0", 16),
        ("kueue_quota_reserved_wait_time_seconds", "10240.0", 14),
        ("kueue_local_queue_admission_wait_time_seconds", "10240.0", 14),
        ("kueue_local_queue_quota_reserved_wait_time_seconds", "10240.0", 14),
    ],
    ids=["admission", "quota-reserved", "lq-admission", "lq-quota-reserved"],
)
def test_exposed_wait_buckets(family, highest, count):
    metrics.workload_admitted("cq", ("ns", "lq"), "", (), waited=3.0)
    bounds = bucket_bounds(family, priority_class="", replica_role="standalone")
    assert bounds[0] == "1.0" and bounds[-2:] == [highest, "+Inf"] and len(bounds) == count + 1


def test_admission_cycles_use_the_go_clients_default_buckets():
    metrics.admission_cycle(True, 0.2)
    bounds = bucket_bounds(
        "kueue_admission_attempt_duration_seconds", result="success", replica_role="standalone"
    )
    go_default = ["0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1.0", "2.5", "5.0"]
    assert bounds == [*go_default, "10.0", "+Inf"]


@pytest.mark.parametrize(
    "resource, milli, as_float, as_integer",
    [
        ("cpu", 1500, 1.5, 1500),
        ("cpu", 100_000, 100.0, 100_000),
        ("memory", 2**30 * 1000, 2.0**30, 2**30),
        ("nvidia.com/gpu", 4000, 4.0, 4),
        ("nvidia.com/gpu", 500, 1.0, 1),  # Quantity.Value() rounds up
        ("pods", 0, 0.0, 0),
    ],
    ids=["cpu-fraction", "cpu-cores", "memory-bytes", "gpu", "gpu-fraction", "zero"],
)
def test_quantities_in_kueues_units(resource, milli, as_float, as_integer):
    assert metrics.kueue_float(resource, milli) == as_float
    assert metrics.kueue_value(resource, milli) == as_integer


def evicted(reason: str, once: bool = False) -> float | None:
    name = "kueue_evicted_workloads_once_total" if once else "kueue_evicted_workloads_total"
    cause = {"detailed_reason": ""} if once else {"underlying_cause": ""}
    return sample(name, cluster_queue="cq", reason=reason, priority_class="", **cause)


def test_a_workload_evicted_again_for_the_same_reason_counts_once():
    for uid, reason in (
        ("u1", "Preempted"),
        ("u1", "Preempted"),
        ("u1", "NodeFailures"),
        ("u2", "Preempted"),
    ):
        metrics.workload_evicted("cq", ("ns", "lq"), "", uid, reason)
    assert (evicted("Preempted"), evicted("Preempted", once=True)) == (3, 2)
    assert (evicted("NodeFailures"), evicted("NodeFailures", once=True)) == (1, 1)


def test_series_of_gone_queues_are_removed_and_the_others_kept():
    """Kueue's TestReportAndCleanup{ClusterQueueEvicted,ClusterQueuePreempted,
    LocalQueueEvicted}Number, with our end of round as the clear."""
    for cq in ("cq1", "cq2"):
        metrics.workload_evicted(cq, ("ns", f"lq-{cq}"), "", f"uid-{cq}", "Preempted")
        metrics.workload_preempted(cq, "InClusterQueue")
        metrics.workload_preempted(cq, "InCohortReclamation")
        metrics.workload_admitted(cq, ("ns", f"lq-{cq}"), "p", [f"co-{cq}"], waited=1.0)
    metrics.end_round(["cq2"], [("ns", "lq-cq2")], ["co-cq2"])
    for cq, present in (("cq1", False), ("cq2", True)):
        values = [
            sample(
                "kueue_evicted_workloads_total",
                cluster_queue=cq,
                reason="Preempted",
                underlying_cause="",
                priority_class="",
            ),
            sample(
                "kueue_preempted_workloads_total",
                preempting_cluster_queue=cq,
                reason="InCohortReclamation",
            ),
            sample("kueue_admitted_workloads_total", cluster_queue=cq, priority_class="p"),
            sample(
                "kueue_local_queue_evicted_workloads_total",
                name=f"lq-{cq}",
                namespace="ns",
                reason="Preempted",
                underlying_cause="",
                priority_class="",
            ),
            sample(
                "kueue_cohort_subtree_admitted_workloads_total",
                cohort=f"co-{cq}",
                priority_class="p",
            ),
        ]
        assert values == ([1.0] * 5 if present else [None] * 5), cq


def quota(flavor: str) -> metrics.ResourceQuota:
    return metrics.ResourceQuota(flavor, "cpu", 5000, 10_000, 3000, reserved=2000, used=1000)


def test_a_resource_not_reported_again_is_removed_at_the_end_of_the_round():
    """Kueue clears a ClusterQueue's quotas for a flavor taken out of it."""
    metrics.report_cluster_queue_resource("cohort", "queue", quota("flavor"))
    metrics.report_cluster_queue_resource("cohort", "queue", quota("flavor2"))
    metrics.end_round(["queue"], [], ["cohort"])
    labels = {"cohort": "cohort", "cluster_queue": "queue", "resource": "cpu"}
    values = [
        sample(name, **labels, flavor="flavor2")
        for name in (
            "kueue_cluster_queue_nominal_quota",
            "kueue_cluster_queue_borrowing_limit",
            "kueue_cluster_queue_lending_limit",
            "kueue_cluster_queue_resource_reservation",
            "kueue_cluster_queue_resource_usage",
        )
    ]
    assert values == [5.0, 10.0, 3.0, 2.0, 1.0]
    metrics.report_cluster_queue_resource("cohort", "queue", quota("flavor"))
    metrics.end_round(["queue"], [], ["cohort"])
    assert sample("kueue_cluster_queue_nominal_quota", **labels, flavor="flavor") == 5.0
    assert sample("kueue_cluster_queue_nominal_quota", **labels, flavor="flavor2") is None


def test_a_cohort_resource_at_zero_is_not_reported():
    metrics.report_cohort_resource("co", "f", "cpu", quota=0, reserved=1500)
    assert sample("kueue_cohort_subtree_quota", cohort="co", flavor="f", resource="cpu") is None
    assert (
        sample(
            "kueue_cohort_subtree_resource_reservations", cohort="co", flavor="f", resource="cpu"
        )
        == 1500
    )


def test_the_gate_registers_and_unregisters_the_local_queue_metrics():
    local = {n for n in exposed_names() if n.startswith("kueue_local_queue_")}
    assert len(local) == 11
    metrics.configure(replica_role=metrics.ROLE_STANDALONE, local_queue_metrics=False)
    assert not {n for n in exposed_names() if n.startswith("kueue_local_queue_")}
    metrics.workload_admitted("cq", ("ns", "lq"), "", (), waited=1.0)
    metrics.report_local_queue(("ns", "lq"), active=True, pending=(1, 0))
    metrics.configure(replica_role=metrics.ROLE_STANDALONE, local_queue_metrics=True)
    metrics.configure(replica_role=metrics.ROLE_STANDALONE, local_queue_metrics=True)  # twice
    assert {n for n in exposed_names() if n.startswith("kueue_local_queue_")} == local
    # Nothing was recorded for LocalQueues while the gate was off.
    lq = {"name": "lq", "namespace": "ns"}
    assert sample("kueue_local_queue_admitted_workloads_total", **lq, priority_class="") is None
    assert sample("kueue_local_queue_pending_workloads", **lq, status="active") is None


def test_the_role_is_on_every_series():
    metrics.configure(replica_role=metrics.ROLE_LEADER, local_queue_metrics=True)
    metrics.report_cluster_queue("cq", active=True, pending=(2, 1), reserving=3, admitted=3)
    assert (
        sample("kueue_pending_workloads", role="leader", cluster_queue="cq", status="active") == 2
    )
    assert sample("kueue_pending_workloads", cluster_queue="cq", status="active") is None
