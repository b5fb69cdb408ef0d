"""Job create latency through our webhooks, one at a time and under the live-throughput load,
with p50 and p99 (reported, never asserted).

The setup and the loads are control_loop_bench's (200 kwok nodes, Kueue's example flavor, one
big ClusterQueue): its `webhooks` stage (Jobs created one at a time, with and without our
webhooks: `job_create_ms_median_with_webhooks`), then its `live` stage's load (N two-pod Jobs
created 32 at a time, each through our two webhooks, while the operator admits them), whose
every create latency is kept here. Under that load it also reports the reviews' own latency
per webhook, p50 and p99 interpolated within the buckets as Prometheus' histogram_quantile
does: as the API server records it (`apiserver_admission_webhook_admission_duration_seconds`,
there and back; every operator has it, but its buckets are coarse: 5, 25, 100, 500 ms), and as
the operator records it (`controller_runtime_webhook_latency_seconds`, per webhook path, the
histogram controller-runtime keeps for Kueue's webhooks; an operator before it has none).
The result records the commit of the operator measured and the machine's load. Run it on a
checkout before and after a change; the operator is the `tas` found with PYTHONPATH, so one
checkout's bench can run either operator:

    TAS_CLUSTER_DIR=... TAS_API_PORT=... TAS_ETCD_PORT=... PYTHONPATH=operator \\
        .venv/bin/python bench/webhook_latency_bench.py --jobs 500 --output /tmp/after.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.control_loop_bench import (  # noqa: E402
    create,
    drop_namespace,
    namespace,
    small_job,
    wait_admissions,
    webhook_latency,
)
from bench.conversion_bench import histogram_quantile  # noqa: E402
from bench.operator_bench import BIG_QUEUE, add_nodes  # noqa: E402
from e2e import chart, topology  # noqa: E402
from e2e.harness import cluster_from_env  # noqa: E402
from e2e.operator_process import OperatorProcess  # noqa: E402

BUCKET = re.compile(r"^controller_runtime_webhook_latency_seconds_bucket\{([^}]*)\} (\S+)$", re.M)
API_BUCKET = re.compile(
    r"^apiserver_admission_webhook_admission_duration_seconds_bucket\{([^}]*)\} (\S+)$", re.M
)
LABEL = re.compile(r'(\w+)="([^"]*)"')


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def buckets(text: str, pattern: re.Pattern, by: str) -> dict[str, dict[float, float]]:
    """Label `by`'s value -> cumulative count per bucket bound (summed over other labels)."""
    out: dict[str, dict[float, float]] = {}
    for match in pattern.finditer(text):
        labels = dict(LABEL.findall(match.group(1)))
        counts = out.setdefault(labels[by], {})
        bound = float(labels["le"])
        counts[bound] = counts.get(bound, 0.0) + float(match.group(2))
    return out


def review_buckets(cluster, op: OperatorProcess) -> dict[str, dict[str, dict[float, float]]]:
    """Both sides' histograms of our reviews: the operator's, and the API server's (which
    includes the way there and back; its buckets are coarse: 5, 25, 100, 500 ms...)."""
    url = f"http://127.0.0.1:{op.metrics_port}/metrics"
    ours = urllib.request.urlopen(url, timeout=10).read().decode()
    return {"operator": buckets(ours, BUCKET, "webhook"), "api_server": api_server_reviews(cluster)}


def api_server_reviews(cluster) -> dict[str, dict[float, float]]:
    """The API server's histogram of the time each admission webhook took it (there and
    back), per webhook name: any controller's webhooks are timed the same way."""
    return buckets(cluster.kubectl("get", "--raw", "/metrics").stdout, API_BUCKET, "name")


def review_latency(before: dict, after: dict) -> dict:
    """Per webhook path: the reviews answered between the two scrapes, p50 and p99 in ms."""
    out = {}
    for path, buckets in after.items():
        delta = {b: n - before.get(path, {}).get(b, 0.0) for b, n in buckets.items()}
        if delta.get(float("inf")):
            p50, p99 = histogram_quantile(delta, 0.5), histogram_quantile(delta, 0.99)
            out[path] = {
                "reviews": delta[float("inf")],
                "ms_p50": 1000 * p50 if p50 is not None else None,
                "ms_p99": 1000 * p99 if p99 is not None else None,
            }
    return out


def under_load(cluster, op: OperatorProcess, count: int) -> dict:
    ns = namespace(cluster)
    reviews_before = review_buckets(cluster, op)
    start = time.time()
    latencies = create(cluster, ns, [small_job(f"s{i}") for i in range(count)])
    done = wait_admissions(op, ns, count)
    reviews_after = review_buckets(cluster, op)
    reviews = {
        side: review_latency(reviews_before[side], reviews_after[side]) for side in reviews_after
    }
    drop_namespace(cluster, ns)
    ms = [1000 * x for x in latencies]
    return {
        "jobs": count,
        "creates_answered": len(ms),
        "job_create_ms_p50": percentile(ms, 0.5),
        "job_create_ms_p99": percentile(ms, 0.99),
        "job_create_ms_max": max(ms),
        "admitted_per_s": count / (max(done) - start),
        "review_latency_by_webhook": reviews,
    }


def measured_commit() -> str:
    """The commit of the checkout whose operator runs (the `tas` on PYTHONPATH)."""
    import tas

    where = Path(tas.__file__).resolve().parent
    out = subprocess.run(
        ["git", "-C", str(where), "describe", "--always", "--dirty"], capture_output=True, text=True
    )
    return out.stdout.strip() or "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=500, help="Jobs of the live load")
    parser.add_argument("--output", default="/tmp/webhook_latency.json")
    args = parser.parse_args()
    os.environ.setdefault("TAS_NODE_LEASE_SECONDS", "40")
    os.environ.setdefault("TAS_NODE_GRACE_SECONDS", "120")
    cluster = cluster_from_env()
    chart.install(cluster)
    for name in ("topology.yaml", "resource-flavor.yaml"):
        cluster.kubectl("apply", "-f", str(ROOT / "examples" / "kueue-tas" / name))
    add_nodes(cluster, topology.Shape(blocks=5, racks=5, hosts=8))  # 200 nodes
    op = OperatorProcess(cluster)
    op.start()
    cluster.apply(BIG_QUEUE)  # a v1beta1 ClusterQueue: stored through the operator's conversion
    results: dict = {
        "commit": measured_commit(),
        "machine": {"cpus": os.cpu_count(), "load_at_start": os.getloadavg()},
    }
    try:
        reviews_before = review_buckets(cluster, op)
        results["one_at_a_time"] = webhook_latency(cluster, op)
        reviews_after = review_buckets(cluster, op)
        results["one_at_a_time"]["review_latency_by_webhook"] = {
            side: review_latency(reviews_before[side], reviews_after[side])
            for side in reviews_after
        }
        print("one at a time:", results["one_at_a_time"], flush=True)
        results["live"] = under_load(cluster, op, args.jobs)
        print("under the live load:", results["live"], flush=True)
    finally:
        op.stop()
        results["machine"]["load_at_end"] = os.getloadavg()
        Path(args.output).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
