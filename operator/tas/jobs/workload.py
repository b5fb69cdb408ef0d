"""A batch/v1 Job's Workload: one pod set "main" of `parallelism` pods, owned by the Job."""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping

from tas.api import topologyrequest
from tas.api.annotations import parse_topology_request
from tas.api.constants import JOB_COMPLETION_INDEX_LABEL, PREFIX, QUEUE_NAME_LABEL

POD_SET_NAME = "main"
JOB_UID_LABEL = PREFIX + "job-uid"
MAX_NAME = 253


def workload_name(job_name: str, job_uid: str) -> str:
    """Kueue's style: `job-<name>-<5 hex>`; the hash keeps names of re-created Jobs apart."""
    digest = hashlib.sha1(f"{job_name}/{job_uid}".encode()).hexdigest()[:5]
    return f"job-{job_name[: MAX_NAME - 10]}-{digest}"


def queue_name(job: Mapping) -> str | None:
    return (job.get("metadata", {}).get("labels") or {}).get(QUEUE_NAME_LABEL)


def pod_count(job: Mapping) -> int:
    """Pods the Job runs at once: parallelism (default 1), never more than completions."""
    spec = job.get("spec", {})
    parallelism = spec.get("parallelism")
    count = 1 if parallelism is None else int(parallelism)
    if spec.get("completions") is not None:
        count = min(count, int(spec["completions"]))
    return count


def pod_sets(job: Mapping, *, multi_layer_enabled: bool = True) -> list[dict]:
    """The Workload's podSets; raises TopologyRequestError for invalid topology annotations."""
    template = copy.deepcopy(job.get("spec", {}).get("template") or {})
    count = pod_count(job)
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    request = parse_topology_request(
        annotations,
        count,
        pod_index_label=JOB_COMPLETION_INDEX_LABEL,
        multi_layer_enabled=multi_layer_enabled,
    )
    pod_set = {"name": POD_SET_NAME, "count": count, "template": template}
    api_request = topologyrequest.to_api(request)
    if api_request:
        pod_set["topologyRequest"] = api_request
    return [pod_set]


def build_workload(job: Mapping, *, multi_layer_enabled: bool = True) -> dict:
    meta = job["metadata"]
    spec = job.get("spec", {})
    priority = (spec.get("template") or {}).get("spec", {}).get("priority") or 0
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {
            "name": workload_name(meta["name"], meta["uid"]),
            "namespace": meta["namespace"],
            "labels": {JOB_UID_LABEL: meta["uid"]},
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "queueName": queue_name(job) or "",
            "priority": int(priority),
            "podSets": pod_sets(job, multi_layer_enabled=multi_layer_enabled),
        },
    }
