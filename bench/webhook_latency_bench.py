"""Job create latency through our webhooks, one at a time and under the live-throughput load,
with p50 and p99 (reported, never asserted).

The setup and the loads are control_loop_bench's (200 kwok nodes, Kueue's example flavor, one
big ClusterQueue): its `webhooks` stage (Jobs created one at a time, with and without our
webhooks: `job_create_ms_median_with_webhooks`), then its `live` stage's load (N two-pod Jobs
created 32 at a time, each through our two webhooks, while the operator admits them), whose
every create latency is kept here. Run it on a checkout before and after a change; the
operator is the `tas` found with PYTHONPATH, so one checkout's bench can run either operator:

    TAS_CLUSTER_DIR=... TAS_API_PORT=... TAS_ETCD_PORT=... PYTHONPATH=operator \\
        .venv/bin/python bench/webhook_latency_bench.py --jobs 500 --output /tmp/after.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
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
from bench.operator_bench import BIG_QUEUE, add_nodes  # noqa: E402
from e2e import chart, topology  # noqa: E402
from e2e.harness import cluster_from_env  # noqa: E402
from e2e.operator_process import OperatorProcess  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def under_load(cluster, op: OperatorProcess, count: int) -> dict:
    ns = namespace(cluster)
    start = time.time()
    latencies = create(cluster, ns, [small_job(f"s{i}") for i in range(count)])
    done = wait_admissions(op, ns, count)
    drop_namespace(cluster, ns)
    ms = [1000 * x for x in latencies]
    return {
        "jobs": count,
        "creates_answered": len(ms),
        "job_create_ms_p50": percentile(ms, 0.5),
        "job_create_ms_p99": percentile(ms, 0.99),
        "job_create_ms_max": max(ms),
        "admitted_per_s": count / (max(done) - start),
    }


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
    results: dict = {"machine": {"cpus": os.cpu_count(), "load_at_start": os.getloadavg()}}
    try:
        results["one_at_a_time"] = webhook_latency(cluster, op)
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
