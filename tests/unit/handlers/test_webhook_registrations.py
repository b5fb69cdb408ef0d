"""Every webhook is registered with kopf on its integration's kind, under the path the chart's
configuration calls, for the operations the chart sends it; one of a disabled integration passes
everything."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import kopf
import pytest

from tas import features
from tas.api.constants import QUEUE_NAME_LABEL
from tas.handlers import operator as op
from tas.integrations import parse
from tas.integrations.registry import BY_FRAMEWORK
from tests.unit.chart.test_chart import webhook_table


def registered() -> dict:
    return {h.id: h for h in kopf.get_default_registry()._webhooks.get_all_handlers()}


@pytest.mark.parametrize(
    ("framework", "handler_id", "kind", "group", "plural", "operations"),
    webhook_table(),
    ids=[row[1] for row in webhook_table()],
)
def test_each_webhook_is_registered_as_the_chart_calls_it(
    framework, handler_id, kind, group, plural, operations
):
    handler = registered()[handler_id]
    assert (handler.selector.group, handler.selector.any_name) == (group, plural)
    assert handler.operations == operations
    assert handler.reason == ("mutating" if kind.startswith("Mutating") else "validating")
    assert handler.side_effects is False
    # Pods are reviewed whether or not they carry a queue name: a parent's mark queues them.
    queued_only = None if plural == "pods" else {QUEUE_NAME_LABEL: kopf.PRESENT}
    assert handler.labels == queued_only


JOBSET_CONTROLLER = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2",
    "kind": "JobSet",
    "name": "js",
    "uid": "js-uid",
    "controller": True,
}


def job(suspend: bool = False, owners: tuple = ()) -> kopf.Body:
    metadata = {"name": "j", "namespace": "ns", "labels": {QUEUE_NAME_LABEL: "q"}}
    return kopf.Body(
        {
            "metadata": {**metadata, "ownerReferences": list(owners)},
            "spec": {"suspend": suspend, "template": {}},
        }
    )


def suspend_patch(
    integrations: str, body: kopf.Body, handler_id: str = op.SUSPEND_WEBHOOK, gates: str = ""
) -> dict:
    patch = kopf.Patch()
    settings = SimpleNamespace(integrations=parse(integrations), gates=features.parse(gates))
    handler = registered()[handler_id]
    asyncio.run(handler.fn(body=body, patch=patch, memo=SimpleNamespace(settings=settings)))
    return dict(patch)


@pytest.mark.parametrize(
    ("integrations", "suspended", "wanted"),
    [
        ("batch/job", False, {"spec": {"suspend": True}}),
        ("batch/job", True, {}),
        ("pod", False, {}),
    ],
    ids=["queued-job-suspended", "already-suspended", "integration-disabled"],
)
def test_a_queued_job_is_suspended_only_while_its_integration_is_enabled(
    integrations, suspended, wanted
):
    assert suspend_patch(integrations, job(suspended)) == wanted


@pytest.mark.parametrize(
    ("integrations", "wanted"),
    [
        ("batch/job,jobset.x-k8s.io/jobset", {}),
        ("batch/job", {"spec": {"suspend": True}}),
    ],
    ids=["jobset-enabled-left-to-it", "jobset-disabled-queued-alone"],
)
def test_a_job_controlled_by_an_enabled_managed_kind_is_left_to_its_owner(integrations, wanted):
    """Kueue's IsOwnerManagedByKueue: only an owner of an enabled integration takes it over."""
    assert suspend_patch(integrations, job(owners=(JOBSET_CONTROLLER,))) == wanted


def mpijob_launcher_as_worker() -> kopf.Body:
    replica = {"replicas": 1, "template": {"spec": {"containers": [{"name": "c"}]}}}
    return kopf.Body(
        {
            "metadata": {"name": "pi", "namespace": "ns", "labels": {QUEUE_NAME_LABEL: "q"}},
            "spec": {
                "runLauncherAsWorker": True,
                "mpiReplicaSpecs": {"Launcher": replica, "Worker": {**replica, "replicas": 2}},
            },
        }
    )


@pytest.mark.parametrize(
    ("gates", "offset"),
    [("", {"kueue.x-k8s.io/pod-index-offset": "1"}), ("TopologyAwareScheduling=false", None)],
    ids=["tas-on-workers-offset", "tas-off-no-offset"],
)
def test_the_mpijob_webhook_is_told_whether_topology_aware_scheduling_is_on(gates, offset):
    """Kueue's MPIJob webhook offsets the workers' rank behind a working launcher only with
    TAS on; the webhook is handed the operator's gate."""
    handler_id = BY_FRAMEWORK["kubeflow.org/mpijob"].suspend_webhook
    patch = suspend_patch("kubeflow.org/mpijob", mpijob_launcher_as_worker(), handler_id, gates)
    assert patch["spec"]["runPolicy"] == {"suspend": True}
    worker = patch["spec"].get("mpiReplicaSpecs", {}).get("Worker")
    assert (worker["template"]["metadata"]["annotations"] if worker else None) == offset
