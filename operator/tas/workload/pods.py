"""Failing a pod of a Workload that can never run where it is pinned, so that its owner makes a
new one (Kueue's pod TerminationTarget condition). The ungater fails pods pinned outside their
Workload's assignment; hot swap, those pinned to a node that failed."""

from __future__ import annotations

from tas.api.conditions import pod_terminated_by_kueue
from tas.kube import STRATEGIC, Kube, KubeError, pod_path


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
