"""Prometheus metrics, served on --metrics-port: our own (`tas_*`) and Kueue's (`kueue_*`).

The `kueue_*` metrics carry Kueue v0.17.0's names, label names, label values and buckets
(its pkg/metrics/metrics.go), so that dashboards and alerts made for Kueue read this operator
unchanged. Left out, as nothing of ours does what they count: admission checks
(admission_checks_wait_time), waitForPodsReady (ready_wait_time,
admitted_until_ready_wait_time, pods_ready_to_evicted_time), elastic jobs
(replaced_workload_slices), preemption skipped for overlapping targets
(admission_cycle_preemption_skips: the loop holds room instead), MultiKueue, custom labels and
build_info. Not yet: finished_workloads and finished_workloads_total (and their LocalQueue
twins), which need the Job integration's finish and an index of finished workloads.

Callers pass facts (a ClusterQueue, a flavor, a resource, a reason; quantities in milli-units);
the functions below make the samples. Gauges are reported in rounds, one per admission cycle:
a series not reported again in the next round is removed, so a flavor taken out of a quota or
a changed cohort leaves nothing stale. `end_round` also removes every series of a queue or
cohort that is gone, as Kueue's Clear*Metrics do.
"""

from __future__ import annotations

import math
from collections import OrderedDict, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from prometheus_client import REGISTRY, Counter, Gauge, Histogram, start_http_server
from prometheus_client.metrics import MetricWrapperBase

ADMISSION_ATTEMPTS = Counter(
    "tas_admission_attempts_total",
    "Admission decisions, by result (admitted, pending, invalid)",
    ["result"],
)
ADMISSION_LATENCY = Histogram(
    "tas_admission_attempt_duration_seconds",
    "Time to decide one workload (quota and placement)",
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
)
PENDING = Gauge("tas_pending_workloads", "Workloads waiting for admission", ["cluster_queue"])
ADMITTED = Gauge("tas_admitted_workloads", "Workloads holding quota", ["cluster_queue"])
PODS_UNGATED = Counter(
    "tas_pods_ungated_total", "Pods given their domain and released to the scheduler"
)
NODE_REPLACEMENTS = Counter("tas_node_replacements_total", "Failed nodes replaced under a workload")
EVICTIONS = Counter("tas_evictions_total", "Workloads evicted, by reason", ["reason"])
API_REQUESTS = Counter(
    "tas_api_requests_total",
    "Requests to the API server, by verb (GET, WATCH, POST, PATCH, PUT, DELETE) and outcome",
    ["verb", "code"],
)

# ---- Kueue's metrics --------------------------------------------------------------------------

ROLE_LEADER, ROLE_FOLLOWER, ROLE_STANDALONE = "leader", "follower", "standalone"
RESULT_SUCCESS, RESULT_INADMISSIBLE = "success", "inadmissible"
PENDING_ACTIVE, PENDING_INADMISSIBLE = "active", "inadmissible"
CQ_PENDING, CQ_ACTIVE, CQ_TERMINATING = "pending", "active", "terminating"
NO_CAUSE = ""  # underlying_cause / detailed_reason: the reason is the root cause

# prometheus.DefBuckets of the Go client (the Python client's default differs).
_GO_DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def kueue_buckets(count: int) -> tuple[float, ...]:
    """Kueue's wait-time buckets (generateExponentialBuckets): 1, then 2.5 doubling."""
    return (1.0, *(2.5 * 2**i for i in range(count - 1)))


_ROLE = "replica_role"
_CQ = ("cluster_queue",)
_LQ = ("name", "namespace")
_CQ_RESOURCE = ("cohort", "cluster_queue", "flavor", "resource", _ROLE)
_LQ_RESOURCE = (*_LQ, "flavor", "resource", _ROLE)
_COHORT_RESOURCE = ("cohort", "flavor", "resource", _ROLE)
_EVICTION_REASONS = (
    "'reason' is Preempted (to free resources for a workload of higher priority or to reclaim "
    "nominal quota) or NodeFailures (its nodes failed, under TopologyAwareScheduling); Kueue "
    "also reports PodsReadyTimeout, AdmissionCheck, ClusterQueueStopped, LocalQueueStopped "
    "and Deactivated."
)
_PENDING_STATUS = (
    "'status' is active (in the admission queue) or inadmissible (an admission attempt failed; "
    "not tried again until the cluster changes in a way that could admit it)."
)

KUEUE_ADMISSION_ATTEMPTS = Counter(
    "kueue_admission_attempts_total",
    "Admission cycles; one may try several workloads. 'result' is success (at least one "
    "workload admitted) or inadmissible (none).",
    ["result", _ROLE],
)
KUEUE_ADMISSION_ATTEMPT_DURATION = Histogram(
    "kueue_admission_attempt_duration_seconds",
    "Duration of an admission cycle, by 'result' (success or inadmissible).",
    ["result", _ROLE],
    buckets=_GO_DEFAULT_BUCKETS,
)
KUEUE_PENDING = Gauge(
    "kueue_pending_workloads",
    "Pending workloads per 'cluster_queue' and 'status'. " + _PENDING_STATUS,
    [*_CQ, "status", _ROLE],
)
KUEUE_QUOTA_RESERVED = Counter(
    "kueue_quota_reserved_workloads_total",
    "Workloads that got a quota reservation, per 'cluster_queue'.",
    [*_CQ, "priority_class", _ROLE],
)
KUEUE_QUOTA_RESERVED_WAIT = Histogram(
    "kueue_quota_reserved_wait_time_seconds",
    "Time from a workload's creation or last requeue to its quota reservation, per "
    "'cluster_queue'.",
    [*_CQ, "priority_class", _ROLE],
    buckets=kueue_buckets(14),
)
KUEUE_ADMITTED = Counter(
    "kueue_admitted_workloads_total",
    "Admitted workloads, per 'cluster_queue'.",
    [*_CQ, "priority_class", _ROLE],
)
KUEUE_ADMISSION_WAIT = Histogram(
    "kueue_admission_wait_time_seconds",
    "Time from a workload's creation or last requeue to its admission, per 'cluster_queue'.",
    [*_CQ, "priority_class", _ROLE],
    buckets=kueue_buckets(16),
)
KUEUE_EVICTED = Counter(
    "kueue_evicted_workloads_total",
    "Evicted workloads, per 'cluster_queue'. " + _EVICTION_REASONS,
    [*_CQ, "reason", "underlying_cause", "priority_class", _ROLE],
)
KUEUE_EVICTED_ONCE = Counter(
    "kueue_evicted_workloads_once_total",
    "Workloads evicted for a reason for the first time, per 'cluster_queue'. " + _EVICTION_REASONS,
    [*_CQ, "reason", "detailed_reason", "priority_class", _ROLE],
)
KUEUE_PREEMPTED = Counter(
    "kueue_preempted_workloads_total",
    "Workloads preempted, per 'preempting_cluster_queue'. 'reason' is InClusterQueue, "
    "InCohortReclamation, InCohortFairSharing or InCohortReclaimWhileBorrowing.",
    ["preempting_cluster_queue", "reason", _ROLE],
)
KUEUE_RESERVING_ACTIVE = Gauge(
    "kueue_reserving_active_workloads",
    "Workloads reserving quota, per 'cluster_queue'.",
    [*_CQ, _ROLE],
)
KUEUE_ADMITTED_ACTIVE = Gauge(
    "kueue_admitted_active_workloads",
    "Admitted workloads that are active, per 'cluster_queue'.",
    [*_CQ, _ROLE],
)
KUEUE_CQ_STATUS = Gauge(
    "kueue_cluster_queue_status",
    "1 for the 'status' (pending, active or terminating) the 'cluster_queue' is in, else 0.",
    [*_CQ, "status", _ROLE],
)
KUEUE_CQ_RESERVATION = Gauge(
    "kueue_cluster_queue_resource_reservation",
    "A ClusterQueue's resources reserved, per flavor and resource.",
    _CQ_RESOURCE,
)
KUEUE_CQ_USAGE = Gauge(
    "kueue_cluster_queue_resource_usage",
    "A ClusterQueue's resources used by admitted workloads, per flavor and resource.",
    _CQ_RESOURCE,
)
KUEUE_CQ_NOMINAL = Gauge(
    "kueue_cluster_queue_nominal_quota",
    "A ClusterQueue's nominal quota, per flavor and resource.",
    _CQ_RESOURCE,
)
KUEUE_CQ_BORROWING_LIMIT = Gauge(
    "kueue_cluster_queue_borrowing_limit",
    "A ClusterQueue's borrowing limit, per flavor and resource (0 when unset).",
    _CQ_RESOURCE,
)
KUEUE_CQ_LENDING_LIMIT = Gauge(
    "kueue_cluster_queue_lending_limit",
    "A ClusterQueue's lending limit, per flavor and resource (0 when unset).",
    _CQ_RESOURCE,
)
KUEUE_CQ_WEIGHTED_SHARE = Gauge(
    "kueue_cluster_queue_weighted_share",
    "The largest ratio, over the resources the ClusterQueue provides, of usage above nominal "
    "quota to the lendable resources of its cohort, divided by its weight; 0 within nominal "
    "quota, NaN with weight 0 while borrowing (fair sharing only).",
    ["cluster_queue", "cohort", _ROLE],
)
KUEUE_COHORT_WEIGHTED_SHARE = Gauge(
    "kueue_cohort_weighted_share",
    "The same ratio for a cohort, over the lendable resources of its parent, divided by its "
    "weight; +Inf with weight 0 while borrowing (fair sharing only).",
    ["cohort", _ROLE],
)
KUEUE_COHORT_QUOTA = Gauge(
    "kueue_cohort_subtree_quota",
    "A cohort's nominal quota summed over its subtree, per flavor and resource.",
    _COHORT_RESOURCE,
)
KUEUE_COHORT_RESERVATIONS = Gauge(
    "kueue_cohort_subtree_resource_reservations",
    "A cohort's resource reservations summed over its subtree, per flavor and resource.",
    _COHORT_RESOURCE,
)
KUEUE_COHORT_ADMITTED = Counter(
    "kueue_cohort_subtree_admitted_workloads_total",
    "Admitted workloads, per cohort's subtree.",
    ["cohort", "priority_class", _ROLE],
)
KUEUE_COHORT_ADMITTED_ACTIVE = Gauge(
    "kueue_cohort_subtree_admitted_active_workloads",
    "Admitted workloads that are active, per cohort's subtree.",
    ["cohort", _ROLE],
)

# LocalQueue metrics: registered only while the LocalQueueMetrics gate is on (see configure).
KUEUE_LQ_PENDING = Gauge(
    "kueue_local_queue_pending_workloads",
    "Pending workloads per LocalQueue and 'status'. " + _PENDING_STATUS,
    [*_LQ, "status", _ROLE],
    registry=None,
)
KUEUE_LQ_QUOTA_RESERVED = Counter(
    "kueue_local_queue_quota_reserved_workloads_total",
    "Workloads that got a quota reservation, per LocalQueue.",
    [*_LQ, "priority_class", _ROLE],
    registry=None,
)
KUEUE_LQ_QUOTA_RESERVED_WAIT = Histogram(
    "kueue_local_queue_quota_reserved_wait_time_seconds",
    "Time from a workload's creation or last requeue to its quota reservation, per LocalQueue.",
    [*_LQ, "priority_class", _ROLE],
    buckets=kueue_buckets(14),
    registry=None,
)
KUEUE_LQ_ADMITTED = Counter(
    "kueue_local_queue_admitted_workloads_total",
    "Admitted workloads, per LocalQueue.",
    [*_LQ, "priority_class", _ROLE],
    registry=None,
)
KUEUE_LQ_ADMISSION_WAIT = Histogram(
    "kueue_local_queue_admission_wait_time_seconds",
    "Time from a workload's creation or last requeue to its admission, per LocalQueue.",
    [*_LQ, "priority_class", _ROLE],
    buckets=kueue_buckets(14),
    registry=None,
)
KUEUE_LQ_EVICTED = Counter(
    "kueue_local_queue_evicted_workloads_total",
    "Evicted workloads, per LocalQueue. " + _EVICTION_REASONS,
    [*_LQ, "reason", "underlying_cause", "priority_class", _ROLE],
    registry=None,
)
KUEUE_LQ_RESERVING_ACTIVE = Gauge(
    "kueue_local_queue_reserving_active_workloads",
    "Workloads reserving quota, per LocalQueue.",
    [*_LQ, _ROLE],
    registry=None,
)
KUEUE_LQ_ADMITTED_ACTIVE = Gauge(
    "kueue_local_queue_admitted_active_workloads",
    "Admitted workloads that are active, per LocalQueue.",
    [*_LQ, _ROLE],
    registry=None,
)
KUEUE_LQ_STATUS = Gauge(
    "kueue_local_queue_status",
    "1 for the value of the LocalQueue's Active condition ('active': True, False or Unknown), "
    "else 0.",
    [*_LQ, "active", _ROLE],
    registry=None,
)
KUEUE_LQ_RESERVATION = Gauge(
    "kueue_local_queue_resource_reservation",
    "A LocalQueue's resources reserved, per flavor and resource.",
    _LQ_RESOURCE,
    registry=None,
)
KUEUE_LQ_USAGE = Gauge(
    "kueue_local_queue_resource_usage",
    "A LocalQueue's resources used by admitted workloads, per flavor and resource.",
    _LQ_RESOURCE,
    registry=None,
)
_LOCAL_QUEUE_METRICS: tuple[MetricWrapperBase, ...] = (
    KUEUE_LQ_PENDING,
    KUEUE_LQ_QUOTA_RESERVED,
    KUEUE_LQ_QUOTA_RESERVED_WAIT,
    KUEUE_LQ_ADMITTED,
    KUEUE_LQ_ADMISSION_WAIT,
    KUEUE_LQ_EVICTED,
    KUEUE_LQ_RESERVING_ACTIVE,
    KUEUE_LQ_ADMITTED_ACTIVE,
    KUEUE_LQ_STATUS,
    KUEUE_LQ_RESERVATION,
    KUEUE_LQ_USAGE,
)
for _metric in _LOCAL_QUEUE_METRICS:  # the gate's default is on; see configure
    REGISTRY.register(_metric)

# What to clear when a queue or cohort is gone (Kueue's Clear*Metrics): each metric and the
# label naming it. Kueue's gauges are not here: reported in rounds, they go with the round.
_CLEARED: dict[str, tuple[tuple[MetricWrapperBase, str], ...]] = {
    "cluster_queue": (
        *(
            (m, "cluster_queue")
            for m in (
                PENDING,
                ADMITTED,
                KUEUE_QUOTA_RESERVED,
                KUEUE_QUOTA_RESERVED_WAIT,
                KUEUE_ADMITTED,
                KUEUE_ADMISSION_WAIT,
                KUEUE_EVICTED,
                KUEUE_EVICTED_ONCE,
            )
        ),
        (KUEUE_PREEMPTED, "preempting_cluster_queue"),
    ),
    "local_queue": tuple(
        (m, "name")
        for m in (
            KUEUE_LQ_QUOTA_RESERVED,
            KUEUE_LQ_QUOTA_RESERVED_WAIT,
            KUEUE_LQ_ADMITTED,
            KUEUE_LQ_ADMISSION_WAIT,
            KUEUE_LQ_EVICTED,
        )
    ),
    "cohort": ((KUEUE_COHORT_ADMITTED, "cohort"),),
}

# Kueue counts a workload's first eviction for a reason by its status.schedulingStats, which
# our Workloads do not carry: we remember the evictions we made, up to this many.
EVICTIONS_REMEMBERED = 65536


@dataclass
class _Settings:
    role: str = ROLE_STANDALONE
    local_queues: bool = True  # the LocalQueueMetrics gate, on by default as in Kueue v0.17


_settings = _Settings()
_known: dict[str, set] = {"cluster_queue": set(), "local_queue": set(), "cohort": set()}
_evictions: OrderedDict[tuple[str, str, str], None] = OrderedDict()


def configure(*, replica_role: str, local_queue_metrics: bool) -> None:
    """Once this process knows its role (leader, or standalone without leader election) and
    its gates; the LocalQueue metrics are exposed only with the gate on."""
    _settings.role = replica_role
    if local_queue_metrics != _settings.local_queues:
        for metric in _LOCAL_QUEUE_METRICS:
            (REGISTRY.register if local_queue_metrics else REGISTRY.unregister)(metric)
    _settings.local_queues = local_queue_metrics


def kueue_value(resource: str, milli: int) -> int:
    """Kueue's own integer for a quantity: milli-cores for cpu, whole units (rounded up, as
    Quantity.Value) for everything else."""
    return milli if resource == "cpu" else -(-milli // 1000)


def kueue_float(resource: str, milli: int) -> float:
    """Kueue's float for a quantity (resourceFloat): cores for cpu, bytes for memory, whole
    units for the rest."""
    value = kueue_value(resource, milli)
    return value / 1000 if resource == "cpu" else float(value)


# ---- events ------------------------------------------------------------------------------------


def admission_cycle(admitted_any: bool, seconds: float) -> None:
    result = RESULT_SUCCESS if admitted_any else RESULT_INADMISSIBLE
    KUEUE_ADMISSION_ATTEMPTS.labels(result, _settings.role).inc()
    KUEUE_ADMISSION_ATTEMPT_DURATION.labels(result, _settings.role).observe(seconds)


def workload_admitted(
    cluster_queue: str,
    local_queue: tuple[str, str],
    priority_class: str,
    cohorts: Iterable[str],
    waited: float,
) -> None:
    """Quota reserved and admitted in one step (no admission checks): both of Kueue's counts,
    for the ClusterQueue, its LocalQueue and each cohort above it. `local_queue` is
    (namespace, name); `waited` in seconds since the workload was queued."""
    labels = (cluster_queue, priority_class, _settings.role)
    for counter, wait in (
        (KUEUE_QUOTA_RESERVED, KUEUE_QUOTA_RESERVED_WAIT),
        (KUEUE_ADMITTED, KUEUE_ADMISSION_WAIT),
    ):
        counter.labels(*labels).inc()
        wait.labels(*labels).observe(waited)
    _known["cluster_queue"].add(cluster_queue)
    for cohort in cohorts:
        KUEUE_COHORT_ADMITTED.labels(cohort, priority_class, _settings.role).inc()
        _known["cohort"].add(cohort)
    if _settings.local_queues:
        namespace, name = local_queue
        lq_labels = (name, namespace, priority_class, _settings.role)
        for counter, wait in (
            (KUEUE_LQ_QUOTA_RESERVED, KUEUE_LQ_QUOTA_RESERVED_WAIT),
            (KUEUE_LQ_ADMITTED, KUEUE_LQ_ADMISSION_WAIT),
        ):
            counter.labels(*lq_labels).inc()
            wait.labels(*lq_labels).observe(waited)
        _known["local_queue"].add(local_queue)


def workload_evicted(
    cluster_queue: str, local_queue: tuple[str, str], priority_class: str, uid: str, reason: str
) -> None:
    """An eviction written (reason Preempted or NodeFailures; no underlying cause)."""
    role = _settings.role
    KUEUE_EVICTED.labels(cluster_queue, reason, NO_CAUSE, priority_class, role).inc()
    if _first_eviction(uid, reason):
        KUEUE_EVICTED_ONCE.labels(cluster_queue, reason, NO_CAUSE, priority_class, role).inc()
    _known["cluster_queue"].add(cluster_queue)
    if _settings.local_queues:
        namespace, name = local_queue
        KUEUE_LQ_EVICTED.labels(name, namespace, reason, NO_CAUSE, priority_class, role).inc()
        _known["local_queue"].add(local_queue)


def _first_eviction(uid: str, reason: str) -> bool:
    key = (uid, reason, NO_CAUSE)
    if key in _evictions:
        _evictions.move_to_end(key)
        return False
    _evictions[key] = None
    if len(_evictions) > EVICTIONS_REMEMBERED:
        _evictions.popitem(last=False)
    return True


def workload_preempted(preempting_cluster_queue: str, reason: str) -> None:
    """A victim evicted for a preemptor of this ClusterQueue (reason InClusterQueue, ...)."""
    KUEUE_PREEMPTED.labels(preempting_cluster_queue, reason, _settings.role).inc()
    _known["cluster_queue"].add(preempting_cluster_queue)


# ---- gauges, reported in rounds ----------------------------------------------------------------

_round: dict[Gauge, set[tuple[str, ...]]] = defaultdict(set)  # series set in this round
_last_round: dict[Gauge, set[tuple[str, ...]]] = {}
_values: dict[tuple[Gauge, tuple[str, ...]], float] = {}  # as last set: most stay the same


def _set(gauge: Gauge, labels: tuple[str, ...], value: float) -> None:
    labels = (*labels, _settings.role)
    if _values.get((gauge, labels)) != value:
        gauge.labels(*labels).set(value)
        _values[(gauge, labels)] = value
    _round[gauge].add(labels)


def report_cluster_queue(
    name: str, *, active: bool, pending: tuple[int, int], reserving: int, admitted: int
) -> None:
    """A ClusterQueue's state: `pending` is (active, inadmissible)."""
    _known["cluster_queue"].add(name)
    status = CQ_ACTIVE if active else CQ_PENDING
    for value in (CQ_PENDING, CQ_ACTIVE, CQ_TERMINATING):
        _set(KUEUE_CQ_STATUS, (name, value), 1 if value == status else 0)
    _set(KUEUE_PENDING, (name, PENDING_ACTIVE), pending[0])
    _set(KUEUE_PENDING, (name, PENDING_INADMISSIBLE), pending[1])
    _set(KUEUE_RESERVING_ACTIVE, (name,), reserving)
    _set(KUEUE_ADMITTED_ACTIVE, (name,), admitted)


@dataclass(frozen=True)
class ResourceQuota:
    """One (flavor, resource) of a ClusterQueue, in milli-units (None: no limit set)."""

    flavor: str
    resource: str
    nominal: int
    borrowing_limit: int | None
    lending_limit: int | None
    reserved: int
    used: int  # by admitted workloads


def report_cluster_queue_resource(
    cohort: str | None, cluster_queue: str, quota: ResourceQuota
) -> None:
    labels = (cohort or "", cluster_queue, quota.flavor, quota.resource)
    values = (
        (KUEUE_CQ_NOMINAL, quota.nominal),
        (KUEUE_CQ_BORROWING_LIMIT, quota.borrowing_limit or 0),
        (KUEUE_CQ_LENDING_LIMIT, quota.lending_limit or 0),
        (KUEUE_CQ_RESERVATION, quota.reserved),
        (KUEUE_CQ_USAGE, quota.used),
    )
    for gauge, milli in values:
        _set(gauge, labels, kueue_float(quota.resource, milli))


def report_local_queue(key: tuple[str, str], *, active: bool, pending: tuple[int, int]) -> None:
    """A LocalQueue's Active condition and pending workloads; `key` is (namespace, name)."""
    if not _settings.local_queues:
        return
    _known["local_queue"].add(key)
    namespace, name = key
    for value in ("True", "False", "Unknown"):
        _set(KUEUE_LQ_STATUS, (name, namespace, value), 1 if value == str(active) else 0)
    _set(KUEUE_LQ_PENDING, (name, namespace, PENDING_ACTIVE), pending[0])
    _set(KUEUE_LQ_PENDING, (name, namespace, PENDING_INADMISSIBLE), pending[1])


def report_local_queue_holding(key: tuple[str, str], *, reserving: int, admitted: int) -> None:
    if _settings.local_queues:
        namespace, name = key
        _set(KUEUE_LQ_RESERVING_ACTIVE, (name, namespace), reserving)
        _set(KUEUE_LQ_ADMITTED_ACTIVE, (name, namespace), admitted)


def report_local_queue_resource(
    key: tuple[str, str], flavor: str, resource: str, *, reserved: int, used: int
) -> None:
    if _settings.local_queues:
        namespace, name = key
        labels = (name, namespace, flavor, resource)
        _set(KUEUE_LQ_RESERVATION, labels, kueue_float(resource, reserved))
        _set(KUEUE_LQ_USAGE, labels, kueue_float(resource, used))


def report_cluster_queue_weighted_share(name: str, cohort: str | None, share: float) -> None:
    """Kueue reports NaN for a ClusterQueue's infinite share (weight 0 while borrowing)."""
    _set(KUEUE_CQ_WEIGHTED_SHARE, (name, cohort or ""), math.nan if math.isinf(share) else share)


def report_cohort_weighted_share(name: str, share: float) -> None:
    _set(KUEUE_COHORT_WEIGHTED_SHARE, (name,), share)


def report_cohort(name: str, *, admitted: int) -> None:
    _known["cohort"].add(name)
    _set(KUEUE_COHORT_ADMITTED_ACTIVE, (name,), admitted)


def report_cohort_resource(
    name: str, flavor: str, resource: str, *, quota: int, reserved: int
) -> None:
    """Kueue reports these as its own integers (cpu in milli-cores), and none at 0."""
    for gauge, milli in ((KUEUE_COHORT_QUOTA, quota), (KUEUE_COHORT_RESERVATIONS, reserved)):
        value = kueue_value(resource, milli)
        if value > 0:
            _set(gauge, (name, flavor, resource), value)


def end_round(
    cluster_queues: Iterable[str],
    local_queues: Iterable[tuple[str, str]],
    cohorts: Iterable[str],
) -> None:
    """The round's gauges are all set: remove what was not set again, and every series of the
    queues and cohorts not in these (they are gone)."""
    global _last_round, _round
    for gauge, before in _last_round.items():
        for labels in before - _round.get(gauge, set()):
            gauge.remove(*labels)
            del _values[(gauge, labels)]
    _last_round, _round = dict(_round), defaultdict(set)
    existing: dict[str, set] = {
        "cluster_queue": set(cluster_queues),
        "local_queue": set(local_queues),
        "cohort": set(cohorts),
    }
    for kind, names in _known.items():
        for gone in names - existing[kind]:
            _clear(kind, gone)
        names &= existing[kind]


def _clear(kind: str, name) -> None:
    for metric, label in _CLEARED[kind]:
        if kind == "local_queue":  # (namespace, name)
            metric.remove_by_labels({"namespace": name[0], label: name[1]})
        else:
            metric.remove_by_labels({label: name})


def serve(port: int) -> None:
    if port:
        start_http_server(port)
