"""Pods are charged what they really ask for, not what their template says.

The API server adds to a pod at creation what its Job's template does not show: a LimitRange's
container defaults and a RuntimeClass's overhead. A Workload is built with both folded in (as
Kueue adjusts a Workload's requests), and the cache charges a covered pod the larger of its own
requests (its live spec, which an in-place resize may raise) and its slot's.

Real ClusterState, the Job reconciler building the Workload, and decide(), on plain objects as
the watch delivers them.
"""

from __future__ import annotations

import asyncio
import copy
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.admission.decide import decide
from tas.api.podrequests import pod_requests
from tas.cache import projections as proj
from tas.cache.state import ClusterState
from tas.integrations.job.controller import JOB
from tas.jobframework.reconciler import JobReconciler
from tas.jobframework.resources import pod_spec_with_defaults
from tas.jobframework.workload import build_workload, needs_new_workload
from tas.workload import transitions
from tests.unit.admission.fixtures import HOST, cluster_queue, make_state, node

_versions = itertools.count(100)
_uids = itertools.count(1)


def limit_range(name: str = "defaults", namespace: str = "ns", **item) -> dict:
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"limits": [{"type": "Container", **item}]},
    }


def runtime_class(name: str = "kata", **overhead: str) -> dict:
    obj: dict = {"metadata": {"name": name}, "handler": name}
    if overhead:
        obj["overhead"] = {"podFixed": dict(overhead)}
    return obj


def job(name: str, pods: int = 1, *, containers=None, runtime: str | None = None) -> dict:
    spec: dict = {
        "containers": containers if containers is not None else [{"name": "c"}],
        "restartPolicy": "Never",
    }
    if runtime:
        spec["runtimeClassName"] = runtime
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"job-{name}",
            "labels": {"kueue.x-k8s.io/queue-name": "lq"},
        },
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "suspend": True,
            "template": {
                "metadata": {"annotations": {"kueue.x-k8s.io/podset-required-topology": HOST}},
                "spec": spec,
            },
        },
    }


class FakeKube:
    """Takes the Workload the reconciler creates, as the API server stores it."""

    def __init__(self) -> None:
        self.created: list[dict] = []

    async def create(self, path: str, body: dict) -> dict:
        stored = copy.deepcopy(body)
        stored["metadata"].update(
            uid=f"wl-{next(_uids)}",
            resourceVersion=str(next(_versions)),
            generation=1,
            creationTimestamp=f"2026-01-01T00:00:{len(self.created):02d}Z",
        )
        self.created.append(stored)
        return stored


def created_workload(state: ClusterState, job_obj: dict) -> dict:
    """The Workload the Job reconciler creates for a queued Job, watched back into the cache."""
    kube = FakeKube()
    reconciler = JobReconciler(JOB, state, kube, writer=None)  # type: ignore[arg-type]
    asyncio.run(reconciler.sync(reconciler.upsert(job_obj)))
    (obj,) = kube.created
    state.upsert_workload(proj.workload_from_object(obj))
    return obj


def admit(state: ClusterState, obj: dict) -> proj.WorkloadInfo | str:
    """Decide; on success the admitted version comes back through the watch."""
    info = proj.workload_from_object(obj)
    decision = decide(state, info, state.cluster_queues["cq"])
    if not decision.admitted:
        return decision.message
    obj["status"] = transitions.admitted(info, decision.admission, decision.message)
    obj["metadata"]["resourceVersion"] = str(next(_versions))
    state.upsert_workload(proj.workload_from_object(obj))
    return state.workloads[info.key]


def one_node_state(cpu: str = "4") -> ClusterState:
    state = make_state([node("h1", "b1", "r1", cpu=cpu)])
    state.upsert_cluster_queue(proj.cluster_queue_from_object(cluster_queue(cpu="100")))
    return state


def with_defaults(state: ClusterState, *limit_ranges: dict, classes=()) -> ClusterState:
    for obj in limit_ranges:
        state.upsert_limit_range(proj.key_of(obj), proj.limit_range_from_object(obj))
    for obj in classes:
        state.upsert_runtime_class(obj["metadata"]["name"], proj.runtime_class_overhead(obj))
    return state


# -- the measurement ------------------------------------------------------------------------


def test_a_job_without_requests_in_a_limit_range_namespace_is_charged_its_pods_defaults() -> None:
    """One 4-CPU node; a LimitRange gives each container 2 CPUs, the RuntimeClass 250m more.
    The first Job's pods take 2.25 CPUs: a second such Job no longer fits on that node."""
    state = with_defaults(
        one_node_state(),
        limit_range(default={"cpu": "2"}, defaultRequest={"cpu": "2"}),
        classes=[runtime_class(cpu="250m")],
    )
    first = admit(state, created_workload(state, job("first", runtime="kata")))
    assert not isinstance(first, str), first
    assert state.quota_usage("cq", "tas")["cpu"] == 2250
    second = admit(state, created_workload(state, job("second", runtime="kata")))
    assert isinstance(second, str), "a second Job over-commits the node"
    assert "doesn't allow to fit any of 1 pod(s)" in second, second


# -- what a Workload is built with (Kueue's TestAdjustResources, as scenarios) ----------------------

LIMITS = limit_range(
    default={"cpu": "4"}, defaultRequest={"cpu": "3"}, max={"cpu": "5"}, min={"cpu": "2"}
)


@pytest.mark.parametrize(
    ("ranges", "classes", "pod_spec", "wanted"),
    [
        pytest.param(
            [], [runtime_class(cpu="1", memory="1Ki")], {"runtimeClassName": "kata"},
            {"cpu": 1000, "memory": 1024_000}, id="runtime class overhead",
        ),
        pytest.param(
            [], [runtime_class(cpu="1")], {"runtimeClassName": "kata", "overhead": {"cpu": "2"}},
            {"cpu": 2000}, id="own overhead kept",
        ),
        pytest.param(
            [], [runtime_class(cpu="1")], {"runtimeClassName": "other"}, {},
            id="unknown runtime class",
        ),
        pytest.param([], [runtime_class()], {"runtimeClassName": "kata"}, {}, id="class without overhead"),
        pytest.param([LIMITS], [], {}, {"cpu": 3000}, id="container defaults"),
        pytest.param(
            [LIMITS], [],
            {"initContainers": [{"name": "i"}], "containers": [{"name": "c"}]},
            {"cpu": 3000}, id="init container defaults",
        ),
        pytest.param(
            [LIMITS], [],
            {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
            {"cpu": 1000}, id="own request kept",
        ),
        pytest.param(
            # Kueue's test expects the default request (3): it fills requests in before taking
            # limits as requests; the API server takes the limit first, so the pod asks for 6.
            [LIMITS], [],
            {"containers": [{"name": "c", "resources": {"limits": {"cpu": "6"}}}]},
            {"cpu": 6000}, id="own limit is the request",
        ),
        pytest.param(
            [limit_range(default={"cpu": "4"}, defaultRequest={"cpu": "3"}) | {"spec": {"limits": [
                {"type": "Pod", "default": {"cpu": "4"}, "defaultRequest": {"cpu": "3"}}]}}],
            [], {}, {}, id="pod limit range adds nothing",
        ),
        pytest.param([limit_range()], [], {}, {}, id="empty container limit range"),
        pytest.param([limit_range(max={"cpu": "2"})], [], {}, {"cpu": 2000}, id="max is the default"),
        pytest.param([limit_range(min={"cpu": "500m"})], [], {}, {"cpu": 500}, id="min is the request"),
        pytest.param(
            [limit_range("b", defaultRequest={"cpu": "2"}), limit_range("a", defaultRequest={"cpu": "1"})],
            [], {}, {"cpu": 1000}, id="first limit range by name wins",
        ),
        pytest.param(
            [{"metadata": {"name": "two", "namespace": "ns"}, "spec": {"limits": [
                {"type": "Container", "defaultRequest": {"cpu": "1"}},
                {"type": "Container", "defaultRequest": {"cpu": "2", "memory": "1Ki"}}]}}],
            [], {}, {"cpu": 2000, "memory": 1024_000}, id="later item of one range wins",
        ),
        pytest.param(
            [limit_range(defaultRequest={"cpu": "1"}, namespace="elsewhere")], [], {}, {},
            id="another namespace's limit range",
        ),
    ],
)  # fmt: skip
def test_a_workload_asks_for_what_its_pods_will(ranges, classes, pod_spec, wanted) -> None:
    state = with_defaults(one_node_state(), *ranges, classes=classes)
    spec = {"containers": [{"name": "c"}], **copy.deepcopy(pod_spec)}
    manifest = job("j")
    manifest["spec"]["template"]["spec"] = spec
    built = build_workload(JOB, manifest, defaults=state.pod_defaults("ns"))
    assert pod_requests(built["spec"]["podSets"][0]["template"]["spec"]) == wanted
    assert manifest["spec"]["template"]["spec"] == spec  # the Job itself is left alone


def test_limits_the_limit_range_gives_make_a_guaranteed_pod_set() -> None:
    """Default limits land in the template too: a container given cpu and memory limits equal
    to its requests is Guaranteed, which the NUMA zones count (gate TASNUMAZones)."""
    state = with_defaults(
        one_node_state(),
        limit_range(default={"cpu": "2", "memory": "1Gi"}),
    )
    built = build_workload(JOB, job("j"), defaults=state.pod_defaults("ns"))
    (pod_set,) = proj.workload_from_object(built).pod_sets
    assert pod_set.numa is not None and pod_set.numa.containers == (
        {"cpu": 2000, "memory": 1024**3 * 1000},
    )


def test_without_defaults_the_workload_is_the_template_as_written() -> None:
    state = one_node_state()
    manifest = job("j", containers=[{"name": "c", "resources": {"limits": {"cpu": "1"}}}])
    assert build_workload(JOB, manifest, defaults=state.pod_defaults("ns")) == build_workload(
        JOB, manifest
    )


@pytest.mark.parametrize(
    ("obj", "field"),
    [
        (limit_range(defaultRequest={"cpu": "lots"}), "spec.limits[0].defaultRequest.cpu"),
        (limit_range(max={"memory": "1Qi"}), "spec.limits[0].max.memory"),
        (limit_range(default=["cpu"]), "spec.limits[0].default"),
    ],
)
def test_an_unreadable_limit_range_names_the_field(obj, field) -> None:
    with pytest.raises(ValueError, match=field.replace("[", r"\[").replace("]", r"\]")):
        proj.limit_range_from_object(obj)


def test_an_unreadable_runtime_class_names_the_field() -> None:
    with pytest.raises(ValueError, match=r"overhead\.podFixed\.cpu"):
        proj.runtime_class_overhead(runtime_class(cpu="x"))


def test_a_pending_workload_is_rebuilt_when_its_namespace_gets_a_limit_range() -> None:
    state = one_node_state()
    manifest = job("j")
    pending = proj.workload_from_object(build_workload(JOB, manifest))
    assert not needs_new_workload(JOB, manifest, pending, defaults=state.pod_defaults("ns"))
    with_defaults(state, limit_range(defaultRequest={"cpu": "2"}))
    assert needs_new_workload(JOB, manifest, pending, defaults=state.pod_defaults("ns"))
    rebuilt = proj.workload_from_object(
        build_workload(JOB, manifest, defaults=state.pod_defaults("ns"))
    )
    assert rebuilt.pod_sets[0].requests == {"cpu": 2000}
    assert not needs_new_workload(JOB, manifest, rebuilt, defaults=state.pod_defaults("ns"))


# -- the cache charges a covered pod the larger of its own and its slot's requests ------------------


def bound_pod(workload: proj.WorkloadInfo, name: str, host: str, cpu: str) -> proj.PodInfo:
    owner = workload.owner
    assert owner is not None
    return proj.pod_from_object(
        {
            "metadata": {
                "name": name,
                "namespace": "ns",
                "uid": f"uid-{name}",
                "labels": {"kueue.x-k8s.io/podset": "main"},
                "annotations": {"kueue.x-k8s.io/workload": workload.name},
                "ownerReferences": [{"kind": "Job", "name": owner.name, "uid": owner.uid, "controller": True}],
            },
            "spec": {
                "nodeName": host,
                "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
            },
            "status": {"phase": "Running"},
        }
    )  # fmt: skip


def used_cpu(state: ClusterState, host: str) -> int:
    """What the cache counts on a node: pods it charges on their own, and the charges."""
    node = state._with_usage(state.nodes[host])
    charged = sum(
        ps.count * ps.requests.get("cpu", 0)
        for charge in state.charges().values()
        for ps in charge.pod_sets
    )
    return node.usage.get("cpu", 0) + charged


@pytest.mark.parametrize(
    ("pod_cpu", "used"),
    [
        pytest.param("1", 1000, id="as the slot: charged once"),
        pytest.param("500m", 1000, id="below the slot: the slot holds"),
        pytest.param("3", 3000, id="above the slot: the pod's own"),
    ],
)
def test_a_covered_pod_is_charged_the_larger_of_its_own_and_its_slots(pod_cpu, used) -> None:
    state = one_node_state()
    workload = admit(state, created_workload(state, job("a", containers=[_cpu("1")])))
    assert not isinstance(workload, str), workload
    state.upsert_pod(bound_pod(workload, "a-0", "h1", pod_cpu))
    assert used_cpu(state, "h1") == used


def test_a_pod_resized_in_place_takes_what_it_grew_by_and_gives_it_back() -> None:
    """`pods/resize` raises a running pod's requests beyond what its Workload was charged: the
    node's room shrinks with it, and a Workload that fitted before no longer does."""
    state = one_node_state()
    workload = admit(state, created_workload(state, job("a", containers=[_cpu("1")])))
    assert not isinstance(workload, str), workload
    state.upsert_pod(bound_pod(workload, "a-0", "h1", "1"))
    two_cpus = created_workload(state, job("b", containers=[_cpu("2")]))

    state.upsert_pod(bound_pod(workload, "a-0", "h1", "3"))  # resized: 3 of 4 CPUs
    assert isinstance(admit(state, copy.deepcopy(two_cpus)), str)

    state.upsert_pod(bound_pod(workload, "a-0", "h1", "1"))  # resized back
    assert not isinstance(admit(state, two_cpus), str)


def _cpu(cpu: str) -> dict:
    return {"name": "c", "resources": {"requests": {"cpu": cpu}}}


# -- property: whatever the defaults, no node is over-committed by what the pods request -----------


def api_server_pod(template_spec: dict, ranges: list[dict], classes: dict[str, dict]) -> dict:
    """An independent model of what the API server stores for a pod of a template: pod
    defaulting (a limit is also the request), the RuntimeClass plugin (its overhead), then the
    LimitRanger (each LimitRange by name; within one, later Container items win; only what the
    container leaves unset is filled)."""
    spec = copy.deepcopy(template_spec)
    for c in [*spec.get("initContainers", []), *spec["containers"]]:
        res = c.setdefault("resources", {})
        for resource, value in (res.get("limits") or {}).items():
            res.setdefault("requests", {}).setdefault(resource, value)
    name = spec.get("runtimeClassName")
    if name in classes and "overhead" not in spec:
        spec["overhead"] = dict(classes[name])
    for lr in sorted(ranges, key=lambda r: r["metadata"]["name"]):
        limits: dict = {}
        requests: dict = {}
        for item in lr["spec"]["limits"]:
            limits.update(item.get("default") or {})
            requests.update(item.get("defaultRequest") or {})
        for c in [*spec.get("initContainers", []), *spec["containers"]]:
            res = c.setdefault("resources", {})
            for key, values in (("limits", limits), ("requests", requests)):
                for resource, value in values.items():
                    res.setdefault(key, {}).setdefault(resource, value)
    return spec


millicpu = st.integers(min_value=1, max_value=3000).map(lambda m: f"{m}m")
containers = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "requests": st.fixed_dictionaries({"cpu": millicpu}),
            "limits": st.fixed_dictionaries({"cpu": millicpu}),
        },
    ),
    min_size=1,
    max_size=2,
)


@st.composite
def jobs_and_defaults(draw):
    ranges = []
    for name in draw(st.lists(st.sampled_from("abc"), unique=True, max_size=2)):
        ranges.append(
            limit_range(
                name, defaultRequest={"cpu": draw(millicpu)}, default={"cpu": draw(millicpu)}
            )
        )
    classes = {
        name: {"cpu": draw(millicpu)}
        for name in draw(st.lists(st.sampled_from(["kata", "gvisor"]), unique=True))
    }
    manifests = []
    for i in range(draw(st.integers(min_value=1, max_value=6))):
        spec_containers = [
            {"name": f"c{j}", "resources": resources}
            for j, resources in enumerate(draw(containers))
        ]
        runtime = draw(st.sampled_from([None, "kata", "gvisor"]))
        manifests.append(
            job(f"j{i}", draw(st.integers(1, 3)), containers=spec_containers, runtime=runtime)
        )
    # After each Job, one of the running pods may be resized in place by this much (the kubelet
    # accepts a resize only while the node's pods fit).
    resizes = draw(
        st.lists(
            st.integers(min_value=0, max_value=2000),
            min_size=len(manifests),
            max_size=len(manifests),
        )
    )
    return ranges, classes, manifests, resizes


@settings(max_examples=60, deadline=None)
@given(jobs_and_defaults())
def test_no_node_is_over_committed_by_what_the_pods_really_request(drawn) -> None:
    ranges, classes, manifests, resizes = drawn
    state = make_state([node(f"h{i}", "b1", "r1", cpu="4") for i in range(2)])
    state.upsert_cluster_queue(proj.cluster_queue_from_object(cluster_queue(cpu="1000")))
    classes_objs = [runtime_class(name, **overhead) for name, overhead in classes.items()]
    with_defaults(state, *ranges, classes=classes_objs)
    real: dict[str, int] = {"h0": 0, "h1": 0}
    running: list[tuple[proj.WorkloadInfo, str, str, int]] = []  # workload, pod, host, milli
    for manifest, grow in zip(manifests, resizes, strict=True):
        workload = admit(state, created_workload(state, manifest))
        if not isinstance(workload, str):
            pod_spec = api_server_pod(manifest["spec"]["template"]["spec"], ranges, classes)
            cpu = pod_requests(pod_spec).get("cpu", 0)
            (admission,) = workload.admissions
            hosts = [d.values[-1] for d in admission.assignment.domains for _ in range(d.count)]
            for i, host in enumerate(hosts):
                real[host] += cpu
                running.append((workload, f"{workload.name}-{i}", host, cpu))
                state.upsert_pod(bound_pod(workload, f"{workload.name}-{i}", host, f"{cpu}m"))
        if running and grow and real[running[-1][2]] + grow <= 4000:
            owner, name, host, cpu = running.pop()
            real[host] += grow
            running.append((owner, name, host, cpu + grow))
            state.upsert_pod(bound_pod(owner, name, host, f"{cpu + grow}m"))
        for host, cpu in real.items():
            assert cpu <= 4000, f"{host}: pods request {cpu}m of 4000m"
            assert used_cpu(state, host) >= cpu  # the cache never counts less than they take


def test_the_fold_and_the_api_server_model_agree_on_a_known_case() -> None:
    """The property's model is checked against a hand-computed case, so that it can fail."""
    spec = {
        "runtimeClassName": "kata",
        "containers": [{"name": "c", "resources": {"limits": {"cpu": "1"}}}, {"name": "d"}],
    }
    ranges = [limit_range(default={"cpu": "2"}, defaultRequest={"cpu": "500m"})]
    modelled = pod_requests(api_server_pod(spec, ranges, {"kata": {"cpu": "100m"}}))
    state = with_defaults(one_node_state(), *ranges, classes=[runtime_class(cpu="100m")])
    folded = pod_requests(pod_spec_with_defaults(spec, state.pod_defaults("ns")))
    assert modelled == folded == {"cpu": 1600}
