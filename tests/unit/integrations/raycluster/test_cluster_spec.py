"""What the three Ray kinds share (integrations/ray/cluster_spec.py), for each of them: the pod
sets of a head and worker groups, every group's topology annotations, the refusals naming their
field path, start and restore (Kueue's raycluster common_test.go and the webhook tables of
raycluster_webhook_test.go, rayjob_webhook_test.go and rayservice_webhook_test.go)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.api.annotations import TopologyRequestError
from tas.cache import projections as proj
from tas.integrations.raycluster import webhook as raycluster_webhook
from tas.integrations.raycluster.controller import RAY_CLUSTER
from tas.integrations.rayjob import webhook as rayjob_webhook
from tas.integrations.rayjob.controller import RAY_JOB
from tas.integrations.rayservice import webhook as rayservice_webhook
from tas.integrations.rayservice.controller import RAY_SERVICE
from tas.jobframework.podset import merge_patch
from tas.jobframework.workload import build_workload, needs_new_workload
from tests.unit.integrations.builders import (
    BLOCK,
    FLAVORS,
    GROUP,
    PREFERRED,
    RACK,
    REQUIRED,
    SLICE_SIZE,
    SLICE_TOPOLOGY,
    admitted,
)
from tests.unit.integrations.ray_builders import raycluster, rayjob, rayservice, worker

# (the GenericJob, its builder, its webhook, where its RayClusterSpec is)
KINDS = {
    "raycluster": (RAY_CLUSTER, raycluster, raycluster_webhook, "spec"),
    "rayjob": (RAY_JOB, rayjob, rayjob_webhook, "spec.rayClusterSpec"),
    "rayservice": (RAY_SERVICE, rayservice, rayservice_webhook, "spec.rayClusterSpec"),
}
kinds = pytest.mark.parametrize("kind", list(KINDS))


def counts(job, obj) -> dict[str, int]:
    return {ps["name"]: ps["count"] for ps in job.pod_sets(obj)}


# ---- pod sets: Kueue's TestBuildPodSets / TestPodSets ----------------------------------------


@kinds
@pytest.mark.parametrize(
    ("workers", "expected"),
    [
        ([worker("group1")], {"head": 1, "group1": 1}),
        ([worker("group1"), worker("group2", 3)], {"head": 1, "group1": 1, "group2": 3}),
        ([worker("group1", None)], {"head": 1, "group1": 1}),
        (
            [worker("group1", None, hosts=4), worker("group2", 3, hosts=4)],
            {"head": 1, "group1": 4, "group2": 12},
        ),
        ([worker("group1", 2, min_replicas=5, max_replicas=9)], {"head": 1, "group1": 2}),
    ],
    ids=[
        "basic spec with head and single worker group",
        "spec with multiple worker groups",
        "spec with worker group without replicas specified",
        "with NumOfHosts > 1",
        "minReplicas is not read, as in Kueue",
    ],
)
def test_pod_sets_are_the_head_then_each_worker_group(kind, workers, expected):
    job, build, _, _ = KINDS[kind]
    obj = build(*workers)
    pod_sets = job.pod_sets(obj)
    assert [ps["name"] for ps in pod_sets][: len(expected)] == list(expected)
    assert {ps["name"]: ps["count"] for ps in pod_sets if ps["name"] in expected} == expected
    for ps in pod_sets:  # Kueue gives Ray pods no rank
        assert "podIndexLabel" not in ps.get("topologyRequest", {})


@kinds
def test_each_groups_topology_annotations_are_its_pod_sets_request(kind):
    """Kueue's "with required topology annotation" and "with preferred topology annotation"."""
    job, build, _, _ = KINDS[kind]
    obj = build(
        worker("group1", **{REQUIRED: BLOCK}),
        worker("group2", 3, **{PREFERRED: BLOCK}),
        worker("sliced", 4, **{SLICE_TOPOLOGY: RACK, SLICE_SIZE: "2"}),
        worker("plain", 2),
        head={REQUIRED: RACK},
    )
    requests = {ps["name"]: ps.get("topologyRequest") for ps in job.pod_sets(obj)}
    assert requests["head"]["required"] == RACK
    assert requests["group1"]["required"] == BLOCK
    assert requests["group2"]["preferred"] == BLOCK
    assert (
        requests["sliced"]["podSetSliceRequiredTopology"],
        requests["sliced"]["podSetSliceSize"],
    ) == (RACK, 2)
    assert not (requests["plain"] or {}).get("required")


# ---- the webhook's refusals ------------------------------------------------------------------


@kinds
@pytest.mark.parametrize(
    ("workers", "head", "index", "annotation", "problem"),
    [
        (
            [worker("wg1", **{PREFERRED: BLOCK, REQUIRED: BLOCK})],
            {PREFERRED: BLOCK, REQUIRED: BLOCK},
            None,
            PREFERRED,
            "may not be set together",
        ),
        (
            [worker("wg1", 5, **{REQUIRED: BLOCK, SLICE_TOPOLOGY: BLOCK, SLICE_SIZE: "10"})],
            {REQUIRED: BLOCK, SLICE_TOPOLOGY: BLOCK, SLICE_SIZE: "2"},
            None,
            SLICE_SIZE,
            "must not be greater than the pod set count 1",
        ),
        (
            [worker("wg1", 5, **{REQUIRED: BLOCK, SLICE_TOPOLOGY: BLOCK, SLICE_SIZE: "10"})],
            {},
            0,
            SLICE_SIZE,
            "must not be greater than the pod set count 5",
        ),
        (
            [
                worker("wg1", 5, **{GROUP: "3podsets", REQUIRED: BLOCK}),
                worker("wg2", 10, **{GROUP: "3podsets", REQUIRED: BLOCK}),
                worker("wg3", 10, **{GROUP: "3podsets", REQUIRED: BLOCK}),
            ],
            {GROUP: "1podset", REQUIRED: BLOCK},
            None,
            GROUP,
            "must join exactly 2 pod sets",
        ),
        (
            [
                worker("wg1", 5, **{GROUP: "groupname", REQUIRED: BLOCK}),
                worker("wg2", 10, **{GROUP: "groupname", REQUIRED: BLOCK}),
            ],
            {},
            1,
            GROUP,
            "needs one pod set with count 1",
        ),
        (
            [worker("wg1", 5, **{GROUP: "groupname", REQUIRED: RACK})],
            {GROUP: "groupname", REQUIRED: BLOCK},
            0,
            GROUP,
            "needs the same",
        ),
        (
            [worker("wg1", 5, **{GROUP: "groupname", PREFERRED: RACK})],
            {GROUP: "groupname", PREFERRED: BLOCK},
            0,
            GROUP,
            "needs the same",
        ),
        (
            [worker("wg1", 5, **{GROUP: "groupname", REQUIRED: BLOCK})],
            {GROUP: "groupname", PREFERRED: BLOCK},
            0,
            GROUP,
            "needs the same",
        ),
        ([worker("wg1", **{REQUIRED: "not a label!"})], {}, 0, REQUIRED, "must be a label key"),
    ],
    ids=[
        "invalid topology request",
        "invalid slice topology request - slice size larger than number of podsets (head)",
        "invalid slice topology request - slice size larger than number of podsets (worker)",
        "invalid PodSet grouping request - groups of size other than 2",
        "invalid PodSet grouping request - no leader in group",
        "invalid PodSet grouping request - required topology does not match",
        "invalid PodSet grouping request - preferred topology does not match",
        "invalid PodSet grouping request - different topology annotations within group",
        "a level that is not a label key",
    ],
)
def test_a_bad_annotation_is_refused_naming_its_template(
    kind, workers, head, index, annotation, problem
):
    job, build, hook, path = KINDS[kind]
    obj = build(*workers, head=head)
    where = (
        f"{path}.headGroupSpec.template"
        if index is None
        else f"{path}.workerGroupSpecs[{index}].template"
    )
    with pytest.raises(TopologyRequestError) as refused:
        job.pod_sets(obj)
    message = str(refused.value)
    assert message.startswith(f"{where}.metadata.annotations: ")
    assert f'annotation "{annotation}"' in message and problem in message
    assert hook.validate(obj) == [message]


@kinds
@pytest.mark.parametrize(
    ("workers", "head"),
    [
        (
            [
                worker("wg1", **{REQUIRED: BLOCK}),
                worker("wg2", **{PREFERRED: BLOCK}),
                worker("wg3"),
            ],
            {REQUIRED: BLOCK},
        ),
        (
            [worker("wg1", **{GROUP: "groupname", REQUIRED: BLOCK})],
            {GROUP: "groupname", REQUIRED: BLOCK},
        ),
    ],
    ids=["valid topology request", "valid PodSet grouping request"],
)
def test_valid_topology_requests_are_admitted(kind, workers, head):
    _, build, hook, _ = KINDS[kind]
    assert hook.validate(build(*workers, head=head)) == []


@kinds
@pytest.mark.parametrize(
    ("extra", "workers", "field", "message"),
    [
        (
            {"enableInTreeAutoscaling": True},
            [worker("wg")],
            "enableInTreeAutoscaling: Invalid value: true",
            "autoscaling",
        ),
        (
            {},
            [worker(f"wg{i}") for i in range(8)],
            "workerGroupSpecs: Too many: 8: must have at most 7 items",
            None,
        ),
        (
            {},
            [worker("head")],
            "workerGroupSpecs[0].groupName: Forbidden",
            '"head" is reserved for the head group',
        ),
    ],
    ids=[
        "invalid managed - has auto scaler",
        "invalid managed - too many worker groups",
        "worker group uses head name",
    ],
)
def test_kueues_refusals_of_the_cluster_spec_name_the_field(kind, extra, workers, field, message):
    _, build, hook, path = KINDS[kind]
    obj = build(*workers)
    target = obj["spec"] if kind == "raycluster" else obj["spec"]["rayClusterSpec"]
    target.update(extra)
    [error] = [e for e in hook.validate(obj) if "annotation" not in e]
    assert error.startswith(f"{path}.{field}")
    assert message is None or message in error


@kinds
def test_seven_worker_groups_are_admitted(kind):
    _, build, hook, _ = KINDS[kind]
    assert hook.validate(build(*(worker(f"wg{i}") for i in range(7)))) == []


@kinds
def test_an_object_without_a_queue_is_left_alone(kind):
    """Kueue's "invalid unmanaged": no queue name, nothing to refuse."""
    _, build, hook, _ = KINDS[kind]
    obj = build(worker("head"), queue=None)
    assert hook.validate(obj) == []


@kinds
@pytest.mark.parametrize(
    ("suspended", "refused"),
    [(False, True), (True, False)],
    ids=[
        "invalid managed - queue name should not change while unsuspended",
        "managed - queue name can change while suspended",
    ],
)
def test_the_queue_name_changes_only_while_suspended(kind, suspended, refused):
    _, build, hook, _ = KINDS[kind]
    old = build(worker("wg"), suspend=suspended, queue="queue")
    new = build(worker("wg"), suspend=suspended, queue="queue2")
    errors = hook.validate(new, old)
    assert errors == (
        ["metadata.labels[kueue.x-k8s.io/queue-name]: field is immutable"] if refused else []
    )


@kinds
def test_mutate_suspends_a_queued_object_at_creation(kind):
    job, build, hook, _ = KINDS[kind]
    obj = build(worker("wg"), suspend=False)
    assert not job.suspended(obj)
    assert job.suspended(merge_patch(obj, hook.mutate(obj)))
    assert hook.mutate(build(worker("wg"), suspend=True)) == {}


# ---- start, stop, restore: Kueue's TestNodeSelectors, TestUpdateRayClusterSpecToRunWithPodSetsInfo,
# TestRestorePodSetsInfo -----------------------------------------------------------------------


def two_groups(build):
    return build(worker("wg1", **{REQUIRED: RACK}), worker("wg2", 2), head={REQUIRED: RACK})


def cluster_of(kind, obj):
    return obj["spec"] if kind == "raycluster" else obj["spec"]["rayClusterSpec"]


@kinds
def test_start_readies_every_template_and_unsuspends(kind):
    job, build, _, _ = KINDS[kind]
    obj = two_groups(build)
    obj["metadata"]["resourceVersion"] = "7"
    workload = admitted(
        build_workload(job, obj), {"head": [("h1", 1)], "wg1": [("h1", 1)], "wg2": [("h2", 2)]}
    )
    running = merge_patch(obj, job.start_patch(obj, workload, FLAVORS))
    assert job.start_patch(obj, workload, FLAVORS)["metadata"] == {"resourceVersion": "7"}
    assert not job.suspended(running)
    spec = cluster_of(kind, running)
    pod_templates = {"head": spec["headGroupSpec"]["template"]}
    pod_templates.update({g["groupName"]: g["template"] for g in spec["workerGroupSpecs"]})
    for name, template in pod_templates.items():
        assert template["metadata"]["labels"] == {"kueue.x-k8s.io/podset": name}
        assert template["metadata"]["annotations"]["kueue.x-k8s.io/workload"] == workload.name
        assert template["spec"]["schedulingGates"] == [{"name": "kueue.x-k8s.io/topology"}]
        assert template["spec"]["nodeSelector"] == {"pool": "tas"}
    assert [g["replicas"] for g in spec["workerGroupSpecs"]] == [1, 2]


@kinds
def test_a_stopped_object_gets_back_the_templates_the_user_wrote(kind):
    job, build, _, _ = KINDS[kind]
    obj = two_groups(build)
    workload = admitted(
        build_workload(job, obj), {"head": [("h1", 1)], "wg1": [("h1", 1)], "wg2": [("h2", 2)]}
    )
    running = merge_patch(obj, job.start_patch(obj, workload, FLAVORS))
    assert job.restore_patch(running, workload) is None  # never while it runs
    stopped = merge_patch(running, job.stop_patch(running))
    assert job.suspended(stopped)
    pending = proj.workload_from_object(build_workload(job, obj))
    restored = merge_patch(stopped, job.restore_patch(stopped, pending))
    assert restored["spec"] == obj["spec"]
    assert job.restore_patch(restored, pending) is None
    assert not needs_new_workload(job, restored, pending)


@kinds
def test_a_suspended_object_resized_needs_a_new_workload(kind):
    job, build, _, _ = KINDS[kind]
    pending = proj.workload_from_object(build_workload(job, two_groups(build)))
    resized = two_groups(build)
    cluster_of(kind, resized)["workerGroupSpecs"][1]["replicas"] = 3
    assert needs_new_workload(job, resized, pending)


# ---- the pods KubeRay makes ------------------------------------------------------------------


def kuberay_worker_pods(group: dict) -> int:
    """KubeRay v1.5.0's GetWorkerGroupDesiredReplicas, on a group as the API server defaults it
    (replicas 0, minReplicas 0, maxReplicas 2147483647, numOfHosts 1)."""
    if group.get("suspend"):
        return 0
    low, high = group.get("minReplicas", 0), group.get("maxReplicas", 2147483647)
    replicas = group.get("replicas", 0)
    desired = high if low > high else min(max(replicas, low), high)
    return desired * group.get("numOfHosts", 1)


groups = st.lists(
    st.tuples(st.integers(0, 6), st.integers(0, 4), st.integers(0, 8), st.integers(1, 4)),
    min_size=0,
    max_size=7,
)


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(list(KINDS)), spec=groups)
def test_pod_set_counts_are_the_pods_kuberay_creates(kind, spec):
    """For a valid spec (minReplicas <= replicas <= maxReplicas), the Workload asks for exactly
    the head and worker pods KubeRay makes: 1 + the sum of each group's desired pods."""
    job, build, _, _ = KINDS[kind]
    workers = [
        worker(
            f"wg{i}", low + extra, hosts=hosts, min_replicas=low, max_replicas=low + extra + above
        )
        for i, (low, extra, above, hosts) in enumerate(spec)
    ]
    obj = build(*workers)
    pod_sets = [ps for ps in job.pod_sets(obj) if ps["name"] != "submitter"]
    assert sum(ps["count"] for ps in pod_sets) == 1 + sum(kuberay_worker_pods(w) for w in workers)
    assert [ps["name"] for ps in pod_sets] == ["head", *(w["groupName"] for w in workers)]
