"""Which kinds the runtime lists, per --integrations; a CRD-served kind is listed only while its
CRD is established, and forgotten when it goes."""

import asyncio
import logging

from tas import integrations
from tas.config import Settings
from tas.kube import Kube
from tas.kube.kubeconfig import Connection
from tas.runtime.runtime import Runtime


def runtime(names: str) -> Runtime:
    kube = Kube(Connection(server="http://127.0.0.1:9", ssl=False))
    settings = Settings(leader_elect=False, integrations=integrations.parse(names))
    return Runtime(settings, kube=kube)


def listed(rt: Runtime) -> set[str]:
    return {r.name for r in rt.reflectors}


def test_only_the_enabled_integrations_kinds_are_listed():
    async def go():
        base = {
            "namespaces",
            "nodes",
            "pods",
            "topologies",
            "resourceflavors",
            "clusterqueues",
            "localqueues",
            "workloads",
            "workloadpriorityclasses",
            "cohorts",
            "priorityclasses",
            "limitranges",
            "runtimeclasses",
        }
        assert listed(runtime("")) == base
        assert listed(runtime("batch/job")) == base | {"jobs"}
        # JobSets wait for their CRD, and so do their Jobs (no JobSet, no JobSet's Job).
        assert listed(runtime("jobset.x-k8s.io/jobset")) == base | {"crds"}
        assert listed(runtime("statefulset")) == base | {"managed-pods"}  # pod, implicitly
        assert listed(runtime("leaderworkerset.x-k8s.io/leaderworkerset")) == base | {
            "managed-pods",
            "crds",
        }

    asyncio.run(go())


def crd(name: str, established: bool) -> dict:
    status = "True" if established else "False"
    return {
        "metadata": {"name": name},
        "status": {"conditions": [{"type": "Established", "status": status}]},
    }


def test_a_kind_is_listed_once_its_crd_is_established_and_forgotten_when_it_goes(caplog):
    async def go():
        rt = runtime("jobset.x-k8s.io/jobset")
        caplog.set_level(logging.INFO, logger="tas.operator")
        rt._report_missing_crds()
        assert (
            "CRD jobsets.jobset.x-k8s.io is not installed; skipped until it appears" in caplog.text
        )
        await rt._on_crd("ADDED", crd("jobsets.jobset.x-k8s.io", established=False))
        assert "jobsets" not in rt.dynamic
        await rt._on_crd("MODIFIED", crd("jobsets.jobset.x-k8s.io", established=True))
        assert set(rt.dynamic) == {"jobsets", "jobset-jobs"}  # the kind and its children
        [(reflector, task)] = rt.dynamic["jobsets"]
        assert reflector.path == "/apis/jobset.x-k8s.io/v1alpha2/jobsets"
        # Something listed meanwhile is forgotten with the CRD.
        reflector.known.add(("ns", "js"))
        rt.generic_jobs["jobsets"].reconciler.upsert(
            {"metadata": {"name": "js", "namespace": "ns", "uid": "u"}, "spec": {}}
        )
        await rt._on_crd("MODIFIED", crd("jobsets.jobset.x-k8s.io", established=True))
        assert rt.dynamic["jobsets"][0][1] is task  # not started twice
        await rt._on_crd("DELETED", {"metadata": {"name": "jobsets.jobset.x-k8s.io"}})
        await asyncio.sleep(0)
        assert not rt.dynamic and task.cancelled()
        assert not rt.generic_jobs["jobsets"].reconciler.objects
        await rt._on_crd("ADDED", crd("other.example.com", established=True))  # not ours
        assert not rt.dynamic
        await rt.kube.close()

    asyncio.run(go())


def test_a_watch_needing_two_crds_starts_once_both_are_established_and_stops_with_either():
    """A RayJob's RayClusters are listed only while both RayJobs and RayClusters are served."""

    async def go():
        rt = runtime("ray.io/rayjob")
        jobs, clusters = "rayjobs.ray.io", "rayclusters.ray.io"
        await rt._on_crd("ADDED", crd(clusters, established=True))
        assert "rayjob-rayclusters" not in rt.dynamic  # no RayJob can exist yet
        await rt._on_crd("ADDED", crd(jobs, established=True))
        assert {"rayjobs", "rayjob-rayclusters", "rayjob-jobs"} <= set(rt.dynamic)
        await rt._on_crd("DELETED", {"metadata": {"name": jobs}})
        await asyncio.sleep(0)
        assert not rt.dynamic
        await rt.kube.close()

    asyncio.run(go())
