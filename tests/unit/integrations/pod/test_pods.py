"""Plain pods and pod groups: the webhooks' decisions and the group's (Kueue's pod_webhook_test.go
and pod_controller_test.go scenarios, as tables)."""

from __future__ import annotations

import pytest

from tas.cache import projections as proj
from tas.integrations.pod import group as g
from tas.integrations.pod import webhook
from tas.integrations.pod.controller import start_patch, work_key
from tests.unit.integrations.builders import FLAVORS, QUEUE, RACK, REQUIRED, admitted, pod

GATES = [{"name": "kueue.x-k8s.io/admission"}, {"name": "kueue.x-k8s.io/topology"}]


def plain(labels=None, annotations=None, gates=None) -> dict:
    return {
        "metadata": {
            "name": "p",
            "namespace": "ns",
            "labels": labels or {},
            "annotations": annotations or {},
        },
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
            **({"schedulingGates": gates} if gates else {}),
        },
    }


# ---- mutating webhook --------------------------------------------------------------------------


def test_a_queued_pod_is_managed_gated_and_held_by_the_finalizer():
    patch = webhook.mutate(plain({QUEUE: "q"}))
    assert patch["metadata"]["labels"] == {"kueue.x-k8s.io/managed": "true"}
    assert patch["metadata"]["finalizers"] == ["kueue.x-k8s.io/managed"]
    assert patch["spec"]["schedulingGates"] == GATES
    assert len(patch["metadata"]["annotations"]["kueue.x-k8s.io/role-hash"]) == 8


@pytest.mark.parametrize(
    ("pod_obj", "managed"),
    [
        (plain(), False),
        (plain({"app": "x"}), False),
        (plain({QUEUE: "q"}), True),
        (plain(annotations={"kueue.x-k8s.io/pod-suspending-parent": "statefulset"}), True),
    ],
    ids=["nothing", "other-labels", "queue-name", "suspending-parent"],
)
def test_only_queued_pods_or_pods_marked_by_their_parent_are_managed(pod_obj, managed):
    assert bool(webhook.mutate(pod_obj)) is managed


def test_gates_already_there_and_other_gates_are_kept_once():
    patch = webhook.mutate(
        plain({QUEUE: "q"}, gates=[{"name": "other"}, {"name": "kueue.x-k8s.io/topology"}])
    )
    assert patch["spec"]["schedulingGates"] == [
        {"name": "other"},
        {"name": "kueue.x-k8s.io/topology"},
        {"name": "kueue.x-k8s.io/admission"},
    ]


def test_the_pod_index_label_named_by_its_parent_is_copied_for_rank_order():
    obj = plain(
        {QUEUE: "q", "apps.kubernetes.io/pod-index": "2"},
        {"kueue.x-k8s.io/pod-group-pod-index-label": "apps.kubernetes.io/pod-index"},
    )
    assert webhook.mutate(obj)["metadata"]["labels"]["kueue.x-k8s.io/pod-group-pod-index"] == "2"


def test_the_role_hash_ignores_what_admission_does_not_read():
    a = plain({QUEUE: "q"})
    b = plain({QUEUE: "q"})
    b["spec"]["containers"][0]["image"] = "other"
    b["spec"]["containers"][0]["command"] = ["sleep"]
    c = plain({QUEUE: "q"})
    c["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"
    ha, hb, hc = (
        webhook.mutate(x)["metadata"]["annotations"]["kueue.x-k8s.io/role-hash"] for x in (a, b, c)
    )
    assert ha == hb != hc


# ---- validating webhook ------------------------------------------------------------------------

COUNT = "kueue.x-k8s.io/pod-group-total-count"
NAME = "kueue.x-k8s.io/pod-group-name"


@pytest.mark.parametrize(
    ("labels", "annotations", "wanted"),
    [
        ({QUEUE: "q"}, {}, []),
        ({QUEUE: "q", NAME: "g"}, {COUNT: "2"}, []),
        ({QUEUE: "q", NAME: "g"}, {}, [f"metadata.annotations[{COUNT}]: Required value"]),
        ({QUEUE: "q"}, {COUNT: "2"}, [f"metadata.labels[{NAME}]: Required value"]),
        (
            {QUEUE: "q", NAME: "g"},
            {COUNT: "x"},
            [f'metadata.annotations[{COUNT}]: Invalid value: "x"'],
        ),
        (
            {QUEUE: "q", NAME: "g"},
            {COUNT: "0"},
            [f'metadata.annotations[{COUNT}]: Invalid value: "0"'],
        ),
        ({QUEUE: "q", NAME: "Bad_Name"}, {COUNT: "1"}, [f"metadata.labels[{NAME}]: Invalid value"]),
        (
            {QUEUE: "q", "kueue.x-k8s.io/managed": "false"},
            {},
            ["managed label value can only be 'true'"],
        ),
        (
            {QUEUE: "q"},
            {REQUIRED: "not a label!"},
            [f'metadata.annotations: annotation "{REQUIRED}"'],
        ),
        (
            {QUEUE: "q"},
            {REQUIRED: RACK, "kueue.x-k8s.io/podset-unconstrained-topology": "true"},
            ["may not be set together"],
        ),
    ],
    ids=[
        "plain",
        "group",
        "group-without-count",
        "count-without-group",
        "count-not-a-number",
        "count-zero",
        "group-name-not-a-subdomain",
        "managed-label-value",
        "bad-topology-level",
        "two-topology-modes",
    ],
)
def test_the_validating_webhook_refuses_what_kueue_refuses(labels, annotations, wanted):
    errors = webhook.validate(plain(labels, annotations))
    assert len(errors) == len(wanted), errors
    for error, part in zip(errors, wanted, strict=True):
        assert part in error


def test_a_pod_cannot_leave_or_change_its_group():
    old = plain({QUEUE: "q", NAME: "g"}, {COUNT: "2"})
    assert webhook.validate(plain({QUEUE: "q", NAME: "h"}, {COUNT: "2"}), old) == [
        f"metadata.labels[{NAME}]: field is immutable"
    ]
    assert webhook.validate(old, old) == []


# ---- a pod alone -------------------------------------------------------------------------------


def test_a_pod_alone_is_a_workload_of_one_owned_by_it():
    p = pod("solo", annotations={REQUIRED: RACK})
    workload = g.single_workload(p)
    assert workload["metadata"]["name"].startswith("pod-solo-")
    assert workload["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "solo",
            "uid": "uid-solo",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    [ps] = workload["spec"]["podSets"]
    assert (ps["name"], ps["count"]) == ("main", 1)
    assert ps["topologyRequest"] == {
        "required": RACK,
        "podIndexLabel": "kueue.x-k8s.io/pod-group-pod-index",
    }
    assert "schedulingGates" not in ps["template"]["spec"]  # ours are not the user's
    assert work_key(p) == ("pod", "ns", "solo")


@pytest.mark.parametrize(
    ("phase", "message", "expected"),
    [
        ("Running", "", None),
        ("Succeeded", "", (True, "Pod succeeded")),
        ("Failed", "OOMKilled", (False, "OOMKilled")),
    ],
)
def test_a_pod_alone_finishes_with_the_pod(phase, message, expected):
    p = pod("solo", phase=phase)
    p["status"]["message"] = message
    done = g.single_finished(p)
    assert (done.succeeded, done.message) == expected if expected else done is None


def test_starting_a_pod_adds_the_flavor_and_removes_only_the_admission_gate():
    p = pod("solo")
    p["spec"]["tolerations"] = [{"key": "user", "operator": "Exists"}]
    workload = admitted(g.single_workload(p), {"main": [("h1", 1)]})
    admission = workload.admissions[0]
    patch = start_patch(p, "main", workload.pod_sets[0], admission, FLAVORS["tas"], workload.name)
    assert patch["metadata"]["resourceVersion"] == "3"
    assert patch["metadata"]["labels"] == {"kueue.x-k8s.io/podset": "main"}
    assert patch["metadata"]["annotations"]["kueue.x-k8s.io/workload"] == workload.name
    assert patch["spec"]["nodeSelector"] == {"pool": "tas"}
    # a pod's tolerations may only grow: the user's stay as written, the flavor's are added
    assert patch["spec"]["tolerations"] == [
        {"key": "user", "operator": "Exists"},
        {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"},
    ]
    assert patch["spec"]["schedulingGates"] == [{"name": "kueue.x-k8s.io/topology"}]


def test_a_pod_admitted_without_topology_loses_both_gates():
    p = pod("solo")
    workload = admitted(g.single_workload(p), {})
    patch = start_patch(
        p, "main", workload.pod_sets[0], workload.admissions[0], None, workload.name
    )
    assert patch["spec"]["schedulingGates"] is None


# ---- groups ------------------------------------------------------------------------------------


def group_of(*pods, name="grp") -> g.Group:
    return g.Group("ns", name, name, tuple(pods))


def test_a_group_is_one_workload_per_role_owned_by_every_member():
    members = [pod(f"w{i}", group="grp", total=3, cpu="1") for i in range(2)] + [
        pod("leader", group="grp", total=3, cpu="2")
    ]
    workload = g.group_workload(group_of(*members))
    assert workload["metadata"]["name"] == "grp"
    assert workload["metadata"]["annotations"] == {"kueue.x-k8s.io/is-group-workload": "true"}
    counts = sorted(ps["count"] for ps in workload["spec"]["podSets"])
    assert counts == [1, 2]
    names = [ps["name"] for ps in workload["spec"]["podSets"]]
    assert names == sorted(names)  # roles sorted, as Kueue's
    owners = workload["metadata"]["ownerReferences"]
    assert {o["name"] for o in owners} == {"w0", "w1", "leader"}
    assert not any(o.get("controller") for o in owners)


def test_a_fast_admission_group_is_admitted_for_its_whole_count_at_the_first_pod():
    first = pod(
        "web-0",
        group="grp",
        total=3,
        annotations={"kueue.x-k8s.io/pod-group-fast-admission": "true"},
    )
    [ps] = g.group_pod_sets(group_of(first))
    assert ps["count"] == 3


@pytest.mark.parametrize(
    ("phases", "unretriable", "serving", "expected"),
    [
        (["Running", "Running"], False, False, None),
        (["Succeeded", "Running"], False, False, None),
        (["Succeeded", "Succeeded"], False, False, "Pods succeeded: 2/2."),
        (["Succeeded", "Failed"], False, False, None),  # the failed one may be replaced
        (["Succeeded", "Failed"], True, False, "Pods succeeded: 1/2."),  # may not: it is over
        (["Failed", "Running"], True, False, None),  # still running
        (["Succeeded", "Succeeded"], False, True, None),  # serving groups never finish
    ],
    ids=[
        "running",
        "half-done",
        "all-succeeded",
        "failed-retriable",
        "failed-unretriable",
        "unretriable-running",
        "serving",
    ],
)
def test_a_group_finishes_as_kueue_decides(phases, unretriable, serving, expected):
    annotations = {}
    if unretriable:
        annotations["kueue.x-k8s.io/retriable-in-group"] = "false"
    if serving:
        annotations["kueue.x-k8s.io/pod-group-serving"] = "true"
    members = [
        pod(f"p{i}", group="grp", total=2, phase=ph, annotations=annotations)
        for i, ph in enumerate(phases)
    ]
    done = g.group_finished(group_of(*members))
    assert (done.message if done else None) == expected


@pytest.mark.parametrize(
    ("members", "problem"),
    [
        (
            [pod("a", group="grp", total=2), pod("b", group="grp", total=3)],
            "different total counts",
        ),
        (
            [
                pod("a", group="grp", total=2),
                pod("b", group="grp", total=2, labels={QUEUE: "other"}),
            ],
            "different queue names",
        ),
        ([pod("a", group="grp", total=2), pod("b", group="grp", total=2)], None),
    ],
    ids=["counts-differ", "queues-differ", "consistent"],
)
def test_inconsistent_members_are_reported(members, problem):
    found = g.problem(group_of(*members))
    assert (problem in found) if problem else found is None


def workload_for(*members) -> proj.WorkloadInfo:
    return proj.workload_from_object(g.group_workload(group_of(*members)))


def test_a_failed_member_is_let_go_once_its_replacement_exists():
    a, b = pod("a", group="grp", total=2), pod("b", group="grp", total=2)
    workload = workload_for(a, b)
    failed_b = pod("b", group="grp", total=2, phase="Failed")
    waiting = g.reconcile(group_of(a, failed_b), workload)
    assert waiting.absent == 1 and not waiting.replaced  # kept until replaced
    replacement = pod("b2", group="grp", total=2, created="2026-01-01T00:05:00Z")
    done = g.reconcile(group_of(a, failed_b, replacement), workload)
    assert done.absent == 0
    assert [x["metadata"]["name"] for x in done.replaced] == ["b"]
    assert [x["metadata"]["name"] for x in done.owners_to_add] == ["b2"]  # then owned, then started


def test_extra_members_are_deleted_newest_first_keeping_started_ones():
    a = pod("a", group="grp", total=2, gated=False)
    b = pod("b", group="grp", total=2, created="2026-01-01T00:01:00Z")
    workload = workload_for(a, b)
    extra = pod("c", group="grp", total=2, created="2026-01-01T00:02:00Z")
    plan = g.reconcile(group_of(a, b, extra), workload)
    assert [x["metadata"]["name"] for x in plan.excess] == ["c"]


@pytest.mark.parametrize(
    ("absent", "current", "expected"),
    [
        (0, None, None),
        (1, None, (True, "PodsFailed", "Some Failed pods need replacement")),
        (
            1,
            {
                "status": "True",
                "reason": "PodsFailed",
                "message": "Some Failed pods need replacement",
            },
            None,
        ),
        (
            0,
            {"status": "True", "reason": "PodsFailed", "message": "x"},
            (False, "PodsReady", "No pods need replacement"),
        ),
    ],
    ids=["nothing", "missing", "already-said", "replaced"],
)
def test_waiting_for_replacement_pods_as_kueue_writes_it(absent, current, expected):
    a, b = pod("a", group="grp", total=2), pod("b", group="grp", total=2)
    obj = g.group_workload(group_of(a, b))
    if current:
        obj["status"] = {"conditions": [{"type": "WaitingForReplacementPods", **current}]}
    assert g.waiting_condition(proj.workload_from_object(obj), absent) == expected
