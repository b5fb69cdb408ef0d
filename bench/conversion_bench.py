"""What the conversion webhook costs (reported, never asserted).

    .venv/bin/python bench/conversion_bench.py            # 10,000 Workloads: bench/results/conversion.json
    .venv/bin/python bench/conversion_bench.py --quick    # 500 Workloads, 50 GETs; writes /tmp

The operator stores Kueue's v1beta2; a client reading v1beta1 (Kueue's older clients, kubectl
with `workloads.v1beta1.kueue.x-k8s.io`) is answered through the operator's conversion webhook.
Where the API server calls it matters: it keeps a watch cache per served version, and fills the
v1beta1 one through the webhook, one call per Workload written (whether or not any client reads
v1beta1). A GET goes to etcd and is converted on the way out; a list is served from the
version's watch cache, already converted.

On a local cluster of its own (`.cluster/conv`, API 27443 / etcd 28379; stopped afterwards
unless KEEP_CLUSTER=1), the chart and the operator:

- one Workload GET, v1beta1 (converted) against v1beta2 (stored), alternating, `--gets` of
  each, after 5 of each to warm the connections: p50 and p99 (nearest rank);
- listing `--workloads` admitted Workloads, each with a topologyAssignment of 8-16 hosts of one
  rack (the compact v1beta2 encoding the operator writes), in v1beta1 against v1beta2: the
  median of `--lists` full lists of each, alternating (one request, as an informer's first
  list), then the same in pages of 500 (as kubectl reads); bytes, and the operator's CPU
  seconds during each list;
- `--writes` Workloads written once more (an annotation, in v1beta2, 8 in flight);
- for each of these, and for the v1beta1 watch cache's fill when the operator starts, the
  webhook calls the API server made and their p50 / p99 (interpolated within the buckets, as
  Prometheus' histogram_quantile does) and mean, from the delta of its histogram
  `apiserver_conversion_webhook_duration_seconds` (successful calls only).

The Workloads are created before the operator first starts (so nothing else writes them), in
v1beta2 with their status through the status subresource, 32 requests in flight. Their queue
and ClusterQueue do not exist, so the operator never admits or changes them; their hosts are
real kwok nodes (4 blocks x 8 racks x 16 hosts), so hot swap finds nothing to replace. How
many Workloads changed while the bench only read them is reported (expected: none).
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import math
import os
import random
import re
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import aiohttp
import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import kueue_api  # noqa: E402
from bench.control_loop_bench import proc_stat  # noqa: E402
from bench.operator_bench import add_nodes  # noqa: E402
from e2e import chart, topology  # noqa: E402
from e2e.harness import Cluster, cluster_env, local_cluster, stop_local_cluster  # noqa: E402
from e2e.operator_process import OperatorProcess  # noqa: E402

from tas.api.topologyassignment import to_stored  # noqa: E402
from tas.kube import MERGE, Kube, KubeError  # noqa: E402
from tas.kube.kubeconfig import load_connection  # noqa: E402
from tas.solver.types import HOSTNAME_LEVEL, DomainAssignment, TopologyAssignment  # noqa: E402

ENV = cluster_env(ROOT / ".cluster" / "conv", 27443, 28379)
RESULTS = ROOT / "bench" / "results" / "conversion.json"
SHAPE = topology.Shape(blocks=4, racks=8, hosts=16)  # 512 nodes
NS = "conv"
QUEUE = "conv-none"  # neither a LocalQueue nor a ClusterQueue of that name exists
FLAVOR = "tas-flavor"
PODS_PER_HOST = 8  # one per GPU
PAGE = 500  # kubectl's chunk size
WARM_UP = 5  # GETs of each version before the timed ones
# The API server's histogram of conversion webhook calls, by the names releases have used.
CONVERSION_HISTOGRAM = re.compile(
    r"^(\w*conversion_webhook\w*duration_seconds)_bucket\{(.*)\} (\S+)$"
)


# ---- the Workloads -----------------------------------------------------------------------------


def host_assignment(rng: random.Random, shape: topology.Shape) -> TopologyAssignment:
    """8-16 hosts of one rack, in host order, 8 pods each but sometimes fewer on the last: a
    rack-required training job as the operator places it (hostname, the lowest level, only)."""
    block, rack = rng.randint(1, shape.blocks), rng.randint(1, shape.racks)
    count = rng.randint(8, min(16, shape.hosts))
    hosts = sorted(rng.sample(range(1, shape.hosts + 1), count))
    pods = [PODS_PER_HOST] * count
    if rng.random() < 1 / 3:
        pods[-1] = rng.randint(1, PODS_PER_HOST - 1)
    return TopologyAssignment(
        levels=(HOSTNAME_LEVEL,),
        domains=tuple(
            DomainAssignment(values=(topology.node_name(block, rack, h),), count=n)
            for h, n in zip(hosts, pods, strict=True)
        ),
    )


def workload(name: str, pods: int) -> dict:
    """A v1beta2 Workload as a queued Job's would read: one pod set with its template."""
    container = {
        "name": "trainer",
        "image": "registry.example.com/train:2026.11",
        "command": ["torchrun", "--nproc-per-node=1", "train.py"],
        "env": [{"name": "NCCL_DEBUG", "value": "WARN"}, {"name": "EPOCHS", "value": "90"}],
        "resources": {
            "requests": {"cpu": "4", "memory": "32Gi", "nvidia.com/gpu": "1"},
            "limits": {"nvidia.com/gpu": "1"},
        },
    }
    return {
        "apiVersion": kueue_api.V1BETA2,
        "kind": "Workload",
        "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": QUEUE}},
        "spec": {
            "queueName": QUEUE,
            "podSets": [
                {
                    "name": "main",
                    "count": pods,
                    "topologyRequest": {"required": topology.RACK_LABEL},
                    "template": {
                        "metadata": {
                            "annotations": {
                                "kueue.x-k8s.io/podset-required-topology": topology.RACK_LABEL
                            }
                        },
                        "spec": {"restartPolicy": "Never", "containers": [container]},
                    },
                }
            ],
        },
    }


def admitted_status(assignment: TopologyAssignment, now: str) -> dict:
    """The status the operator writes on admission, the assignment in its stored encoding."""
    pods = sum(d.count for d in assignment.domains)
    conditions = [
        {
            "type": kind,
            "status": "True",
            "reason": kind,
            "message": f"Quota reserved in ClusterQueue {QUEUE}"
            if kind == "QuotaReserved"
            else "The workload is admitted",
            "lastTransitionTime": now,
        }
        for kind in ("QuotaReserved", "Admitted")
    ]
    usage = {"cpu": str(4 * pods), "memory": f"{32 * pods}Gi", "nvidia.com/gpu": str(pods)}
    return {
        "admission": {
            "clusterQueue": QUEUE,
            "podSetAssignments": [
                {
                    "name": "main",
                    "count": pods,
                    "flavors": dict.fromkeys(usage, FLAVOR),
                    "resourceUsage": usage,
                    "topologyAssignment": to_stored(assignment),
                }
            ],
        },
        "conditions": conditions,
    }


async def create_workloads(kube: Kube, count: int, seed: int, in_flight: int = 32) -> list[str]:
    """`count` admitted Workloads (create, then status); returns their names."""
    rng = random.Random(seed)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    slots = asyncio.Semaphore(in_flight)
    path = kueue_api.workloads_path(NS)

    async def one(name: str, assignment: TopologyAssignment) -> None:
        body = workload(name, sum(d.count for d in assignment.domains))
        async with slots:
            for attempt in range(5):
                try:
                    await kube.create(path, body)
                    break
                except KubeError as exc:
                    if exc.conflict:
                        break
                    await asyncio.sleep(0.2 * (attempt + 1))
            status = {"status": admitted_status(assignment, now)}
            await kube.patch(f"{path}/{name}/status", status, MERGE)

    names = [f"train-{i:05d}" for i in range(count)]
    await asyncio.gather(*(one(n, host_assignment(rng, SHAPE)) for n in names))
    return names


# ---- measuring ---------------------------------------------------------------------------------


async def fetch(kube: Kube, path: str, params: dict | None = None) -> tuple[float, bytes]:
    """One GET: seconds to the last byte of the body (not parsed), and the body."""
    headers = {"Accept": "application/json", "Accept-Encoding": "identity"}
    auth = kube.connection.authorization()
    if inspect.isawaitable(auth):  # later connections renew credentials asynchronously
        auth = await auth
    if auth:
        headers["Authorization"] = auth
    started = time.perf_counter()
    async with kube.session().get(
        kube.connection.server + path,
        params=params,
        headers=headers,
        timeout=aiohttp.ClientTimeout(total=300),
    ) as response:
        raw = await response.read()
        if response.status != 200:
            raise RuntimeError(f"GET {path}: {response.status} {raw[:500]!r}")
    return time.perf_counter() - started, raw


async def served_in_v1beta1(kube: Kube, timeout: float = 600) -> float:
    """Seconds until the API server answers a full v1beta1 list. The API server keeps a watch
    cache per served version, filled through the conversion webhook: the v1beta1 one failed
    while no operator served it, and is rebuilt when the operator puts its CA into the CRD;
    until it is filled again, lists answer 429 ("storage is (re)initializing")."""
    started = time.perf_counter()
    while True:
        try:
            await kube.request("GET", kueue_api.workloads_path(NS, "v1beta1"), timeout=300)
            return time.perf_counter() - started
        except KubeError as exc:
            if exc.status != 429 or time.perf_counter() - started > timeout:
                raise
            await asyncio.sleep(0.1)


async def resource_versions(kube: Kube) -> dict[str, str]:
    """Each Workload's resourceVersion (v1beta2)."""
    items = (await kube.request("GET", kueue_api.workloads_path(NS)))["items"]
    return {w["metadata"]["name"]: w["metadata"]["resourceVersion"] for w in items}


async def touch(kube: Kube, names: list[str], in_flight: int = 8) -> float:
    """An annotation written on each Workload (no v1beta1 client anywhere); returns seconds."""
    slots = asyncio.Semaphore(in_flight)
    path = kueue_api.workloads_path(NS)
    started = time.perf_counter()

    async def one(name: str) -> None:
        async with slots:
            note = {"metadata": {"annotations": {"bench.tas-operator.io/touched": "1"}}}
            await kube.patch(f"{path}/{name}", note, MERGE)

    await asyncio.gather(*(one(n) for n in names))
    return time.perf_counter() - started


def nearest_rank(values: list[float], q: float) -> float:
    """The nearest-rank percentile: the smallest value with at least q of them at or below."""
    ordered = sorted(values)
    rank = math.ceil(round(q * len(ordered), 9))
    return ordered[max(rank, 1) - 1]


def latency_summary(seconds: list[float]) -> dict:
    return {
        "samples": len(seconds),
        "p50_ms": 1000 * nearest_rank(seconds, 0.50),
        "p99_ms": 1000 * nearest_rank(seconds, 0.99),
        "mean_ms": 1000 * statistics.fmean(seconds),
    }


async def single_gets(kube: Kube, name: str, samples: int) -> dict:
    """One Workload read `samples` times in each version, alternating (which goes first
    alternates too), after a few reads of each to warm the connections."""
    times: dict[str, list[float]] = {"v1beta1": [], "v1beta2": []}
    paths = {v: f"{kueue_api.workloads_path(NS, v)}/{name}" for v in times}
    for version in times:
        for _ in range(WARM_UP):
            await fetch(kube, paths[version])
    for i in range(samples):
        order = list(times) if i % 2 == 0 else list(times)[::-1]
        for version in order:
            seconds, _ = await fetch(kube, paths[version])
            times[version].append(seconds)
    return {version: latency_summary(t) for version, t in times.items()}


async def list_all(kube: Kube, version: str, page: int | None) -> tuple[float, int, int]:
    """(seconds, bytes, items) of reading every Workload of the namespace in `version`, in one
    request or in pages of `page`."""
    path = kueue_api.workloads_path(NS, version)
    params = {"limit": str(page)} if page else {}
    seconds, size, items = 0.0, 0, 0
    while True:
        took, raw = await fetch(kube, path, params)
        body = orjson.loads(raw)
        seconds, size, items = seconds + took, size + len(raw), items + len(body["items"])
        token = body["metadata"].get("continue")
        if not page or not token:
            return seconds, size, items
        params = {"limit": str(page), "continue": token}


async def lists(kube: Kube, op: OperatorProcess, runs: int, page: int | None) -> dict:
    """`runs` full lists in each version, alternating; the operator's CPU during each."""
    seen: dict[str, list[dict]] = {"v1beta1": [], "v1beta2": []}
    for i in range(runs):
        for version in list(seen) if i % 2 == 0 else list(seen)[::-1]:
            _, cpu0 = proc_stat(op.proc.pid)
            seconds, size, items = await list_all(kube, version, page)
            _, cpu1 = proc_stat(op.proc.pid)
            seen[version].append(
                {"s": seconds, "bytes": size, "items": items, "operator_cpu_s": cpu1 - cpu0}
            )
    out: dict = {"page": page}
    for version, runs_of in seen.items():
        out[version] = {
            "median_s": statistics.median(r["s"] for r in runs_of),
            "median_operator_cpu_s": statistics.median(r["operator_cpu_s"] for r in runs_of),
            "bytes": runs_of[0]["bytes"],
            "items": runs_of[0]["items"],
            "runs": runs_of,
        }
    out["ratio_v1beta1_to_v1beta2"] = out["v1beta1"]["median_s"] / out["v1beta2"]["median_s"]
    return out


# ---- the API server's conversion-webhook histogram ---------------------------------------------


def conversion_histograms(metrics_text: str) -> dict[tuple[str, str], dict]:
    """(family, labels without `le`) -> {"labels", "buckets": {le: cumulative count}, "sum",
    "count"}, for every conversion-webhook duration histogram series the API server exposes."""
    series: dict[tuple[str, str], dict] = defaultdict(lambda: {"buckets": {}})
    for line in metrics_text.splitlines():
        m = CONVERSION_HISTOGRAM.match(line)
        if m:
            family, labels, value = m.groups()
            parsed = dict(re.findall(r'(\w+)="([^"]*)"', labels))
            le = parsed.pop("le")
            rest = ",".join(p for p in labels.split(",") if not p.startswith("le="))
            series[(family, rest)]["labels"] = parsed
            series[(family, rest)]["buckets"][float(le)] = float(value)
    for (family, rest), hist in series.items():
        for part in ("sum", "count"):
            m = re.search(rf"^{family}_{part}\{{{re.escape(rest)}\}} (\S+)$", metrics_text, re.M)
            hist[part] = float(m.group(1)) if m else 0.0
    return dict(series)


def converts_workloads_to(labels: dict[str, str], version: str) -> bool:
    """A series of successful webhook conversions of Workloads to `version` ("v1beta1").
    Series of apiserver_crd_conversion_webhook_duration_seconds name the CRD and the versions;
    apiserver_conversion_webhook_duration_seconds (used only where the first is missing) names
    neither, and counts the no-op conversions of objects already in the version asked for."""
    if "crd_name" not in labels:
        return labels.get("result") == "success"
    return (
        labels["crd_name"].startswith("workloads.")
        and labels.get("to_version", "").rsplit("/", 1)[-1] == version
        and labels.get("succeeded") == "true"
    )


def histogram_quantile(buckets: dict[float, float], q: float) -> float | None:
    """Prometheus' histogram_quantile over cumulative bucket counts (linear within a bucket)."""
    bounds = sorted(buckets)
    total = buckets[bounds[-1]] if bounds else 0
    if total <= 0:
        return None
    rank, lower, below = q * total, 0.0, 0.0
    for bound in bounds:
        if buckets[bound] >= rank:
            if bound == float("inf"):
                return lower
            inside = buckets[bound] - below
            return lower + (bound - lower) * ((rank - below) / inside if inside else 0)
        lower, below = bound, buckets[bound]
    return lower


def webhook_time(before: dict, after: dict, to_version: str) -> dict:
    """The webhook calls over an interval: the series of successful conversions of Workloads
    to `to_version`, `after` minus `before`, summed (of the per-CRD histogram if exposed)."""
    buckets: dict[float, float] = defaultdict(float)
    total, count, family = 0.0, 0.0, None
    per_crd = any("crd_name" in hist["labels"] for hist in after.values())
    for key, hist in after.items():
        if per_crd != ("crd_name" in hist["labels"]):
            continue  # one family only: their buckets differ
        if not converts_workloads_to(hist["labels"], to_version):
            continue
        old = before.get(key, {"buckets": {}, "sum": 0.0, "count": 0.0})
        for le, n in hist["buckets"].items():
            buckets[le] += n - old["buckets"].get(le, 0.0)
        total += hist["sum"] - old["sum"]
        count += hist["count"] - old["count"]
        family = key[0]
    if not count:
        return {"metric": family, "calls": 0}
    ms = {q: histogram_quantile(buckets, q) for q in (0.5, 0.99)}
    return {
        "metric": family,
        "calls": int(count),
        "mean_ms": 1000 * total / count,
        "p50_ms": 1000 * ms[0.5] if ms[0.5] is not None else None,
        "p99_ms": 1000 * ms[0.99] if ms[0.99] is not None else None,
    }


def apiserver_metrics(cluster: Cluster) -> dict:
    return conversion_histograms(cluster.kubectl("get", "--raw", "/metrics").stdout)


def settled_metrics(cluster: Cluster, quiet: float = 3.0, timeout: float = 600) -> tuple:
    """The histograms once no conversion has been added for `quiet` seconds, and the seconds
    that took: the v1beta1 watch cache converts the write events after the writes returned."""
    started = last_change = time.monotonic()
    metrics = apiserver_metrics(cluster)
    calls = webhook_time({}, metrics, "v1beta1")["calls"]
    while time.monotonic() - last_change < quiet and time.monotonic() - started < timeout:
        time.sleep(0.5)
        metrics = apiserver_metrics(cluster)
        now = webhook_time({}, metrics, "v1beta1")["calls"]
        if now != calls:
            calls, last_change = now, time.monotonic()
    return metrics, last_change - started


def conversion_metric_names(cluster: Cluster) -> list[str]:
    """Every metric family of the API server that names conversion (for the record)."""
    text = cluster.kubectl("get", "--raw", "/metrics").stdout
    return sorted({m.group(1) for m in re.finditer(r"^# TYPE (\S*conversion\S*) ", text, re.M)})


# ---- the run -----------------------------------------------------------------------------------


def setup(cluster: Cluster, count: int, seed: int) -> tuple[list[str], float]:
    """Chart, nodes and the admitted Workloads (no operator running); returns their names and
    the seconds creating them took."""
    chart.install(cluster, "--set-string", "nodeSelector.tas-bench/no-node=true")
    add_nodes(cluster, SHAPE)
    for name in ("topology.yaml", "resource-flavor.yaml"):
        cluster.kubectl("apply", "-f", str(ROOT / "examples" / "kueue-tas" / name))
    cluster.kubectl("create", "namespace", NS)
    started = time.monotonic()
    names = asyncio.run(with_kube(cluster, lambda kube: create_workloads(kube, count, seed)))
    return names, time.monotonic() - started


async def with_kube(cluster: Cluster, work):
    kube = Kube(load_connection(cluster.kubeconfig), component="bench-conversion", timeout=300)
    try:
        return await work(kube)
    finally:
        await kube.close()


def measure(
    cluster: Cluster, op: OperatorProcess, args: argparse.Namespace, names: list[str]
) -> dict:
    """Every measurement, in order, each with the webhook's time over it (the API server's)."""
    versions = asyncio.run(with_kube(cluster, resource_versions))
    out: dict = {}
    phases = (
        ("get", lambda kube: single_gets(kube, names[len(names) // 2], args.gets)),
        ("list", lambda kube: lists(kube, op, args.lists, None)),
        ("list_paginated", lambda kube: lists(kube, op, args.lists, PAGE)),
        ("writes", lambda kube: touch(kube, names[: args.writes])),
    )
    for key, work in phases:
        if key == "writes":  # the reads changed nothing: no one else wrote a Workload
            now = asyncio.run(with_kube(cluster, resource_versions))
            out["workloads_changed_while_reading"] = sum(now[n] != v for n, v in versions.items())
        before = apiserver_metrics(cluster)
        value = asyncio.run(with_kube(cluster, work))
        out[key] = value if isinstance(value, dict) else {"s": value, "count": args.writes}
        after, out[key]["webhook_settled_after_s"] = settled_metrics(cluster)
        out[key]["webhook"] = webhook_time(before, after, "v1beta1")
    out["apiserver_conversion_metrics"] = conversion_metric_names(cluster)
    return out


def run(args: argparse.Namespace) -> dict:
    stop_local_cluster(ENV)  # always a fresh cluster
    cluster = local_cluster(ENV)
    result: dict = {"machine": {"cpus": os.cpu_count(), "load_at_start": os.getloadavg()}}
    op = OperatorProcess(cluster, extra=("--log-level=INFO",))
    try:
        names, created_s = setup(cluster, args.workloads, args.seed)
        result["workloads"] = {"count": len(names), "created_s": created_s, "nodes": 512}
        before = apiserver_metrics(cluster)
        result["operator_synced_s"] = op.start(sync_timeout=900)
        ready = asyncio.run(with_kube(cluster, served_in_v1beta1))
        result["v1beta1_served_after_sync_s"] = ready
        result["v1beta1_watch_cache_fill"] = webhook_time(
            before, apiserver_metrics(cluster), "v1beta1"
        )
        result.update(measure(cluster, op, args, names))
        result["machine"]["load_at_end"] = os.getloadavg()
        return result
    finally:
        op.stop()
        Path("/tmp/conversion_bench-operator.log").write_text(op.log())
        if not os.environ.get("KEEP_CLUSTER"):
            stop_local_cluster(ENV)


def table_rows(r: dict) -> list[tuple[str, str, str, str]]:
    """(measure, v1beta1, v1beta2, ratio) rows of the printed table."""
    g, n = r["get"], r["workloads"]["count"]
    rows = []
    for q in ("p50", "p99"):
        a, b = g["v1beta1"][f"{q}_ms"], g["v1beta2"][f"{q}_ms"]
        label = f"one Workload GET, {q} of {g['v1beta1']['samples']}"
        rows.append((label, f"{a:.2f} ms", f"{b:.2f} ms", f"{a / b:.2f}"))
    for label, data in (
        (f"list of {n:,} Workloads, one request", r["list"]),
        (f"list of {n:,} Workloads, pages of {PAGE}", r["list_paginated"]),
    ):
        old, new = data["v1beta1"], data["v1beta2"]
        runs = len(old["runs"])
        a, b = old["median_s"], new["median_s"]
        rows.append((f"{label}, median of {runs}", f"{a:.2f} s", f"{b:.2f} s", f"{a / b:.2f}"))
        rows.append(
            (f"{label}: bytes", f"{old['bytes']:,}", f"{new['bytes']:,}",
             f"{old['bytes'] / new['bytes']:.2f}")
        )  # fmt: skip
        cpu = [f"{x['median_operator_cpu_s']:.2f} s" for x in (old, new)]
        rows.append((f"{label}: operator CPU per list, median", *cpu, ""))
    w = r["writes"]
    rows.append((f"{w['count']} Workload writes (v1beta2), 8 in flight", "", f"{w['s']:.2f} s", ""))
    lag = f"{w['webhook_settled_after_s']:.2f} s"
    rows.append(
        ("... the v1beta1 watch cache's last conversion, after the last write", lag, "", "")
    )
    fill = r["v1beta1_watch_cache_fill"]
    for label, hook in (
        (f"the v1beta1 watch cache's fill at operator start ({n:,} Workloads)", fill),
        (f"{g['v1beta1']['samples'] + WARM_UP} v1beta1 GETs", g["webhook"]),
        (f"{len(r['list']['v1beta1']['runs'])} v1beta1 lists", r["list"]["webhook"]),
        (
            f"{len(r['list_paginated']['v1beta1']['runs'])} v1beta1 lists in pages of {PAGE}",
            r["list_paginated"]["webhook"],
        ),
        (f"{w['count']} Workload writes (no v1beta1 client)", w["webhook"]),
    ):
        rows.append((f"webhook calls for {label}", webhook_cell(hook), "-", ""))
    return rows


def webhook_cell(hook: dict) -> str:
    """The API server's count and p50 / p99 / mean of its conversion calls, or "none"."""
    if not hook["calls"]:
        return "none"
    times = " / ".join(f"{hook[k]:.2f}" for k in ("p50_ms", "p99_ms", "mean_ms"))
    return f"{hook['calls']} calls, p50 / p99 / mean {times} ms"


def print_table(r: dict) -> None:
    print("| measure | v1beta1 (converted) | v1beta2 (stored) | v1beta1 / v1beta2 |")
    print("|---|---:|---:|---:|")
    for row in table_rows(r):
        print("| " + " | ".join(row) + " |")
    changed = r["workloads_changed_while_reading"]
    print(f"Workloads changed by anyone during the reads: {changed}")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="500 Workloads, 50 GETs; /tmp")
    parser.add_argument("--workloads", type=int, default=10_000)
    parser.add_argument("--gets", type=int, default=300, help="GETs in each version")
    parser.add_argument("--lists", type=int, default=5, help="full lists in each version")
    parser.add_argument("--writes", type=int, default=500, help="Workloads written once")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--output", default=str(RESULTS))
    args = parser.parse_args()
    if args.quick:
        args.workloads, args.gets, args.lists, args.writes = 500, 50, 3, 100
        if args.output == str(RESULTS):
            args.output = "/tmp/conversion_quick.json"  # a quick run never overwrites results
    # 512 kwok nodes renew their leases every 10 s, as a real kubelet (control_loop_bench).
    os.environ.setdefault("TAS_NODE_LEASE_SECONDS", "40")
    os.environ.setdefault("TAS_NODE_GRACE_SECONDS", "120")
    result = {"command": " ".join(["bench/conversion_bench.py", *sys.argv[1:]]), **run(args)}
    Path(args.output).write_text(json.dumps(result, indent=2))
    print_table(result)
    print(f"written to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
