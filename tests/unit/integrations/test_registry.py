"""The registry's rows of the Kubeflow training jobs and MPIJob, and Deployment's wiring: each is
enabled by Kueue's framework name, served on its kind, and read from Kueue's documented sample
with Kueue's pod sets."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml

from tas import integrations
from tas.api.frameworks import Framework
from tas.integrations.registry import BY_FRAMEWORK, GENERIC_JOBS, enabled, managed_owners
from tests.unit.runtime.test_listed_kinds import runtime

SAMPLES = Path(__file__).parents[3] / "e2e" / "fixtures" / "kueue-examples"

# framework, (apiVersion, kind, plural), Kueue's sample, Kueue's pod sets of it (name, count).
KINDS = [
    (
        "kubeflow.org/pytorchjob",
        ("kubeflow.org/v1", "PyTorchJob", "pytorchjobs"),
        "sample-pytorchjob.yaml",
        [("master", 1), ("worker", 1)],
    ),
    (
        "kubeflow.org/tfjob",
        ("kubeflow.org/v1", "TFJob", "tfjobs"),
        "sample-tfjob.yaml",
        [("ps", 1), ("worker", 2)],
    ),
    (
        "kubeflow.org/xgboostjob",
        ("kubeflow.org/v1", "XGBoostJob", "xgboostjobs"),
        "sample-xgboostjob.yaml",
        [("master", 1), ("worker", 2)],
    ),
    (
        "kubeflow.org/paddlejob",
        ("kubeflow.org/v1", "PaddleJob", "paddlejobs"),
        "sample-paddlejob.yaml",
        [("worker", 2)],
    ),
    (
        "kubeflow.org/jaxjob",
        ("kubeflow.org/v1", "JAXJob", "jaxjobs"),
        "sample-jaxjob.yaml",
        [("worker", 2)],
    ),
    (
        "kubeflow.org/mpijob",
        ("kubeflow.org/v2beta1", "MPIJob", "mpijobs"),
        "sample-mpijob.yaml",
        [("launcher", 1), ("worker", 2)],
    ),
]


@pytest.mark.parametrize(
    ("framework", "resource", "sample", "pod_sets"), KINDS, ids=[k[0] for k in KINDS]
)
def test_each_kind_is_a_row_read_from_kueues_sample_with_kueues_pod_sets(
    framework, resource, sample, pod_sets
):
    api_version, kind_name, plural = resource
    assert integrations.parse(framework).enabled(framework)  # --integrations takes the name
    kind = BY_FRAMEWORK[framework]
    assert (kind.resource.api_version, kind.resource.kind, kind.resource.plural) == resource
    assert kind.resource.crd  # skipped while its CRD is missing
    assert (kind.suspend_webhook, kind.validate_webhook) == (
        f"suspend-queued-{plural}",
        f"validate-{plural}",
    )
    obj = yaml.safe_load((SAMPLES / sample).read_text())
    assert (obj["apiVersion"], obj["kind"]) == (api_version, kind_name)
    assert [(p["name"], p["count"]) for p in kind.job.pod_sets(obj)] == pod_sets
    assert kind.webhook.validate(obj) == []
    assert kind.mutate(obj, tas=True) == {"spec": {"runPolicy": {"suspend": True}}}


def test_each_row_is_enabled_only_by_its_own_name():
    for framework, *_ in KINDS:
        assert [k.framework for k in enabled(integrations.parse(framework))] == [framework]
    every = integrations.parse(",".join(k[0] for k in KINDS))
    assert [k.framework for k in enabled(every)] == [k[0] for k in KINDS]
    assert len({k.name for k in GENERIC_JOBS}) == len(GENERIC_JOBS)  # one watch name each


def owned_by(api_version: str, kind: str) -> dict:
    ref = {"apiVersion": api_version, "kind": kind, "name": "o", "uid": "o-uid"}
    return {"metadata": {"ownerReferences": [{**ref, "controller": True}]}}


@pytest.mark.parametrize(
    ("names", "owner", "left_to_owner"),
    [
        ("kubeflow.org/mpijob", ("kubeflow.org/v2beta1", "MPIJob"), True),
        ("kubeflow.org/pytorchjob", ("kubeflow.org/v1", "PyTorchJob"), True),
        ("batch/job", ("kubeflow.org/v2beta1", "MPIJob"), False),
        ("kubeflow.org/tfjob", ("kubeflow.org/v1", "PyTorchJob"), False),
    ],
    ids=["mpijob-launcher", "pytorchjob-pod", "mpijob-disabled", "other-kind-enabled"],
)
def test_what_an_enabled_training_job_controls_is_left_to_it(names, owner, left_to_owner):
    """Kueue's IsOwnerManagedByKueue: an MPIJob's launcher Job, a PyTorchJob's pods."""
    found = managed_owners(integrations.parse(names)).controller(owned_by(*owner))
    assert (found == "o-uid") is left_to_owner


def test_an_mpijobs_launcher_jobs_are_watched_for_its_pods():
    """The launcher's pod is controlled by the launcher Job, the Job by the MPIJob: the Jobs
    that mpi-operator labels `app` are watched while MPIJob is enabled."""
    [children] = BY_FRAMEWORK["kubeflow.org/mpijob"].children
    assert (children.resource.group, children.resource.plural, children.selector) == (
        "batch",
        "jobs",
        "app",
    )

    def waiting(rt) -> set[str]:  # listed once their CRDs are established
        return {w for kinds in rt.crd_kinds.values() for w in kinds}

    async def go():
        return waiting(runtime("kubeflow.org/mpijob")), waiting(runtime("kubeflow.org/tfjob"))

    with_mpijob, with_tfjob = asyncio.run(go())
    assert {"mpijobs", "mpijob-jobs"} <= with_mpijob  # with the MPIJob CRD, not before
    assert "mpijob-jobs" not in with_tfjob and "tfjobs" in with_tfjob


def test_deployment_enables_the_pod_integration_and_is_no_generic_job():
    """Its pods are single pods of the pod integration; it is never suspended."""
    enabled_now = integrations.parse("deployment")
    assert enabled_now.enabled(Framework.POD)
    assert enabled(enabled_now) == []
    assert Framework.DEPLOYMENT not in BY_FRAMEWORK
