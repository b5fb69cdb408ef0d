"""Side by side with Kueue's own controller: the same local cluster, nodes and Jobs.

    .venv/bin/python bench/vs_kueue.py            # full run (about 1.5 h): bench/results/vs_kueue.json
    .venv/bin/python bench/vs_kueue.py --quick    # small sizes, a few minutes; writes /tmp
    .venv/bin/python bench/vs_kueue.py --stages placement --sides kueue   # a part; writes /tmp
    .venv/bin/python bench/vs_kueue.py --table bench/results/vs_kueue.json  # the README table

Each controller runs on a fresh local cluster of its own (never both in one cluster: both serve
kueue.x-k8s.io), one after the other, with the same nodes and manifests, as a host process:
ours as `tas operator`, Kueue as its released manager built from the Go module proxy by
e2e/build-kueue.sh (see e2e/kueue_process.py for how it is configured). Both at default
settings and feature gates; Kueue with its release's shipped configuration (client QPS 50,
burst 100) changed only where running out of cluster requires it.

Every time is read the same way for both: from a watch the bench keeps on the stage's
namespace (bench/observer.py), as the wall-clock time an event arrived (a Workload first seen
Admitted, a pod first seen Running), minus the wall-clock time just before the bench's create
call or the controller's process start.

Stages (`--stages`, in this order):
- sample: Kueue's documented TAS example (40 pods, preferred block) on 200 nodes
  (5 blocks x 5 racks x 8 hosts, 8 cpu): admitted, all pods Running, and where they run.
- job64: a 64-pod Job (preferred rack, 1 cpu each), create to all pods Running, median of --runs
  (3 by default, as every timed stage).
- live: 500 two-pod Jobs created by one client (32 requests in flight), first create to last
  admission; and each controller's own API requests per admitted Job (until it has sent
  nothing but lease renewals for 3 s, so that resuming Jobs, ungating pods and events count),
  and each Job create's latency through the controller's webhooks while it admits the rest, from the API server's audit log
  (bench/audit-policy.yaml), by the user agent of the controller's clients.
- drain: 1,000 two-pod Jobs created suspended while the controller is down; it starts; process
  start to the last admission.
- hotswap: a 4-pod rack-required Job on a rack of 3 hosts (4 cpu); one of its nodes is
  deleted, and in a second run made NotReady (kwok); until the assignment no longer names it
  and until all 4 pods run again inside the rack, with the timeline of what happened between.
- placement: one fixed, seeded sequence of 200 Jobs (required / preferred / unconstrained /
  implied, host and rack slices, 1-64 pods, some finishing in between) on 256 nodes of mixed
  size (4 blocks x 8 racks x 8 hosts) with other pods already bound; every Workload's
  topologyAssignment (or its pending message) compared one by one.
- restart: at each NODESxPODS size (pods bound straight to nodes), the controller is stopped, a
  queued Job is created, the controller starts: process start to that Job's admission, median
  of --runs; the process's resident memory then and 20 s later.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import kueue_api  # noqa: E402
from bench.control_loop_bench import (  # noqa: E402
    ClusterCpu,
    create,
    drop_namespace,
    namespace,
    proc_stat,
    small_job,
)
from bench.observer import Observer, condition, stored_assignment  # noqa: E402
from bench.operator_bench import BIG_QUEUE, add_nodes  # noqa: E402
from bench.webhook_latency_bench import (  # noqa: E402
    api_server_reviews,
    percentile,
    review_latency,
)
from e2e import chart, jobs, topology  # noqa: E402
from e2e.harness import (  # noqa: E402
    Cluster,
    cluster_env,
    local_cluster,
    stop_local_cluster,
    wait_for,
)
from e2e.kueue_process import KueueProcess  # noqa: E402
from e2e.operator_process import OperatorProcess  # noqa: E402
from e2e.test_hotswap import NOT_READY, REQUIRED_RACK, install_hotswap_queue, make_rack  # noqa: E402

from tas import __version__ as tas_version  # noqa: E402
from tas.kube import Kube, pod_path  # noqa: E402
from tas.kube.kubeconfig import load_connection  # noqa: E402

OURS, KUEUE = "tas-operator", "kueue"
# Each side's cluster: its own directory and ports, away from `make test` (17443/13379), the
# dev cluster (16443/12379) and the other benchmarks (19443/15379).
PORTS = {OURS: (21443, 23379), KUEUE: (22443, 24379)}
# Added to every port above: on a machine where other clusters hold them.
PORT_OFFSET_ENV = "TAS_VS_PORT_OFFSET"
STAGES = ("sample", "job64", "live", "drain", "hotswap", "placement", "restart")
EXAMPLES = ROOT / "examples" / "kueue-tas"
SAMPLE_JOB = "tas-sample-preferred"
PLACEMENT_GROUP = "placement"
RESULTS = ROOT / "bench" / "results" / "vs_kueue.json"
# Each side's API server keeps an audit log, so each controller's requests are counted alike,
# by the user agent its clients send.
AUDIT_POLICY = ROOT / "bench" / "audit-policy.yaml"
AGENTS = {OURS: ("tas-operator", "kopf"), KUEUE: ("kueue/",)}
READ_VERBS = frozenset({"get", "list", "watch"})
# Our operator starts from compiled bytecode, as from the image or any pip install (a shell
# with PYTHONDONTWRITEBYTECODE set would otherwise compile every module at each start); the
# bytecode goes to a cache of its own, never into the checkout.
BYTECODE = {
    "PYTHONDONTWRITEBYTECODE": "",
    "PYTHONPYCACHEPREFIX": str(Path.home() / ".cache" / "tas-operator" / "pycache"),
}
# After the last admission a controller still resumes Jobs, ungates pods and records events:
# counted until it has sent nothing but lease renewals for QUIET_S (at most SETTLE_S).
QUIET_S, SETTLE_S = 3, 120
RENEWALS = "leases"


@dataclass
class Params:
    quick: bool
    runs: int
    live_jobs: int
    drain_jobs: int
    sizes: list[tuple[int, int]]
    placement_jobs: int
    placement_shape: topology.Shape
    hotswap_modes: tuple[tuple[str, bool], ...]  # (delete | notready, indexed Job)


def params(args: argparse.Namespace) -> Params:
    sizes = args.sizes or ("300x2000" if args.quick else "1000x10000,5000x50000")
    return Params(
        quick=args.quick,
        runs=args.runs or (2 if args.quick else 3),
        live_jobs=100 if args.quick else 500,
        drain_jobs=200 if args.quick else 1000,
        sizes=[tuple(int(x) for x in s.split("x")) for s in sizes.split(",")],
        placement_jobs=40 if args.quick else 200,
        placement_shape=topology.Shape(
            blocks=2 if args.quick else 4, racks=4 if args.quick else 8, hosts=8
        ),
        hotswap_modes=(
            ("delete", True),
            ("notready", True),
            ("delete", False),
            ("notready", False),
        ),
    )


# ---- one controller on its own cluster ----------------------------------------------------------


class Side:
    """One controller, its cluster and its process, with the stages' common helpers."""

    def __init__(self, name: str, kueue_qps: float | None = None) -> None:
        self.name = name
        offset = int(os.environ.get(PORT_OFFSET_ENV, "0"))
        api, etcd = (port + offset for port in PORTS[name])
        self.env = cluster_env(ROOT / ".cluster" / f"vs-{name}", api, etcd)
        self.env["TAS_AUDIT_POLICY"] = str(AUDIT_POLICY)
        self.kueue_qps = kueue_qps
        self.cluster: Cluster | None = None
        self.proc: OperatorProcess | KueueProcess | None = None

    def up(self) -> None:
        stop_local_cluster(self.env)  # always a fresh cluster
        self.cluster = local_cluster(self.env)
        if self.name == OURS:
            # CRDs, RBAC and webhook configurations as a user installs them; the Deployment's
            # pods match no node: on the kwok nodes they would take room Kueue's side has
            # (ours runs as a host process, as Kueue's does).
            chart.install(self.cluster, "--set-string", "nodeSelector.tas-bench/no-node=true")
            self.proc = OperatorProcess(self.cluster, extra=("--log-level=INFO",), env=BYTECODE)
        else:
            self.proc = KueueProcess(self.cluster, qps=self.kueue_qps)
            self.proc.install()
        add_nodes(self.cluster, topology.Shape(blocks=5, racks=5, hosts=8))  # 200 nodes
        self.proc.start()
        self.install_queues()

    def version(self) -> str:
        return tas_version if self.name == OURS else f"v{self.proc.version}"

    def down(self) -> None:
        if self.proc is not None:
            try:
                self.proc.stop()
            finally:
                self.keep_log()
                if isinstance(self.proc, KueueProcess):
                    self.proc.cleanup()
        stop_local_cluster(self.env)

    def while_down(self) -> contextlib.AbstractContextManager:
        """Jobs created while the controller is stopped get through its webhooks' failurePolicy
        Fail: Kueue's stop() removed its configurations (start() puts them back); ours belong
        to the chart and fail open for the while."""
        if self.name == OURS:
            return chart.webhooks_fail_open(self.cluster)
        return contextlib.nullcontext()

    def keep_log(self) -> None:
        """The controller's log survives its cluster, for a look after the run."""
        target = Path("/tmp") / f"vs_kueue-{self.name}.log"
        target.write_text(self.proc.log())
        print(f"[{self.name}] log kept in {target}", flush=True)

    def install_queues(self) -> None:
        """Kueue's documented TAS example, in v1beta2 (every release compared serves it; Kueue
        v0.15 no longer serves the Topology's v1alpha1) and the benchmarks' big ClusterQueue on
        the same flavor."""
        for name in (
            "topology.yaml",
            "resource-flavor.yaml",
            "cluster-queue.yaml",
            "local-queue.yaml",
        ):
            self.cluster.apply(kueue_api.v1beta2(yaml.safe_load((EXAMPLES / name).read_text())))
        self.cluster.apply(BIG_QUEUE)

    def workload_version(self) -> str:
        """The version the controller stores Workloads in: watched without a conversion."""
        if isinstance(self.proc, KueueProcess):
            return self.proc.stored_version("workloads")
        return kueue_api.V1BETA2

    @property
    def kubeconfig(self) -> str:
        return self.cluster.kubeconfig

    def observe(self, ns: str, pods: bool = True) -> Observer:
        return Observer(self.kubeconfig, ns, pods=pods, version=self.workload_version())

    def start_timed(self, sync_timeout: float = 900) -> float:
        """Start the controller; returns the wall-clock time just before its process started."""
        started = time.time()
        self.proc.start(sync_timeout=sync_timeout)
        return started

    def rss_cpu(self) -> tuple[float, float]:
        return proc_stat(self.proc.proc.pid)

    def api_requests(self, since: float, admitted: int) -> dict:
        """The controller's requests from `since` until it has settled, per admitted
        workload, from the API server's audit log."""
        until = self.settled(since)
        lines = [line for log in audit_logs(self.cluster, since) for line in whole_lines(log)[0]]
        kinds = requests_by_kind(lines, AGENTS[self.name], since, until)
        counts = totals(kinds)
        return {
            "api_requests_per_admitted_workload": counts["all"] / admitted,
            "api_writes_per_admitted_workload": counts["writes"] / admitted,
            "api_requests_by_kind": kinds,
        }

    def settled(self, since: float) -> float:
        """When the controller last sent anything but a lease renewal, once QUIET_S passed
        without one (or SETTLE_S did)."""
        log, deadline = Path(self.cluster.local_dir) / "audit.log", time.time() + SETTLE_S
        last, read_to = since, 0
        while time.time() < deadline:
            lines, read_to = whole_lines(log, read_to)  # only what came since the last look
            for event in controller_events(lines, AGENTS[self.name], since, time.time()):
                if (event.get("objectRef") or {}).get("resource") != RENEWALS:
                    received = datetime.datetime.fromisoformat(event["requestReceivedTimestamp"])
                    last = max(last, received.timestamp())
            if time.time() - last >= QUIET_S:
                break
            time.sleep(1)
        return last


def audit_logs(cluster: Cluster, since: float) -> list[Path]:
    """The API server's audit log and the files it rotated out since `since` (it renames the
    log to audit-<time>.log every 100 MB), oldest first."""
    local = Path(cluster.local_dir)
    rotated = sorted(p for p in local.glob("audit-*.log") if p.stat().st_mtime >= since)
    return [*rotated, local / "audit.log"]


def whole_lines(log: Path, offset: int = 0) -> tuple[list[str], int]:
    """The complete lines of a file the API server is still appending to, from a byte offset,
    and the offset after them: a line half written is left for the next read."""
    with log.open("rb") as f:
        if offset > f.seek(0, os.SEEK_END):
            offset = 0  # the server rotated the log (every 100 MB): a new file
        f.seek(offset)
        appended = f.read()
    complete = appended[: appended.rfind(b"\n") + 1]
    return complete.decode().splitlines(), offset + len(complete)


def count_requests(
    audit_lines: Iterable[str], agents: tuple[str, ...], since: float, until: float
) -> dict[str, int]:
    """Requests received between two wall-clock times from clients whose user agent starts
    with one of `agents`: all of them and the writes (every verb but get, list, watch)."""
    return totals(requests_by_kind(audit_lines, agents, since, until))


def totals(kinds: dict[str, int]) -> dict[str, int]:
    """All requests and the writes among them, from the counts by "verb resource"."""
    writes = sum(n for kind, n in kinds.items() if kind.split(" ", 1)[0] not in READ_VERBS)
    return {"all": sum(kinds.values()), "writes": writes}


def requests_by_kind(
    audit_lines: Iterable[str], agents: tuple[str, ...], since: float, until: float
) -> dict[str, int]:
    """The same requests by verb and resource ("patch workloads/status"), most first."""
    kinds: dict[str, int] = {}
    for event in controller_events(audit_lines, agents, since, until):
        ref = event.get("objectRef") or {}
        resource = ref.get("resource", event.get("requestURI", "?").split("?")[0])
        if ref.get("subresource"):
            resource += "/" + ref["subresource"]
        key = f"{event.get('verb')} {resource}"
        kinds[key] = kinds.get(key, 0) + 1
    return dict(sorted(kinds.items(), key=lambda kv: -kv[1]))


def controller_events(
    audit_lines: Iterable[str], agents: tuple[str, ...], since: float, until: float
) -> Iterator[dict]:
    for line in audit_lines:
        event = json.loads(line)
        if not event.get("userAgent", "").startswith(agents):
            continue
        received = datetime.datetime.fromisoformat(event["requestReceivedTimestamp"])
        if since <= received.timestamp() <= until:
            yield event


@contextlib.contextmanager
def stage_namespace(side: Side, pods: bool = True) -> Iterator[tuple[str, Observer]]:
    """A namespace with LocalQueue `q` (ClusterQueue `bench`) watched by an Observer; dropped
    with its pods afterwards."""
    ns = namespace(side.cluster)
    obs = side.observe(ns, pods=pods)
    try:
        yield ns, obs
    finally:
        obs.close()
        drop_namespace(side.cluster, ns)
        # Gone entirely, Jobs and Workloads too: a controller still reconciling a terminating
        # namespace's Jobs (creates refused as "being terminated") would count in the next run.
        side.cluster.kubectl(
            "wait", "--for=delete", f"namespace/{ns}", "--timeout=600s", check=False
        )


def delete_job(side: Side, ns: str, name: str) -> None:
    side.cluster.kubectl("delete", "job", name, "-n", ns, "--wait=true", "--timeout=120s")


# ---- stages ------------------------------------------------------------------------------------


def stage_sample(side: Side, p: Params) -> dict:
    obs = side.observe("default")
    try:
        body = yaml.safe_load((EXAMPLES / "sample-job.yaml").read_text())
        body["metadata"].pop("generateName", None)
        body["metadata"]["name"] = SAMPLE_JOB
        t0 = time.time()
        create(side.cluster, "default", [body])
        pods = obs.wait_running(SAMPLE_JOB, 40, timeout=300)
        wl = obs.workload(SAMPLE_JOB)
        placement: dict[str, int] = {}
        for pod in pods.values():
            placement[pod.node] = placement.get(pod.node, 0) + 1
        result = {
            "admitted_s": wl.admitted - t0,
            "all_running_s": max(pod.running for pod in pods.values()) - t0,
            "topology_assignment": wl.assignments[-1][1],
            "placement": dict(sorted(placement.items())),
        }
        delete_job(side, "default", SAMPLE_JOB)
        obs.wait_pods_gone()
        return result
    finally:
        obs.close()


def job64_body(name: str) -> dict:
    return jobs.job(
        name,
        "q",
        pods=64,
        cpu="1",
        annotations={jobs.PREFIX + "podset-preferred-topology": topology.RACK_LABEL},
    )


def stage_job64(side: Side, p: Params) -> dict:
    with stage_namespace(side, pods=True) as (ns, obs):
        runs = []
        for i in range(p.runs):
            name = f"big{i}"
            t0 = time.time()
            create(side.cluster, ns, [job64_body(name)])
            pods = obs.wait_running(name, 64)
            runs.append(
                {
                    "admitted_s": obs.workload(name).admitted - t0,
                    "all_running_s": max(pod.running for pod in pods.values()) - t0,
                }
            )
            delete_job(side, ns, name)
            obs.wait_pods_gone()
        return {
            "median_all_running_s": statistics.median(r["all_running_s"] for r in runs),
            "median_admitted_s": statistics.median(r["admitted_s"] for r in runs),
            "runs": runs,
        }


def live_run(side: Side, p: Params) -> dict:
    with stage_namespace(side, pods=False) as (ns, obs):
        _, cpu0 = side.rss_cpu()
        where = ClusterCpu(side.cluster, side.proc)
        reviews_before = api_server_reviews(side.cluster)
        t0 = time.time()
        latencies = create(side.cluster, ns, [small_job(f"s{i}") for i in range(p.live_jobs)])
        done = obs.wait_admitted(p.live_jobs)
        cores = where.stop()
        reviews = review_latency(reviews_before, api_server_reviews(side.cluster))
        _, cpu1 = side.rss_cpu()
        last = max(done.values()) - t0
        return {
            "first_create_to_last_admitted_s": last,
            "admitted_per_s": p.live_jobs / last,
            "cpu_ms_per_admitted_workload": 1000 * (cpu1 - cpu0) / p.live_jobs,
            # each create passes the controller's webhooks while it admits the others
            "job_create_ms_p50": 1000 * percentile(latencies, 0.50),
            "job_create_ms_p99": 1000 * percentile(latencies, 0.99),
            # how long the API server waited for the controller's webhooks, per webhook
            "webhook_reviews": reviews,
            **job_reviews(reviews),
            **side.api_requests(t0, p.live_jobs),
            "where": cores,
        }


def job_reviews(reviews: dict[str, dict]) -> dict[str, float]:
    """The slowest p50 and p99 among the webhooks that reviewed the Jobs (both sides name
    them after jobs: Kueue's mjob/vjob, ours after the path; only batch Jobs are made here)."""
    jobs = [r for name, r in reviews.items() if "job" in name and r["ms_p99"] is not None]
    if not jobs:
        return {}
    return {
        "job_webhook_ms_p50": max(r["ms_p50"] for r in jobs),
        "job_webhook_ms_p99": max(r["ms_p99"] for r in jobs),
    }


def drain_run(side: Side, p: Params) -> dict:
    with stage_namespace(side, pods=False) as (ns, obs):
        side.proc.stop()
        with side.while_down():
            create(
                side.cluster, ns, [small_job(f"d{i}", suspend=True) for i in range(p.drain_jobs)]
            )
        started = side.start_timed()
        where = ClusterCpu(side.cluster, side.proc)
        done = obs.wait_admitted(p.drain_jobs)
        cores = where.stop()
        _, cpu = side.rss_cpu()
        last = max(done.values()) - started
        return {
            "start_to_first_admitted_s": min(done.values()) - started,
            "start_to_last_admitted_s": last,
            "admitted_per_s": p.drain_jobs / last,
            "cpu_ms_per_admitted_workload": 1000 * cpu / p.drain_jobs,
            # from process start: what it takes to come back and admit the whole queue
            **side.api_requests(started, p.drain_jobs),
            "where": cores,
        }


def medians_of(runs: list[dict], **extra) -> dict:
    """Each numeric field's median over the runs, with the runs themselves."""
    numeric = {k for r in runs for k, v in r.items() if isinstance(v, (int, float))}
    return {
        **extra,
        **{
            k: statistics.median(r[k] for r in runs if isinstance(r.get(k), (int, float)))
            for k in sorted(numeric)
        },
        "runs": runs,
    }


def stage_live(side: Side, p: Params) -> dict:
    return medians_of([live_run(side, p) for _ in range(p.runs)], jobs=p.live_jobs)


def stage_drain(side: Side, p: Params) -> dict:
    return medians_of([drain_run(side, p) for _ in range(p.runs)], jobs=p.drain_jobs)


HOTSWAP_RECOVERY_S = 300  # ours took 140 s from a deletion before this bench


def hotswap_run(side: Side, failure: str, indexed: bool) -> dict:
    """A 4-pod rack-required Job on a rack of 3 hosts (BestFit fills two, one is spare); one of
    its nodes fails. Times from the failure, with what happened in between."""
    key = failure if indexed else f"{failure}-nonindexed"
    hosts = make_rack(side.cluster, f"hs{key}")
    ns = side.cluster.create_namespace(f"hs{key}")
    side.cluster.apply(kueue_api.local_queue("q", "hs"), ns)
    obs = side.observe(ns)
    try:
        body = jobs.job("train", "q", pods=4, cpu="2", annotations=REQUIRED_RACK, indexed=indexed)
        create(side.cluster, ns, [body])
        before = obs.wait_running("train", 4, timeout=120)
        failed = sorted({pod.node for pod in before.values()})[0]
        t0 = time.time()
        if failure == "delete":
            side.cluster.kubectl("delete", "node", failed, "--wait=false")
        else:
            side.cluster.kubectl("label", "node", failed, f"{NOT_READY}=true")

        def reassigned() -> float | None:
            for at, current in obs.workload("train").assignments:
                names = {
                    v for ta in current or [] if ta for d in ta["domains"] for v in d["values"]
                }
                if at >= t0 and current and failed not in names:
                    return at
            return None

        def running_again() -> dict | None:
            pods = obs.running("train")
            ok = len(pods) == 4 and all(
                pd.node in hosts and pd.node != failed for pd in pods.values()
            )
            return pods if ok else None

        deadline = t0 + HOTSWAP_RECOVERY_S
        wait_for(
            lambda: reassigned() or time.time() > deadline,
            timeout=HOTSWAP_RECOVERY_S + 5,
            interval=0.2,
        )
        wait_for(
            lambda: running_again() or time.time() > deadline,
            timeout=HOTSWAP_RECOVERY_S + 5,
            interval=0.1,
        )
        return {
            "failed_node": failed,
            **hotswap_timeline(obs, t0, failed, set(before), running_again()),
        }
    finally:
        obs.close()
        side.cluster.kubectl(
            "delete", "namespace", ns, "--wait=true", "--timeout=300s", check=False
        )
        for host in hosts:
            side.cluster.kubectl(
                "delete", "node", host, "--wait=false", "--ignore-not-found", check=False
            )


def hotswap_timeline(
    obs: Observer, t0: float, failed: str, before: set[str], running: dict | None
) -> dict:
    """Seconds from the failure to each step seen; None for a step never seen."""
    seen = obs.pods_of("train")
    wl = obs.workload("train")
    old = [seen[n] for n in before if seen[n].node == failed]
    new = [pd for n, pd in seen.items() if n not in before]

    def at(values: list[float | None], pick=max) -> float | None:
        values = [v for v in values if v is not None]
        return pick(values) - t0 if values else None

    assigned = [a for a, current in wl.assignments if a >= t0]
    return {
        "recovered": running is not None,
        "unhealthy_node_listed_s": at([wl.marks.get("unhealthy")]),
        "new_assignment_s": at(assigned[-1:]),
        "evicted": "evicted" in wl.marks,
        "old_pods_terminating_s": at([pd.ended for pd in old]),
        "old_pods_gone_s": at([pd.gone_at for pd in old]),
        "replacement_pods_created_s": at([pd.created for pd in new], min),
        "replacement_pods_ungated_s": at([pd.ungated for pd in new]),
        "replacement_pods_bound_s": at([pd.bound for pd in new]),
        "all_running_in_rack_s": at([pd.running for pd in running.values()]) if running else None,
        "pods_at_the_end": {n: [pd.phase, pd.node, pd.ended is not None] for n, pd in seen.items()},
    }


def stage_hotswap(side: Side, p: Params) -> dict:
    install_hotswap_queue(side.cluster, "hs")
    out = {}
    for failure, indexed in p.hotswap_modes:
        key = failure if indexed else f"{failure}-nonindexed"
        out[key] = hotswap_run(side, failure, indexed)
    return out


# ---- placement agreement -------------------------------------------------------------------------


def placement_nodes(shape: topology.Shape, seed: int = 12) -> list[dict]:
    """Mixed node sizes (4, 8, 8, 16 cpu), seeded: the same nodes on both clusters."""
    rng = random.Random(seed)
    out = []
    for b in range(1, shape.blocks + 1):
        for r in range(1, shape.racks + 1):
            for h in range(1, shape.hosts + 1):
                cpu = rng.choice(["4", "8", "8", "16"])
                name = f"p{b}-r{r}-h{h}"
                node = topology.node_manifest(
                    name, f"p{b}", f"p{b}-r{r}", {"cpu": cpu, "memory": "64Gi", "pods": "110"}
                )
                node["metadata"]["labels"][topology.NODE_GROUP_LABEL] = PLACEMENT_GROUP
                out.append(node)
    return out


def placement_usage(nodes: list[dict], seed: int = 13) -> list[dict]:
    """Pods bound straight to a fifth of the nodes (1-3 cpu): usage both must count."""
    rng = random.Random(seed)
    pods = []
    for node in rng.sample(nodes, len(nodes) // 5):
        cap = int(node["status"]["allocatable"]["cpu"])
        cpu = rng.randint(1, min(3, cap - 1))
        pods.append(
            jobs.bound_pod(
                f"busy-{node['metadata']['name']}", node["metadata"]["name"], cpu=str(cpu)
            )
        )
    return pods


def placement_queue() -> list[dict]:
    levels = [{"nodeLabel": label} for label in topology.LEVELS]
    kueue = kueue_api.V1BETA2
    quota = [
        {"name": "cpu", "nominalQuota": "100000"},
        {"name": "memory", "nominalQuota": "1000Ti"},
    ]
    return [
        {
            "apiVersion": kueue,
            "kind": "Topology",
            "metadata": {"name": PLACEMENT_GROUP},
            "spec": {"levels": levels},
        },
        {
            "apiVersion": kueue,
            "kind": "ResourceFlavor",
            "metadata": {"name": PLACEMENT_GROUP},
            "spec": {
                "nodeLabels": {topology.NODE_GROUP_LABEL: PLACEMENT_GROUP},
                "topologyName": PLACEMENT_GROUP,
            },
        },
        {
            "apiVersion": kueue,
            "kind": "ClusterQueue",
            "metadata": {"name": PLACEMENT_GROUP},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory"],
                        "flavors": [{"name": PLACEMENT_GROUP, "resources": quota}],
                    }
                ],
            },
        },
    ]


def placement_sequence(count: int, seed: int = 14) -> list[tuple[str, object]]:
    """("job", (name, kind, body)) and ("finish", name) steps, seeded: the same on both sides."""
    rng = random.Random(seed)
    block, rack, host = topology.BLOCK_LABEL, topology.RACK_LABEL, topology.HOSTNAME_LABEL
    a = jobs.PREFIX
    kinds = [
        (
            "required-rack",
            lambda: rng.choice([2, 4, 6, 8, 12, 16]),
            {a + "podset-required-topology": rack},
        ),
        (
            "required-block",
            lambda: rng.choice([8, 16, 24, 32, 48]),
            {a + "podset-required-topology": block},
        ),
        ("required-host", lambda: rng.choice([1, 2, 3, 4]), {a + "podset-required-topology": host}),
        (
            "preferred-rack",
            lambda: rng.choice([4, 8, 16, 24, 32]),
            {a + "podset-preferred-topology": rack},
        ),
        (
            "preferred-block",
            lambda: rng.choice([16, 32, 48, 64]),
            {a + "podset-preferred-topology": block},
        ),
        (
            "preferred-host",
            lambda: rng.choice([1, 2, 4, 8]),
            {a + "podset-preferred-topology": host},
        ),
        (
            "unconstrained",
            lambda: rng.randint(1, 32),
            {a + "podset-unconstrained-topology": "true"},
        ),
        ("implied", lambda: rng.randint(1, 16), {}),
        (
            "rack-slices-in-block",
            lambda: rng.choice([8, 16, 24]),
            {
                a + "podset-required-topology": block,
                a + "podset-slice-required-topology": rack,
                a + "podset-slice-size": "4",
            },
        ),
        (
            "host-slices-preferred-rack",
            lambda: rng.choice([4, 8, 12, 16]),
            {
                a + "podset-preferred-topology": rack,
                a + "podset-slice-required-topology": host,
                a + "podset-slice-size": "2",
            },
        ),
    ]
    steps: list[tuple[str, object]] = []
    running: list[str] = []
    for i in range(count):
        kind, size, annotations = rng.choice(kinds)
        name = f"j{i:03d}-{kind}"
        body = jobs.job(
            name, "q", pods=size(), cpu=rng.choice(["1", "1", "2"]), annotations=dict(annotations)
        )
        steps.append(("job", (name, kind, body)))
        running.append(name)
        if i >= 8 and rng.random() < 0.45:
            steps.append(("finish", running.pop(rng.randrange(len(running) - 1))))
    return steps


async def mark_succeeded(kubeconfig: str, ns: str, pods: list[str]) -> None:
    """What a kubelet writes when a container exits 0: the Job counts the pod as succeeded."""
    kube = Kube(load_connection(kubeconfig), component="bench")
    body = {"status": {"phase": "Succeeded"}}
    try:
        for name in pods:
            await kube.patch(pod_path(ns, name) + "/status", body)
    finally:
        await kube.close()


def place_one(side: Side, obs: Observer, ns: str, name: str, body: dict) -> dict:
    create(side.cluster, ns, [body])

    def decided() -> dict | None:
        wl = obs.workload(name)
        if wl is None:
            return None
        if wl.admitted is not None:
            # Compared decoded (v1beta1's domains); the stored encoding is kept beside it.
            return {
                "admitted": True,
                "assignment": wl.assignments[-1][1],
                "stored": stored_assignment(wl.obj),
            }
        cond = condition(wl.obj, "QuotaReserved")
        if cond and cond["status"] == "False" and cond.get("message"):
            return {"admitted": False, "message": cond["message"]}
        return None

    outcome = wait_for(decided, timeout=120, interval=0.05, what=f"{name} admitted or pending")
    if not outcome["admitted"]:  # out of the way, so that no later event admits it
        delete_job(side, ns, name)
        wait_for(lambda: obs.workload(name).gone, timeout=120, what=f"{name}'s workload gone")
    return outcome


def finish_one(side: Side, obs: Observer, ns: str, name: str, count: int) -> None:
    pods = obs.wait_running(name, count, timeout=300)
    asyncio.run(mark_succeeded(side.kubeconfig, ns, sorted(pods)))
    wait_for(
        lambda: (c := condition(obs.workload(name).obj, "Finished")) and c["status"] == "True",
        timeout=120,
        interval=0.05,
        what=f"{name} finished",
    )


def remove_one(side: Side, obs: Observer, ns: str, name: str) -> None:
    """Delete a Job and wait until its Workload and pods are gone: its capacity is free again."""
    delete_job(side, ns, name)
    wait_for(lambda: obs.workload(name).gone, timeout=120, what=f"{name}'s workload gone")
    wait_for(
        lambda: all(pod.gone for pod in obs.pods_of(name).values()),
        timeout=300,
        what=f"{name}'s pods gone",
    )


def setup_placement(side: Side, p: Params) -> tuple[str, Observer]:
    nodes = placement_nodes(p.placement_shape)
    add_nodes(side.cluster, nodes)  # and waits until they are Ready and schedulable
    for doc in placement_queue():
        side.cluster.apply(doc)
    busy = side.cluster.create_namespace("busy")
    create(side.cluster, busy, placement_usage(nodes))
    ns = side.cluster.create_namespace("placement")
    side.cluster.apply(kueue_api.local_queue("q", PLACEMENT_GROUP), ns)
    return ns, side.observe(ns)


def same_outcome(x: dict, y: dict) -> bool:
    return all(x.get(k) == y.get(k) for k in ("admitted", "assignment", "message"))


def stage_placement(sides: list[Side], p: Params) -> dict:
    """The fixed sequence applied to every side in lockstep, one Job at a time, each decision
    compared at once. A Job decided differently is recorded and removed from every side, so
    that one difference does not change what all later Jobs find: every later comparison
    still starts from identical states."""
    watched = {side.name: setup_placement(side, p) for side in sides}
    outcomes: dict[str, dict] = {}
    differences: list[dict] = []
    same_encoding: set[str] = set()
    t0 = time.time()
    try:
        for step, arg in placement_sequence(p.placement_jobs):
            if step == "finish":
                if outcomes.get(arg, {}).get("admitted") and not outcomes[arg].get("removed"):
                    for side in sides:
                        ns, obs = watched[side.name]
                        finish_one(side, obs, ns, arg, outcomes[arg]["pods"])
                    outcomes[arg]["finished_later"] = True
                continue
            name, kind, body = arg
            seen = {}
            for side in sides:
                ns, obs = watched[side.name]
                seen[side.name] = place_one(side, obs, ns, name, body)
            first = seen[sides[0].name]
            outcomes[name] = {"kind": kind, "pods": body["spec"]["parallelism"], **first}
            if all(other.get("stored") == first.get("stored") for other in seen.values()):
                same_encoding.add(name)
            if all(same_outcome(first, other) for other in seen.values()):
                continue
            differences.append({"job": name, "kind": kind, "pods": outcomes[name]["pods"], **seen})
            differences[-1]["explanation"] = explain(differences[-1])
            outcomes[name]["removed"] = True
            for side in sides:
                if seen[side.name]["admitted"]:
                    ns, obs = watched[side.name]
                    remove_one(side, obs, ns, name)
            print(f"[placement] {name} differs: {differences[-1]}"[:2000], flush=True)
        return {
            "nodes": len(placement_nodes(p.placement_shape)),
            "jobs": len(outcomes),
            "identical": len(outcomes) - len(differences),
            f"admitted_by_{sides[0].name}": sum(1 for o in outcomes.values() if o["admitted"]),
            "finished_in_between": sum(1 for o in outcomes.values() if o.get("finished_later")),
            # Of the identical decisions, those whose stored v1beta2 encodings are identical too.
            "stored_encoding_identical": sum(
                1 for name in same_encoding if name not in {d["job"] for d in differences}
            ),
            "wall_s": time.time() - t0,
            "differences": differences,
            "outcomes": outcomes,
        }
    finally:
        for _, obs in watched.values():
            obs.close()


def explain(diff: dict) -> str:
    """The known cause of a difference, or "unexplained" (to be looked into)."""
    ours, kueue = diff.get(OURS) or {}, diff.get(KUEUE) or {}
    if (
        diff["kind"] in ("unconstrained", "implied")
        and ours.get("admitted")
        and "doesn't allow to fit any of" in (kueue.get("message") or "")
    ):
        return (
            "Kueue v0.15.0 bug kueue#8157 (fixed by kueue#8168, after v0.15.0): with "
            "LeastFreeCapacity (unconstrained or implied), a request that needs more than one "
            "host fails as soon as any host of the flavor has no room for a pod: the hosts are "
            "sorted with the full ones first and the loop stops at the first of them"
        )
    return "unexplained"


# ---- restart and memory --------------------------------------------------------------------------


def grow(side: Side, nodes: int, pods: int, load_ns: str) -> None:
    """The cluster at `nodes` nodes (the 200 base nodes among them) and `pods` pods bound to
    them (10m cpu each, no Job: kwok runs them cheaply)."""
    shape = topology.Shape(blocks=5, racks=10, hosts=max(1, nodes // 50))
    add_nodes(side.cluster, shape)
    names = [n["metadata"]["name"] for n in topology.nodes(shape)]
    have = len(side.cluster.get_json("pods", "-n", load_ns)["items"])
    bodies = [jobs.bound_pod(f"p{i}", names[i % len(names)]) for i in range(have, pods)]
    for i in range(0, len(bodies), 5000):
        create(side.cluster, load_ns, bodies[i : i + 5000])


def restart_size(side: Side, p: Params, nodes: int, pods: int, load_ns: str) -> dict:
    grow(side, nodes, pods, load_ns)
    ns = namespace(side.cluster)
    obs = side.observe(ns)  # the probes' pods only: the grown ones are in load_ns
    try:
        time.sleep(10)  # let the last creates settle before the first stop
        runs = []
        for r in range(p.runs):
            probe = f"probe{r}"
            side.proc.stop()
            with side.while_down():
                create(side.cluster, ns, [small_job(probe, suspend=True)])
            started = side.start_timed()
            first = obs.wait_admitted(1, prefix=probe, timeout=900)[probe]
            rss, cpu = side.rss_cpu()
            pod = wait_for(  # the Job started: its controller made a pod
                lambda: min((seen.created for seen in obs.pods_of(probe).values()), default=0),  # noqa: B023
                timeout=120,
                interval=0.02,
                what=f"a pod of {probe}",
            )
            time.sleep(max(0.0, started + 20 - time.time()))
            rss20, _ = side.rss_cpu()
            runs.append(
                {
                    "first_admission_s": first - started,
                    "first_pod_s": pod - started,
                    "rss_mib_at_admission": rss,
                    "rss_mib_20s": rss20,
                    "cpu_s_at_admission": cpu,
                }
            )
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        return {"nodes": nodes, "pods": pods, **med, "runs": runs}
    finally:
        obs.close()


def stage_restart(side: Side, p: Params) -> list[dict]:
    load_ns = side.cluster.create_namespace("load")
    out = []
    for nodes, pods in p.sizes:
        out.append(restart_size(side, p, nodes, pods, load_ns))
        print(f"[{side.name}] restart {nodes}x{pods}: {out[-1]}", flush=True)
    return out


STAGE_FUNCS = {
    "sample": stage_sample,
    "job64": stage_job64,
    "live": stage_live,
    "drain": stage_drain,
    "hotswap": stage_hotswap,
    "restart": stage_restart,
}


def run_stage(side: Side, stage: str, p: Params, into: dict) -> None:
    """One stage on one side, timed into `into`; a failed stage does not lose the others."""
    into.setdefault("load_at_stage_start", {})[stage] = os.getloadavg()
    t0 = time.monotonic()
    try:
        into.setdefault("stages", {})[stage] = STAGE_FUNCS[stage](side, p)
    except Exception as exc:
        traceback.print_exc()
        into["stages"][stage] = {"error": f"{type(exc).__name__}: {exc}"[:2000]}
    took = time.monotonic() - t0
    print(f"[{side.name}] {stage} ({took:.0f} s): {into['stages'][stage]}"[:3000], flush=True)


def run_together(
    names: list[str], stages: list[str], p: Params, qps: float | None, results: dict
) -> None:
    """Both clusters up at once (200 nodes each), each stage run on one side right after the
    other (which side goes first alternates), so that the machine's other load, which drifts
    over minutes, falls on both alike; the placement stage runs them in lockstep."""
    sides = [Side(name, qps) for name in names]
    try:
        for side in sides:
            side.up()
            results.setdefault(side.name, {})["version"] = side.version()
        for i, stage in enumerate(stages):
            if stage == "placement":
                try:
                    results["placement"] = stage_placement(sides, p)
                except Exception as exc:
                    traceback.print_exc()
                    results["placement"] = {"error": f"{type(exc).__name__}: {exc}"[:2000]}
                continue
            for side in sides if i % 2 == 0 else sides[::-1]:
                run_stage(side, stage, p, results[side.name])
    finally:
        for side in sides:
            side.down()


def run_alone(name: str, stages: list[str], p: Params, qps: float | None, results: dict) -> None:
    """One side on its own cluster with nothing else of the bench running: for the restart
    stage, whose thousands of nodes would load the machine for the other side too."""
    side = Side(name, qps)
    try:
        side.up()
        results.setdefault(name, {})["version"] = side.version()
        for stage in stages:
            run_stage(side, stage, p, results[name])
    finally:
        side.down()


# ---- the table -----------------------------------------------------------------------------------


def rows(results: dict) -> list[tuple]:
    """(measure, ours, Kueue, unit): what the README table shows."""
    o, k = results.get(OURS, {}).get("stages", {}), results.get(KUEUE, {}).get("stages", {})
    out: list[tuple] = []

    def get(stages: dict, *path):
        value = stages
        for key in path:
            if not isinstance(value, (dict, list)):
                return None
            try:
                value = value[key]
            except (KeyError, IndexError, TypeError):
                return None
        return value if isinstance(value, (int, float)) else None

    def row(label: str, unit: str, *path) -> None:
        out.append((label, get(o, *path), get(k, *path), unit))

    live = get(o, "live", "jobs") or get(k, "live", "jobs") or 0
    drain = get(o, "drain", "jobs") or get(k, "drain", "jobs") or 0
    for label, unit, *path in (
        ("Kueue's TAS sample (40 pods): create -> admitted", "s", "sample", "admitted_s"),
        ("Kueue's TAS sample: create -> all 40 pods Running", "s", "sample", "all_running_s"),
        ("64-pod Job: create -> all pods Running (median)", "s", "job64", "median_all_running_s"),
        ("64-pod Job: create -> admitted (median)", "s", "job64", "median_admitted_s"),
        (f"live: {live:,} two-pod Jobs, first create -> last admitted", "s", "live",
         "first_create_to_last_admitted_s"),
        ("live: admitted per second", "/s", "live", "admitted_per_s"),
        ("live: controller CPU per admitted Job", "ms", "live", "cpu_ms_per_admitted_workload"),
        ("live: Job create through the webhooks, p50", "ms", "live", "job_create_ms_p50"),
        ("live: Job create through the webhooks, p99", "ms", "live", "job_create_ms_p99"),
        ("live: Job webhook review p99 (the API server's view)", "ms", "live", "job_webhook_ms_p99"),
        ("live: controller API requests per admitted Job", "", "live",
         "api_requests_per_admitted_workload"),
        ("live: controller API writes per admitted Job", "", "live",
         "api_writes_per_admitted_workload"),
        (f"drain: {drain:,} queued Jobs, process start -> last admitted", "s", "drain",
         "start_to_last_admitted_s"),
        ("drain: process start -> first admitted", "s", "drain", "start_to_first_admitted_s"),
        ("drain: controller CPU per admitted Job", "ms", "drain", "cpu_ms_per_admitted_workload"),
        ("drain: controller API requests per admitted Job", "", "drain",
         "api_requests_per_admitted_workload"),
        ("drain: controller API writes per admitted Job", "", "drain",
         "api_writes_per_admitted_workload"),
    ):  # fmt: skip
        row(label, unit, *path)
    for i, size in enumerate(o.get("restart") or k.get("restart") or []):
        if not isinstance(size, dict):
            continue
        label = f"{size['nodes']:,} nodes + {size['pods']:,} pods"
        for what, unit, field in (
            ("restart, {}: process start -> first admission", "s", "first_admission_s"),
            ("restart, {}: CPU seconds until then", "s", "cpu_s_at_admission"),
            ("resident memory, {}: at first admission", "MiB", "rss_mib_at_admission"),
            ("resident memory, {}: 20 s after start", "MiB", "rss_mib_20s"),
        ):
            row(what.format(label), unit, "restart", i, field)
    for key, what in (
        ("delete", "deleted (Indexed Job)"),
        ("notready", "NotReady (Indexed Job)"),
        ("delete-nonindexed", "deleted (NonIndexed Job)"),
        ("notready-nonindexed", "NotReady (NonIndexed Job)"),
    ):
        row(f"hot swap, node {what}: -> new assignment", "s", "hotswap", key, "new_assignment_s")
        row(
            f"hot swap, node {what}: -> all pods Running in the rack",
            "s",
            "hotswap",
            key,
            "all_running_in_rack_s",
        )
        for i, stages in ((1, o), (2, k)):  # say so where a side never recovered
            if (stages.get("hotswap") or {}).get(key, {}).get("recovered") is False:
                label, *cells = out[-1]
                cells[i - 1] = f"not recovered in {HOTSWAP_RECOVERY_S} s"
                out[-1] = (label, *cells)
    return out


def table(results: dict) -> str:
    ours_v = results.get(OURS, {}).get("version", "?")
    kueue_v = results.get(KUEUE, {}).get("version", "?")
    lines = [
        f"| measure | tas-operator {ours_v} | Kueue {kueue_v} | ours / Kueue |",
        "|---|---:|---:|---:|",
    ]
    for label, x, y, unit in rows(results):
        fx, fy = (
            c if isinstance(c, str) else "-" if c is None else f"{c:.2f} {unit}" for c in (x, y)
        )
        numbers = all(isinstance(c, (int, float)) and c for c in (x, y))
        ratio = f"{x / y:.2f}" if numbers else "-"
        lines.append(f"| {label} | {fx} | {fy} | {ratio} |")
    agreement = results.get("placement")
    if agreement and "identical" in agreement:
        lines.append(
            f"| placement: {agreement['jobs']} Jobs on {agreement['nodes']} nodes, "
            f"topologyAssignment one by one | {agreement['identical']} of {agreement['jobs']} "
            "identical (both sides in lockstep) | | |"
        )
    sample = results.get("sample_same_hosts")
    if sample is not None:
        lines.append(
            f"| Kueue's TAS sample: pods on the same hosts | {'yes' if sample else 'no'} | | |"
        )
    return "\n".join(lines)


def measured_commit() -> str:
    """The commit measured, marked when the tree had changes on top of it."""
    git = ["git", "-C", str(ROOT)]
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()  # fmt: skip
    return head.strip() + ("+changes" if dirty else "")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes; writes to /tmp")
    parser.add_argument("--stages", default=",".join(STAGES))
    parser.add_argument("--sides", default=f"{OURS},{KUEUE}", help="which controllers, in order")
    parser.add_argument("--runs", type=int, default=None, help="runs per timed stage (default 3)")
    parser.add_argument("--sizes", default=None, help="NODESxPODS,... for the restart stage")
    parser.add_argument(
        "--kueue-qps", type=float, default=None, help="override Kueue's shipped client QPS"
    )
    parser.add_argument(
        "--kueue-version", default=None, help="another Kueue release than e2e/versions.env's"
    )
    parser.add_argument("--output", default=None)
    parser.add_argument("--table", metavar="JSON", help="print the README table of a results file")
    args = parser.parse_args()
    if args.table:
        print(table(json.loads(Path(args.table).read_text())))
        return 0
    # A stopped run still stops its controller and cluster: the `finally` blocks must run.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if args.kueue_version:
        os.environ["TAS_KUEUE_VERSION"] = args.kueue_version.removeprefix("v")
    p = params(args)
    stages = [s for s in args.stages.split(",") if s]
    sides = [s for s in args.sides.split(",") if s]
    unknown = set(stages) - set(STAGES) | set(sides) - {OURS, KUEUE}
    if unknown:
        parser.error(f"unknown stage or side: {sorted(unknown)}")
    full = (
        not args.quick
        and stages == list(STAGES)
        and set(sides) == {OURS, KUEUE}
        and not (args.kueue_version or args.kueue_qps or args.sizes or args.runs)
    )
    output = Path(
        args.output
        or (
            RESULTS
            if full
            else "/tmp/vs_kueue_quick.json"
            if args.quick
            else "/tmp/vs_kueue_partial.json"
        )
    )
    # As the control-loop bench: kwok renews each node's lease every 10 s (a real kubelet's
    # rate), or thousands of nodes' heartbeats alone would fill the API server.
    os.environ.setdefault("TAS_NODE_LEASE_SECONDS", "40")
    os.environ.setdefault("TAS_NODE_GRACE_SECONDS", "120")
    results: dict = {
        "commit": measured_commit(),
        "machine": {"cpus": os.cpu_count(), "load_at_start": os.getloadavg()},
        "params": {
            k: (v if not isinstance(v, topology.Shape) else vars(v)) for k, v in vars(p).items()
        },
        "kueue_qps": args.kueue_qps,
    }
    together = [s for s in stages if s != "restart"]
    if together:
        run_together(sides, together, p, args.kueue_qps, results)
        output.write_text(json.dumps(results, indent=2, default=str))
    for name in sides if "restart" in stages else ():
        run_alone(name, ["restart"], p, args.kueue_qps, results)
        output.write_text(json.dumps(results, indent=2, default=str))
    o, k = results.get(OURS, {}).get("stages", {}), results.get(KUEUE, {}).get("stages", {})
    if "placement" in o.get("sample", {}) and "placement" in k.get("sample", {}):
        results["sample_same_hosts"] = o["sample"]["placement"] == k["sample"]["placement"]
    output.write_text(json.dumps(results, indent=2, default=str))
    print(table(results))
    print(f"written to {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
