"""Ungates an admitted workload's pods, one workload at a time (see plan.py for the choice)."""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import replace

from tas import metrics
from tas.api.conditions import pod_terminated_by_kueue
from tas.api.constants import (
    HOSTNAME_LABEL,
    NUMA_ZONE_ANNOTATION,
    PLACEMENT_GROUP_PARTITION_LABEL,
    REASON_UNSCHEDULABLE_ON_ASSIGNED_NODE,
    TOPOLOGY_SCHEDULING_GATE,
)
from tas.api.numazones import format_numa_zones
from tas.cache import placementgroups
from tas.cache.projections import Key
from tas.cache.state import ClusterState
from tas.kube import STRATEGIC, Kube, KubeError, gather_bounded, pod_path
from tas.ungater.plan import Ungate, plan, stranded
from tas.ungater.ranks import group_offsets, pod_set_rule
from tas.workload.pods import fail_pod

log = logging.getLogger(__name__)
PATCHES_IN_FLIGHT = 16  # pod patches of one workload at once


class Ungater:
    def __init__(self, state: ClusterState, kube: Kube) -> None:
        self.state = state
        self.kube = kube
        # pod uid -> domain, for pods we ungated whose update the watch has not shown yet;
        # rebuilt after a restart from the nodeSelectors of the pods themselves.
        self.expected: dict[str, tuple[str, ...]] = {}
        self.unconfirmed: dict[str, Ungate] = {}  # pod uid -> a patch that got no answer
        self.ungated = 0

    async def sync(self, key: Key) -> None:
        workload = self.state.workloads.get(key)
        if workload is None or not workload.admitted:
            return
        pods = self.state.pods_of(*key)
        seen = {p.uid: p for p in pods}
        for uid in [u for u in self.expected if u in seen and not seen[u].gated]:
            del self.expected[uid]
            self.unconfirmed.pop(uid, None)
        # Patches that got no answer may have landed: send the same domain again, never another.
        ungates = [u for uid, u in self.unconfirmed.items() if uid in seen and seen[uid].gated]
        requests = {ps.name: ps.topology for ps in workload.pod_sets}
        offsets = group_offsets(workload.pod_sets, {a.name: a.count for a in workload.admissions})
        # Nodes listed unhealthy, and nodes this cache already sees gone or not ready: hot swap's
        # write of unhealthyNodes may not have come back through the watch yet.
        unhealthy = set(workload.unhealthy_nodes) | {
            host
            for host in workload.assigned_hosts
            if (node := self.state.nodes.get(host)) is None or not node.ready
        }
        strays: list = []
        for admission in workload.admissions:
            if admission.assignment is None:
                continue
            pod_set_pods = [p for p in pods if p.pod_set == admission.name]
            group = offsets.get(admission.name)
            # A bad offset raises before any write: none of the workload's pods are ungated.
            rule = pod_set_rule(requests.get(admission.name), admission.count, pod_set_pods, group)
            ungates.extend(plan(admission.assignment, pod_set_pods, self.expected, unhealthy, rule))
            strays.extend(stranded(admission.assignment, pod_set_pods, self.expected))
        for pod in strays:
            await self._fail_stray(pod, workload.name)
        if self.state.numa.reports:
            ungates = self._with_zones(key, workload, ungates)
        if workload.group_key and self.state.options.placement_groups:
            ungates = self._with_partitions(workload, ungates)
        # Each pod's domain is recorded before its patch is sent, so no pod gets two domains.
        for ungate in ungates:
            self.expected[ungate.pod.uid] = ungate.domain
        results = await gather_bounded(PATCHES_IN_FLIGHT, [self._ungate(u) for u in ungates])
        failure = None
        for ungate, result in zip(ungates, results, strict=True):
            uid = ungate.pod.uid
            if not isinstance(result, BaseException):
                self.unconfirmed.pop(uid, None)
                continue
            failure = result
            if isinstance(result, KubeError) and refused(result):
                self.expected.pop(uid, None)  # it did not land: plan the pod afresh
                self.unconfirmed.pop(uid, None)
            else:
                self.unconfirmed[uid] = ungate
        if failure is not None:
            raise failure  # the worker retries this workload after its backoff

    def _with_zones(self, key: Key, workload, ungates: list[Ungate]) -> list[Ungate]:
        """Pods going to a node counted by NUMA zones carry the zone they were counted in
        (the cache's packing of the node's pending pods, which these are)."""
        shapes = {ps.name: ps.numa for ps in workload.pod_sets}
        plans: dict[str, dict] = {}
        # Pods ungated earlier whose patch the watch has not shown yet are still counted as
        # pending, first: their zones are the first of the plan.
        now = {u.pod.uid for u in ungates}
        taken: dict[tuple[str, str], int] = defaultdict(int)
        for pod in self.state.pods_of(*key):
            domain = self.expected.get(pod.uid)
            if domain and pod.uid not in now and pod.gated and not pod.numa_zone:
                taken[(domain[-1], pod.pod_set or "")] += 1
        out = []
        for ungate in ungates:
            host = ungate.node_selector.get(HOSTNAME_LABEL)
            shape = shapes.get(ungate.pod.pod_set or "")
            if ungate.numa_zone or not host or shape is None or host not in self.state.numa.reports:
                out.append(ungate)
                continue
            if host not in plans:
                plans[host] = self.state.numa_plans(host)
            slot = (host, ungate.pod.pod_set or "")
            index = taken[slot]
            chosen = plans[host].get((key, ungate.pod.pod_set or ""), [])
            taken[slot] = index + 1
            zone = format_numa_zones(chosen[index], shape) if index < len(chosen) else None
            out.append(replace(ungate, numa_zone=zone) if zone else ungate)
        return out

    def _with_partitions(self, workload, ungates: list[Ungate]) -> list[Ungate]:
        """Pods of a partitioned placement group carry their partition, known from the domain
        of the partition level they go to."""
        state = self.state
        key = workload.group_key
        group = state.placement_groups.get(key)
        spec = group.spec if group is not None else workload.placement_group.spec
        admission = next((a for a in workload.admissions if a.assignment is not None), None)
        if spec is None or not spec.partitions or admission is None or not admission.flavor:
            return ungates
        flavor = state.flavors.get(admission.flavor)
        levels = state.topologies.get(flavor.topology_name or "") if flavor else None
        if not levels or spec.partition_topology not in levels:
            return ungates
        depth = levels.index(spec.partition_topology)
        snapshot = state.snapshot(admission.flavor)
        partitions = placementgroups.partitions_of(state, key)
        out = []
        for ungate in ungates:
            path = snapshot.leaf_path(ungate.domain)
            partition = partitions.get(path[: depth + 1]) if path else None
            out.append(replace(ungate, partition=partition) if partition else ungate)
        return out

    async def _fail_stray(self, pod, workload: str) -> None:
        """An unbound pod is failed; a bound one is deleted, as the taint manager evicts: its
        node's kubelet owns its phase and would write Running over a Failed one (seen with
        kwok in the chaos run)."""
        bound = bool(pod.node_name)
        message = (
            f"Pod was pinned to {dict(pod.node_selector)}, which is no longer in the topology "
            f"assignment of workload {workload}"
        )
        status = pod_terminated_by_kueue(
            REASON_UNSCHEDULABLE_ON_ASSIGNED_NODE, message, fail=not bound
        )
        if not await fail_pod(self.kube, pod.namespace, pod.name, pod.uid, status):
            return
        if bound and not await self.kube.delete(pod_path(pod.namespace, pod.name), uid=pod.uid):
            return
        log.info(
            "%s %s/%s: pinned outside its workload's assignment",
            "deleted" if bound else "failed",
            pod.namespace,
            pod.name,
        )

    async def _ungate(self, ungate: Ungate) -> None:
        patch: dict = {
            "spec": {
                "schedulingGates": [{"$patch": "delete", "name": TOPOLOGY_SCHEDULING_GATE}],
                "nodeSelector": ungate.node_selector,
            }
        }
        if ungate.numa_zone:
            patch["metadata"] = {"annotations": {NUMA_ZONE_ANNOTATION: ungate.numa_zone}}
        if ungate.partition is not None:
            labels = {PLACEMENT_GROUP_PARTITION_LABEL: str(ungate.partition)}
            patch.setdefault("metadata", {})["labels"] = labels
        try:
            await self.kube.patch(pod_path(ungate.pod.namespace, ungate.pod.name), patch, STRATEGIC)
        except KubeError as exc:
            if exc.not_found:
                return  # the pod is gone; its replacement will come through the watch
            raise
        self.ungated += 1
        metrics.PODS_UNGATED.inc()
        log.debug("ungated %s/%s onto %s", ungate.pod.namespace, ungate.pod.name, ungate.domain)

    def forget_pod(self, uid: str) -> None:
        self.expected.pop(uid, None)
        self.unconfirmed.pop(uid, None)


def refused(exc: KubeError) -> bool:
    """The server answered and did not apply the patch (as opposed to no answer, or a 5xx
    after which the patch may or may not have landed)."""
    return 400 <= exc.status < 500 and exc.status != 429
