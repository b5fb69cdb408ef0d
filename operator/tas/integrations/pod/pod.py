"""A managed pod as Kueue's pod integration reads it: group, role, state. Pure.

A pod is managed when it carries the queue-name label (or was marked by its StatefulSet or
LeaderWorkerSet, `kueue.x-k8s.io/pod-suspending-parent`). It is then gated at creation with
`kueue.x-k8s.io/admission` (and the topology gate), labelled `kueue.x-k8s.io/managed=true` and
held by the finalizer `kueue.x-k8s.io/managed` until its Workload has counted it.

A pod alone is a Workload of one pod. Pods sharing `kueue.x-k8s.io/pod-group-name` and
`kueue.x-k8s.io/pod-group-total-count` are one Workload, admitted whole once all of them exist;
its pod sets are the group's roles: pods whose specs are alike for admission share a role (its
`kueue.x-k8s.io/role-hash`).
"""

# No `from __future__ import annotations`: it would bind the name `annotations`, which this
# module defines as a function.
import hashlib
import json
import re
from collections.abc import Mapping

from tas.api.constants import (
    ADMISSION_SCHEDULING_GATE,
    INT32_MAX,
    POD_FINALIZER,
    POD_GROUP_FAST_ADMISSION_ANNOTATION,
    POD_GROUP_NAME_LABEL,
    POD_GROUP_SERVING_ANNOTATION,
    POD_GROUP_TOTAL_COUNT_ANNOTATION,
    PREBUILT_WORKLOAD_LABEL,
    QUEUE_NAME_LABEL,
    RETRIABLE_IN_GROUP_ANNOTATION,
    ROLE_HASH_ANNOTATION,
    TOPOLOGY_SCHEDULING_GATE,
)
from tas.jobframework.pods import Key as Key
from tas.jobframework.pods import annotations as annotations
from tas.jobframework.pods import key as key
from tas.jobframework.pods import labels as labels
from tas.jobframework.pods import meta as meta
from tas.jobframework.pods import suspending_parent as suspending_parent

_TOTAL_COUNT = re.compile(r"[0-9]{1,10}")  # ASCII digits, bounded before int()

# The metadata a managed pod's record keeps (the spec and status phase are kept whole).
KEPT_METADATA = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "labels",
    "annotations",
    "finalizers",
    "ownerReferences",
    "creationTimestamp",
    "deletionTimestamp",
)


def trim(pod: Mapping) -> dict:
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    return {
        "metadata": {k: meta[k] for k in KEPT_METADATA if k in meta},
        "spec": pod.get("spec") or {},
        "status": {k: status[k] for k in ("phase", "message", "reason") if k in status},
    }


def group_name(pod: Mapping) -> str | None:
    return labels(pod).get(POD_GROUP_NAME_LABEL) or None


def workload_name_of_group(pod: Mapping) -> str | None:
    """A group's Workload: the prebuilt one it names (a LeaderWorkerSet's), else the group's."""
    return labels(pod).get(PREBUILT_WORKLOAD_LABEL) or group_name(pod)


def queue(pod: Mapping) -> str | None:
    return labels(pod).get(QUEUE_NAME_LABEL)


def phase(pod: Mapping) -> str:
    return (pod.get("status") or {}).get("phase") or "Pending"


def terminal(pod: Mapping) -> bool:
    return phase(pod) in ("Succeeded", "Failed")


def deleting(pod: Mapping) -> bool:
    return bool(meta(pod).get("deletionTimestamp"))


def gates(pod: Mapping) -> list[str]:
    return [g.get("name") for g in (pod.get("spec") or {}).get("schedulingGates") or []]


def admission_gated(pod: Mapping) -> bool:
    """Not started yet: still held by Kueue's admission gate."""
    return ADMISSION_SCHEDULING_GATE in gates(pod)


def topology_gated(pod: Mapping) -> bool:
    return TOPOLOGY_SCHEDULING_GATE in gates(pod)


def finalized(pod: Mapping) -> bool:
    """No longer held by our finalizer."""
    return POD_FINALIZER not in (meta(pod).get("finalizers") or [])


def runnable_or_succeeded(pod: Mapping) -> bool:
    """Kueue's isPodRunnableOrSucceeded: can still run, runs, or succeeded. A pod being
    deleted before it was bound to a node never will."""
    if deleting(pod) and not (pod.get("spec") or {}).get("nodeName"):
        return False
    return phase(pod) != "Failed"


def total_count(pod: Mapping) -> int | None:
    """pod-group-total-count, or None unless it is a whole number from 1 to INT32_MAX (it
    becomes a pod set's count, an int32)."""
    text = annotations(pod).get(POD_GROUP_TOTAL_COUNT_ANNOTATION)
    if text is None or not _TOTAL_COUNT.fullmatch(text):
        return None
    value = int(text)
    return value if 1 <= value <= INT32_MAX else None


def fast_admission(pod: Mapping) -> bool:
    """Admitted once the first pod exists, for the whole total count (StatefulSet)."""
    return POD_GROUP_FAST_ADMISSION_ANNOTATION in annotations(pod)


def serving(pod: Mapping) -> bool:
    """A serving group (StatefulSet, LeaderWorkerSet) never finishes."""
    return annotations(pod).get(POD_GROUP_SERVING_ANNOTATION) == "true"


def unretriable(pod: Mapping) -> bool:
    return annotations(pod).get(RETRIABLE_IN_GROUP_ANNOTATION) == "false"


def controller_uid(pod: Mapping) -> str | None:
    return next(
        (o.get("uid") for o in meta(pod).get("ownerReferences") or [] if o.get("controller")),
        None,
    )


def role(pod: Mapping) -> str:
    """The pod's role in its group, the name of its pod set: the role-hash annotation the
    webhook wrote (or a LeaderWorkerSet's leader/worker), else computed from the spec."""
    return annotations(pod).get(ROLE_HASH_ANNOTATION) or role_hash(pod.get("spec") or {})


def role_hash(spec: Mapping) -> str:
    """8 hex of a SHA-256 over what admission reads of a pod's spec (Kueue's GenerateRoleHash
    reads the same fields; the digest differs, Kueue hashes Go's encoding of them)."""

    def containers(items) -> list:
        return [
            {
                "requests": (c.get("resources") or {}).get("requests") or {},
                "ports": c.get("ports") or [],
            }
            for c in items or []
        ]

    shape = {
        "initContainers": containers(spec.get("initContainers")),
        "containers": containers(spec.get("containers")),
        "nodeSelector": spec.get("nodeSelector") or {},
        "affinity": spec.get("affinity"),
        "tolerations": spec.get("tolerations") or [],
        "runtimeClassName": spec.get("runtimeClassName"),
        "priority": spec.get("priority"),
        "topologySpreadConstraints": spec.get("topologySpreadConstraints") or [],
        "overhead": spec.get("overhead"),
        "resourceClaims": spec.get("resourceClaims"),
    }
    return hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()[:8]
