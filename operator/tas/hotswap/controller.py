"""Watches the health of nodes under admitted workloads and marks the failed ones.

For each workload with pods assigned to a node that failed (see health.py): record the node in
`status.unhealthyNodes`, and fail the workload's Pending pods pinned to it so the Job controller
makes new ones (they stay gated until the admission loop has found the replacement). Under
TASRemovePodsOnDeletedNodes (ours, on), pods bound to a node that no longer exists are failed
and removed too, once the API server confirms the node is gone: Kubernetes' pod garbage
collector does the same, but only after a 40 s quarantine, and until then the Job controller
counts them as running and makes no replacement. A second
failed node evicts the workload, as in Kueue; with TASReplaceMultipleFailedNodes (alias
TASMultipleNodeReplacement) only once the workload already lists as many as its eviction
threshold allows (see replace.py). A node that recovers before its replacement is taken off
the list.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from tas.api.conditions import pod_disrupted, pod_terminated_by_kueue
from tas.api.constants import (
    HOSTNAME_LABEL,
    REASON_NODE_DELETED,
    REASON_UNSCHEDULABLE_ON_ASSIGNED_NODE,
)
from tas.cache.projections import PodInfo, WorkloadInfo
from tas.cache.state import ClusterState
from tas.hotswap.health import Health, node_health
from tas.hotswap.replace import eviction_threshold, evicts_on_another_failure
from tas.kube import Kube, KubeError, Ref, node_path, pod_path
from tas.solver.types import Toleration
from tas.workload import transitions
from tas.workload.pods import fail_pod
from tas.workload.writer import WorkloadWriter, evict

log = logging.getLogger(__name__)


def on_node(pod: PodInfo, node: str) -> bool:
    return pod.node_name == node or (
        not pod.node_name and pod.node_selector.get(HOSTNAME_LABEL) == node
    )


class NodeHealthController:
    def __init__(
        self,
        state: ClusterState,
        kube: Kube,
        writer: WorkloadWriter,
        *,
        on_pod_termination: bool = True,
        on_taints: bool = True,
        multiple_nodes: bool = False,
        remove_pods_on_deleted_nodes: bool = True,
        tolerations_of: Callable[[WorkloadInfo], tuple[Toleration, ...]] | None = None,
    ) -> None:
        self.state = state
        self.kube = kube
        self.writer = writer
        self.on_pod_termination = on_pod_termination
        self.on_taints = on_taints
        self.multiple_nodes = multiple_nodes
        self.remove_pods_on_deleted_nodes = remove_pods_on_deleted_nodes
        self.tolerations_of = tolerations_of or self._tolerations

    def _tolerations(self, workload: WorkloadInfo) -> tuple[Toleration, ...]:
        """The pod sets' own tolerations plus those of the flavors they were admitted to."""
        out: list[Toleration] = [t for ps in workload.pod_sets for t in ps.tolerations]
        for admission in workload.admissions:
            flavor = self.state.flavors.get(admission.flavor or "")
            if flavor:
                out.extend(flavor.tolerations)
        return tuple(out)

    async def sync(self, node_name: str) -> None:
        node = self.state.nodes.get(node_name)
        orphans: list[tuple[WorkloadInfo, list[PodInfo]]] = []
        for key in self.state.workloads_on_node(node_name):
            workload = self.state.workloads.get(key)
            if workload is None or not workload.admitted:
                continue
            pods = [p for p in self.state.pods_of(*key) if on_node(p, node_name)]
            health = node_health(
                node,
                pods,
                self.tolerations_of(workload),
                on_pod_termination=self.on_pod_termination,
                on_taints=self.on_taints,
            )
            listed = node_name in workload.unhealthy_nodes
            if health is Health.FAILED and not listed:
                await self._mark(workload, node_name, pods)
            elif health is Health.HEALTHY and listed:
                await self._unmark(workload, node_name)
            if health is Health.FAILED:
                await self._fail_stranded_pods(workload, node_name, pods)
            removing = node is None and self.remove_pods_on_deleted_nodes
            if removing and (left := orphaned(workload, node_name, pods)):
                orphans.append((workload, left))
        if orphans:
            await self._remove_orphaned_pods(node_name, orphans)

    async def _mark(self, workload: WorkloadInfo, node: str, pods: list[PodInfo]) -> None:
        if self.multiple_nodes and (problem := eviction_threshold(workload)[1]):
            log.warning("workload %s/%s: %s", workload.namespace, workload.name, problem)
        if evicts_on_another_failure(workload, self.multiple_nodes):
            message = transitions.multiple_failures_message([*workload.unhealthy_nodes, node])
            await evict(self.writer, workload, message)
            return
        status = transitions.unhealthy_nodes([*workload.unhealthy_nodes, node])
        if await self.writer.write_status(workload, status):
            log.info(
                "node %s failed under %s/%s; looking for a replacement",
                node,
                workload.namespace,
                workload.name,
            )
            await self.writer.record_event(
                workload, "Warning", "UnhealthyNode", f"Node {node} failed; replacing it"
            )
            # The watch event of this write wakes admission, which finds the replacement.

    async def _unmark(self, workload: WorkloadInfo, node: str) -> None:
        status = transitions.unhealthy_nodes([n for n in workload.unhealthy_nodes if n != node])
        if await self.writer.write_status(workload, status):
            log.info("node %s recovered under %s/%s", node, workload.namespace, workload.name)

    async def _fail_stranded_pods(
        self, workload: WorkloadInfo, node: str, pods: list[PodInfo]
    ) -> None:
        """Pending pods pinned to a failed node would wait forever: fail them to be recreated."""
        for pod in pods:
            if pod.phase != "Pending" or pod.gated or pod.deleting:
                continue
            message = f"Pod was pinned to node {node}, which failed under workload {workload.name}"
            status = pod_terminated_by_kueue(REASON_UNSCHEDULABLE_ON_ASSIGNED_NODE, message)
            if not await fail_pod(self.kube, pod.namespace, pod.name, pod.uid, status):
                continue  # gone already (or re-made): its owner makes the new one all the same
            ref = Ref("v1", "Pod", pod.namespace, pod.name, pod.uid)
            await self.kube.event(
                ref,
                "Warning",
                "PodTerminatedByKueue",
                f"Node {node} failed; the pod will be recreated",
            )

    async def _remove_orphaned_pods(
        self, node: str, orphans: list[tuple[WorkloadInfo, list[PodInfo]]]
    ) -> None:
        """Fail and remove the pods left on a deleted node, as the pod garbage collector would,
        but at once, once a read of the node, not the cache, says it is gone. Only a shortcut:
        whatever fails here (a refusal, a missing permission) is left to that collector, and
        never stops hot swap itself."""
        try:
            if await self.kube.get(node_path(node)) is not None:
                return
            for workload, pods in orphans:
                message = (
                    f"Node {node} no longer exists; the pod is removed without waiting for the "
                    f"pod garbage collector, so that workload {workload.name} gets its "
                    "replacement sooner"
                )
                removed = [p for p in pods if await self._remove(p, message)]
                if removed:
                    log.info(
                        "removed %d pods of %s/%s from deleted node %s",
                        len(removed),
                        workload.namespace,
                        workload.name,
                        node,
                    )
        except KubeError as exc:
            log.warning("pods left on deleted node %s: not removed (%s)", node, exc)

    async def _remove(self, pod: PodInfo, message: str) -> bool:
        """Failed first (the Job counts it, and makes its replacement), guarded by the pod's
        UID as the delete is: a new pod of the same name is never touched."""
        status = pod_disrupted(REASON_NODE_DELETED, message)
        if not await fail_pod(self.kube, pod.namespace, pod.name, pod.uid, status):
            return False
        path = pod_path(pod.namespace, pod.name)
        if not await self.kube.delete(path, grace_seconds=0, uid=pod.uid):
            return False
        ref = Ref("v1", "Pod", pod.namespace, pod.name, pod.uid)
        await self.kube.event(ref, "Warning", REASON_NODE_DELETED, message)
        return True


def orphaned(workload: WorkloadInfo, node: str, pods: list[PodInfo]) -> list[PodInfo]:
    """The workload's pods left running on `node` that an owner replaces: not a single Pod's
    workload (it keeps its pod, as its assignment), not pods already going, and not Pending
    ones (failed as stranded: their owner replaces them without their removal). The pod watch
    drops finished pods, so none of these has ended."""
    if workload.owned_by_single_pod:
        return []
    return [
        p
        for p in pods
        if p.node_name == node and p.owner_uid and not p.deleting and p.phase != "Pending"
    ]
