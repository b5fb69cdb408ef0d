"""The benchmarks' pure parts around Kueue's v1beta2: what they write (v1beta2 objects, the
conversion bench's admitted Workloads), how they read assignments in either version, and how
the conversion bench reads the API server's webhook histogram."""

from __future__ import annotations

import random

import pytest
from bench import conversion_bench, kueue_api, observer
from e2e import jobs, topology
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.api.conversion import V1BETA1, V1BETA2, convert
from tas.api.models import ClusterQueue, LocalQueue, Workload
from tas.api.topologyassignment import to_v1beta2


def test_benchmark_queues_are_written_in_v1beta2_and_validate():
    lq = kueue_api.local_queue("q", "bench")
    cq = kueue_api.cluster_queue("bench", {"cpu": 100})
    assert lq["apiVersion"] == cq["apiVersion"] == V1BETA2
    LocalQueue.model_validate(lq)
    ClusterQueue.model_validate(cq)
    old = {**jobs.cluster_queue("c", {"cpu": 1}), "spec": {"cohort": "team"}}
    assert kueue_api.v1beta2(old)["spec"] == {"cohortName": "team"}  # v1beta2's spelling


def test_the_shared_big_queue_is_v1beta2():
    from bench.operator_bench import BIG_QUEUE

    assert BIG_QUEUE["apiVersion"] == V1BETA2
    ClusterQueue.model_validate(BIG_QUEUE)


def test_workload_paths_name_the_version():
    assert kueue_api.workloads_path("ns") == "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads"
    assert kueue_api.workloads_path("ns", V1BETA1).startswith("/apis/kueue.x-k8s.io/v1beta1/")
    assert kueue_api.workloads_path("ns", "v1beta1") == kueue_api.workloads_path("ns", V1BETA1)


V1BETA1_TA = {
    "levels": [topology.HOSTNAME_LABEL],
    "domains": [
        {"values": ["b1-r1-h1"], "count": 8},
        {"values": ["b1-r1-h3"], "count": 8},
        {"values": ["b1-r2-h10"], "count": 3},
    ],
}


@pytest.mark.parametrize("hostname_prefix", [True, False], ids=["prefix-runs", "one-slice"])
def test_an_assignment_read_in_v1beta2_decodes_to_the_v1beta1_domains(hostname_prefix):
    stored = convert(
        {
            "apiVersion": V1BETA1,
            "kind": "Workload",
            "status": {"admission": {"podSetAssignments": [{"topologyAssignment": V1BETA1_TA}]}},
        },
        V1BETA2,
    )["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
    assert "slices" in stored and "domains" not in stored
    assert kueue_api.as_v1beta1(stored) == V1BETA1_TA
    assert kueue_api.domains(V1BETA1_TA) == V1BETA1_TA["domains"]  # v1beta1 passes through
    assert kueue_api.domains(None) == [] and kueue_api.as_v1beta1(None) is None


def test_the_observer_keeps_assignments_decoded_and_as_stored():
    from tas.api.topologyassignment import v1beta1_to_v1beta2

    stored = v1beta1_to_v1beta2(V1BETA1_TA)
    wl = {"status": {"admission": {"podSetAssignments": [{"topologyAssignment": stored}, {}]}}}
    assert observer.assignment(wl) == [V1BETA1_TA, None]
    assert observer.stored_assignment(wl) == [stored, None]
    assert observer.assignment({"status": {}}) is None


# ---- the conversion bench's Workloads ----------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(st.integers(min_value=0, max_value=10**6))
def test_bench_assignments_are_8_to_16_real_hosts_of_one_rack(seed):
    shape = conversion_bench.SHAPE
    nodes = {n["metadata"]["name"]: n["metadata"]["labels"] for n in topology.nodes(shape)}
    ta = conversion_bench.host_assignment(random.Random(seed), shape)
    hosts = [d.values[0] for d in ta.domains]
    assert 8 <= len(hosts) <= 16 and len(set(hosts)) == len(hosts)
    assert all(h in nodes for h in hosts)  # hot swap finds every node
    assert len({nodes[h][topology.RACK_LABEL] for h in hosts}) == 1
    assert all(1 <= d.count <= conversion_bench.PODS_PER_HOST for d in ta.domains)


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=0, max_value=10**6))
def test_bench_workloads_validate_and_read_back_in_v1beta1_with_their_hosts(seed):
    ta = conversion_bench.host_assignment(random.Random(seed), conversion_bench.SHAPE)
    pods = sum(d.count for d in ta.domains)
    wl = conversion_bench.workload("w", pods)
    wl["status"] = conversion_bench.admitted_status(ta, "2026-11-27T00:00:00Z")
    Workload.model_validate(wl)
    (psa,) = wl["status"]["admission"]["podSetAssignments"]
    assert psa["count"] == wl["spec"]["podSets"][0]["count"] == pods
    old = convert(wl, V1BETA1)["status"]["admission"]["podSetAssignments"][0]
    got = [(d["values"][0], d["count"]) for d in old["topologyAssignment"]["domains"]]
    assert got == [(d.values[0], d.count) for d in ta.domains]


def test_bench_workloads_use_the_compact_encoding_the_operator_writes():
    ta = conversion_bench.host_assignment(random.Random(3), conversion_bench.SHAPE)
    status = conversion_bench.admitted_status(ta, "2026-11-27T00:00:00Z")
    stored = status["admission"]["podSetAssignments"][0]["topologyAssignment"]
    assert stored == to_v1beta2(ta)  # the gate's default: hostname-prefix runs
    assert len(stored["slices"]) == 1  # one rack's hosts share their prefix


# ---- percentiles and the API server's histogram ------------------------------------------------


def test_nearest_rank_percentiles():
    values = [float(v) for v in range(100, 0, -1)]
    assert conversion_bench.nearest_rank(values, 0.5) == 50
    assert conversion_bench.nearest_rank(values, 0.99) == 99
    assert conversion_bench.nearest_rank([7.0], 0.99) == 7
    three_hundred = [float(v) for v in range(1, 301)]
    assert conversion_bench.nearest_rank(three_hundred, 0.99) == 297


# Kubernetes 1.36's two histograms, as /metrics shows them: per CRD and versions, and one that
# names neither and also counts the no-op conversions (the bench reads the first).
METRICS = """\
# TYPE apiserver_crd_conversion_webhook_duration_seconds histogram
apiserver_crd_conversion_webhook_duration_seconds_bucket{crd_name="workloads.kueue.x-k8s.io",from_version="v1beta2",succeeded="true",to_version="v1beta1",le="0.004"} {a}
apiserver_crd_conversion_webhook_duration_seconds_bucket{crd_name="workloads.kueue.x-k8s.io",from_version="v1beta2",succeeded="true",to_version="v1beta1",le="0.008"} {b}
apiserver_crd_conversion_webhook_duration_seconds_bucket{crd_name="workloads.kueue.x-k8s.io",from_version="v1beta2",succeeded="true",to_version="v1beta1",le="+Inf"} {b}
apiserver_crd_conversion_webhook_duration_seconds_sum{crd_name="workloads.kueue.x-k8s.io",from_version="v1beta2",succeeded="true",to_version="v1beta1"} {s}
apiserver_crd_conversion_webhook_duration_seconds_count{crd_name="workloads.kueue.x-k8s.io",from_version="v1beta2",succeeded="true",to_version="v1beta1"} {b}
apiserver_crd_conversion_webhook_duration_seconds_bucket{crd_name="workloads.kueue.x-k8s.io",from_version="v1beta2",succeeded="false",to_version="v1beta1",le="+Inf"} {f}
apiserver_crd_conversion_webhook_duration_seconds_sum{crd_name="workloads.kueue.x-k8s.io",from_version="v1beta2",succeeded="false",to_version="v1beta1"} 9
apiserver_crd_conversion_webhook_duration_seconds_count{crd_name="workloads.kueue.x-k8s.io",from_version="v1beta2",succeeded="false",to_version="v1beta1"} {f}
# TYPE apiserver_conversion_webhook_duration_seconds histogram
apiserver_conversion_webhook_duration_seconds_bucket{failure_type="",result="success",le="0.005"} 900
apiserver_conversion_webhook_duration_seconds_bucket{failure_type="",result="success",le="+Inf"} {g}
apiserver_conversion_webhook_duration_seconds_sum{failure_type="",result="success"} 3
apiserver_conversion_webhook_duration_seconds_count{failure_type="",result="success"} {g}
"""


def metrics(a: int, b: int, s: float, failed: int = 50, generic: int = 900) -> dict:
    text = METRICS.replace("{a}", str(a)).replace("{b}", str(b)).replace("{s}", str(s))
    return conversion_bench.conversion_histograms(
        text.replace("{f}", str(failed)).replace("{g}", str(generic))
    )


def test_the_webhook_time_is_the_successful_calls_delta_over_the_interval():
    before, after = metrics(10, 10, 0.03), metrics(10, 30, 0.15, failed=90, generic=2000)
    assert len(after) == 3
    hook = conversion_bench.webhook_time(before, after, "v1beta1")
    # 20 calls, all between 4 and 8 ms: the failed calls, the generic histogram's no-op
    # conversions and the earlier calls left out.
    assert hook["calls"] == 20
    assert hook["mean_ms"] == pytest.approx(6.0)
    assert 4 < hook["p50_ms"] < hook["p99_ms"] <= 8
    assert hook["metric"] == "apiserver_crd_conversion_webhook_duration_seconds"
    assert conversion_bench.webhook_time(after, after, "v1beta1")["calls"] == 0
    assert conversion_bench.webhook_time(before, after, "v1beta2")["calls"] == 0


def test_without_the_per_crd_histogram_the_generic_one_counts():
    generic = "# TYPE apiserver_conversion" + METRICS.split("# TYPE apiserver_conversion")[1]

    def series(calls: int) -> dict:
        return conversion_bench.conversion_histograms(generic.replace("{g}", str(calls)))

    hook = conversion_bench.webhook_time(series(900), series(1000), "v1beta1")
    assert (
        hook["calls"] == 100 and hook["metric"] == "apiserver_conversion_webhook_duration_seconds"
    )


@pytest.mark.parametrize(
    ("labels", "counted"),
    [
        (
            {"crd_name": "workloads.kueue.x-k8s.io", "to_version": "v1beta1", "succeeded": "true"},
            True,
        ),
        (
            {"crd_name": "workloads.kueue.x-k8s.io", "to_version": "v1beta1", "succeeded": "false"},
            False,
        ),
        (
            {"crd_name": "workloads.kueue.x-k8s.io", "to_version": "v1beta2", "succeeded": "true"},
            False,
        ),
        (
            {
                "crd_name": "clusterqueues.kueue.x-k8s.io",
                "to_version": "v1beta1",
                "succeeded": "true",
            },
            False,
        ),
        ({"result": "success", "failure_type": ""}, True),
        ({"result": "failure", "failure_type": "conversion_webhook_call_failure"}, False),
    ],
    ids=[
        "workloads-to-v1beta1",
        "failed",
        "other-version",
        "other-crd",
        "generic",
        "generic-failed",
    ],
)
def test_which_histogram_series_count_as_workloads_converted_to_v1beta1(labels, counted):
    assert conversion_bench.converts_workloads_to(labels, "v1beta1") is counted


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=50), min_size=1, max_size=8),
    st.floats(min_value=0.01, max_value=1.0),
)
def test_histogram_quantile_lies_in_the_bucket_holding_the_rank(counts, q):
    bounds = [0.001 * 2**i for i in range(len(counts))] + [float("inf")]
    cumulative, total = {}, 0
    for bound, n in zip(bounds, [*counts, 0], strict=True):
        total += n
        cumulative[bound] = float(total)
    value = conversion_bench.histogram_quantile(cumulative, q)
    if total == 0:
        assert value is None
        return
    rank = q * total
    holder = next(b for b in bounds if cumulative[b] >= rank)
    lower = max([b for b in bounds if b < holder], default=0.0)
    assert lower <= value <= holder


@pytest.mark.parametrize(
    ("version", "stored"),
    [("0.15.0", V1BETA1), ("0.17.0", V1BETA2)],
    ids=["v0.15-stores-v1beta1", "v0.17-stores-v1beta2"],
)
def test_the_bench_watches_kueues_workloads_in_the_version_its_crd_stores(
    monkeypatch, version, stored
):
    """Read from Kueue's own CRD (its config is fetched from the Go module proxy, no build)."""
    from e2e.harness import Cluster
    from e2e.kueue_process import KueueProcess

    monkeypatch.setenv("TAS_KUEUE_VERSION", version)
    kueue = KueueProcess(Cluster("/nonexistent", None, None), config_only=True)
    try:
        assert kueue.stored_version("workloads") == stored
        assert kueue.stored_version("topologies") == stored
    finally:
        kueue.cleanup()
