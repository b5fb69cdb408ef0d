"""TrainJob and AppWrapper as the runtime wires them from their registry rows: the runtimes a
TrainJob is built from are watched and cached (a TrainJob naming one is synced again when it
appears or changes, and a missing one is a Warning event, not an error out of sync); the
objects their controllers make are left to them, and the owner chain down to the pods is
recorded (pod -> Job -> JobSet -> TrainJob even with the JobSet integration off; an
AppWrapper's wrapped Job or PyTorchJob)."""

from __future__ import annotations

import asyncio
import copy

import kopf
import pytest
from kopf._cogs.structs import references

from tas import integrations
from tas.config import Settings
from tas.jobframework.reconciler import JobReconciler
from tas.kube import Kube
from tas.kube.kubeconfig import Connection
from tas.runtime.runtime import Runtime
from tas.runtime.watches import WATCHES
from tests.unit.integrations.builders import RecordingKube, state
from tests.unit.integrations.trainjob.test_trainjob import TORCH_DISTRIBUTED, trainjob

TRAINJOB = "trainer.kubeflow.org/trainjob"
APPWRAPPER = "workload.codeflare.dev/appwrapper"
JOBSET = "jobset.x-k8s.io/jobset"
RUNTIMES_CRD = "clustertrainingruntimes.trainer.kubeflow.org"


def runtime(names: str) -> Runtime:
    kube = Kube(Connection(server="http://127.0.0.1:9", ssl=False))
    settings = Settings(leader_elect=False, integrations=integrations.parse(names))
    return Runtime(settings, kube=kube)


def run(names: str, body) -> None:
    async def go():
        rt = runtime(names)
        try:
            await body(rt)
        finally:
            await rt.kube.close()

    asyncio.run(go())


def established(name: str) -> dict:
    return {
        "metadata": {"name": name},
        "status": {"conditions": [{"type": "Established", "status": "True"}]},
    }


def controlled(kind: str, api_version: str, name: str, uid: str) -> list[dict]:
    ref = {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid}
    return [{**ref, "controller": True}]


def obj(name: str, uid: str, owners: list[dict] | None = None, **labels) -> dict:
    meta = {"name": name, "namespace": "ns", "uid": uid, "resourceVersion": "1", "labels": labels}
    return {"metadata": {**meta, "ownerReferences": owners or []}, "spec": {}}


TJ_OWNER = controlled("TrainJob", "trainer.kubeflow.org/v1alpha1", "tj", "tj-uid")
JS_OWNER = controlled("JobSet", "jobset.x-k8s.io/v1alpha2", "tj", "js-uid")
AW_OWNER = controlled("AppWrapper", "workload.codeflare.dev/v1beta2", "aw", "aw-uid")


# ---- what is listed ------------------------------------------------------------------------------


TRAINJOBS_CRD = "trainjobs.trainer.kubeflow.org"
JOBSETS_CRD = "jobsets.jobset.x-k8s.io"
APPWRAPPERS_CRD = "appwrappers.workload.codeflare.dev"
PYTORCHJOBS_CRD = "pytorchjobs.kubeflow.org"


@pytest.mark.parametrize(
    ("names", "crds", "started"),
    [
        (TRAINJOB, [TRAINJOBS_CRD], {"trainjobs", "trainjob-jobs"}),
        (TRAINJOB, [RUNTIMES_CRD], set()),  # no TrainJob can exist: nothing to build from them
        (
            TRAINJOB,
            [TRAINJOBS_CRD, RUNTIMES_CRD],
            {"trainjobs", "trainjob-jobs", "clustertrainingruntimes"},
        ),
        (
            TRAINJOB,
            [TRAINJOBS_CRD, "trainingruntimes.trainer.kubeflow.org"],
            {"trainjobs", "trainjob-jobs", "trainingruntimes"},
        ),
        (TRAINJOB, [JOBSETS_CRD], set()),
        (
            TRAINJOB,
            [JOBSETS_CRD, TRAINJOBS_CRD],
            {"trainjobs", "trainjob-jobs", "trainjob-jobsets"},
        ),
        (f"{TRAINJOB},{JOBSET}", [JOBSETS_CRD], {"jobsets", "jobset-jobs"}),
        (APPWRAPPER, [APPWRAPPERS_CRD], {"appwrappers", "appwrapper-jobs"}),
        (APPWRAPPER, [PYTORCHJOBS_CRD], set()),
        (
            APPWRAPPER,
            [PYTORCHJOBS_CRD, APPWRAPPERS_CRD],
            {"appwrappers", "appwrapper-jobs", "appwrapper-pytorchjobs"},
        ),
    ],
    ids=[
        "trainjobs",
        "runtimes-alone",
        "cluster-runtimes",
        "namespaced-runtimes",
        "jobsets-alone",
        "the-trainjobs-jobsets",
        "jobset-kind-and-children",
        "appwrappers",
        "pytorchjobs-alone",
        "wrapped-pytorchjobs",
    ],
)
def test_each_crd_served_watch_starts_once_every_crd_it_needs_is_established(names, crds, started):
    """A kind's children and lookups need the kind's CRD as well as their own."""

    async def body(rt: Runtime):
        for crd in crds:
            await rt._on_crd("ADDED", established(crd))
        assert set(rt.dynamic) == started
        for pairs in rt.dynamic.values():
            for _, task in pairs:
                task.cancel()

    run(names, body)


def test_the_jobs_below_wait_for_their_kind_and_the_runtimes_only_with_trainjob():
    async def body(rt: Runtime):
        listed = {r.name for r in rt.reflectors}
        assert "crds" in listed
        assert not {"trainjob-jobs", "appwrapper-jobs"} & listed
        assert "trainjob-jobs" in rt.crd_kinds[TRAINJOBS_CRD]
        assert "appwrapper-jobs" in rt.crd_kinds[APPWRAPPERS_CRD]
        assert "jobsets" not in rt.crd_kinds.get(JOBSETS_CRD, [])

    run(f"{TRAINJOB},{APPWRAPPER}", body)
    run("batch/job", lambda rt: _no_runtimes(rt))


async def _no_runtimes(rt: Runtime) -> None:
    assert RUNTIMES_CRD not in rt.crd_kinds


# ---- the runtimes' cache -------------------------------------------------------------------------


def queued_trainjob(name: str, runtime_name: str) -> dict:
    tj = trainjob()
    tj["metadata"].update(name=name, uid=f"{name}-uid")
    tj["spec"]["runtimeRef"] = {"name": runtime_name}
    return tj


def test_a_runtime_appearing_or_changing_syncs_the_trainjobs_naming_it_again():
    async def body(rt: Runtime):
        generic = rt.generic_jobs["trainjobs"]
        for name, runtime_name in (("a", "torch-distributed"), ("b", "other")):
            generic.reconciler.upsert(queued_trainjob(name, runtime_name))
        rt.active = True
        handle = WATCHES["clustertrainingruntimes"].handler
        await handle(rt, "ADDED", TORCH_DISTRIBUTED)
        assert list(generic.worker._pending) == [("ns", "a")]
        assert generic.lookup(queued_trainjob("c", "torch-distributed")) is not None
        assert generic.lookup(queued_trainjob("c", "other")) is None
        # The reconciler's TrainJob reads the cache: the Workload's pod sets are the runtime's.
        [pod_set] = generic.reconciler.job.pod_sets(generic.reconciler.objects[("ns", "a")])
        assert (pod_set["name"], pod_set["count"]) == ("node", 1)
        generic.worker._pending.clear()
        await handle(rt, "DELETED", {"metadata": {"name": "torch-distributed"}})
        assert list(generic.worker._pending) == [("ns", "a")]
        assert generic.lookup(queued_trainjob("c", "torch-distributed")) is None

    run(TRAINJOB, body)


def test_a_namespaced_runtime_is_found_only_in_its_namespace():
    async def body(rt: Runtime):
        generic = rt.generic_jobs["trainjobs"]
        namespaced = copy.deepcopy(TORCH_DISTRIBUTED)
        namespaced.update(kind="TrainingRuntime")
        namespaced["metadata"] = {"name": "torch-distributed", "namespace": "ns"}
        await WATCHES["trainingruntimes"].handler(rt, "ADDED", namespaced)
        tj = queued_trainjob("a", "torch-distributed")
        assert generic.lookup(tj) is None  # a ClusterTrainingRuntime by default
        tj["spec"]["runtimeRef"]["kind"] = "TrainingRuntime"
        assert generic.lookup(tj) is not None
        tj["metadata"]["namespace"] = "elsewhere"
        assert generic.lookup(tj) is None

    run(TRAINJOB, body)


def test_a_trainjob_whose_runtime_is_missing_gets_a_warning_event_naming_it():
    async def body(rt: Runtime):
        kube = RecordingKube()
        job = rt.generic_jobs["trainjobs"].reconciler.job
        reconciler = JobReconciler(job, state(), kube, writer=None)
        key = reconciler.upsert(queued_trainjob("a", "torch-distributed"))
        await reconciler.sync(key)  # raises nothing
        assert kube.created == []
        [(name, reason, message)] = kube.events
        assert (name, reason) == ("a", "ErrWorkloadCompose")
        assert "ClusterTrainingRuntime 'torch-distributed' not found" in message

    run(TRAINJOB, body)


# ---- left to their owner, and the owner chain ---------------------------------------------------


def test_the_trainjobs_jobset_and_the_appwrappers_job_are_not_queued_on_their_own():
    async def body(rt: Runtime):
        jobset = obj("tj", "js-uid", TJ_OWNER, **{"kueue.x-k8s.io/queue-name": "q"})
        await WATCHES["jobsets"].handler(rt, "ADDED", jobset)
        assert not rt.generic_jobs["jobsets"].reconciler.objects
        job = obj("aw-job", "job-uid", AW_OWNER, **{"kueue.x-k8s.io/queue-name": "q"})
        await WATCHES["jobs"].handler(rt, "ADDED", job)
        assert not rt.generic_jobs["jobs"].reconciler.objects

    run(f"batch/job,{JOBSET},{TRAINJOB},{APPWRAPPER}", body)


@pytest.mark.parametrize("names", [TRAINJOB, f"{TRAINJOB},{JOBSET}"], ids=["alone", "with-jobset"])
def test_pod_job_jobset_trainjob_is_recorded_with_or_without_the_jobset_integration(names):
    async def body(rt: Runtime):
        for watch, child in (
            ("trainjob-jobsets", obj("tj", "js-uid", TJ_OWNER)),
            ("trainjob-jobs", obj("tj-node-0", "job-uid", JS_OWNER)),
        ):
            await WATCHES[watch].handler(rt, "ADDED", child)
        assert rt.state.owner_chain("job-uid") == ["job-uid", "js-uid", "tj-uid"]
        assert rt.managed_owner("job-uid")  # its pods are not queued on their own
        await WATCHES["trainjob-jobsets"].handler(rt, "DELETED", obj("tj", "js-uid"))
        assert rt.state.owner_chain("job-uid") == ["job-uid", "js-uid"]

    run(names, body)


def test_a_job_of_a_jobset_no_trainjob_controls_leads_nowhere():
    async def body(rt: Runtime):
        await WATCHES["trainjob-jobs"].handler(rt, "ADDED", obj("j", "job-uid", JS_OWNER))
        assert rt.state.owner_chain("job-uid") == ["job-uid", "js-uid"]  # ends at the JobSet
        other = controlled("Deployment", "apps/v1", "d", "d-uid")
        await WATCHES["trainjob-jobs"].handler(rt, "ADDED", obj("k", "k-uid", other))
        assert rt.state.owner_chain("k-uid") == ["k-uid"]  # not a JobSet: no link

    run(TRAINJOB, body)


@pytest.mark.parametrize("watch", ["appwrapper-jobs", "appwrapper-pytorchjobs"])
def test_an_appwrappers_wrapped_object_is_linked_to_it(watch):
    async def body(rt: Runtime):
        wrapped = obj("aw-0", "w-uid", AW_OWNER, **{"workload.codeflare.dev/appwrapper": "aw"})
        await WATCHES[watch].handler(rt, "ADDED", wrapped)
        assert rt.state.owner_chain("w-uid") == ["w-uid", "aw-uid"]
        await WATCHES[watch].handler(rt, "DELETED", wrapped)
        assert rt.state.owner_chain("w-uid") == ["w-uid"]

    run(APPWRAPPER, body)


# ---- the validating webhook reads the runtime from the cache --------------------------------------


def test_the_trainjob_webhook_refuses_a_missing_runtime_and_admits_with_it():
    from tests.unit.handlers.test_webhook_isolation import kopf_review_function, review

    trainjobs = references.Resource(
        "trainer.kubeflow.org", "v1alpha1", "trainjobs", kind="TrainJob", namespaced=True
    )

    async def body(rt: Runtime):
        memo = kopf.Memo(settings=rt.settings, runtime=rt, loop=asyncio.get_running_loop())
        request = review("CREATE", queued_trainjob("a", "torch-distributed"), None, trainjobs)
        fn = kopf_review_function(memo, trainjobs)
        missing = (await fn(request, webhook="validate-trainjobs"))["response"]
        await WATCHES["clustertrainingruntimes"].handler(rt, "ADDED", TORCH_DISTRIBUTED)
        found = (await fn(request, webhook="validate-trainjobs"))["response"]
        assert missing["allowed"] is False
        assert (
            "ClusterTrainingRuntime 'torch-distributed' not found" in missing["status"]["message"]
        )
        assert found["allowed"] is True

    run(TRAINJOB, body)
