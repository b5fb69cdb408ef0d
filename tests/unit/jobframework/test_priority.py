"""A new Workload's priority, resolved as Kueue resolves it."""

from __future__ import annotations

import pytest

from tas.api.constants import POD_PRIORITY_CLASS, WORKLOAD_PRIORITY_CLASS
from tas.cache.projections import PodPriorityClass, pod_priority_class_from_object
from tas.integrations.job.controller import JOB
from tas.integrations.leaderworkerset import workload as L
from tas.integrations.pod import group as g
from tas.jobframework.priority import Priority, PriorityClassMissing, resolve
from tas.jobframework.workload import build_workload
from tests.unit.integrations.builders import leader_and_workers as leaderworkerset
from tests.unit.integrations.builders import pod

WPC = {"high": 1000, "low": 10}
PCS = {
    "system": PodPriorityClass(2000),
    "default-b": PodPriorityClass(5, global_default=True),
    "default-a": PodPriorityClass(3, global_default=True),
}


def template(name: str | None = None) -> dict:
    spec: dict = {"containers": [{"name": "c"}]}
    if name:
        spec["priorityClassName"] = name
    return {"spec": spec}


def test_the_workload_priority_class_label_wins_over_the_pod_template():
    got = resolve({"kueue.x-k8s.io/priority-class": "high"}, [template("system")], WPC, PCS)
    assert got == Priority(1000, "high", WORKLOAD_PRIORITY_CLASS)
    assert got.to_spec() == {
        "priority": 1000,
        "priorityClassRef": {
            "group": "kueue.x-k8s.io",
            "kind": "WorkloadPriorityClass",
            "name": "high",
        },
    }


def test_the_first_template_naming_a_priority_class():
    got = resolve({}, [template(), template("system")], WPC, PCS)
    assert got == Priority(2000, "system", POD_PRIORITY_CLASS)
    assert got.to_spec()["priorityClassRef"] == {
        "group": "scheduling.k8s.io",
        "kind": "PriorityClass",
        "name": "system",
    }


def test_the_lowest_global_default_when_nothing_is_named():
    assert resolve({}, [template()], WPC, PCS) == Priority(3, "default-a", POD_PRIORITY_CLASS)
    assert resolve({}, [template()], WPC, {}) == Priority(0)
    assert Priority(0).to_spec() == {"priority": 0}


@pytest.mark.parametrize(
    ("labels", "templates", "field"),
    [
        ({"kueue.x-k8s.io/priority-class": "nope"}, [template()], "metadata.labels"),
        ({}, [template("nope")], "spec.template.spec.priorityClassName"),
    ],
)
def test_a_missing_class_names_the_field(labels, templates, field):
    with pytest.raises(PriorityClassMissing, match=field) as err:
        resolve(labels, templates, WPC, PCS)
    assert "'nope' not found" in str(err.value)


def test_priority_class_projection():
    assert pod_priority_class_from_object({"value": 7, "globalDefault": True}) == PodPriorityClass(
        7, True
    )
    assert pod_priority_class_from_object({"value": -3}) == PodPriorityClass(-3, False)


def job(labels: dict | None = None, pc: str | None = None) -> dict:
    tmpl = template(pc)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "j",
            "namespace": "ns",
            "uid": "u1",
            "labels": {"kueue.x-k8s.io/queue-name": "lq", **(labels or {})},
        },
        "spec": {"parallelism": 2, "completions": 2, "template": tmpl},
    }


def test_a_jobs_workload_carries_the_resolved_priority():
    wl = build_workload(JOB, job({"kueue.x-k8s.io/priority-class": "low"}), classes=(WPC, PCS))
    assert wl["spec"]["priority"] == 10
    assert wl["spec"]["priorityClassRef"] == {
        "group": "kueue.x-k8s.io",
        "kind": "WorkloadPriorityClass",
        "name": "low",
    }
    wl = build_workload(JOB, job(pc="system"), classes=(WPC, PCS))
    assert (wl["spec"]["priority"], wl["spec"]["priorityClassRef"]["name"]) == (2000, "system")
    with pytest.raises(PriorityClassMissing):
        build_workload(JOB, job(pc="gone"), classes=(WPC, PCS))


def test_pods_and_leaderworkersets_resolve_their_priority_too():
    lone = pod("p", labels={"kueue.x-k8s.io/priority-class": "high"})
    wl = g.single_workload(lone, classes=(WPC, PCS))
    assert (wl["spec"]["priority"], wl["spec"]["priorityClassRef"]["name"]) == (1000, "high")
    # Without the cluster's classes, the pod's own spec.priority (what the API server set).
    lone["spec"]["priority"] = 7
    assert g.single_workload(lone)["spec"]["priority"] == 7
    lws = leaderworkerset()
    lws["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "low"
    wl = L.group_workload(lws, 0, classes=(WPC, PCS))
    assert wl["spec"]["priority"] == 10
    assert wl["spec"]["priorityClassRef"]["kind"] == "WorkloadPriorityClass"
    lws["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "missing"
    with pytest.raises(PriorityClassMissing):
        L.group_workload(lws, 0, classes=(WPC, PCS))
