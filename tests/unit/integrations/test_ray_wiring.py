"""The Ray kinds as the operator wires them from their registry rows: the webhooks (an UPDATE is
validated against the object before it; a RayCluster its parent controls is left to it), the
watches of the RayCluster CRD (one CRD, several watches), and the owner links that make the
pods of a RayJob's RayCluster and submitter Job its Workload's."""

from __future__ import annotations

import asyncio
import copy
from types import SimpleNamespace

import kopf
import pytest

import tas.handlers.operator  # noqa: F401  (registers the webhooks)
from tas import features, integrations
from tas.config import Settings
from tas.integrations.registry import BY_FRAMEWORK
from tas.kube import Kube
from tas.kube.kubeconfig import Connection
from tas.runtime.runtime import Runtime
from tas.runtime.watches import WATCHES
from tests.unit.integrations.builders import QUEUE
from tests.unit.integrations.ray_builders import raycluster, rayjob, rayservice, worker

ALL_RAY = "ray.io/rayjob,ray.io/raycluster,ray.io/rayservice"


def handler(handler_id: str):
    return {h.id: h for h in kopf.get_default_registry()._webhooks.get_all_handlers()}[
        handler_id
    ].fn


def memo(names: str) -> SimpleNamespace:
    settings = SimpleNamespace(integrations=integrations.parse(names), gates=features.parse(""))
    return SimpleNamespace(settings=settings)


def validate(framework: str, obj: dict, old: dict | None, names: str = ALL_RAY) -> str | None:
    """The refusal's message, None when admitted."""
    fn = handler(BY_FRAMEWORK[framework].validate_webhook)
    try:
        asyncio.run(fn(body=kopf.Body(obj), memo=memo(names), old=old))
    except kopf.AdmissionError as exc:
        return str(exc)
    return None


def mutate(framework: str, obj: dict, names: str = ALL_RAY) -> dict:
    patch = kopf.Patch()
    fn = handler(BY_FRAMEWORK[framework].suspend_webhook)
    asyncio.run(fn(body=kopf.Body(obj), patch=patch, memo=memo(names)))
    return dict(patch)


def requeued(obj: dict, suspend: bool) -> tuple[dict, dict]:
    """(old, new): `obj` moved to another queue, running or not."""
    old = copy.deepcopy(obj)
    for o in (old, obj):
        spec = (
            o["spec"].get("rayClusterSpec", o["spec"]) if o["kind"] == "RayService" else o["spec"]
        )
        spec["suspend"] = suspend
    obj["metadata"]["labels"][QUEUE] = "other"
    return old, obj


IMMUTABLE = f"metadata.labels[{QUEUE}]: field is immutable"
KINDS = [
    ("ray.io/rayjob", rayjob(worker("w"))),
    ("ray.io/raycluster", raycluster(worker("w"))),
    ("ray.io/rayservice", rayservice(worker("w"))),
]


@pytest.mark.parametrize(("framework", "obj"), KINDS, ids=[k for k, _ in KINDS])
def test_the_queue_name_of_a_running_ray_object_is_refused_on_update(framework, obj):
    """Kueue's ValidateJobOnUpdate, through the registered webhook: the old object reaches it."""
    old, new = requeued(copy.deepcopy(obj), suspend=False)
    assert IMMUTABLE in (validate(framework, new, old) or "")
    old, new = requeued(copy.deepcopy(obj), suspend=True)
    assert validate(framework, new, old) is None  # suspended: it may move


@pytest.mark.parametrize(("framework", "obj"), KINDS, ids=[k for k, _ in KINDS])
def test_a_ray_object_is_validated_at_creation_without_an_old_one(framework, obj):
    bad = copy.deepcopy(obj)
    spec = bad["spec"] if framework == "ray.io/raycluster" else bad["spec"]["rayClusterSpec"]
    spec["workerGroupSpecs"][0]["groupName"] = "head"
    assert '"head" is reserved for the head group' in (validate(framework, bad, None) or "")
    assert validate(framework, obj, None) is None


RAYJOB_CONTROLLER = {
    "apiVersion": "ray.io/v1",
    "kind": "RayJob",
    "name": "job",
    "uid": "job-uid",
    "controller": True,
}


def owned_cluster() -> dict:
    obj = raycluster(worker("w"), suspend=False)
    obj["metadata"]["ownerReferences"] = [RAYJOB_CONTROLLER]
    return obj


@pytest.mark.parametrize(
    "names",
    [ALL_RAY, "ray.io/raycluster"],
    ids=["parent-enabled", "parent-disabled"],
)
def test_a_raycluster_a_rayjob_controls_is_left_to_it(names):
    """KubeRay copies the RayJob's labels, queue name included, onto its RayCluster: it is
    not suspended at creation (the managed-owner rule, or Kueue's ancestor check)."""
    assert mutate("ray.io/raycluster", owned_cluster(), names) == {}


def test_a_raycluster_an_enabled_rayjob_controls_is_not_validated_on_its_own():
    running = owned_cluster()
    old = copy.deepcopy(running)
    running["metadata"]["labels"][QUEUE] = "other"
    assert validate("ray.io/raycluster", running, old) is None


def test_a_raycluster_of_its_own_is_suspended_at_creation():
    assert mutate("ray.io/raycluster", raycluster(worker("w"), suspend=False)) == {
        "spec": {"suspend": True}
    }


def runtime(names: str) -> Runtime:
    kube = Kube(Connection(server="http://127.0.0.1:9", ssl=False))
    return Runtime(Settings(leader_elect=False, integrations=integrations.parse(names)), kube=kube)


def crd(name: str) -> dict:
    return {
        "metadata": {"name": name},
        "status": {"conditions": [{"type": "Established", "status": "True"}]},
    }


def test_the_raycluster_crd_starts_every_watch_that_needs_it():
    """One CRD serves the RayCluster kind and the children of RayJob and RayService."""

    async def go():
        rt = runtime(ALL_RAY)
        listed = {r.name for r in rt.reflectors}
        # Nothing of Ray's is listed before its CRDs; the submitter Jobs wait for RayJobs.
        assert not {"rayjob-jobs", "rayclusters", "rayjob-rayclusters"} & listed
        await rt._on_crd("ADDED", crd("rayclusters.ray.io"))
        assert set(rt.dynamic) == {"rayclusters"}  # no RayJob or RayService can exist yet
        for parent in ("rayjobs.ray.io", "rayservices.ray.io"):
            await rt._on_crd("ADDED", crd(parent))
        assert {"rayclusters", "rayjob-rayclusters", "rayservice-rayclusters"} <= set(rt.dynamic)
        assert "rayjob-jobs" in rt.dynamic
        assert rt.dynamic["rayjob-rayclusters"][0][0].params == {
            "labelSelector": "ray.io/originated-from-crd=RayJob"
        }
        await rt._on_crd("DELETED", {"metadata": {"name": "rayclusters.ray.io"}})
        assert not {"rayclusters", "rayjob-rayclusters"} & set(rt.dynamic)
        await rt.kube.close()

    asyncio.run(go())


def child(kind: str, name: str, owner: dict) -> dict:
    return {
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"{name}-uid",
            "labels": {"ray.io/originated-from-crd": owner["kind"]},
            "ownerReferences": [owner],
        },
    }


@pytest.mark.parametrize(
    ("names", "linked"),
    [(ALL_RAY, "job-uid"), ("ray.io/raycluster", None)],
    ids=["rayjob-enabled", "rayjob-disabled"],
)
def test_a_rayjobs_cluster_and_submitter_job_are_linked_to_it(names, linked):
    """pod -> RayCluster -> RayJob and pod -> submitter Job -> RayJob: the links recorded."""

    async def go():
        rt = runtime(names)
        for watch, obj in (
            ("rayjob-rayclusters", child("RayCluster", "job-raycluster-x", RAYJOB_CONTROLLER)),
            ("rayjob-jobs", child("Job", "submitter", RAYJOB_CONTROLLER)),
        ):
            await WATCHES[watch].handler(rt, "ADDED", obj)
            assert rt.state.owner_chain(obj["metadata"]["uid"])[1:] == ([linked] if linked else [])
        await rt.kube.close()

    asyncio.run(go())
