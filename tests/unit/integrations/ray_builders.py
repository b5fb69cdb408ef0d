"""Builders for the Ray kinds' tests, in the style of Kueue's testingjobs/ray* wrappers: a
RayClusterSpec of a head and worker groups, and a RayJob, RayCluster or RayService around it."""

from __future__ import annotations

import copy

from tests.unit.integrations.builders import QUEUE, container


def template(annotations: dict | None = None, cpu: str = "1", image: str = "ray:2.9") -> dict:
    out: dict = {"spec": {"containers": [{**container(cpu), "image": image}]}}
    if annotations:  # an empty map is dropped by the API server
        out["metadata"] = {"annotations": dict(annotations)}
    return out


def worker(
    name: str,
    replicas: int | None = 1,
    *,
    hosts: int | None = None,
    min_replicas: int | None = None,
    max_replicas: int | None = None,
    **annotations,
) -> dict:
    group: dict = {"groupName": name, "rayStartParams": {}, "template": template(annotations)}
    for key, value in (
        ("replicas", replicas),
        ("numOfHosts", hosts),
        ("minReplicas", min_replicas),
        ("maxReplicas", max_replicas),
    ):
        if value is not None:
            group[key] = value
    return group


def cluster_spec(
    *workers: dict, head: dict | None = None, suspend: bool | None = None, **extra
) -> dict:
    spec = {
        "rayVersion": "2.9.0",
        "headGroupSpec": {"rayStartParams": {}, "template": template(head)},
        "workerGroupSpecs": [copy.deepcopy(w) for w in workers],
        **extra,
    }
    if suspend is not None:
        spec["suspend"] = suspend
    return spec


def meta(name: str, queue: str | None = "q") -> dict:
    out = {"name": name, "namespace": "ns", "uid": f"{name}-uid", "resourceVersion": "5"}
    if queue:
        out["labels"] = {QUEUE: queue}
    return out


def ray_object(kind: str, name: str, queue: str | None, spec: dict) -> dict:
    return {"apiVersion": "ray.io/v1", "kind": kind, "metadata": meta(name, queue), "spec": spec}


def raycluster(*workers: dict, head: dict | None = None, suspend=True, queue="q", **extra) -> dict:
    return ray_object(
        "RayCluster", "rc", queue, cluster_spec(*workers, head=head, suspend=suspend, **extra)
    )


def rayjob(
    *workers: dict,
    head: dict | None = None,
    suspend: bool = True,
    queue: str | None = "q",
    mode: str | None = None,
    **spec_extra,
) -> dict:
    spec: dict = {
        "shutdownAfterJobFinishes": True,
        "suspend": suspend,
        "rayClusterSpec": cluster_spec(*workers, head=head),
        **spec_extra,
    }
    if mode:
        spec["submissionMode"] = mode
    return ray_object("RayJob", "job", queue, spec)


def rayservice(*workers: dict, head: dict | None = None, suspend=True, queue="q", **extra) -> dict:
    cluster = cluster_spec(*workers, head=head, suspend=suspend, **extra)
    return ray_object("RayService", "svc", queue, {"rayClusterSpec": cluster})
