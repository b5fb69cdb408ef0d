"""Hot swap, measured on the local cluster (reported, never asserted).

    .venv/bin/python bench/hotswap_bench.py [--runs N]
    .venv/bin/python bench/hotswap_bench.py --quick      # one run, writes to /tmp

A rack-required Job of 4 pods on a rack of 3 hosts (BestFit fills two, one is spare); one of
its nodes is made NotReady through kwok. Reported per run: seconds from the failure to the
replacement pods Running on the spare, split at the moment the operator wrote the new
assignment, and the operator's API writes in between (counted from its log). Most of the time
is Kubernetes' own: the NotReady taint, then the pods' 20 s toleration before eviction.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import kueue_api  # noqa: E402
from e2e import chart, jobs  # noqa: E402
from e2e.harness import cluster_from_env, wait_for  # noqa: E402
from e2e.operator_process import OperatorProcess  # noqa: E402
from e2e.test_hotswap import NOT_READY, REQUIRED_RACK, install_hotswap_queue, make_rack  # noqa: E402


def one_run(cluster, op: OperatorProcess, run: int) -> dict:
    hosts = make_rack(cluster, f"hsb{run}")
    ns = cluster.create_namespace(f"hsbench{run}")
    cluster.apply(kueue_api.local_queue("q", "hs"), ns)
    cluster.apply(jobs.job("train", "q", pods=4, cpu="2", annotations=REQUIRED_RACK), ns)
    jobs.wait_admitted(cluster, ns, "train")
    before = jobs.placement(jobs.wait_running(cluster, ns, "train", 4, timeout=120))
    failed = sorted(before)[0]
    log_mark = len(op.log())
    t0 = time.monotonic()
    cluster.kubectl("label", "node", failed, f"{NOT_READY}=true")

    def replaced():
        counts = jobs.assignment_counts(jobs.workload_of(cluster, ns, "train"))
        return counts if failed not in counts else None

    counts = wait_for(replaced, timeout=180, interval=0.2, what="replacement")
    t_assigned = time.monotonic() - t0

    def running():
        pods = [
            p
            for p in jobs.pods_of(cluster, ns, "train")
            if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
        ]
        return jobs.placement(pods) == counts

    wait_for(running, timeout=180, interval=0.2, what="replacement pods running")
    t_running = time.monotonic() - t0
    writes = [
        line
        for line in op.log()[log_mark:].splitlines()
        if "api-write" in line and f"/{ns}/" in line
    ]
    cluster.kubectl(
        "delete", "namespace", ns, "--wait=true", "--timeout=180s"
    )  # before its nodes go
    for host in hosts:
        cluster.kubectl("delete", "node", host, "--wait=false")
    return {
        "to_new_assignment_s": t_assigned,
        "to_pods_running_s": t_running,
        "api_writes": len(writes),
        "writes": sorted({" ".join(w.split()[-2:]).split("/")[-1] for w in writes}),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one run; writes to /tmp")
    parser.add_argument("--output", default=str(ROOT / "bench" / "results" / "hotswap.json"))
    args = parser.parse_args()
    if args.quick:
        args.runs = 1
        if args.output.endswith("results/hotswap.json"):
            args.output = "/tmp/hotswap_quick.json"  # a quick run never overwrites results
    os.environ.setdefault("TAS_CLUSTER_DIR", str(ROOT / ".cluster" / "bench"))
    os.environ.setdefault("TAS_API_PORT", "19443")
    os.environ.setdefault("TAS_ETCD_PORT", "15379")
    cluster = cluster_from_env()
    # The chart's own Deployment must not land on the rack: its pod's cpu on the spare host
    # would leave no room for the replacement (the operator runs as a host process).
    chart.install(cluster, "--set-string", "nodeSelector.tas-bench/no-node=true")
    op = OperatorProcess(cluster)
    op.start()
    try:
        # Its ClusterQueue is written in v1beta1, which the operator's webhook converts.
        install_hotswap_queue(cluster, "hs")
        runs = [one_run(cluster, op, i) for i in range(args.runs)]
    finally:
        op.stop()
    result = {
        "runs": runs,
        "median_to_new_assignment_s": statistics.median(r["to_new_assignment_s"] for r in runs),
        "median_to_pods_running_s": statistics.median(r["to_pods_running_s"] for r in runs),
        "median_api_writes": statistics.median(r["api_writes"] for r in runs),
    }
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"| measure (median of {len(runs)}) | value |\n|---|---|")
    print(
        f"| node NotReady -> new assignment written | {result['median_to_new_assignment_s']:.1f} s |"
    )
    print(
        f"| node NotReady -> replacement pods Running | {result['median_to_pods_running_s']:.1f} s |"
    )
    print(
        f"| operator API writes for the workload's namespace | {result['median_api_writes']:.0f} |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
