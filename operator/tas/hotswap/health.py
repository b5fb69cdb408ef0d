"""Is a node still good for a workload that has pods assigned to it? Kueue's rules, pure.

- A node that is gone is failed at once.
- A NotReady node is failed once the workload's pods on it have stopped (terminating,
  terminated or gone) under TASReplaceNodeOnPodTermination; at once without it.
- A Ready node with a NoSchedule/NoExecute taint the pods do not tolerate (under
  TASReplaceNodeOnNodeTaints) is failed likewise; a taint tolerated only for a while
  (tolerationSeconds) waits for the pods to stop; a taint tolerated for good is harmless.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

from tas.cache.projections import PodInfo
from tas.solver.filters import tolerates
from tas.solver.types import Node, Toleration

HARMFUL_EFFECTS = ("NoSchedule", "NoExecute")


class Health(enum.Enum):
    HEALTHY = "healthy"
    WAIT = "wait"  # something is wrong, but the workload's pods are still running there
    FAILED = "failed"


def progressing(pods: Iterable[PodInfo]) -> bool:
    return any(not p.deleting and not p.terminal for p in pods)


def node_health(
    node: Node | None,
    pods_on_node: list[PodInfo],
    tolerations: tuple[Toleration, ...],
    *,
    on_pod_termination: bool = True,
    on_taints: bool = True,
) -> Health:
    if node is None:
        return Health.FAILED

    def once_stopped() -> Health:
        if on_pod_termination and progressing(pods_on_node):
            return Health.WAIT
        return Health.FAILED

    if not node.ready:
        return once_stopped()
    if not on_taints:
        return Health.HEALTHY
    verdict = Health.HEALTHY
    for taint in node.taints:
        if taint.effect not in HARMFUL_EFFECTS:
            continue
        matching = [t for t in tolerations if tolerates(t, taint)]
        if not matching:
            return once_stopped()
        if all(t.toleration_seconds is not None for t in matching) and progressing(pods_on_node):
            verdict = Health.WAIT  # evicted later by the taint manager; replaced then
        elif all(t.toleration_seconds is not None for t in matching):
            return Health.FAILED
    return verdict
