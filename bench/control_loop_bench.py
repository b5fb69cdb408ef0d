"""The control loop at cluster scale, on the local cluster (reported, never asserted).

    .venv/bin/python bench/control_loop_bench.py                 # the issue's targets
    .venv/bin/python bench/control_loop_bench.py --quick         # small sizes, a smoke run
    .venv/bin/python bench/control_loop_bench.py --sizes 500x5000,2000x20000 --runs 3

Stages (every time is a median over --runs unless it is a rate):
1. 64-pod Job, create to all pods Running, on 200 nodes.
2. Live: N two-pod Jobs created as fast as one client can (32 requests in flight, through the
   webhooks); admitted per second from the first create to the last admission. Also the Job
   create latency with and without our webhooks, and API requests per admitted workload.
3. Drain: N two-pod Jobs already queued (created suspended while the operator was down), then
   the operator starts: admitted per second, counted from caches synced to the last admission.
   Then the same with N Workloads created directly (Kueue's own performance test does this):
   admission alone, with no Job to start and no pods for the cluster to run.
4. Restart at each size (nodes x pods bound to nodes, without Jobs, as kwok runs them cheaply):
   process start to caches synced and to the first admission, RSS and CPU seconds then.

Times come from the operator's own log lines (same clock), so polling adds nothing. Uses its
own local cluster (.cluster/bench, its own ports) unless KUBECONFIG is set. Writes
bench/results/control_loop.json (or --output) and prints a table.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import kueue_api  # noqa: E402
from bench.operator_bench import BIG_QUEUE, add_nodes  # noqa: E402
from e2e import chart, jobs, topology  # noqa: E402
from e2e.harness import Cluster, cluster_from_env, wait_for  # noqa: E402
from e2e.operator_process import OperatorProcess  # noqa: E402

from tas.kube import Kube, KubeError  # noqa: E402
from tas.kube.kubeconfig import load_connection  # noqa: E402

STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ")


def log_times(text: str, needle: str) -> list[float]:
    """Epoch seconds of every log line containing `needle`."""
    out = []
    for line in text.splitlines():
        m = STAMP.match(line)
        if m and needle in line:
            out.append(datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp())
    return out


def since_start(op: OperatorProcess) -> str:
    return op.log().split(f"===== start {op.starts} =====")[-1]


def proc_stat(pid: int) -> tuple[float, float]:
    """(RSS MiB, CPU seconds) of a process."""
    rss = float("nan")
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) / 1024
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return rss, cpu


class ClusterCpu:
    """CPU seconds of every local control-plane process and the operator over a stage, and the
    API server's request rate: where the 2 cores went."""

    def __init__(self, cluster: Cluster, op: OperatorProcess) -> None:
        self.pids = {"operator": op.proc.pid}
        if cluster.local_dir:
            for pid_file in Path(cluster.local_dir).glob("*.pid"):
                self.pids[pid_file.stem] = int(pid_file.read_text().split()[0])
        self.cluster = cluster
        self.start = self._sample()

    def _sample(self) -> tuple[float, dict[str, float], float]:
        cpu = {}
        for name, pid in self.pids.items():
            with contextlib.suppress(OSError):  # a process that is gone has no share
                cpu[name] = proc_stat(pid)[1]
        return time.monotonic(), cpu, self._requests()

    def _requests(self) -> float:
        text = self.cluster.kubectl("get", "--raw", "/metrics").stdout
        return sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith("apiserver_request_total{")
        )

    def stop(self) -> dict:
        t0, cpu0, req0 = self.start
        t1, cpu1, req1 = self._sample()
        wall = t1 - t0
        return {
            "wall_s": wall,
            "cores_used": {k: round((cpu1[k] - cpu0[k]) / wall, 2) for k in cpu1 if k in cpu0},
            "apiserver_requests_per_s": (req1 - req0) / wall,
        }


def small_job(name: str, *, suspend: bool = False) -> dict:
    body = jobs.job(name, "q", pods=2, cpu="100m")
    if suspend:  # made while the operator is down: no webhook suspends it
        body["spec"]["suspend"] = True
    return body


async def create_many(kube: Kube, ns: str, bodies: list[dict], in_flight: int = 32) -> list[float]:
    """POST every body, `in_flight` at a time; returns each request's latency."""
    slots = asyncio.Semaphore(in_flight)
    latencies: list[float] = []

    async def one(body: dict) -> None:
        path = {
            "Pod": f"/api/v1/namespaces/{ns}/pods",
            "Workload": kueue_api.workloads_path(ns),
        }.get(body["kind"], f"/apis/batch/v1/namespaces/{ns}/jobs")
        async with slots:
            for attempt in range(5):
                start = time.perf_counter()
                try:
                    await kube.create(path, body)
                    latencies.append(time.perf_counter() - start)
                    return
                except KubeError as exc:
                    if exc.status == 409:
                        return
                    await asyncio.sleep(0.2 * (attempt + 1))

    await asyncio.gather(*(one(b) for b in bodies))
    await kube.close()
    return latencies


def create(cluster: Cluster, ns: str, bodies: list[dict]) -> list[float]:
    kube = Kube(load_connection(cluster.kubeconfig), component="bench")
    return asyncio.run(create_many(kube, ns, bodies))


def namespace(cluster: Cluster) -> str:
    ns = cluster.create_namespace("bench")
    cluster.apply(kueue_api.local_queue("q", "bench"), ns)
    return ns


def drop_namespace(cluster: Cluster, ns: str) -> None:
    cluster.kubectl("delete", "namespace", ns, "--wait=false")
    wait_for(
        lambda: not cluster.get_json("pods", "-n", ns)["items"],
        timeout=900,
        interval=2,
        what="the stage's pods gone",
    )


def admitted_times(op: OperatorProcess, ns: str) -> list[float]:
    return log_times(since_start(op), f"admitted {ns}/")


def wait_admissions(op: OperatorProcess, ns: str, count: int, timeout: float = 900) -> list[float]:
    return wait_for(
        lambda: (t := admitted_times(op, ns)) and len(t) >= count and t,
        timeout=timeout,
        interval=0.5,
        what=f"{count} admissions in {ns}",
    )


def api_requests(op: OperatorProcess) -> float:
    text = (
        __import__("urllib.request")
        .request.urlopen(f"http://127.0.0.1:{op.metrics_port}/metrics", timeout=10)
        .read()
        .decode()
    )
    total = 0.0
    for line in text.splitlines():
        reads = ('verb="GET"', 'verb="WATCH"')
        if line.startswith("tas_api_requests_total{") and not any(r in line for r in reads):
            total += float(line.split()[-1])
    return total


def job64(cluster: Cluster, op: OperatorProcess, runs: int) -> dict:
    ns = namespace(cluster)
    times = []
    for i in range(runs):
        start = time.monotonic()
        cluster.apply(
            jobs.job(
                f"big{i}",
                "q",
                pods=64,
                cpu="1",
                annotations={jobs.PREFIX + "podset-preferred-topology": topology.RACK_LABEL},
            ),
            ns,
        )
        jobs.wait_running(cluster, ns, f"big{i}", 64, timeout=300)
        times.append(time.monotonic() - start)
        cluster.kubectl("delete", "job", f"big{i}", "-n", ns, "--wait=true")
    drop_namespace(cluster, ns)
    return {"median_s": statistics.median(times), "runs_s": times}


async def dry_run_creates(kube: Kube, ns: str, bodies: list[dict]) -> list[float]:
    """Server-side dry runs, one at a time: admission (our webhooks included) runs, nothing is
    stored, so the operator has no Job to process beside the webhook call."""
    out = []
    for body in bodies:
        body = {**body, "metadata": {**body["metadata"], "name": body["metadata"]["name"] + "-dry"}}
        start = time.perf_counter()
        await kube.request(
            "POST",
            f"/apis/batch/v1/namespaces/{ns}/jobs",
            body,
            "application/json",
            params={"dryRun": "All"},
        )
        out.append(time.perf_counter() - start)
        await asyncio.sleep(0.05)
    await kube.close()
    return out


def webhook_latency(cluster: Cluster, op: OperatorProcess, samples: int = 40) -> dict:
    """Job creates one at a time: queued ones pass our two webhooks, plain ones none. Dry runs
    give the webhooks' own cost; real creates add the wait behind the operator's work on the
    Job created just before (one event loop serves both)."""
    ns = namespace(cluster)
    plain = [jobs.job(f"plain{i}", None, pods=1, cpu="10m") for i in range(samples)]
    for body in plain:
        body["spec"]["suspend"] = True  # not queued: no webhook of ours is called for it
    queued = [small_job(f"w{i}", suspend=True) for i in range(samples)]
    kube = Kube(load_connection(cluster.kubeconfig), component="bench")
    with_hooks = asyncio.run(create_many(kube, ns, queued, in_flight=1))
    kube = Kube(load_connection(cluster.kubeconfig), component="bench")
    without = asyncio.run(create_many(kube, ns, plain, in_flight=1))
    dry_with = asyncio.run(
        dry_run_creates(Kube(load_connection(cluster.kubeconfig), component="bench"), ns, queued)
    )
    dry_without = asyncio.run(
        dry_run_creates(Kube(load_connection(cluster.kubeconfig), component="bench"), ns, plain)
    )
    drop_namespace(cluster, ns)
    return {
        "job_create_ms_median_with_webhooks": 1000 * statistics.median(with_hooks),
        "job_create_ms_median_without": 1000 * statistics.median(without),
        "dry_run_ms_median_with_webhooks": 1000 * statistics.median(dry_with),
        "dry_run_ms_median_without": 1000 * statistics.median(dry_without),
    }


def live(cluster: Cluster, op: OperatorProcess, count: int) -> dict:
    ns = namespace(cluster)
    before = api_requests(op)
    _, cpu_before = proc_stat(op.proc.pid)
    where = ClusterCpu(cluster, op)
    start = time.time()
    create(cluster, ns, [small_job(f"s{i}") for i in range(count)])
    done = wait_admissions(op, ns, count)
    cores = where.stop()
    rate = count / (max(done) - start)
    _, cpu_after = proc_stat(op.proc.pid)
    per_workload = (api_requests(op) - before) / count
    drop_namespace(cluster, ns)
    return {
        "jobs": count,
        "admitted_per_s": rate,
        "api_writes_per_admitted_workload": per_workload,
        "cpu_ms_per_admitted_workload": 1000 * (cpu_after - cpu_before) / count,
        "where": cores,
    }


def drain(cluster: Cluster, op: OperatorProcess, count: int) -> dict:
    ns = namespace(cluster)
    op.stop()
    with chart.webhooks_fail_open(cluster):
        create(cluster, ns, [small_job(f"d{i}", suspend=True) for i in range(count)])
    op.start(sync_timeout=600)
    _, cpu_synced = proc_stat(op.proc.pid)
    where = ClusterCpu(cluster, op)
    text = since_start(op)
    synced = log_times(text, "caches synced")[0]
    done = wait_admissions(op, ns, count)
    cores = where.stop()
    _, cpu = proc_stat(op.proc.pid)
    result = {
        "jobs": count,
        "admitted_per_s_after_sync": count / (max(done) - synced),
        "cpu_ms_per_admitted_workload": 1000 * (cpu - cpu_synced) / count,
        "where": cores,
    }
    drop_namespace(cluster, ns)
    return result


def workload_body(name: str) -> dict:
    """A Workload made directly (as Kueue's scheduler performance test does): no Job, no pods.
    In v1beta2: it is created while the operator (whose webhook converts v1beta1) is down."""
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}
    return {
        "apiVersion": kueue_api.V1BETA2,
        "kind": "Workload",
        "metadata": {"name": name},
        "spec": {
            "queueName": "q",
            "podSets": [
                {"name": "main", "count": 2, "template": {"spec": {"containers": [container]}}}
            ],
        },
    }


def drain_workloads(cluster: Cluster, op: OperatorProcess, count: int) -> dict:
    """Admission alone: queued Workloads and nothing else for the cluster to do per admission."""
    ns = namespace(cluster)
    op.stop()
    create(cluster, ns, [workload_body(f"wl{i}") for i in range(count)])
    op.start(sync_timeout=600)
    _, cpu_synced = proc_stat(op.proc.pid)
    where = ClusterCpu(cluster, op)
    synced = log_times(since_start(op), "caches synced")[0]
    done = wait_admissions(op, ns, count)
    cores = where.stop()
    _, cpu = proc_stat(op.proc.pid)
    drop_namespace(cluster, ns)
    return {
        "workloads": count,
        "admitted_per_s_after_sync": count / (max(done) - synced),
        "cpu_ms_per_admitted_workload": 1000 * (cpu - cpu_synced) / count,
        "where": cores,
    }


def restart(cluster: Cluster, op: OperatorProcess, nodes: int, pods: int, runs: int) -> dict:
    hosts = max(1, nodes // 50)
    shape = topology.Shape(blocks=5, racks=10, hosts=hosts)
    add_nodes(cluster, shape)
    names = [n["metadata"]["name"] for n in topology.nodes(shape)]
    ns = namespace(cluster)
    have = len(cluster.get_json("pods", "-A", "--field-selector=spec.nodeName!=")["items"])
    bodies = [
        jobs.bound_pod(f"p{nodes}-{i}", names[i % len(names)]) for i in range(max(0, pods - have))
    ]
    create(cluster, ns, bodies)
    samples = []
    for r in range(runs):
        op.stop()
        with chart.webhooks_fail_open(cluster):
            create(cluster, ns, [small_job(f"probe{r}", suspend=True)])
        started = time.time()
        op.start(sync_timeout=900)
        first = wait_admissions(op, ns, 1, timeout=600)[0]
        rss, cpu = proc_stat(op.proc.pid)
        synced = log_times(since_start(op), "caches synced")[0]
        samples.append(
            {
                "synced_s": synced - started,
                "first_admission_s": first - started,
                "rss_mib": rss,
                "cpu_s": cpu,
            }
        )
    med = {k: statistics.median(s[k] for s in samples) for k in samples[0]}
    return {"nodes": len(names), "pods": pods, **med, "runs": samples, "namespace": ns}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sizes", default=None, help="NODESxPODS,... for the restart stage")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--stages",
        default="job64,webhooks,live,drain,restart",
        help="comma-separated subset of job64,webhooks,live,drain,restart",
    )
    parser.add_argument("--output", default=str(ROOT / "bench" / "results" / "control_loop.json"))
    args = parser.parse_args()
    os.environ.setdefault("TAS_CLUSTER_DIR", str(ROOT / ".cluster" / "bench"))
    os.environ.setdefault("TAS_API_PORT", "19443")
    os.environ.setdefault("TAS_ETCD_PORT", "15379")
    # Thousands of kwok nodes renewing a lease every 2 s would fill the API server by
    # themselves; every 10 s is closer to a real kubelet's (40 s lease, renewed every 10 s).
    os.environ.setdefault("TAS_NODE_LEASE_SECONDS", "40")
    os.environ.setdefault("TAS_NODE_GRACE_SECONDS", "120")
    if args.quick and args.output.endswith("control_loop.json"):
        args.output = "/tmp/control_loop_quick.json"  # a quick run never overwrites results
    sizes = args.sizes or ("100x1000" if args.quick else "500x5000,1000x10000")
    cluster = cluster_from_env()
    chart.install(cluster)
    for name in ("topology.yaml", "resource-flavor.yaml"):
        cluster.kubectl("apply", "-f", str(ROOT / "examples" / "kueue-tas" / name))
    cluster.apply(BIG_QUEUE)
    add_nodes(cluster, topology.Shape(blocks=5, racks=5, hosts=8))  # 200 nodes
    op = OperatorProcess(cluster)
    op.start()
    results: dict = {"machine": {"cpus": os.cpu_count(), "load": os.getloadavg()}}
    count = 100 if args.quick else 1000
    stages = set(args.stages.split(","))
    partial = stages != {"job64", "webhooks", "live", "drain", "restart"}
    if partial and args.output.endswith("control_loop.json"):
        args.output = "/tmp/control_loop_partial.json"  # a partial run keeps the full results
    try:
        if "job64" in stages:
            results["job64"] = job64(cluster, op, 2 if args.quick else args.runs)
            print("64-pod Job:", results["job64"], flush=True)
        if "webhooks" in stages:
            results["webhooks"] = webhook_latency(cluster, op)
            print("webhooks:", results["webhooks"], flush=True)
        if "live" in stages:
            results["live"] = live(cluster, op, count // 2)
            print("live:", results["live"], flush=True)
        if "drain" in stages:
            results["drain"] = drain(cluster, op, count)
            print("drain:", results["drain"], flush=True)
            results["drain_workloads"] = drain_workloads(cluster, op, count)
            print("drain, Workloads only:", results["drain_workloads"], flush=True)
        results["restart"] = []
        for size in sizes.split(",") if "restart" in stages else ():
            nodes, pods = (int(x) for x in size.split("x"))
            results["restart"].append(restart(cluster, op, nodes, pods, args.runs))
            print("restart:", results["restart"][-1], flush=True)
    finally:
        op.stop()
        Path(args.output).write_text(json.dumps(results, indent=2))
    print_table(results)
    return 0


def print_table(results: dict) -> None:
    print("| measure | value |\n|---|---|")
    if "job64" in results:
        print(
            f"| 64-pod Job create -> all Running, 200 nodes (median) | {results['job64']['median_s']:.2f} s |"
        )
    if "webhooks" in results:
        wh = results["webhooks"]
        print(
            f"| Job create (dry run), one at a time, through our webhooks (median) | "
            f"{wh['dry_run_ms_median_with_webhooks']:.1f} ms (no webhook: {wh['dry_run_ms_median_without']:.1f} ms) |"
        )
        print(
            f"| Job create, one at a time, with the operator processing each (median) | "
            f"{wh['job_create_ms_median_with_webhooks']:.1f} ms (no webhook: {wh['job_create_ms_median_without']:.1f} ms) |"
        )
    if "live" in results:
        lv = results["live"]
        print(f"| live: {lv['jobs']} two-pod Jobs, admitted | {lv['admitted_per_s']:.0f} /s |")
        print(
            f"| API writes per admitted workload (live) | {lv['api_writes_per_admitted_workload']:.1f} |"
        )
        print(
            f"| operator CPU per admitted workload (live) | {lv['cpu_ms_per_admitted_workload']:.1f} ms |"
        )
    if "drain" in results:
        dr, dw = results["drain"], results["drain_workloads"]
        print(
            f"| operator CPU per admitted workload (drain / Workloads only) | "
            f"{dr['cpu_ms_per_admitted_workload']:.1f} / {dw['cpu_ms_per_admitted_workload']:.1f} ms |"
        )
        print(
            f"| drain: {dr['jobs']} queued Jobs, admitted after sync | {dr['admitted_per_s_after_sync']:.0f} /s |"
        )
        print(
            f"| drain: {dw['workloads']} Workloads alone (no Jobs, no pods) | {dw['admitted_per_s_after_sync']:.0f} /s |"
        )
    for r in results["restart"]:
        print(
            f"| restart, {r['nodes']} nodes + {r['pods']} pods: synced / first admission / RSS / CPU "
            f"| {r['synced_s']:.2f} s / {r['first_admission_s']:.2f} s / {r['rss_mib']:.0f} MiB / {r['cpu_s']:.1f} s |"
        )


if __name__ == "__main__":
    sys.exit(main())
