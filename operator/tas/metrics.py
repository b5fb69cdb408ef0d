"""Prometheus metrics, served on --metrics-port (names under the `tas_` prefix)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram, start_http_server

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


def serve(port: int) -> None:
    if port:
        start_http_server(port)
