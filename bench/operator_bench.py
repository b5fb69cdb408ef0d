"""End-to-end numbers for the operator on the local cluster (reported, never asserted).

    .venv/bin/python bench/operator_bench.py [--quick]     # --quick writes to /tmp

1. Job create -> all pods Running, for a 64-pod Job (median of several runs).
2. Admission throughput: 500 small Jobs on 200 kwok nodes, from first create to last admitted.
3. Operator resident memory with 1,000 nodes and 10,000 pods.

Uses the cluster in KUBECONFIG, or starts the local one (its own directory and ports). Writes
bench/results/operator.json (or --output) and prints a table.
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
from e2e import chart, jobs, topology  # noqa: E402
from e2e.harness import Cluster, cluster_from_env, wait_for  # noqa: E402
from e2e.operator_process import OperatorProcess  # noqa: E402

# v1beta2: applied before the operator runs, and a v1beta1 ClusterQueue would need its
# conversion webhook to be stored.
BIG_QUEUE = {
    "apiVersion": kueue_api.V1BETA2,
    "kind": "ClusterQueue",
    "metadata": {"name": "bench"},
    "spec": {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "memory"],
                "flavors": [
                    {
                        "name": "tas-flavor",
                        "resources": [
                            {"name": "cpu", "nominalQuota": "100000"},
                            {"name": "memory", "nominalQuota": "1000Ti"},
                        ],
                    }
                ],
            }
        ],
    },
}


def setup(cluster: Cluster, shape: topology.Shape) -> str:
    chart.install(cluster)
    for name in ("topology.yaml", "resource-flavor.yaml"):
        cluster.kubectl("apply", "-f", str(ROOT / "examples" / "kueue-tas" / name))
    cluster.apply(BIG_QUEUE)
    add_nodes(cluster, shape)
    ns = cluster.create_namespace("bench")
    cluster.apply(kueue_api.local_queue("q", "bench"), ns)
    return ns


def add_nodes(cluster: Cluster, shape: topology.Shape | list[dict]) -> None:
    """Apply the nodes of a shape (or these node manifests) and wait until they are Ready and
    schedulable."""
    items = topology.nodes(shape) if isinstance(shape, topology.Shape) else shape
    for i in range(0, len(items), 200):  # keep each request small
        cluster.apply({"apiVersion": "v1", "kind": "List", "items": items[i : i + 200]})
    want = {n["metadata"]["name"] for n in items}  # these nodes, whatever else the cluster has
    wait_for(
        lambda: (
            sum(
                1
                for n in cluster.get_json("nodes", "-l", "type=kwok")["items"]
                if n["metadata"]["name"] in want
                and not any(
                    t["key"] == "node.kubernetes.io/not-ready" for t in n["spec"].get("taints", [])
                )
            )
            >= len(want)
        ),
        timeout=300,
        interval=1,
        what=f"{len(want)} nodes ready",
    )


def job_to_running(cluster: Cluster, ns: str, name: str, pods: int) -> float:
    start = time.monotonic()
    cluster.apply(
        jobs.job(
            name,
            "q",
            pods=pods,
            cpu="1",
            annotations={jobs.PREFIX + "podset-preferred-topology": topology.RACK_LABEL},
        ),
        ns,
    )
    jobs.wait_running(cluster, ns, name, pods, timeout=300)
    return time.monotonic() - start


def throughput(cluster: Cluster, ns: str, count: int) -> float:
    manifests = [jobs.job(f"s{i}", "q", pods=2, cpu="500m") for i in range(count)]
    start = time.monotonic()
    for i in range(0, count, 50):
        cluster.apply({"apiVersion": "v1", "kind": "List", "items": manifests[i : i + 50]}, ns)

    def all_admitted() -> bool:
        items = cluster.get_json(kueue_api.WORKLOADS, "-n", ns)["items"]
        return (
            sum(1 for w in items if (jobs.condition(w, "Admitted") or {}).get("status") == "True")
            >= count
        )

    wait_for(all_admitted, timeout=900, interval=1, what=f"{count} workloads admitted")
    return count / (time.monotonic() - start)


def fresh_namespace(cluster: Cluster, old: str) -> str:
    """Drop the previous stage's Jobs with their namespace, and wait until their pods are gone."""
    cluster.kubectl("delete", "namespace", old, "--wait=false")
    wait_for(
        lambda: not cluster.get_json("pods", "-n", old)["items"],
        timeout=900,
        interval=2,
        what="the previous stage's pods gone",
    )
    ns = cluster.create_namespace("bench")
    cluster.apply(kueue_api.local_queue("q", "bench"), ns)
    return ns


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def bare_pods(cluster: Cluster, ns: str, count: int, nodes: list[str]) -> None:
    """Pods bound straight to nodes (no scheduler needed), as a busy cluster's other pods."""
    pods = [jobs.bound_pod(f"p{i}", nodes[i % len(nodes)]) for i in range(count)]
    for i in range(0, count, 500):
        cluster.apply({"apiVersion": "v1", "kind": "List", "items": pods[i : i + 500]}, ns)
    wait_for(
        lambda: len(cluster.get_json("pods", "-n", ns)["items"]) >= count,
        timeout=900,
        interval=2,
        what=f"{count} pods",
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes; writes to /tmp")
    parser.add_argument("--output", default=str(ROOT / "bench" / "results" / "operator.json"))
    args = parser.parse_args()
    if args.quick and args.output.endswith("results/operator.json"):
        args.output = "/tmp/operator_quick.json"  # a quick run never overwrites results
    os.environ.setdefault("TAS_CLUSTER_DIR", str(ROOT / ".cluster" / "bench"))
    os.environ.setdefault("TAS_API_PORT", "19443")
    os.environ.setdefault("TAS_ETCD_PORT", "15379")
    cluster = cluster_from_env()
    results: dict = {}

    # 1 and 2: 200 nodes (5 blocks x 5 racks x 8 hosts), 8 cpu each.
    shape = topology.Shape(blocks=2 if args.quick else 5, racks=5, hosts=8)
    ns = setup(cluster, shape)
    op = OperatorProcess(cluster)
    op.start()
    try:
        runs = [job_to_running(cluster, ns, f"big{i}", 64) for i in range(2 if args.quick else 5)]
        results["job64_create_to_running_s"] = {"median": statistics.median(runs), "runs": runs}
        print(
            f"64-pod Job create -> all Running: median {statistics.median(runs):.1f} s of {runs}",
            flush=True,
        )
        ns = fresh_namespace(cluster, ns)
        count = 50 if args.quick else 500
        results["admission_throughput_wl_per_s"] = {
            "jobs": count,
            "nodes": len(topology.nodes(shape)),
            "value": throughput(cluster, ns, count),
        }
        print(f"admission throughput: {results['admission_throughput_wl_per_s']}", flush=True)
        ns = fresh_namespace(cluster, ns)

        # 3: memory at 1,000 nodes and 10,000 pods.
        big = (
            topology.Shape(blocks=5, racks=5, hosts=40)
            if not args.quick
            else topology.Shape(blocks=2, racks=5, hosts=10)
        )
        add_nodes(cluster, big)
        names = [n["metadata"]["name"] for n in topology.nodes(big)]
        pods = 1000 if args.quick else 10000
        bare_pods(cluster, ns, pods, names)
        time.sleep(10)  # let the watches drain before reading memory; a measurement, not a test
        op.stop()
        results["restart_sync_s"] = {
            "nodes": len(names),
            "pods": pods,
            "value": op.start(sync_timeout=900),
        }
        print(f"restart: caches synced in {results['restart_sync_s']['value']:.1f} s", flush=True)
        results["operator_rss_mb"] = {
            "nodes": len(names),
            "pods": pods,
            "value": rss_mb(op.proc.pid),
        }
    finally:
        op.stop()
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print("| measure | value |\n|---|---|")
    print(
        f"| 64-pod Job create -> all Running (median) | {results['job64_create_to_running_s']['median']:.1f} s |"
    )
    t = results["admission_throughput_wl_per_s"]
    print(
        f"| admission throughput, {t['jobs']} Jobs on {t['nodes']} nodes | {t['value']:.1f} workloads/s |"
    )
    r = results["restart_sync_s"]
    print(
        f"| operator restart until caches synced, {r['nodes']} nodes + {r['pods']} pods | {r['value']:.1f} s |"
    )
    m = results["operator_rss_mb"]
    print(f"| operator RSS, {m['nodes']} nodes + {m['pods']} pods | {m['value']:.0f} MiB |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
