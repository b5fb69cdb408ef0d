"""Kueue's managedJobsNamespaceSelector in the controllers, as the chart's webhooks apply it:
a queued object in kube-system or the operator's own namespace is never suspended at creation
(the webhooks are not called there), so the controllers must not touch it later either. One
definition for both: Settings.managed_namespaces_selector, which the chart passes as
--managed-jobs-namespace-selector and renders into its webhooks' namespaceSelector."""

from __future__ import annotations

import asyncio

import pytest

from tas import cli
from tas.config import Settings, default_managed_jobs_namespace_selector, parse_label_selector
from tas.integrations.job.controller import JOB
from tas.integrations.leaderworkerset.controller import LeaderWorkerSetController
from tas.integrations.pod.controller import PodController
from tas.jobframework.namespaces import ManagedNamespaces
from tas.jobframework.reconciler import JobReconciler
from tas.kube import Kube
from tas.kube.kubeconfig import Connection
from tas.runtime import watches
from tas.runtime.runtime import Runtime
from tests.unit.integrations.builders import QUEUE, RecordingKube, leaderworkerset, pod, state

NAME = "kubernetes.io/metadata.name"


def namespaces(*names: str, **labels: str) -> dict[str, dict[str, str]]:
    return {name: {NAME: name, **labels} for name in names}


@pytest.mark.parametrize(
    ("selector", "namespace", "managed"),
    [
        (default_managed_jobs_namespace_selector("tas-system"), "team-a", True),
        (default_managed_jobs_namespace_selector("tas-system"), "kube-system", False),
        (default_managed_jobs_namespace_selector("tas-system"), "tas-system", False),
        (default_managed_jobs_namespace_selector("tas-system"), "not-seen-yet", False),
        ({"matchLabels": {"kueue": "on"}}, "team-a", False),
        ({"matchLabels": {"kueue": "on"}}, "team-b", True),
        ({}, "kube-system", True),  # an empty selector selects every namespace
    ],
    ids=["tenant", "kube-system", "own", "unknown", "unlabelled", "labelled", "empty-selector"],
)
def test_which_namespaces_are_managed(selector, namespace, managed):
    known = {
        **namespaces("team-a", "kube-system", "tas-system"),
        **namespaces("team-b", kueue="on"),
    }
    assert (namespace in ManagedNamespaces(selector, known)) is managed


def test_the_default_is_kueues_for_the_operators_own_namespace():
    settings = Settings(leader_election_namespace="ops")
    assert settings.managed_namespaces_selector == {
        "matchExpressions": [{"key": NAME, "operator": "NotIn", "values": ["kube-system", "ops"]}]
    }
    chosen = {"matchLabels": {"a": "b"}}
    assert Settings(managed_jobs_namespace_selector=chosen).managed_namespaces_selector == chosen


def running_job(namespace: str) -> dict:
    return {
        "metadata": {
            "name": "j",
            "namespace": namespace,
            "uid": "job-uid",
            "labels": {QUEUE: "q"},
        },
        "spec": {
            "suspend": False,
            "parallelism": 1,
            "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}},
        },
        "status": {"active": 1},
    }


def system_state():
    out = state()
    for name in ("kube-system", "tas-system"):
        out.upsert_namespace(name, {NAME: name})
    return out


def managed(st) -> ManagedNamespaces:
    return ManagedNamespaces(default_managed_jobs_namespace_selector("tas-system"), st.namespaces)


@pytest.mark.parametrize("namespace", ["kube-system", "tas-system"])
def test_a_queued_job_outside_the_selector_runs_untouched(namespace):
    st = system_state()
    kube = RecordingKube()
    jobs = JobReconciler(JOB, st, kube, writer=None, managed=managed(st))
    asyncio.run(jobs.sync(jobs.upsert(running_job(namespace))))
    assert (kube.created, kube.patches, kube.events) == ([], [], [])
    # the same Job in a tenant's namespace gets its Workload
    asyncio.run(jobs.sync(jobs.upsert(running_job("ns"))))
    assert len(kube.created) == 1


def test_queued_pods_and_leaderworkersets_outside_the_selector_are_left_alone():
    st = system_state()
    kube = RecordingKube()
    pods = PodController(st, kube, writer=None, managed=managed(st))
    lws = LeaderWorkerSetController(st, kube, pods.pods, managed=managed(st))
    alone = pod("p", gated=True)
    alone["metadata"]["namespace"] = "kube-system"
    obj = leaderworkerset()
    obj["metadata"]["namespace"] = "kube-system"

    async def go():
        for key in pods.upsert(alone):
            await pods.sync(key)
        for key in lws.upsert(obj):
            await lws.sync(key)

    asyncio.run(go())
    assert (kube.created, kube.patches, kube.events) == ([], [], [])


def runtime(**settings) -> Runtime:
    kube = Kube(Connection(server="http://127.0.0.1:9", ssl=False))
    return Runtime(Settings(leader_elect=False, **settings), kube=kube)


def test_a_namespace_that_becomes_managed_has_its_objects_looked_at_again():
    """A Job's event may come before its namespace's (two watches): the Job is skipped while
    the namespace is unknown, and synced again when the namespace comes."""

    async def go():
        rt = runtime(leader_election_namespace="tas-system")
        rt.active = True
        submitted: list = []
        rt.generic_jobs["jobs"].worker.submit = submitted.append
        await watches.WATCHES["jobs"].handler(rt, "ADDED", running_job("late"))
        assert "late" not in rt.managed
        submitted.clear()
        await watches.on_namespace(
            rt, "ADDED", {"metadata": {"name": "late", "labels": {NAME: "late"}}}
        )
        assert "late" in rt.managed
        assert submitted == [("late", "j")]
        submitted.clear()  # relabelled, still managed: nothing to look at again
        await watches.on_namespace(
            rt, "MODIFIED", {"metadata": {"name": "late", "labels": {NAME: "late", "x": "y"}}}
        )
        assert submitted == []

    asyncio.run(go())


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("not json", "not JSON"),
        ("[]", "must be an object"),
        ('{"matchLabel": {}}', "must be an object"),
        ('{"matchExpressions": [{"key": "k", "operator": "Has"}]}', "operator must be one of"),
        ('{"matchExpressions": [{"key": "k", "operator": "In"}]}', "values must be set"),
        ('{"matchExpressions": [{"key": "k", "operator": "Exists", "values": ["v"]}]}', "values"),
        ('{"matchLabels": {"k": 1}}', "matchLabels"),
    ],
    ids=[
        "not-json",
        "a-list",
        "misspelled",
        "operator",
        "in-without-values",
        "exists-with-values",
        "label-value",
    ],
)
def test_a_bad_selector_is_one_line_naming_the_flag(text, problem, capsys):
    with pytest.raises(ValueError, match=problem):
        parse_label_selector(text)
    assert cli.main(["operator", "--managed-jobs-namespace-selector", text]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("tas operator: --managed-jobs-namespace-selector: ") and err.count("\n") == 1
    )


def test_the_flags_reach_the_settings(monkeypatch):
    seen = {}

    async def no_operator(settings, liveness):
        seen["settings"] = settings

    monkeypatch.setattr(cli, "_run_operator", no_operator)
    args = [
        "operator",
        '--managed-jobs-namespace-selector={"matchLabels": {"team": "a"}}',
        "--max-leaderworkerset-replicas=7",
    ]
    assert cli.main(args) == 0
    assert seen["settings"].managed_jobs_namespace_selector == {"matchLabels": {"team": "a"}}
    assert seen["settings"].max_leaderworkerset_replicas == 7
    assert cli.main(["operator", "--max-leaderworkerset-replicas=0"]) == 2
