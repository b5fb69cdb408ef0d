"""Failing a pod of a Workload that can never run where it is pinned, so that its owner makes a
new one: Kueue's pod TerminationTarget condition (the ungater, for pods pinned outside their
Workload's assignment; hot swap, for those pinned to a node that failed), or Kubernetes' own
DisruptionTarget (hot swap, for pods left on a deleted node).

Each write names the pod's UID: a pod re-made under the same name (a StatefulSet's, a
LeaderWorkerSet's) while our cache still shows the old one is never touched. (Only an object
without a UID, which no API server sends, is written unguarded.)"""

from __future__ import annotations

from typing import Any

from tas.kube import STRATEGIC, Kube, KubeError, pod_path

# What the API server answers a status patch whose metadata.uid is not the pod's
# ("field is immutable"), as checked against a real one.
UID_CHANGED = 422


async def fail_pod(kube: Kube, namespace: str, name: str, uid: str, status: dict[str, Any]) -> bool:
    """Write `status` (a patch from tas.api.conditions) into the pod's status, only while the
    pod named is the one with `uid`. False when that pod is gone already."""
    patch = {"metadata": {"uid": uid}, **status} if uid else status
    try:
        await kube.patch(pod_path(namespace, name) + "/status", patch, STRATEGIC)
    except KubeError as exc:
        if exc.not_found or uid_changed(exc):
            return False
        raise
    return True


def uid_changed(exc: KubeError) -> bool:
    """The refusal of a write naming another UID than the object's; any other 422 (an invalid
    status) is a real error, raised for the caller's retry and log."""
    return exc.status == UID_CHANGED and "metadata.uid" in exc.message
