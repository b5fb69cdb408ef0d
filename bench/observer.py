"""One instrument for every controller: a watch on a namespace's Workloads and Pods.

A thread of its own keeps two watches open (Workloads, Pods) and notes the wall-clock time at
which each event arrived: when each Job's Workload was first seen admitted, when its topology
assignment changed, when each pod was first seen Running, failed or gone. Nothing reads a
controller's own logs, so our operator and Kueue are timed the same way, and no polling adds
load or delay. Condition timestamps would not do: they have one-second resolution.

Workloads are watched in the version the controller stores (v1beta2 for ours and for Kueue
since v0.16): no conversion webhook stands between the watch and etcd, so a controller that is
down never breaks the watch. Assignments are kept decoded to v1beta1's `domains`, whichever
version was read, so that every controller's are compared alike.

The watches ask for the initial state followed by a bookmark (`sendInitialEvents`), so
`Observer(...)` returns only once both streams are live: nothing created afterwards is missed
or seen late.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import orjson
from bench import kueue_api
from e2e.harness import wait_for

from tas.kube import Kube, KubeError
from tas.kube.kubeconfig import load_connection

PODS = "/api/v1/namespaces/{ns}/pods"
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
TOPOLOGY_GATE = "kueue.x-k8s.io/topology"


def job_of_workload(obj: dict) -> str:
    owners = obj["metadata"].get("ownerReferences") or []
    return next((o["name"] for o in owners if o.get("kind") == "Job"), obj["metadata"]["name"])


def condition(obj: dict, type_: str) -> dict | None:
    conds = (obj.get("status") or {}).get("conditions") or []
    return next((c for c in conds if c["type"] == type_), None)


def assignment(obj: dict) -> list[dict] | None:
    """Each pod set's topologyAssignment in v1beta1's shape (None for a pod set without one),
    or None when the Workload has no admission."""
    admission = (obj.get("status") or {}).get("admission")
    if not admission:
        return None
    return [
        kueue_api.as_v1beta1(ps.get("topologyAssignment"))
        for ps in admission.get("podSetAssignments", [])
    ]


def stored_assignment(obj: dict) -> list[dict | None] | None:
    """Each pod set's topologyAssignment as read (v1beta2: the compact encoding, as stored)."""
    admission = (obj.get("status") or {}).get("admission")
    if not admission:
        return None
    return [ps.get("topologyAssignment") for ps in admission.get("podSetAssignments", [])]


@dataclass
class PodSeen:
    job: str
    node: str | None = None
    phase: str = ""
    created: float = 0.0
    ungated: float | None = None  # first seen without Kueue's scheduling gate
    bound: float | None = None  # first seen with a node
    running: float | None = None  # first seen Running
    ended: float | None = None  # first seen terminating, Succeeded, Failed or deleted
    gone: bool = False
    gone_at: float | None = None


@dataclass
class WorkloadSeen:
    name: str
    obj: dict = field(default_factory=dict)
    created: float = 0.0
    admitted: float | None = None  # first seen with Admitted=True
    assignments: list[tuple[float, list | None]] = field(default_factory=list)  # changes, timed
    marks: dict[str, float] = field(default_factory=dict)  # "unhealthy", "evicted": first seen
    gone: bool = False


class Observer:
    def __init__(
        self,
        kubeconfig: str,
        namespace: str,
        *,
        pods: bool = True,
        version: str = kueue_api.V1BETA2,
    ) -> None:
        """`version`: the Workloads' version to watch, the one the controller stores."""
        self.kubeconfig = kubeconfig
        self.namespace = namespace
        self.workloads_path = kueue_api.workloads_path(namespace, version)
        self.watch_pods = pods
        self.lock = threading.Lock()
        self.workloads: dict[str, WorkloadSeen] = {}  # by Job name
        self.pods: dict[str, PodSeen] = {}  # by pod name
        self._live: set[str] = set()
        self._error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"watch-{namespace}")
        self._thread.start()
        kinds = {"workloads", "pods"} if pods else {"workloads"}
        wait_for(lambda: self._check() and kinds <= self._live, timeout=60, what="watches live")

    # ---- the thread -------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # shown to the caller by _check
            self._error = exc

    async def _main(self) -> None:
        kube = Kube(load_connection(self.kubeconfig), component="bench-observer")
        streams = [self._watch(kube, "workloads", self.workloads_path, self._on_workload)]
        if self.watch_pods:
            streams.append(self._watch(kube, "pods", PODS.format(ns=self.namespace), self._on_pod))
        tasks = [asyncio.create_task(s) for s in streams]
        while not self._stop.is_set():
            await asyncio.sleep(0.2)
            for t in tasks:
                if t.done():
                    t.result()  # re-raise what ended it
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await kube.close()

    async def _watch(self, kube: Kube, kind: str, path: str, handle: Callable) -> None:
        rv = ""
        while True:
            params = {"watch": "1", "allowWatchBookmarks": "true", "timeoutSeconds": "1800"}
            if rv:
                params["resourceVersion"] = rv
            else:
                params.update(sendInitialEvents="true", resourceVersionMatch="NotOlderThan")
            try:
                async for line in kube.stream_lines(path, params, 1900):
                    now = time.time()
                    event = orjson.loads(line)
                    obj = event["object"]
                    rv = obj.get("metadata", {}).get("resourceVersion", rv)
                    if event["type"] == "BOOKMARK":
                        annotations = obj["metadata"].get("annotations") or {}
                        if annotations.get(INITIAL_EVENTS_END) == "true":
                            self._live.add(kind)
                        continue
                    if event["type"] == "ERROR":
                        rv = ""  # expired: start again from the current state
                        break
                    with self.lock:
                        handle(event["type"], obj, now)
            except KubeError as exc:
                if exc.status == 410:
                    rv = ""
                await asyncio.sleep(0.5)

    def _on_workload(self, type_: str, obj: dict, now: float) -> None:
        job = job_of_workload(obj)
        seen = self.workloads.get(job)
        if seen is None or seen.name != obj["metadata"]["name"]:
            seen = self.workloads[job] = WorkloadSeen(obj["metadata"]["name"], created=now)
        seen.obj = obj
        if type_ == "DELETED":
            seen.gone = True
            return
        admitted = condition(obj, "Admitted")
        if seen.admitted is None and admitted and admitted["status"] == "True":
            seen.admitted = now
        if (obj.get("status") or {}).get("unhealthyNodes"):
            seen.marks.setdefault("unhealthy", now)
        evicted = condition(obj, "Evicted")
        if evicted and evicted["status"] == "True":
            seen.marks.setdefault("evicted", now)
        current = assignment(obj)
        if not seen.assignments or seen.assignments[-1][1] != current:
            seen.assignments.append((now, current))

    def _on_pod(self, type_: str, obj: dict, now: float) -> None:
        meta = obj["metadata"]
        name = meta["name"]
        seen = self.pods.get(name)
        if seen is None:
            job = (meta.get("labels") or {}).get("batch.kubernetes.io/job-name", "")
            seen = self.pods[name] = PodSeen(job=job, created=now)
        seen.node = obj["spec"].get("nodeName")
        gates = obj["spec"].get("schedulingGates") or []
        if seen.ungated is None and not any(g["name"] == TOPOLOGY_GATE for g in gates):
            seen.ungated = now
        if seen.bound is None and seen.node:
            seen.bound = now
        seen.phase = (obj.get("status") or {}).get("phase", "")
        ending = type_ == "DELETED" or meta.get("deletionTimestamp")
        if seen.phase == "Running" and not ending and seen.running is None:
            seen.running = now
        if (ending or seen.phase in ("Succeeded", "Failed")) and seen.ended is None:
            seen.ended = now
        if type_ == "DELETED":
            seen.gone, seen.gone_at = True, now

    # ---- what the bench reads ---------------------------------------------------------------

    def _check(self) -> bool:
        if self._error is not None:
            raise RuntimeError(f"watch of {self.namespace} failed: {self._error!r}")
        return True

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def admitted(self, prefix: str = "") -> dict[str, float]:
        """Job name -> when its Workload was first seen admitted."""
        with self.lock:
            self._check()
            return {
                j: w.admitted
                for j, w in self.workloads.items()
                if w.admitted is not None and j.startswith(prefix)
            }

    def workload(self, job: str) -> WorkloadSeen | None:
        with self.lock:
            self._check()
            return self.workloads.get(job)

    def running(self, job: str) -> dict[str, PodSeen]:
        """The Job's pods that run now (Running, not terminating)."""
        with self.lock:
            self._check()
            return {
                n: p
                for n, p in self.pods.items()
                if p.job == job and p.running is not None and p.ended is None
            }

    def pods_of(self, job: str) -> dict[str, PodSeen]:
        with self.lock:
            self._check()
            return {n: PodSeen(**vars(p)) for n, p in self.pods.items() if p.job == job}

    def live_pods(self) -> int:
        with self.lock:
            self._check()
            return sum(1 for p in self.pods.values() if not p.gone)

    def wait_admitted(self, count: int, prefix: str = "", timeout: float = 900) -> dict[str, float]:
        return wait_for(
            lambda: (a := self.admitted(prefix)) and len(a) >= count and a,
            timeout=timeout,
            interval=0.1,
            what=f"{count} admissions in {self.namespace}",
        )

    def wait_running(self, job: str, count: int, timeout: float = 300) -> dict[str, PodSeen]:
        return wait_for(
            lambda: (r := self.running(job)) and len(r) >= count and r,
            timeout=timeout,
            interval=0.05,
            what=f"{count} pods of {job} Running",
        )

    def wait_pods_gone(self, timeout: float = 900) -> None:
        wait_for(
            lambda: self.live_pods() == 0,
            timeout=timeout,
            interval=0.5,
            what=f"pods of {self.namespace} gone",
        )
