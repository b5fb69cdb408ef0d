"""Small cluster objects for admission unit tests (plain dicts, as the watch delivers them)."""

from __future__ import annotations

from tas.cache import projections as proj
from tas.cache.state import ClusterState
from tas.solver.types import SolverOptions

BLOCK, RACK, HOST = (
    "cloud.provider.com/topology-block",
    "cloud.provider.com/topology-rack",
    "kubernetes.io/hostname",
)


def node(name: str, block: str, rack: str, cpu: str = "4") -> dict:
    return {
        "metadata": {"name": name, "labels": {BLOCK: block, RACK: rack, HOST: name, "pool": "tas"}},
        "spec": {},
        "status": {
            "allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def cluster_queue(
    name: str = "cq", cpu: str = "100", strict: bool = False, flavor: str = "tas"
) -> dict:
    spec = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "memory"],
                "flavors": [
                    {
                        "name": flavor,
                        "resources": [
                            {"name": "cpu", "nominalQuota": cpu},
                            {"name": "memory", "nominalQuota": "1Ti"},
                        ],
                    }
                ],
            }
        ],
    }
    if strict:
        spec["queueingStrategy"] = "StrictFIFO"
    return {"metadata": {"name": name}, "spec": spec}


def allowing_exclusive_groups(cq: dict) -> dict:
    """The ClusterQueue with an administrator's grant for exclusive placement groups."""
    cq["metadata"].setdefault("annotations", {})[
        "tas-operator.io/allow-exclusive-placement-groups"
    ] = "true"
    return cq


def workload(
    name: str,
    *,
    pods: int,
    cpu: str = "1",
    annotations_request: dict | None = None,
    priority: int = 0,
    created: str = "2026-01-01T00:00:00Z",
    namespace: str = "ns",
) -> dict:
    ps = {
        "name": "main",
        "count": pods,
        "template": {
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
        },
    }
    if annotations_request:
        ps["topologyRequest"] = annotations_request
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "resourceVersion": "1",
            "generation": 1,
            "creationTimestamp": created,
        },
        "spec": {"queueName": "lq", "priority": priority, "podSets": [ps]},
    }


def make_state(
    nodes: list[dict], cq: dict | None = None, options: SolverOptions | None = None
) -> ClusterState:
    state = ClusterState(options)
    state.upsert_topology("default", [BLOCK, RACK, HOST])
    state.upsert_flavor(
        proj.flavor_from_object(
            {
                "metadata": {"name": "tas"},
                "spec": {"nodeLabels": {"pool": "tas"}, "topologyName": "default"},
            }
        )
    )
    state.upsert_cluster_queue(proj.cluster_queue_from_object(cq or cluster_queue()))
    state.upsert_local_queue("ns", "lq", (cq or cluster_queue())["metadata"]["name"])
    state.upsert_namespace("ns", {})
    for n in nodes:
        state.upsert_node(proj.node_from_object(n))
    return state


def two_racks() -> list[dict]:
    return [
        node("x1", "b1", "r1"),
        node("x2", "b1", "r1"),
        node("x3", "b1", "r2"),
        node("x4", "b1", "r2"),
    ]
