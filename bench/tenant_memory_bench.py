"""The live operator's resident memory (RSS) per hostile tenant object, on a local cluster (a
measure, not a test; `bench/tenant_memory.py` is the same question for one controller's sync,
in this process).

    TAS_CLUSTER_DIR=... TAS_API_PORT=... TAS_ETCD_PORT=... PYTHONPATH=operator \\
        .venv/bin/python bench/tenant_memory_bench.py --pod-groups 200 --huge-lws 50 \\
        --lws-at-bound 1 --output /tmp/tenant_memory.json

(bench/results/tenant_memory.json gathers two such runs.)

The operator runs as a host process on 200 kwok nodes with the LeaderWorkerSet CRD installed.
Each stage adds objects in a namespace of its own and reads the operator's VmRSS (median of
three reads a second apart) once it has handled them, live and then in a fresh process started
with every object so far present (what each replica pays at every start):

- `pod_groups`: N pods, each its own fast-admission group whose pod-group-total-count is
  999,999,999 (under int32, so the webhook lets them in): one Workload each (handled once they
  all exist), never admitted.
- `huge_lws`: N LeaderWorkerSets of 2,147,483,647 replicas, made while no operator serves the
  webhooks (which refuse them): the operator refuses each with an event and makes nothing.
- `lws_at_bound`: N LeaderWorkerSets of the most replicas the webhook allows (1,000 groups of
  2 pods): 1,000 Workloads each, admitted (no LeaderWorkerSet controller runs, so no pods).

The baseline is two fresh starts with none of them (their difference is the noise). Growth per
object = (fresh start after the stage - fresh start before it) / N.
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
from bench.operator_bench import BIG_QUEUE, add_nodes  # noqa: E402
from e2e import chart, integrations, topology  # noqa: E402
from e2e.harness import Cluster, cluster_from_env, wait_for  # noqa: E402
from e2e.operator_process import OperatorProcess  # noqa: E402

PREFIX = "kueue.x-k8s.io/"
INT32_MAX = 2**31 - 1
HUGE_GROUP = 999_999_999
LWS_BOUND = 1000  # the webhook's default bound on a LeaderWorkerSet's replicas
SETTLE_SECONDS = 5.0
CONTAINER = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "10m"}}}


def rss_mib(op: OperatorProcess) -> float:
    """Median of three VmRSS reads a second apart, after a settling pause."""
    time.sleep(SETTLE_SECONDS)
    reads = []
    for _ in range(3):
        status = Path(f"/proc/{op.proc.pid}/status").read_text()
        kib = next(int(line.split()[1]) for line in status.splitlines() if line[:6] == "VmRSS:")
        reads.append(kib / 1024)
        time.sleep(1)
    return round(statistics.median(reads), 1)


def group_pod(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {PREFIX + "queue-name": "q", PREFIX + "pod-group-name": name},
            "annotations": {
                PREFIX + "pod-group-total-count": str(HUGE_GROUP),
                PREFIX + "pod-group-fast-admission": "true",
            },
        },
        "spec": {"containers": [CONTAINER]},
    }


def leaderworkerset(name: str, replicas: int) -> dict:
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name, "labels": {PREFIX + "queue-name": "q"}},
        "spec": {
            "replicas": replicas,
            "leaderWorkerTemplate": {
                "size": 2,
                "workerTemplate": {"spec": {"containers": [CONTAINER]}},
            },
        },
    }


def tenant(cluster: Cluster, prefix: str) -> str:
    ns = cluster.create_namespace(prefix)
    cluster.apply(kueue_api.local_queue("q", "bench"), ns)
    return ns


def apply_all(cluster: Cluster, ns: str, items: list[dict]) -> None:
    for i in range(0, len(items), 100):  # keep each request small
        cluster.apply({"apiVersion": "v1", "kind": "List", "items": items[i : i + 100]}, ns)


def workloads(cluster: Cluster, ns: str, reserved: bool) -> int:
    """Workloads of `ns` the operator has made (and admitted, if `reserved`)."""
    found = 0
    for wl in cluster.get_json(kueue_api.WORKLOADS, "-n", ns)["items"]:
        conditions = wl.get("status", {}).get("conditions", [])
        found += not reserved or any(
            c["type"] == "QuotaReserved" and c["status"] == "True" for c in conditions
        )
    return found


def refusals(cluster: Cluster, ns: str) -> int:
    items = cluster.get_json("events", "-n", ns)["items"]
    return len({e["involvedObject"]["name"] for e in items if e["reason"] == "ErrWorkloadCompose"})


def restarted(op: OperatorProcess, handled) -> float:
    op.stop()
    op.start()
    wait_for(handled, timeout=900, what="the restarted operator to handle every object")
    return rss_mib(op)


def stage(cluster: Cluster, op: OperatorProcess, name: str, count: int, make, handled) -> dict:
    """Objects made by `make`, handled when `handled()`; RSS live and at a fresh start."""
    started = time.time()
    make()
    wait_for(handled, timeout=1800, what=f"the operator to handle the {name}")
    out = {"objects": count, "handled_s": round(time.time() - started, 1)}
    out["rss_live_mib"] = rss_mib(op)
    out["rss_fresh_start_mib"] = restarted(op, handled)
    print(name, out, flush=True)
    return out


def behind_the_webhooks(cluster: Cluster, op: OperatorProcess, ns: str, items: list[dict]):
    """Made while no operator serves the webhooks, as a tenant could during an upgrade."""
    op.stop()
    with chart.webhooks_fail_open(cluster):
        apply_all(cluster, ns, items)
    op.start()


def run(cluster: Cluster, op: OperatorProcess, args: argparse.Namespace) -> dict:
    results: dict = {"baseline_fresh_start_mib": [rss_mib(op), restarted(op, lambda: True)]}
    stages = results["stages"] = {}
    if args.pod_groups:
        ns = tenant(cluster, "pod-groups")
        n = args.pod_groups
        stages["pod_groups"] = stage(
            cluster,
            op,
            "pod_groups",
            n,
            lambda: apply_all(cluster, ns, [group_pod(f"g{i:04}") for i in range(n)]),
            lambda: workloads(cluster, ns, reserved=False) >= n,
        )
    if args.huge_lws:
        ns = tenant(cluster, "huge-lws")
        n = args.huge_lws
        items = [leaderworkerset(f"huge{i:03}", INT32_MAX) for i in range(n)]
        stages["huge_lws"] = stage(
            cluster,
            op,
            "huge_lws",
            n,
            lambda: behind_the_webhooks(cluster, op, ns, items),
            lambda: refusals(cluster, ns) >= n,
        )
    if args.lws_at_bound:
        ns = tenant(cluster, "lws-at-bound")
        n = args.lws_at_bound
        items = [leaderworkerset(f"lws{i:03}", LWS_BOUND) for i in range(n)]
        stages["lws_at_bound"] = stage(
            cluster,
            op,
            "lws_at_bound",
            n,
            lambda: apply_all(cluster, ns, items),
            lambda: workloads(cluster, ns, reserved=True) >= n * LWS_BOUND,
        )
    return results


def growth(results: dict) -> None:
    """Per-object growth between consecutive fresh starts, in KiB."""
    previous = statistics.median(results["baseline_fresh_start_mib"])
    for out in results["stages"].values():
        delta = out["rss_fresh_start_mib"] - previous
        out["fresh_start_growth_mib"] = round(delta, 1)
        out["growth_kib_per_object"] = round(1024 * delta / out["objects"], 1)
        previous = out["rss_fresh_start_mib"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pod-groups", type=int, default=200)
    parser.add_argument("--huge-lws", type=int, default=50)
    parser.add_argument("--lws-at-bound", type=int, default=1)
    parser.add_argument("--output", default="/tmp/tenant_memory.json")
    args = parser.parse_args()
    os.environ.setdefault("TAS_NODE_LEASE_SECONDS", "40")
    os.environ.setdefault("TAS_NODE_GRACE_SECONDS", "120")
    cluster = cluster_from_env()
    chart.install(cluster)
    for name in ("topology.yaml", "resource-flavor.yaml"):
        cluster.kubectl("apply", "-f", str(ROOT / "examples" / "kueue-tas" / name))
    add_nodes(cluster, topology.Shape(blocks=5, racks=5, hosts=8))  # 200 nodes
    integrations.install_crds(cluster, "lws")
    op = OperatorProcess(cluster)
    op.start()
    cluster.apply(BIG_QUEUE)  # v1beta2, but applied once the operator serves, as the others do
    results: dict = {"machine": {"cpus": os.cpu_count(), "load_at_start": os.getloadavg()}}
    try:
        results |= run(cluster, op, args)
        growth(results)
    finally:
        op.stop()
        results["machine"]["load_at_end"] = os.getloadavg()
        Path(args.output).write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
