"""Chaos: a stream of mixed queued Jobs on 200 nodes while the operator is SIGKILLed again and
again, the API server and etcd are restarted, and nodes go NotReady and come back. The cluster
is sampled throughout; what is found is reported (bench/results/chaos.json), never asserted.

    .venv/bin/python bench/chaos.py                # 100 kills, 5 API server and 2 etcd restarts
    .venv/bin/python bench/chaos.py --quick        # 8 kills, 1 of each restart (writes to /tmp)
    .venv/bin/python bench/chaos.py --hostile      # and hostile tenants' objects mixed in

What must stay zero (each sample, or at the end):
- nodes over their allocatable cpu, as booked by the operator (the topology assignments of
  admitted, unfinished workloads) or as bound by the scheduler;
- pods ungated more than once (the operator's log across every restart), and pods running
  ungated outside their workload's assignment (seen in two samples in a row: the pod list and
  the Workload list are read a moment apart);
- Jobs with more than one Workload, Jobs left without one, and workloads that fit but were
  never admitted (after the chaos, every Job fits in the emptying cluster: all must finish).
Also reported: from each kill to the next admission, worst and median.

With --hostile, tenants' objects made to hurt (those of e2e/test_hostile_tenants_*.py) are
mixed in; see `Hostile` for them and for what else must then stay zero.

The operator runs as a Deployment's pod would: killed, it is started again by a supervisor
(the kubelet's part) with the same pod name, so it leads again at once; if it exits by itself
(it lost its lease while the API server was away) it is started again too.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import kueue_api  # noqa: E402
from bench.operator_bench import BIG_QUEUE, add_nodes  # noqa: E402
from e2e import chart, integrations, jobs, topology  # noqa: E402
from e2e.harness import CLUSTER_SH, Cluster, cluster_from_env  # noqa: E402
from e2e.operator_process import OperatorProcess  # noqa: E402
from e2e.test_hostile_tenants_bounds import INT32_MAX, group_pod, leaderworkerset  # noqa: E402
from e2e.test_hostile_tenants_charging import squatter  # noqa: E402
from e2e.test_hostile_tenants_webhooks import job_review, post  # noqa: E402

from tas.api.quantity import parse_quantity  # noqa: E402
from tas.config import MAX_REVIEW_BYTES  # noqa: E402
from tas.handlers.operator import SUSPEND_WEBHOOK  # noqa: E402
from tas.kube import Kube, KubeError  # noqa: E402
from tas.kube.kubeconfig import load_connection  # noqa: E402

NS = "chaos"
SHAPE = topology.Shape(blocks=5, racks=5, hosts=8)  # 200 nodes of 8 cpu
NOT_READY = "node-not-ready.stage.kwok.x-k8s.io"
GATE = "kueue.x-k8s.io/topology"
P = jobs.PREFIX
HOSTILE_NS = "chaos-hostile"
HUGE_GROUP = "999999999"  # under int32: the webhook lets it in; no quota ever holds it
LIMIT_RANGE_CPU = "1"  # what NS's LimitRange gives a container that asks for nothing
UNDER_CAP_REVIEW = 192 << 10


def job_shapes(rng: random.Random) -> tuple[int, str, dict]:
    """(pods, cpu per pod, annotations): the mix of a busy training cluster."""
    kind = rng.choice(["rack", "rack", "block", "preferred", "unconstrained", "slices", "implied"])
    if kind == "rack":
        return (
            rng.randint(2, 8),
            rng.choice(["1", "2"]),
            {P + "podset-required-topology": topology.RACK_LABEL},
        )
    if kind == "block":
        return rng.randint(8, 24), "1", {P + "podset-required-topology": topology.BLOCK_LABEL}
    if kind == "preferred":
        return rng.randint(4, 16), "1", {P + "podset-preferred-topology": topology.RACK_LABEL}
    if kind == "unconstrained":
        return rng.randint(1, 6), "1", {P + "podset-unconstrained-topology": "true"}
    if kind == "slices":
        return (
            2 * rng.randint(2, 6),
            "2",
            {
                P + "podset-required-topology": topology.BLOCK_LABEL,
                P + "podset-slice-required-topology": topology.HOSTNAME_LABEL,
                P + "podset-slice-size": "2",
            },
        )
    return rng.randint(1, 3), "1", {}


def cpu(value: str) -> float:
    return float(parse_quantity(value))


def template_cpu(workload: dict) -> float:
    """A pod's cpu as its containers ask, or as NS's LimitRange gives one that asks nothing
    (--hostile's Jobs): what the scheduler and the kubelet count, whatever the operator did."""
    container = workload["spec"]["podSets"][0]["template"]["spec"]["containers"][0]
    requests = (container.get("resources") or {}).get("requests") or {}
    return cpu(requests.get("cpu", LIMIT_RANGE_CPU))


# ---- the actors ------------------------------------------------------------------------------


class Supervisor:
    """The kubelet's part: the operator container is started again whenever it is not running."""

    def __init__(self, op: OperatorProcess) -> None:
        self.op = op
        self.lock = threading.Lock()
        self.kills: list[float] = []
        self.exits = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            with self.lock:
                if self.op.proc is None or self.op.proc.poll() is not None:
                    if self.op.proc is not None:
                        self.exits += 1
                    self.op.launch()
            time.sleep(0.5)

    def kill(self) -> None:
        with self.lock:
            self.op.kill()
            self.kills.append(time.time())
            time.sleep(random.uniform(0, 1.5))  # the kubelet notices, then starts it again
            self.op.launch()


class Stream:
    """Queued Jobs, one after another, retried until created (while the operator or the API
    server is away they are refused); and Jobs whose pods have run a while are finished."""

    def __init__(self, cluster: Cluster, rng: random.Random, rate: float) -> None:
        self.cluster = cluster
        self.rng = rng
        self.rate = rate
        self.created: dict[str, float] = {}
        self.refusals = 0
        self.stop_creating = threading.Event()
        self.stop = threading.Event()
        self.running_since: dict[str, float] = {}
        self.finished: set[str] = set()

    def run(self) -> None:
        asyncio.run(self._run())

    async def _run(self) -> None:
        kube = Kube(load_connection(self.cluster.kubeconfig), timeout=10)
        try:
            await asyncio.gather(self._create(kube), self._finish(kube))
        finally:
            await kube.close()

    async def _create(self, kube: Kube) -> None:
        """Jobs arrive at `rate` whatever happens: each one is retried on its own while it is
        refused (no operator to serve the webhooks, or no API server), as users' clients do."""
        i, pending = 0, set()
        while not self.stop_creating.is_set():
            pods, per_pod, annotations = job_shapes(self.rng)
            body = jobs.job(f"j{i:05d}", "q", pods=pods, cpu=per_pod, annotations=annotations)
            task = asyncio.create_task(self._create_one(kube, body))
            pending.add(task)
            task.add_done_callback(pending.discard)
            i += 1
            await asyncio.sleep(self.rng.expovariate(self.rate))
        await asyncio.gather(*pending)

    async def _create_one(self, kube: Kube, body: dict) -> None:
        while not self.stop.is_set():
            try:
                await kube.create(f"/apis/batch/v1/namespaces/{NS}/jobs", body)
                break
            except KubeError as exc:
                if exc.conflict:
                    break  # created by the attempt that timed out
                self.refusals += 1
                await asyncio.sleep(1)
        self.created[body["metadata"]["name"]] = time.time()

    async def _finish(self, kube: Kube) -> None:
        """A Job whose pods all run has a random 40-240 s of work; then its pods succeed. With a
        Job a second that keeps about four fifths of the cluster's cpu busy, so some wait."""
        lifetimes: dict[str, float] = {}
        while not self.stop.is_set():
            await asyncio.sleep(2)
            try:
                pods = (await kube.request("GET", f"/api/v1/namespaces/{NS}/pods"))["items"]
            except KubeError:
                continue
            by_job: dict[str, list[dict]] = defaultdict(list)
            for pod in pods:
                by_job[pod["metadata"].get("labels", {}).get("job-name", "")].append(pod)
            now = time.time()
            for name, its in by_job.items():
                live = [p for p in its if p["status"].get("phase") in ("Pending", "Running")]
                if live and all(p["status"].get("phase") == "Running" for p in live):
                    lifetimes.setdefault(name, now + self.rng.uniform(40, 240))
                if (name in lifetimes and now >= lifetimes[name]) or self.stop_creating.is_set():
                    for pod in live:
                        if pod["status"].get("phase") != "Running":
                            continue
                        path = f"/api/v1/namespaces/{NS}/pods/{pod['metadata']['name']}/status"
                        with contextlib.suppress(KubeError):
                            await kube.patch(path, {"status": {"phase": "Succeeded"}})


class Sampler:
    """Reads the cluster every couple of seconds and keeps what it finds."""

    def __init__(self, cluster: Cluster, node_cpu: float) -> None:
        self.cluster = cluster
        self.node_cpu = node_cpu
        self.samples = 0
        self.failed_samples = 0
        self.booked_over: list[dict] = []
        self.bound_over: list[dict] = []
        self.outside: Counter = Counter()  # pod uid -> consecutive samples outside its assignment
        self.outside_confirmed: set[str] = set()
        self.outside_pods: dict[str, dict] = {}  # pod uid -> what it was seen as, to report
        self.over_domain: list[dict] = []
        self.duplicates: set[str] = set()
        self.admitted_at: dict[str, float] = {}  # workload name -> QuotaReserved time
        self.max_pending = 0
        self.stop = threading.Event()

    def run(self) -> None:
        asyncio.run(self._run())

    async def _run(self) -> None:
        kube = Kube(load_connection(self.cluster.kubeconfig), timeout=10)
        try:
            while not self.stop.is_set():
                try:
                    await self.sample(kube)
                    self.samples += 1
                except KubeError:
                    self.failed_samples += 1  # the API server is away: nothing to read
                await asyncio.sleep(2)
        finally:
            await kube.close()

    async def sample(self, kube: Kube) -> None:
        # v1beta2, the stored version: a v1beta1 read needs the operator's conversion webhook,
        # so it would fail exactly while the operator is killed.
        workloads = (await kube.request("GET", kueue_api.workloads_path(NS)))["items"]
        pods = (await kube.request("GET", f"/api/v1/namespaces/{NS}/pods"))["items"]
        per_job: Counter = Counter()
        booked: Counter = Counter()
        booked_by: dict[str, list] = defaultdict(list)  # node -> what books it, for the report
        assigned: dict[str, Counter] = {}
        unhealthy: dict[str, set] = {}
        pending = 0
        for wl in workloads:
            owner = next(iter(wl["metadata"].get("ownerReferences") or []), {}).get("uid")
            per_job[owner] += 1
            name = wl["metadata"]["name"]
            conditions = {c["type"]: c for c in wl.get("status", {}).get("conditions", [])}
            reserved = conditions.get("QuotaReserved", {})
            finished = conditions.get("Finished", {}).get("status") == "True"
            if reserved.get("status") == "True":
                stamp = datetime.fromisoformat(
                    reserved["lastTransitionTime"].replace("Z", "+00:00")
                )
                self.admitted_at.setdefault(name, stamp.timestamp())
            elif not finished:
                pending += 1
            admission = (wl.get("status") or {}).get("admission")
            if finished or reserved.get("status") != "True" or not admission:
                continue
            per_pod = template_cpu(wl)
            counts: Counter = Counter()
            for psa in admission["podSetAssignments"]:
                ta = psa.get("topologyAssignment") or {}
                for domain in kueue_api.domains(ta):
                    counts[domain["values"][-1]] += domain["count"]  # hostname is the lowest level
            for node, count in counts.items():
                booked[node] += count * per_pod
                booked_by[node].append(
                    {
                        "workload": name,
                        "pods": count,
                        "cpu": per_pod,
                        "reserved_at": reserved.get("lastTransitionTime"),
                        "resource_version": wl["metadata"].get("resourceVersion"),
                        "evicted": conditions.get("Evicted", {}).get("status") == "True",
                    }
                )
            assigned[name] = counts
            unhealthy[name] = {n["name"] for n in wl.get("status", {}).get("unhealthyNodes") or []}
        self.max_pending = max(self.max_pending, pending)
        self.duplicates |= {job for job, n in per_job.items() if job and n > 1}
        now = time.time()
        for node, used in booked.items():
            if used > self.node_cpu + 1e-9:
                self.booked_over.append(
                    {"at": now, "node": node, "cpu": used, "by": booked_by[node]}
                )
        bound: Counter = Counter()
        ungated_on: dict[str, Counter] = defaultdict(Counter)
        pods_on: dict[tuple, list] = defaultdict(list)  # (workload, node) -> its pods, to report
        outside_now = set()
        for pod in pods:
            node = pod["spec"].get("nodeName")
            phase = pod["status"].get("phase")
            if phase in ("Succeeded", "Failed"):
                continue
            if node:
                for c in pod["spec"]["containers"]:
                    bound[node] += cpu(c.get("resources", {}).get("requests", {}).get("cpu", "0"))
            gated = any(g["name"] == GATE for g in pod["spec"].get("schedulingGates") or [])
            selector = (pod["spec"].get("nodeSelector") or {}).get(topology.HOSTNAME_LABEL)
            workload = (pod["metadata"].get("annotations") or {}).get("kueue.x-k8s.io/workload")
            if gated or not selector or pod["metadata"].get("deletionTimestamp"):
                continue
            if workload in assigned:
                ungated_on[workload][selector] += 1
                pods_on[(workload, selector)].append(
                    {
                        "pod": pod["metadata"]["name"],
                        "created": pod["metadata"].get("creationTimestamp"),
                        "phase": phase,
                        "node": node,
                    }
                )
                if selector not in assigned[workload] and selector not in unhealthy[workload]:
                    outside_now.add(pod["metadata"]["uid"])
                    self.outside_pods[pod["metadata"]["uid"]] = {
                        "pod": pod["metadata"]["name"],
                        "node": selector,
                        "phase": phase,
                        "assigned": dict(assigned[workload]),
                    }
        for node, used in bound.items():
            if used > self.node_cpu + 1e-9:
                self.bound_over.append({"at": now, "node": node, "cpu": used})
        for uid in list(self.outside):
            if uid not in outside_now:
                del self.outside[uid]
        for uid in outside_now:
            self.outside[uid] += 1
            if self.outside[uid] >= 2:
                self.outside_confirmed.add(uid)
        for workload, on in ungated_on.items():
            for node, n in on.items():
                if n > assigned[workload].get(node, 0) and node not in unhealthy[workload]:
                    self.over_domain.append(
                        {
                            "at": now,
                            "workload": workload,
                            "node": node,
                            "pods": n,
                            "assigned": dict(assigned[workload]),
                            "its_pods": pods_on[(workload, node)],
                        }
                    )


class Hostile:
    """Tenants' objects made to hurt, mixed into the chaos (--hostile), every `period` seconds:

    - a pod of a fast-admission pod group of total count 999,999,999 (the webhook lets it in;
      no quota holds it), in HOSTILE_NS;
    - a LeaderWorkerSet of 2,147,483,647 replicas (the webhook must refuse it);
    - a Guaranteed pod naming a chaos node and a NUMA zone, never bound (its own gate);
    - a Job that asks for no resources in NS, whose LimitRange gives its pod 1 cpu: one of the
      stream's Jobs, it must be admitted and finish, booked at what its pod really asks;
    - an oversized AdmissionReview (over the cap) and a burst of 192 KiB ones (under it) sent
      straight to the webhook port.

    Before the chaos, while no operator serves the webhooks, the same pod group and
    LeaderWorkerSet and a pod group of total count 99,999,999,999 are made behind the webhooks,
    so every restart of the operator lists them. The operator's RSS is read every round.
    """

    def __init__(self, cluster: Cluster, op: OperatorProcess, stream: Stream, period: float):
        self.cluster, self.op, self.stream, self.period = cluster, op, stream, period
        self.made: Counter = Counter()  # kind -> created
        self.refused: Counter = Counter()  # kind -> refused by the API server (its webhooks)
        self.reviews: Counter = Counter()  # "oversized 413" ... -> answers
        self.rss_mib: list[float] = []
        self.creating: set[asyncio.Task] = set()

    def behind_the_webhooks(self) -> None:
        """Made before the operator first starts (the webhooks fail open meanwhile)."""
        integrations.install_crds(self.cluster, "lws")
        self.cluster.kubectl("create", "namespace", HOSTILE_NS, check=False)
        self.cluster.apply(kueue_api.local_queue("q", "bench"), HOSTILE_NS)
        limits = [{"type": "Container", "defaultRequest": {"cpu": LIMIT_RANGE_CPU}}]
        limit_range = {"kind": "LimitRange", "metadata": {"name": "defaults"}, "spec": {}}
        limit_range |= {"apiVersion": "v1", "spec": {"limits": limits}}
        self.cluster.apply(limit_range, NS)
        with chart.webhooks_fail_open(self.cluster):
            for manifest in (
                group_pod("behind-huge", HUGE_GROUP, "q", gated=True),
                group_pod("behind-beyond", "99999999999", "q", gated=True),
                leaderworkerset("behind-huge", INT32_MAX, "q"),
            ):
                self.cluster.apply(manifest, HOSTILE_NS)

    def run(self) -> None:
        asyncio.run(self._run())

    async def _run(self) -> None:
        kube = Kube(load_connection(self.cluster.kubeconfig), timeout=10)
        nodes = [n["metadata"]["name"] for n in topology.nodes(SHAPE)]
        rng, i = random.Random(7), 0
        try:
            while not self.stream.stop_creating.is_set():
                await self._round(kube, i, rng.choice(nodes))
                await asyncio.get_running_loop().run_in_executor(None, self._reviews)
                self.rss_mib.append(self.op_rss_mib())
                i += 1
                await asyncio.sleep(self.period)
        finally:
            await kube.close()

    async def _round(self, kube: Kube, i: int, node: str) -> None:
        pods = f"/api/v1/namespaces/{HOSTILE_NS}/pods"
        lws = f"/apis/leaderworkerset.x-k8s.io/v1/namespaces/{HOSTILE_NS}/leaderworkersets"
        for kind, path, body in (
            ("huge_pod_group", pods, group_pod(f"huge-{i:04}", HUGE_GROUP, "q")),
            ("huge_lws", lws, leaderworkerset(f"huge-{i:04}", INT32_MAX, "q")),
            ("numa_squatter", pods, squatter(f"squat-{i:04}", node, f"node-{i % 2}")),
        ):
            try:
                await kube.create(path, body)
                self.made[kind] += 1
            except KubeError:
                self.refused[kind] += 1
        job = jobs.job(f"h{i:04}-no-requests", "q", pods=1)
        job["spec"]["template"]["spec"]["containers"][0].pop("resources")
        self.made["no_request_job"] += 1
        task = asyncio.create_task(self.stream._create_one(kube, job))  # retried until made
        self.creating.add(task)
        task.add_done_callback(self.creating.discard)

    def _reviews(self) -> None:
        self._send("oversized", job_review(MAX_REVIEW_BYTES + (64 << 10)))
        for _ in range(20):
            self._send("under the cap", job_review(UNDER_CAP_REVIEW))

    def _send(self, what: str, review: dict) -> None:
        try:
            status, _ = post(self.op.port, SUSPEND_WEBHOOK, json.dumps(review).encode(), 10)
        except OSError:
            status = "timeout"
        self.reviews[f"{what} {status}"] += 1

    def op_rss_mib(self) -> float:
        proc = self.op.proc
        try:
            status = Path(f"/proc/{proc.pid}/status").read_text() if proc else ""
        except OSError:
            return 0.0  # killed a moment ago
        kib = [int(line.split()[1]) for line in status.splitlines() if line[:6] == "VmRSS:"]
        return kib[0] / 1024 if kib else 0.0

    def report(self) -> dict:
        """What was made and answered, and what must stay zero among it."""
        workloads = self.cluster.get_json(kueue_api.WORKLOADS, "-n", HOSTILE_NS)["items"]
        pods = self.cluster.get_json("pods", "-n", HOSTILE_NS)["items"]
        admitted = [w["metadata"]["name"] for w in workloads if reserved(w)]
        return {
            "made": dict(self.made),
            "refused_by_the_api_server": dict(self.refused),
            "reviews_sent_to_the_webhook_port": dict(self.reviews),
            "operator_rss_mib": {
                "max": round(max(self.rss_mib, default=0), 1),
                "median": round(statistics.median(self.rss_mib), 1) if self.rss_mib else None,
                "reads": len(self.rss_mib),
            },
            "must_be_zero": {
                "huge_lws_accepted": self.made["huge_lws"],
                "workloads_admitted": len(admitted),
                "lws_workloads_made": sum(
                    1
                    for w in workloads
                    for o in w["metadata"].get("ownerReferences") or []
                    if o["kind"] == "LeaderWorkerSet"
                ),
                "squatters_bound": sum(
                    1
                    for p in pods
                    if p["metadata"]["name"].startswith("squat-") and p["spec"].get("nodeName")
                ),
                "oversized_reviews_answered": sum(
                    n for k, n in self.reviews.items() if k.startswith("oversized 2")
                ),
                "no_request_jobs_charged_less_than_their_pods_ask": self.undercharged(),
            },
        }

    def undercharged(self) -> int:
        """Admitted workloads of the Jobs that ask for nothing, charged under LIMIT_RANGE_CPU
        a pod (the pods get it from NS's LimitRange)."""
        found = 0
        for wl in self.cluster.get_json(kueue_api.WORKLOADS, "-n", NS)["items"]:
            owner = next(iter(wl["metadata"].get("ownerReferences") or []), {}).get("name", "")
            admission = (wl.get("status") or {}).get("admission")
            if not owner.endswith("-no-requests") or not admission:
                continue
            for psa in admission["podSetAssignments"]:
                charged = cpu((psa.get("resourceUsage") or {}).get("cpu", "0"))
                found += charged < psa.get("count", 1) * cpu(LIMIT_RANGE_CPU)
        return found


def reserved(workload: dict) -> bool:
    return any(
        c["type"] == "QuotaReserved" and c["status"] == "True"
        for c in workload.get("status", {}).get("conditions", [])
    )


# ---- the chaos -------------------------------------------------------------------------------


def cluster_sh(cluster: Cluster, command: str) -> float:
    started = time.time()
    subprocess.run(
        ["bash", str(CLUSTER_SH), command],
        env={**os.environ, "TAS_CLUSTER_DIR": cluster.local_dir or ""},
        check=True,
        capture_output=True,
        timeout=300,
    )
    return time.time() - started


def timeline(rng: random.Random, args: argparse.Namespace) -> tuple[list[tuple[float, str]], float]:
    """(seconds from the start, what) for every disruption, in order, and the run's length.
    Kills come every 2-12 s; the restarts and NotReady nodes fall at random moments between."""
    t, events = 0.0, []
    for _ in range(args.kills):
        t += rng.uniform(2, 12)
        events.append((t, "kill"))
    length = max(t, args.minutes * 60)
    events += [
        (rng.uniform(30, length - 30), "restart-apiserver") for _ in range(args.apiserver_restarts)
    ]
    events += [(rng.uniform(30, length - 30), "restart-etcd") for _ in range(args.etcd_restarts)]
    events += [(rng.uniform(10, length - 60), "not-ready") for _ in range(args.not_ready)]
    return sorted(events), length


def not_ready_for_a_while(cluster: Cluster, rng: random.Random, seconds: float) -> str:
    """A node with pods goes NotReady (kwok's stage) and comes back after `seconds`."""
    pods = cluster.get_json("pods", "-n", NS, "--field-selector=status.phase=Running")["items"]
    nodes = sorted({p["spec"]["nodeName"] for p in pods}) or [
        topology.nodes(SHAPE)[0]["metadata"]["name"]
    ]
    node = rng.choice(nodes)
    cluster.kubectl("label", "node", node, f"{NOT_READY}=true", "--overwrite")

    def back() -> None:
        time.sleep(seconds)
        cluster.kubectl("label", "node", node, f"{NOT_READY}-", check=False)

    threading.Thread(target=back, daemon=True).start()
    return node


def run(cluster: Cluster, args: argparse.Namespace) -> dict:
    rng = random.Random(args.seed)
    chart.install(cluster)
    for name in ("topology.yaml", "resource-flavor.yaml"):
        cluster.kubectl("apply", "-f", str(ROOT / "examples" / "kueue-tas" / name))
    cluster.apply(BIG_QUEUE)
    add_nodes(cluster, SHAPE)
    cluster.kubectl("create", "namespace", NS, check=False)
    cluster.apply(kueue_api.local_queue("q", "bench"), NS)
    op = OperatorProcess(cluster, env={"TAS_POD_NAME": "tas-operator-chaos-0"})
    stream = Stream(cluster, rng, args.rate)
    hostile = Hostile(cluster, op, stream, args.hostile_period) if args.hostile else None
    if hostile:
        hostile.behind_the_webhooks()
    op.start()
    supervisor = Supervisor(op)
    sampler = Sampler(cluster, cpu(SHAPE.allocatable["cpu"]))
    actors = (supervisor, stream, sampler, *([hostile] if hostile else []))
    threads = [threading.Thread(target=a.run, daemon=True) for a in actors]
    for t in threads:
        t.start()
    events, length = timeline(rng, args)
    started = time.time()
    done: list[dict] = []
    try:
        for at, what in events:
            time.sleep(max(0.0, started + at - time.time()))
            record = {"at_s": round(time.time() - started, 1), "what": what}
            if what == "kill":
                supervisor.kill()
            elif what in ("restart-apiserver", "restart-etcd"):
                record["outage_s"] = round(cluster_sh(cluster, what), 1)
            else:
                record["node"] = not_ready_for_a_while(cluster, rng, rng.uniform(30, 60))
            done.append(record)
            print(f"[chaos +{record['at_s']:.0f}s] {what}", flush=True)
        time.sleep(max(0.0, started + length - time.time()))
        chaos_s = time.time() - started
        # The end: no new Jobs; running ones are finished; every Job must get through.
        stream.stop_creating.set()
        settle_deadline = time.time() + args.settle
        while time.time() < settle_deadline and not all_finished(cluster, stream):
            time.sleep(5)
        result = report(cluster, op, supervisor, stream, sampler, done, chaos_s, started)
        if hostile:
            result["hostile"] = hostile.report()
            for name, count in result["hostile"]["must_be_zero"].items():
                result["must_be_zero"][f"hostile_{name}"] = count
        return result
    finally:
        stream.stop.set()
        sampler.stop.set()
        supervisor.stop.set()
        for t in threads:
            t.join(timeout=30)
        op.stop()


def all_finished(cluster: Cluster, stream: Stream) -> bool:
    workloads = cluster.get_json(kueue_api.WORKLOADS, "-n", NS)["items"]
    finished = sum(
        1
        for wl in workloads
        if any(
            c["type"] == "Finished" and c["status"] == "True"
            for c in wl.get("status", {}).get("conditions", [])
        )
    )
    return finished >= len(stream.created)


def report(cluster, op, supervisor, stream, sampler, events, chaos_s, started) -> dict:
    job_list = cluster.get_json("jobs", "-n", NS)["items"]
    workloads = cluster.get_json(kueue_api.WORKLOADS, "-n", NS)["items"]
    owners = Counter(
        next(iter(w["metadata"].get("ownerReferences") or []), {}).get("uid") for w in workloads
    )
    never_admitted = [
        w["metadata"]["name"]
        for w in workloads
        if not any(
            c["type"] in ("QuotaReserved", "Finished") and c["status"] == "True"
            for c in w.get("status", {}).get("conditions", [])
        )
    ]
    not_finished = [
        w["metadata"]["name"]
        for w in workloads
        if not any(
            c["type"] == "Finished" and c["status"] == "True"
            for c in w.get("status", {}).get("conditions", [])
        )
    ]
    log_text = op.log()
    if os.environ.get("CHAOS_LOG"):
        Path(os.environ["CHAOS_LOG"]).write_text(log_text)
    pods = cluster.get_json("pods", "-n", NS)["items"]
    pod_states: dict[str, Counter] = defaultdict(Counter)
    for pod in pods:
        owner = (pod["metadata"].get("annotations") or {}).get("kueue.x-k8s.io/workload", "")
        gated = bool(pod["spec"].get("schedulingGates"))
        state = "gated" if gated else pod["status"].get("phase", "?")
        if pod["metadata"].get("deletionTimestamp"):
            state += "-deleting"
        pod_states[owner][state] += 1
    unfinished_detail = [
        {
            "workload": w["metadata"]["name"],
            "conditions": {
                c["type"]: c.get("reason")
                for c in w.get("status", {}).get("conditions", [])
                if c["status"] == "True"
            },
            "pods": dict(pod_states.get(w["metadata"]["name"], {})),
        }
        for w in workloads
        if w["metadata"]["name"] in set(not_finished[:20])
    ]
    ungated = Counter(re.findall(rf"ungated {NS}/(\S+) onto", log_text))
    leading = sorted(
        datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp()
        for stamp in re.findall(
            r"^(\S+ \S+) INFO tas.operator: admitting \(leader\)", log_text, re.M
        )
    )
    to_leading = [
        next((t for t in leading if t > kill), float("nan")) - kill for kill in supervisor.kills
    ]
    to_leading = [t for t in to_leading if t == t]
    admissions = sorted(sampler.admitted_at.values())
    outages = [
        (started + e["at_s"], started + e["at_s"] + e["outage_s"])
        for e in events
        if e["what"].startswith("restart-")
    ]
    to_next, to_next_no_outage, per_kill = [], [], []
    for kill in supervisor.kills:
        later = [a for a in admissions if a > kill]
        if not later:
            continue
        wait = later[0] - kill
        # An API server or etcd restart inside the wait is the control plane's, not ours.
        overlapped = any(start < later[0] and end > kill - 15 for start, end in outages)
        to_next.append(wait)
        if not overlapped:
            to_next_no_outage.append(wait)
        per_kill.append(
            {"at_s": round(kill - started, 1), "wait_s": round(wait, 1), "outage": overlapped}
        )
    return {
        "machine": {"cpus": os.cpu_count(), "load": os.getloadavg()},
        "nodes": len(topology.nodes(SHAPE)),
        "chaos_s": round(chaos_s, 1),
        "total_s": round(time.time() - started, 1),
        "kills": len(supervisor.kills),
        "operator_exits_by_itself": supervisor.exits,
        "apiserver_restarts": sum(e["what"] == "restart-apiserver" for e in events),
        "etcd_restarts": sum(e["what"] == "restart-etcd" for e in events),
        "nodes_made_not_ready": sum(e["what"] == "not-ready" for e in events),
        "jobs_created": len(stream.created),
        "job_creates_refused_and_retried": stream.refusals,
        "workloads_admitted": len(sampler.admitted_at),
        "most_pending_at_once": sampler.max_pending,
        "samples": sampler.samples,
        "samples_failed_api_away": sampler.failed_samples,
        "must_be_zero": {
            "nodes_over_allocatable_booked": len(sampler.booked_over),
            "nodes_over_allocatable_bound": len(sampler.bound_over),
            "pods_ungated_twice": sum(1 for n in ungated.values() if n > 1),
            "pods_outside_their_assignment": len(sampler.outside_confirmed),
            "domains_with_more_pods_than_assigned": len(sampler.over_domain),
            "jobs_with_two_workloads": len(
                sampler.duplicates | {u for u, n in owners.items() if u and n > 1}
            ),
            "jobs_without_a_workload": len({j["metadata"]["uid"] for j in job_list} - set(owners)),
            "workloads_never_admitted": len(never_admitted),
            "workloads_not_finished_at_the_end": len(not_finished),
        },
        # The restarted process admitting again (its log), whatever the cluster has room for.
        "kill_to_leading_again_s": {
            "worst": round(max(to_leading), 1) if to_leading else None,
            "median": round(statistics.median(to_leading), 1) if to_leading else None,
        },
        # The next admission: also waits for room when the cluster is full.
        "kill_to_next_admission_s": {
            "worst": round(max(to_next), 1) if to_next else None,
            "median": round(statistics.median(to_next), 1) if to_next else None,
            "kills_measured": len(to_next),
            "worst_without_a_control_plane_restart": round(max(to_next_no_outage), 1)
            if to_next_no_outage
            else None,
            "median_without_a_control_plane_restart": round(statistics.median(to_next_no_outage), 1)
            if to_next_no_outage
            else None,
        },
        "details": {
            "booked_over": sampler.booked_over[:20],
            "bound_over": sampler.bound_over[:20],
            "outside": [sampler.outside_pods[u] for u in sorted(sampler.outside_confirmed)][:20],
            "over_domain": sampler.over_domain[:20],
            "never_admitted": never_admitted[:20],
            "not_finished": unfinished_detail,
            "events": events,
            "kills": per_kill,
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="8 kills, one of each restart")
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--apiserver-restarts", type=int, default=5)
    parser.add_argument("--etcd-restarts", type=int, default=2)
    parser.add_argument("--not-ready", type=int, default=10, help="nodes made NotReady for 30-60 s")
    parser.add_argument("--minutes", type=float, default=10, help="at least this long")
    parser.add_argument("--rate", type=float, default=1.0, help="Jobs created per second")
    parser.add_argument("--settle", type=float, default=600, help="seconds for the end to settle")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--hostile", action="store_true", help="mix hostile tenants' objects in")
    parser.add_argument(
        "--hostile-period", type=float, default=5.0, help="seconds between hostile rounds"
    )
    parser.add_argument("--output", default=str(ROOT / "bench" / "results" / "chaos.json"))
    args = parser.parse_args()
    if args.quick:
        args.kills, args.apiserver_restarts, args.etcd_restarts = 8, 1, 1
        args.not_ready, args.minutes, args.settle = 2, 2, 300
        if args.output.endswith("chaos.json"):
            args.output = "/tmp/chaos_quick.json"  # a quick run never overwrites results
    os.environ.setdefault("TAS_CLUSTER_DIR", str(ROOT / ".cluster" / "chaos"))
    os.environ.setdefault("TAS_API_PORT", "25443")
    os.environ.setdefault("TAS_ETCD_PORT", "26379")
    cluster = cluster_from_env()
    try:
        result = run(cluster, args)
    finally:
        if not os.environ.get("KEEP_CLUSTER") and cluster.local_dir:
            subprocess.run(["bash", str(CLUSTER_SH), "down"], check=False, capture_output=True)
    Path(args.output).write_text(json.dumps(result, indent=2))
    print(json.dumps({k: v for k, v in result.items() if k != "details"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
