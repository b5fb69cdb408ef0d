"""No node is ever booked twice, whatever order the API server's answers and the watch's events
come in: a property test of the admission loop with the real Workload writer against an
in-memory API server.

The API server keeps every Workload with a resourceVersion from one counter, refuses a write
guarded by an old one (409), and may store a write and lose the answer. The watch hands the
stored versions to the cache in order but as late as the test likes. Jobs finish (Finished is
written by someone else), nodes go NotReady and come back. After every step the invariant is
checked on the API server's truth: the topology assignments of admitted, unfinished Workloads
never put more cpu on a node than it has.
"""

from __future__ import annotations

import asyncio
import copy
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tas.admission.loop as loop_module
from tas.admission.loop import AdmissionLoop
from tas.cache import projections as proj
from tas.kube import KubeError
from tas.kube.retry import Backoff
from tas.workload.writer import WorkloadWriter
from tests.unit.admission.fixtures import RACK, make_state, node, workload

NODES = [node(f"h{i}", "b1", f"r{i // 2}", cpu="4") for i in range(6)]  # 3 racks of 2 hosts
CPU = {n["metadata"]["name"]: 4 for n in NODES}


def merge(target: dict, patch: dict) -> dict:
    """JSON merge patch (RFC 7386)."""
    out = dict(target)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


class FakeApi:
    """Workloads only; writes guarded by resourceVersion; every stored version is watched."""

    def __init__(self) -> None:
        self.version = 1000
        self.objects: dict[str, dict] = {}
        self.watch: list[dict] = []  # stored versions not yet handed to the cache
        self.lose_next_answer = 0  # store the next writes, then fail as if the answer was lost
        self.down = False
        self.inflight: list[tuple[str, dict, asyncio.Future]] = []
        self.pods: dict[str, dict] = {}
        self.pod_watch: list[tuple[str, dict]] = []  # (event, pod) not yet handed on

    def store(self, name: str, obj: dict) -> dict:
        self.version += 1
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = str(self.version)
        self.objects[name] = obj
        self.watch.append(copy.deepcopy(obj))
        return obj

    async def get(self, path: str):
        await asyncio.sleep(0)
        if self.down:
            raise KubeError(0, "connection refused", sent=False)
        return copy.deepcopy(self.objects.get(path.rsplit("/", 1)[-1]))

    async def patch(self, path: str, body: dict, content_type: str = "") -> dict:
        """Waits until the test serves it: requests are answered in any order, late or never."""
        if self.down:
            raise KubeError(0, "connection refused", sent=False)
        answer = asyncio.get_running_loop().create_future()
        self.inflight.append((path, body, answer))
        return await answer

    def serve(self, pick: int) -> None:
        """Answer one request in flight: store it (or refuse it, 409), maybe losing the answer."""
        if not self.inflight:
            return
        path, body, answer = self.inflight.pop(pick % len(self.inflight))
        name = path.removesuffix("/status").rsplit("/", 1)[-1]
        held = self.objects.get(name)
        if held is None:
            answer.set_exception(KubeError(404, "not found"))
            return
        wanted = body.get("metadata", {}).get("resourceVersion")
        if wanted is not None and wanted != held["metadata"]["resourceVersion"]:
            answer.set_exception(KubeError(409, "conflict"))
            return
        stored = self.store(name, merge(held, {"status": body.get("status", {})}))
        if self.lose_next_answer:
            self.lose_next_answer -= 1
            answer.set_exception(KubeError(0, "ServerDisconnectedError"))
        else:
            answer.set_result(stored)

    async def event(self, *args, **kwargs) -> None:
        return None


class Writer(WorkloadWriter):
    async def write_cluster_queue_status(self, name, status):
        return None

    async def write_local_queue_status(self, namespace, name, status):
        return None


def booked(api: FakeApi) -> Counter:
    """cpu per node in the stored assignments of admitted, unfinished Workloads."""
    out: Counter = Counter()
    for obj in api.objects.values():
        info = proj.workload_from_object(obj)
        if not info.has_quota:
            continue
        per_pod = {ps.name: ps.requests.get("cpu", 0) for ps in info.pod_sets}
        for a in info.admissions:
            for d in a.assignment.domains if a.assignment else ():
                out[d.values[-1]] += d.count * per_pod[a.name]
    return out


def start_pods(api: FakeApi, name: str) -> None:
    """The Job's pods, bound by the scheduler to the hosts of the stored assignment."""
    info = proj.workload_from_object(api.objects[name])
    hosts = [
        d.values[-1] for a in info.admissions for d in a.assignment.domains for _ in range(d.count)
    ]
    for i, host in enumerate(hosts):
        pod = {
            "metadata": {
                "name": f"{name}-{i}",
                "namespace": "ns",
                "uid": f"pod-{name}-{i}",
                "annotations": {"kueue.x-k8s.io/workload": name},
                "labels": {"kueue.x-k8s.io/podset": "main"},
                "ownerReferences": [{"controller": True, "uid": f"job-{name}", "kind": "Job"}],
            },
            "spec": {
                "nodeName": host,
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
            },
            "status": {"phase": "Running"},
        }
        api.pods[pod["metadata"]["name"]] = pod
        api.pod_watch.append(("MODIFIED", copy.deepcopy(pod)))


def finish(api: FakeApi, name: str) -> None:
    for pod_name, pod in list(api.pods.items()):  # its pods succeed, then go
        if pod["metadata"]["annotations"]["kueue.x-k8s.io/workload"] == name:
            pod["status"]["phase"] = "Succeeded"
            api.pod_watch.append(("MODIFIED", copy.deepcopy(pod)))
            api.pod_watch.append(("DELETED", copy.deepcopy(pod)))
            del api.pods[pod_name]
    obj = api.objects[name]
    conditions = [c for c in obj.get("status", {}).get("conditions", []) if c["type"] != "Finished"]
    conditions.append({"type": "Finished", "status": "True", "reason": "Succeeded", "message": ""})
    api.store(name, merge(obj, {"status": {"conditions": conditions}}))


STEP = st.one_of(
    st.tuples(st.just("create"), st.integers(1, 6), st.sampled_from(["", "rack"])),
    st.tuples(st.just("deliver"), st.integers(1, 4)),
    st.tuples(st.just("pods"), st.integers(0, 50)),
    st.tuples(st.just("deliver-pods"), st.integers(1, 8)),
    st.tuples(st.just("cycle")),
    st.tuples(st.just("run"), st.integers(1, 6)),
    st.tuples(st.just("serve"), st.integers(0, 20)),
    st.tuples(st.just("serve"), st.integers(0, 20)),
    st.tuples(st.just("finish"), st.integers(0, 50)),
    st.tuples(st.just("lose-answer")),
    st.tuples(st.just("outage"), st.booleans()),
    st.tuples(st.just("node"), st.integers(0, 5), st.booleans()),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(STEP, min_size=5, max_size=60))
def test_no_node_is_booked_twice_whatever_the_order_of_answers_and_events(steps):
    loop_module.SETTLE_BACKOFF = Backoff(base=0.0001, cap=0.0001)
    try:
        asyncio.run(play(steps))
    finally:
        loop_module.SETTLE_BACKOFF = Backoff(base=0.5, cap=10.0)


async def play(steps) -> None:
    api = FakeApi()
    state = make_state(NODES)

    async def refresh(obj, refused_version):  # as the operator's runtime takes a re-read
        cached = state.workloads.get(proj.key_of(obj))
        if cached is not None and cached.resource_version == refused_version:
            state.upsert_workload(proj.workload_from_object(obj))

    loop = AdmissionLoop(state, Writer(api, refresh=refresh))
    loop.synced.set()
    created = 0
    for step in steps:
        kind = step[0]
        if kind == "create":
            obj = workload(f"w{created}", pods=step[1], cpu="1")
            obj["metadata"]["ownerReferences"] = [
                {"controller": True, "uid": f"job-w{created}", "kind": "Job", "name": f"w{created}"}
            ]
            if step[2]:
                obj["spec"]["podSets"][0]["topologyRequest"] = {"required": RACK}
            api.store(obj["metadata"]["name"], obj)
            created += 1
        elif kind == "deliver":
            for obj in api.watch[: step[1]]:
                state.upsert_workload(proj.workload_from_object(obj))
            del api.watch[: step[1]]
        elif kind == "pods":
            running = {
                p["metadata"]["annotations"]["kueue.x-k8s.io/workload"] for p in api.pods.values()
            }
            startable = sorted(
                n
                for n, o in api.objects.items()
                if proj.workload_from_object(o).has_quota and n not in running
            )
            if startable:
                start_pods(api, startable[step[1] % len(startable)])
        elif kind == "deliver-pods":
            for event, pod in api.pod_watch[: step[1]]:
                if event == "DELETED":
                    state.delete_pod("ns", pod["metadata"]["name"])
                else:
                    state.upsert_pod(proj.pod_from_object(pod))
            del api.pod_watch[: step[1]]
        elif kind == "cycle":
            loop._retry_at.clear()
            await loop.cycle()
        elif kind == "run":
            for _ in range(step[1]):
                await asyncio.sleep(0)
        elif kind == "serve":
            api.serve(step[1])
            for _ in range(3):
                await asyncio.sleep(0)
        elif kind == "finish":
            admitted = sorted(
                n for n, o in api.objects.items() if proj.workload_from_object(o).has_quota
            )
            if admitted:
                finish(api, admitted[step[1] % len(admitted)])
        elif kind == "lose-answer":
            api.lose_next_answer += 1
        elif kind == "outage":
            api.down = step[1]
        elif kind == "node":
            obj = copy.deepcopy(NODES[step[1]])
            obj["status"]["conditions"][0]["status"] = "True" if step[2] else "False"
            state.upsert_node(proj.node_from_object(obj))
        over = {n: c for n, c in booked(api).items() if c > CPU[n] * 1000}
        assert not over, f"after {step}: {over}"
    api.down = False
    while api.inflight or loop._writes:  # answer everything still in flight, in order
        api.serve(0)
        await asyncio.sleep(0)
    over = {n: c for n, c in booked(api).items() if c > CPU[n] * 1000}
    assert not over, over


def test_a_late_conflict_never_ends_the_next_decisions_assumption():
    """The chaos run's double booking, step by step. `w` waits (its pending status is on its
    way), then fits and is admitted on the same version. The pending write lands first; the
    watch shows it, the admission can no longer land, and `w` is admitted again on the new
    version. Only then does the first admission's 409 come back: it must not end the second
    admission's assumption, or `u` is admitted onto the capacity the second one is taking."""

    def serve(api: FakeApi, name: str, admission: bool) -> None:
        for i, (path, body, _) in enumerate(api.inflight):
            if f"/{name}/" in path and ("admission" in body["status"]) == admission:
                api.serve(i)
                return
        raise AssertionError(f"no {'admission' if admission else 'pending'} write of {name}")

    async def go() -> FakeApi:
        api = FakeApi()
        state = make_state(NODES[:4])  # 16 cpu

        async def refresh(obj, refused_version):
            cached = state.workloads.get(proj.key_of(obj))
            if cached is not None and cached.resource_version == refused_version:
                state.upsert_workload(proj.workload_from_object(obj))

        loop = AdmissionLoop(state, Writer(api, refresh=refresh))

        async def settle():
            for _ in range(10):
                await asyncio.sleep(0)

        def deliver():
            for obj in api.watch:
                state.upsert_workload(proj.workload_from_object(obj))
            api.watch.clear()

        for name, pods in (("f", 16), ("w", 8), ("v", 8)):
            api.store(name, workload(name, pods=pods))
        deliver()
        await loop.cycle()  # f admitted; w and v wait (their pending writes on the way)
        await settle()
        serve(api, "f", admission=True)
        await settle()
        deliver()
        finish(api, "f")
        deliver()
        loop._retry_at.clear()
        await loop.cycle()  # w and v fit now: admitted on the versions their pending writes hold
        await settle()
        serve(api, "w", admission=False)  # w's pending write lands first
        await settle()
        deliver()  # w's admission can no longer land; w waits again, and fits
        loop._retry_at.clear()
        await loop.cycle()  # w admitted again, on the new version
        await settle()
        serve(api, "w", admission=True)  # the first admission's 409, late
        await settle()
        api.store("u", workload("u", pods=8))
        deliver()
        loop._retry_at.clear()
        await loop.cycle()  # u must not fit: w's second admission holds the capacity
        await settle()
        while api.inflight:
            api.serve(0)
            await settle()
        return api

    api = asyncio.run(go())
    over = {n: c for n, c in booked(api).items() if c > CPU[n] * 1000}
    assert not over, over
