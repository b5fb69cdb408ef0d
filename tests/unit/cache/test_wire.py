"""The pruned decode of pod and node lists (cache/wire.py) gives the projections exactly what a
full parse gives them; hostile bodies are a clear error, never a crash."""

from __future__ import annotations

import asyncio
import copy

import msgspec
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tas.cache import projections as proj
from tas.cache import wire
from tas.kube import KubeError
from tas.kube.client import decode_body
from tas.kube.reflector import object_key

MANAGED_FIELDS = [
    {
        "manager": "kube-controller-manager",
        "operation": "Update",
        "apiVersion": "v1",
        "time": "2026-01-01T00:00:00Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}},
    }
]


def full_pod(name: str, **spec: object) -> dict:
    """A pod as the API server lists it: far more than any projection reads."""
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "namespace": "team-a",
            "uid": f"uid-{name}",
            "resourceVersion": "4711",
            "generateName": "job-",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {
                "batch.kubernetes.io/job-completion-index": "3",
                "kueue.x-k8s.io/podset": "main",
                "app": "x",
            },
            "annotations": {
                "kueue.x-k8s.io/workload": "job-x-123",
                "kueue.x-k8s.io/pod-index-offset": "2",
            },
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": "job",
                    "uid": "job-uid",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "finalizers": ["batch.kubernetes.io/job-tracking"],
            "managedFields": MANAGED_FIELDS,
        },
        "spec": {
            "nodeName": "node-1",
            "nodeSelector": {"kubernetes.io/hostname": "node-1"},
            "schedulingGates": [{"name": "kueue.x-k8s.io/topology"}],
            "overhead": {"cpu": "100m"},
            "initContainers": [
                {
                    "name": "sidecar",
                    "image": "proxy",
                    "restartPolicy": "Always",
                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                },
                {"name": "init", "image": "busybox", "resources": {"limits": {"cpu": "3"}}},
            ],
            "containers": [
                {
                    "name": "main",
                    "image": "trainer:v1",
                    "command": ["python", "train.py"],
                    "env": [{"name": "RANK", "value": "0"}],
                    "resources": {
                        "requests": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"},
                        "limits": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"},
                    },
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                }
            ],
            "tolerations": [{"operator": "Exists"}],
            "volumes": [{"name": "data", "emptyDir": {}}],
            **spec,
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "main", "ready": True, "restartCount": 0}],
            "podIP": "10.0.0.1",
        },
    }


def full_node(name: str) -> dict:
    return {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "resourceVersion": "99",
            "labels": {"kubernetes.io/hostname": name, "cloud.com/rack": "r1"},
            "annotations": {"node.alpha.kubernetes.io/ttl": "0", "kwok.x-k8s.io/node": "fake"},
            "managedFields": MANAGED_FIELDS,
        },
        "spec": {
            "taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}],
            "unschedulable": True,
            "podCIDR": "10.0.1.0/24",
        },
        "status": {
            "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"},
            "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"},
            "conditions": [
                {"type": "MemoryPressure", "status": "False", "message": "fine"},
                {"type": "Ready", "status": "True", "reason": "KubeletReady"},
            ],
            "images": [{"names": ["busybox"], "sizeBytes": 1}],
            "nodeInfo": {"kubeletVersion": "v1.33.0"},
        },
    }


def page(items: list[dict], token: str = "") -> bytes:
    meta = {"resourceVersion": "5000", "remainingItemCount": 7}
    if token:
        meta["continue"] = token
    return orjson.dumps({"kind": "List", "apiVersion": "v1", "metadata": meta, "items": items})


def outcome(project, obj):
    """What a projection makes of an object: the record, or the kind of error it raises."""
    try:
        return project(obj)
    except Exception as exc:  # the handler's caller logs and skips such an object
        return type(exc).__name__


PODS = [
    full_pod("plain"),
    full_pod("numa", schedulingGates=None, nodeName=""),
    full_pod("bare", containers=[{"name": "c", "image": "i"}], initContainers=None),
]


@pytest.mark.parametrize("obj", PODS, ids=[p["metadata"]["name"] for p in PODS])
def test_pod_projection_is_the_same_from_the_pruned_decode(obj: dict) -> None:
    obj["metadata"]["annotations"]["tas-operator.io/numa-zone"] = "node-1/0"  # numa_shape read
    pruned = wire.decode_pod_list(page([obj], token="next"))
    full = orjson.loads(page([obj], token="next"))
    assert pruned["metadata"] == {"resourceVersion": "5000", "continue": "next"}
    item = pruned["items"][0]
    assert "managedFields" not in item["metadata"]
    assert "image" not in item["spec"]["containers"][0]
    assert proj.pod_from_object(item) == proj.pod_from_object(full["items"][0])
    assert object_key(item) == object_key(full["items"][0])
    assert item["metadata"]["resourceVersion"] == "4711"


def test_node_projection_is_the_same_from_the_pruned_decode() -> None:
    obj = full_node("node-1")
    item = wire.decode_node_list(page([obj]))["items"][0]
    assert "images" not in item["status"] and "managedFields" not in item["metadata"]
    assert item["status"]["conditions"][1] == {"type": "Ready", "status": "True"}
    assert proj.node_from_object(item) == proj.node_from_object(obj)
    assert item["metadata"]["resourceVersion"] == "99"


# Any JSON value, kept to what both parsers read alike (64-bit integers, finite floats).
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
quantities = st.sampled_from(["1", "250m", "2Gi", "0", "1e3", "bogus", ""]) | json_values
resources = st.dictionaries(st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]), quantities)
containers = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "name": st.text(max_size=4) | json_values,
            "image": st.text(max_size=4),
            "restartPolicy": st.sampled_from(["Always", "Never"]) | json_values,
            "resources": st.fixed_dictionaries(
                {}, optional={"requests": resources, "limits": resources, "claims": json_values}
            )
            | json_values,
        },
    ),
    max_size=3,
)


@st.composite
def pods(draw: st.DrawFn) -> dict:
    """Pods whose every read field may be present, absent, null or of an odd type, among
    fields no projection reads."""
    obj = copy.deepcopy(full_pod(draw(st.text(min_size=1, max_size=5))))
    spec, meta = obj["spec"], obj["metadata"]
    for key in ("nodeName", "nodeSelector", "schedulingGates", "overhead", "priority"):
        if draw(st.booleans()):
            spec[key] = draw(json_values)
    for key in ("containers", "initContainers"):
        spec[key] = draw(containers | st.none())
    for key in ("deletionTimestamp", "labels", "annotations", "uid", "noise"):
        if draw(st.booleans()):
            meta[key] = draw(json_values)
    if draw(st.booleans()):
        meta["ownerReferences"] = draw(
            st.lists(st.fixed_dictionaries({"uid": json_values, "controller": json_values}))
            | st.none()
        )
    obj["status"] = draw(st.none() | st.fixed_dictionaries({"phase": json_values}))
    obj["spec"] = draw(st.just(spec) | st.none())
    return obj


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pods())
def test_any_pod_projects_alike_from_both_decodes(obj: dict) -> None:
    full = orjson.loads(orjson.dumps(obj))
    pruned = wire.decode_pod_list(page([obj]))["items"][0]
    assert outcome(proj.pod_from_object, pruned) == outcome(proj.pod_from_object, full)


@settings(max_examples=100, deadline=None)
@given(
    labels=json_values,
    taints=json_values,
    allocatable=json_values,
    conditions=st.lists(
        st.fixed_dictionaries(
            {}, optional={"type": json_values, "status": json_values, "reason": json_values}
        )
    )
    | st.none(),
)
def test_any_node_projects_alike_from_both_decodes(labels, taints, allocatable, conditions) -> None:
    obj = full_node("n")
    obj["metadata"]["labels"] = labels
    obj["spec"]["taints"] = taints
    obj["status"].update(allocatable=allocatable, conditions=conditions)
    pruned = wire.decode_node_list(page([obj]))["items"][0]
    assert outcome(proj.node_from_object, pruned) == outcome(proj.node_from_object, obj)


HOSTILE = {
    "not json": b"<html>proxy error</html>",
    "truncated": page([full_pod("a")])[:-40],
    "items not a list": b'{"items": {"a": 1}}',
    "item not an object": b'{"items": [1]}',
    "metadata a string": b'{"items": [{"metadata": "x"}]}',
    "spec a list": b'{"items": [{"metadata": {}, "spec": []}]}',
    "list metadata a list": b'{"metadata": [], "items": []}',
    "deep nesting": b'{"items": [{"metadata": {"labels": ' + b"[" * 5000 + b"]" * 5000 + b"}}]}",
}


@pytest.mark.parametrize("body", HOSTILE.values(), ids=HOSTILE.keys())
@pytest.mark.parametrize(
    "decode", [wire.decode_pod_list, wire.decode_node_list], ids=["pods", "nodes"]
)
def test_a_hostile_body_is_a_failed_call_saying_where(body: bytes, decode) -> None:
    with pytest.raises(KubeError) as caught:
        decode_body(body, decode, "GET /api/v1/pods")
    assert caught.value.status == 0 and "GET /api/v1/pods: malformed answer" in caught.value.message
    if body in (HOSTILE["metadata a string"], HOSTILE["spec a list"]):
        assert "$.items[0]" in caught.value.message  # the path to the field that broke


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200) | json_values.map(orjson.dumps))
def test_fuzzed_bytes_decode_or_fail_cleanly(body: bytes) -> None:
    for decode in (wire.decode_pod_list, wire.decode_node_list):
        try:
            decode_body(body, decode, "GET x")
        except KubeError as exc:
            assert "malformed answer" in exc.message


def test_the_reflector_lists_through_the_schema() -> None:
    """A list page's body goes through the watch's schema, end to end."""
    from tas.kube.reflector import Reflector

    class Kube:
        async def request(self, method, path, params=None, timeout=None, decode=None):
            return decode_body(page([full_pod("a"), full_pod("b")]), decode, path)

    seen = []

    async def handle(kind, obj):
        seen.append(obj)

    reflector = Reflector(
        Kube(), "/api/v1/pods", handle, name="pods", decode_list=wire.decode_pod_list
    )  # type: ignore[arg-type]
    asyncio.run(reflector.relist())
    assert [object_key(o) for o in seen] == [("team-a", "a"), ("team-a", "b")]
    assert all("managedFields" not in o["metadata"] for o in seen)
    assert reflector.resource_version == "5000"
    assert isinstance(msgspec.json.encode(seen), bytes)
