"""LimitRange and RuntimeClass watches: into the cache, and the queued objects whose Workload
holds no quota looked at again (their Workload is re-created when it no longer asks for what
their pods will), as Kueue adjusts its pending workloads when either changes."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from tas.cache import projections as proj
from tas.cache.state import ClusterState
from tas.runtime.watches import on_limit_range, on_runtime_class


class Worker:
    def __init__(self) -> None:
        self.submitted: list = []

    def submit(self, key) -> None:
        self.submitted.append(key)


class Reconciler:
    """Queued objects by key and their Workloads (None: none yet)."""

    def __init__(self, workloads: dict) -> None:
        self.objects = {key: {"metadata": {"uid": "/".join(key)}} for key in workloads}
        self._workloads = {"/".join(key): w for key, w in workloads.items()}

    def workload_of(self, obj):
        return self._workloads[obj["metadata"]["uid"]]


def runtime(**jobs):
    """A runtime of two GenericJob kinds; `rt.jobs` and `rt.job_worker` are the first's."""
    kinds = {
        name: SimpleNamespace(reconciler=Reconciler({}), worker=Worker())
        for name in ("jobs", "jobsets")
    }
    rt = SimpleNamespace(state=ClusterState(), generic_jobs=kinds)
    rt.job_worker = kinds["jobs"].worker
    return rt


def set_jobs(rt, workloads: dict) -> Reconciler:
    rt.generic_jobs["jobs"].reconciler = Reconciler(workloads)
    return rt.generic_jobs["jobs"].reconciler


PENDING = SimpleNamespace(has_quota=False)
ADMITTED = SimpleNamespace(has_quota=True)


def lr(namespace: str, cpu: str = "1") -> dict:
    return {
        "metadata": {"name": "lr", "namespace": namespace},
        "spec": {"limits": [{"type": "Container", "defaultRequest": {"cpu": cpu}}]},
    }


def run(handler, rt, kind, obj) -> None:
    asyncio.run(handler(rt, kind, obj))


def test_a_limit_range_resubmits_its_namespaces_pending_objects_once() -> None:
    rt = runtime()
    jobs = set_jobs(rt, {("a", "p"): PENDING, ("a", "q"): ADMITTED, ("b", "p"): PENDING})
    jobs.objects[("a", "none")] = {"metadata": {"uid": "a/none"}}
    jobs._workloads["a/none"] = None  # no Workload yet: it will be built with the defaults
    run(on_limit_range, rt, "ADDED", lr("a"))
    assert rt.job_worker.submitted == [("a", "p")]
    assert rt.state.pod_defaults("a").containers.requests == {"cpu": "1"}

    run(on_limit_range, rt, "MODIFIED", lr("a"))  # a relist, nothing changed
    assert rt.job_worker.submitted == [("a", "p")]

    run(on_limit_range, rt, "DELETED", {"metadata": {"name": "lr", "namespace": "a"}})
    assert rt.job_worker.submitted == [("a", "p"), ("a", "p")]
    assert rt.state.pod_defaults("a") == proj.PodDefaults()


def test_an_unreadable_limit_range_counts_as_none(caplog) -> None:
    rt = runtime()
    run(on_limit_range, rt, "ADDED", lr("a", cpu="lots"))
    assert rt.state.pod_defaults("a") == proj.PodDefaults()
    assert "spec.limits[0].defaultRequest.cpu" in caplog.text


def test_a_runtime_class_resubmits_every_namespaces_pending_objects() -> None:
    rt = runtime()
    set_jobs(rt, {("a", "p"): PENDING, ("b", "p"): PENDING, ("b", "q"): ADMITTED})
    kata = {"metadata": {"name": "kata"}, "handler": "kata", "overhead": {"podFixed": {"cpu": "1"}}}
    run(on_runtime_class, rt, "ADDED", kata)
    assert sorted(rt.job_worker.submitted) == [("a", "p"), ("b", "p")]
    assert rt.state.pod_defaults("b").overheads == {"kata": {"cpu": "1"}}
    run(on_runtime_class, rt, "DELETED", {"metadata": {"name": "kata"}})
    assert rt.state.pod_defaults("b").overheads == {}
