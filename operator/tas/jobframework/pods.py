"""A pod as every integration reads it, and failing one (Kueue's pod TerminationTarget).

The pod integration (integrations/pod) reads far more of a pod; these few are what the other
kinds (a LeaderWorkerSet waiting for its pods), the ungater and hot swap share.
"""

from __future__ import annotations

from collections.abc import Mapping

from tas.api.conditions import pod_terminated_by_kueue
from tas.api.constants import POD_SUSPENDING_PARENT_ANNOTATION
from tas.kube import STRATEGIC, Kube, KubeError, pod_path

Key = tuple[str, str]  # (namespace, name)


def meta(pod: Mapping) -> Mapping:
    return pod.get("metadata") or {}


def labels(pod: Mapping) -> Mapping[str, str]:
    return meta(pod).get("labels") or {}


def annotations(pod: Mapping) -> Mapping[str, str]:
    return meta(pod).get("annotations") or {}


def key(pod: Mapping) -> Key:
    return meta(pod).get("namespace") or "", meta(pod)["name"]


def suspending_parent(pod: Mapping) -> str | None:
    """The framework (StatefulSet, LeaderWorkerSet) whose webhook marked the pod's template."""
    return annotations(pod).get(POD_SUSPENDING_PARENT_ANNOTATION)


async def fail_pod(
    kube: Kube, namespace: str, name: str, reason: str, message: str, *, fail: bool = True
) -> bool:
    """Write why Kueue terminates the pod into its status, and (`fail`) fail it so that its
    owner makes a new one. False when the pod is gone already."""
    status = pod_terminated_by_kueue(reason, message, fail=fail)
    try:
        await kube.patch(pod_path(namespace, name) + "/status", status, STRATEGIC)
    except KubeError as exc:
        if not exc.not_found:
            raise
        return False
    return True
