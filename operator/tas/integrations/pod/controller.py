"""Keeps plain pods and pod groups and their Workloads in step (see group.py for the decisions).

Fed by a watch of the pods labelled `kueue.x-k8s.io/managed=true` (finished ones included: a
group's succeeded pods count toward its end). Work is keyed per single pod
`("pod", namespace, name)` or per group `("group", namespace, workload name)`; the keyed worker
runs one key at a time and folds events, and every write is guarded by the resourceVersion the
decision was made on, so a stale decision never lands.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Container, Mapping

from tas.api.conditions import now_rfc3339
from tas.api.constants import (
    ADMISSION_SCHEDULING_GATE,
    COND_WAITING_FOR_REPLACEMENT_PODS,
    POD_COND_TERMINATION_TARGET,
    POD_FINALIZER,
    PODSET_LABEL,
    PODSET_UNCONSTRAINED_TOPOLOGY,
    REASON_ERR_WORKLOAD_COMPOSE,
    TOPOLOGY_SCHEDULING_GATE,
    WORKLOAD_ANNOTATION,
)
from tas.api.frameworks import Framework
from tas.cache.projections import FlavorInfo, PodSetAdmission, WorkloadInfo
from tas.cache.state import ClusterState
from tas.integrations.pod import group as g
from tas.integrations.pod import pod as p
from tas.jobframework.creation import NOT_BUILT, create_workload, not_built_reason
from tas.jobframework.namespaces import EVERY_NAMESPACE
from tas.jobframework.podset import with_flavor_tolerations
from tas.jobframework.workload import pods_hold_capacity
from tas.kube import JSON_PATCH, Kube, KubeError, Ref, pod_path, workload_path
from tas.solver.types import PodSetRequest
from tas.workload import transitions
from tas.workload.writer import WorkloadWriter

log = logging.getLogger(__name__)

WorkKey = tuple[str, str, str]  # ("pod" | "group", namespace, name)


def work_key(pod: Mapping) -> WorkKey | None:
    namespace, name = p.key(pod)
    if p.group_name(pod):
        return ("group", namespace, p.workload_name_of_group(pod) or "")
    if p.suspending_parent(pod) == str(Framework.LEADERWORKERSET):
        return None  # a LeaderWorkerSet's pod waits for its group labels (integrations/leaderworkerset)
    # Any other parent's pod without a group (a Deployment's) is a single pod of its own.
    return ("pod", namespace, name)


def start_patch(
    pod: Mapping,
    pod_set_name: str,
    pod_set: PodSetRequest | None,
    admission: PodSetAdmission | None,
    flavor: FlavorInfo | None,
    workload_name: str,
) -> dict:
    """The merge patch that starts a gated pod (Kueue's `prepare`): the pod set label and the
    Workload annotation, the flavor's node labels and tolerations added (a pod's may only
    grow), the admission gate removed; the topology gate stays for the ungater, or goes when
    the pod set has no topology assignment."""
    spec = pod.get("spec") or {}
    annotations = {WORKLOAD_ANNOTATION: workload_name}
    topology = admission is not None and admission.assignment is not None
    if topology and pod_set is not None and pod_set.topology.implied:
        annotations[PODSET_UNCONSTRAINED_TOPOLOGY] = "true"
    out_spec: dict = {}
    if flavor is not None:
        selector = spec.get("nodeSelector") or {}
        added = {k: v for k, v in flavor.node_labels.items() if selector.get(k) != v}
        if added:
            out_spec["nodeSelector"] = added
        current = list(spec.get("tolerations") or [])
        tolerations = with_flavor_tolerations(current, flavor)
        if tolerations != current:  # a pod's tolerations may only grow
            out_spec["tolerations"] = tolerations
    dropped = {ADMISSION_SCHEDULING_GATE} | (set() if topology else {TOPOLOGY_SCHEDULING_GATE})
    out_spec["schedulingGates"] = [
        gate for gate in spec.get("schedulingGates") or [] if gate.get("name") not in dropped
    ] or None
    return {
        "metadata": {
            "resourceVersion": p.meta(pod).get("resourceVersion"),
            "labels": {PODSET_LABEL: pod_set_name},
            "annotations": annotations,
        },
        "spec": out_spec,
    }


class PodController:
    def __init__(
        self,
        state: ClusterState,
        kube: Kube,
        writer: WorkloadWriter,
        *,
        managed: Container[str] = EVERY_NAMESPACE,
    ) -> None:
        self.state = state
        self.kube = kube
        self.writer = writer
        self.managed = managed  # the namespaces whose pods are ours
        self.pods: dict[p.Key, dict] = {}  # managed pods, trimmed
        self.groups: dict[tuple[str, str], set[p.Key]] = defaultdict(set)  # (ns, workload) -> pods
        self._incomplete_reported: dict[WorkKey, str] = {}  # the last "fewer pods" event sent

    # ---- the watch -----------------------------------------------------------------------------

    def upsert(self, obj: Mapping) -> list[WorkKey]:
        pod = p.trim(obj)
        key = p.key(pod)
        old = self.pods.get(key)
        keys = self._unindex(old)
        self.pods[key] = pod
        wk = work_key(pod)
        if wk and wk[0] == "group":
            self.groups[(wk[1], wk[2])].add(key)
        return [k for k in {*keys, wk} if k]

    def forget(self, namespace: str, name: str) -> list[WorkKey]:
        return self._unindex(self.pods.pop((namespace, name), None))

    def _unindex(self, pod: Mapping | None) -> list[WorkKey]:
        if pod is None:
            return []
        wk = work_key(pod)
        if wk and wk[0] == "group":
            members = self.groups.get((wk[1], wk[2]))
            if members is not None:
                members.discard(p.key(pod))
                if not members:
                    del self.groups[(wk[1], wk[2])]
        return [wk] if wk else []

    def keys_of_workload(self, workload: WorkloadInfo) -> list[WorkKey]:
        if workload.is_group or (workload.namespace, workload.name) in self.groups:
            return [("group", workload.namespace, workload.name)]
        owner = workload.owner
        if owner is not None and owner.kind == "Pod" and owner.api_version == "v1":
            return [("pod", workload.namespace, owner.name)]
        return []

    # ---- reconciling ---------------------------------------------------------------------------

    async def sync(self, key: WorkKey) -> None:
        kind, namespace, name = key
        if namespace not in self.managed:
            return  # Kueue's managedJobsNamespaceSelector: not ours
        if kind == "pod":
            pod = self.pods.get((namespace, name))
            if pod is not None:
                await self._sync_single(pod)
        else:
            await self._sync_group(namespace, name)

    async def _sync_single(self, pod: Mapping) -> None:
        uid = p.meta(pod).get("uid") or ""
        wl_key = self.state.workload_by_owner.get(uid)
        workload = self.state.workloads.get(wl_key) if wl_key else None
        done = g.single_finished(pod)
        if done is not None:
            if await self._finish(workload, done):
                await self._finalize([pod])
            return
        if p.deleting(pod):
            await self._finalize([pod])  # deleted before it ended: nothing left to count
            return
        if workload is None:
            if p.admission_gated(pod):
                await self._create_single(pod)
            return
        if workload.finished:
            await self._finalize([pod])
        elif workload.admitted:
            if p.admission_gated(pod):
                await self._start(pod, g.SINGLE_POD_SET, workload)
        elif not p.admission_gated(pod):
            await self._stop([pod], "the workload is not admitted")

    async def _create_single(self, pod: Mapping) -> None:
        try:
            workload = g.single_workload(
                pod,
                classes=self.state.priority_classes(),
            )
        except NOT_BUILT as exc:
            await self.kube.event(_ref(pod), "Warning", not_built_reason(exc), str(exc))
            return
        await self._create(workload, pod, f"pod {'/'.join(p.key(pod))}")

    async def _sync_group(self, namespace: str, workload_name: str) -> None:
        members = [self.pods[k] for k in sorted(self.groups.get((namespace, workload_name), ()))]
        workload = self.state.workloads.get((namespace, workload_name))
        if not members:
            # Every member is gone (a StatefulSet scaled to zero, a group deleted): so is its
            # Workload, and the quota with it; a LeaderWorkerSet keeps its own Workloads.
            self._incomplete_reported.pop(("group", namespace, workload_name), None)
            if (
                workload is not None
                and workload.is_group
                and not workload.owned_by("LeaderWorkerSet")
            ):
                await self._delete_workload(workload)
            return
        group = g.Group(
            namespace, p.group_name(members[0]) or workload_name, workload_name, tuple(members)
        )
        done = g.group_finished(group)
        if done is not None:
            if await self._finish(workload, done):
                await self._finalize(group.pods)
            return
        if workload is None:
            await self._create_group(group)
            return
        if workload.finished:
            await self._finalize(group.pods)
            return
        plan = g.reconcile(group, workload)
        await self._finalize([pod for pod in group.pods if p.deleting(pod) and not p.terminal(pod)])
        await self._finalize(plan.replaced)
        if plan.excess:
            await self._finalize(plan.excess)
            await self._delete_pods(plan.excess, "excess pod in group")
        if plan.owners_to_add:
            await self._add_owners(workload, plan.owners_to_add)
            return  # started only once every member is an owner: its capacity is then covered
        waiting = g.waiting_condition(workload, plan.absent)
        if waiting is not None:
            await self._write(
                workload,
                transitions.condition(workload, COND_WAITING_FOR_REPLACEMENT_PODS, *waiting),
            )
        excess = {p.key(pod) for pod in plan.excess}
        live = [pod for pod in group.pods if p.key(pod) not in excess and not p.terminal(pod)]
        if workload.admitted:
            for pod in live:
                if p.admission_gated(pod) and not p.deleting(pod):
                    await self._start(pod, p.role(pod), workload)
        elif started := [pod for pod in live if not p.admission_gated(pod) and not p.deleting(pod)]:
            await self._stop(started, "the workload is not admitted")
        elif workload.evicted and workload.has_quota:
            pods = self.state.pods_of(workload.namespace, workload.name)
            if not pods_hold_capacity(pods, self.state.nodes):
                await self._write(workload, transitions.released(workload))

    async def _create_group(self, group: g.Group) -> None:
        key: WorkKey = ("group", group.namespace, group.workload)
        if group.prebuilt:
            return  # its owner (a LeaderWorkerSet) creates it
        # As Kueue: members that will never run (failed, or deleted before they were bound)
        # are let go first, even from a group that cannot be admitted yet, so that they leave.
        await self._finalize(group.inactive())
        trouble = g.problem(group)
        active = group.active()
        total = group.total or 0
        if trouble is None and not group.fast and len(active) < total:
            trouble = f"'{group.name}' group has fewer runnable pods than expected"
        if trouble is None and not active:
            trouble = f"'{group.name}' group has no runnable pod"
        if trouble is not None:
            if self._incomplete_reported.get(key) != trouble:
                self._incomplete_reported[key] = trouble
                await self.kube.event(
                    _ref(group.first), "Warning", REASON_ERR_WORKLOAD_COMPOSE, trouble
                )
            return
        self._incomplete_reported.pop(key, None)
        if len(active) > total and not group.fast:
            extra = sorted(active, key=g.keep_order)[total:]
            await self._finalize(extra)
            await self._delete_pods(extra, "excess pod in group")
            return  # created once the watch shows them gone
        try:
            workload = g.group_workload(
                group,
                classes=self.state.priority_classes(),
            )
        except NOT_BUILT as exc:
            await self.kube.event(_ref(group.first), "Warning", not_built_reason(exc), str(exc))
            return
        if len(workload["spec"]["podSets"]) > g.MAX_ROLES:
            await self.kube.event(
                _ref(group.first),
                "Warning",
                REASON_ERR_WORKLOAD_COMPOSE,
                "pod group can't include more than 8 roles",
            )
            return
        await self._create(workload, group.first, f"pod group {group.namespace}/{group.name}")

    # ---- writes --------------------------------------------------------------------------------

    async def _create(self, workload: dict, owner: Mapping, what: str) -> None:
        await create_workload(self.kube, workload, _ref(owner), what)

    async def _finish(self, workload: WorkloadInfo | None, done) -> bool:
        """The Workload records the end (True once it has, or when there is none)."""
        if workload is None or workload.finished:
            return True
        return await self._write(
            workload, transitions.finished(workload, done.succeeded, done.message)
        )

    async def _write(self, workload: WorkloadInfo, status: dict) -> bool:
        return await self.writer.write_status(workload, status)

    async def _start(self, pod: Mapping, pod_set_name: str, workload: WorkloadInfo) -> None:
        admission = next((a for a in workload.admissions if a.name == pod_set_name), None)
        pod_set = next((ps for ps in workload.pod_sets if ps.name == pod_set_name), None)
        if admission is None:
            log.warning(
                "pod %s/%s: role %s is not in workload %s", *p.key(pod), pod_set_name, workload.name
            )
            return
        flavor = self.state.flavors.get(admission.flavor or "")
        patch = start_patch(pod, pod_set_name, pod_set, admission, flavor, workload.name)
        if await self._patch_pod(pod, patch):
            log.info("started pod %s/%s (workload %s)", *p.key(pod), workload.name)

    async def _stop(self, pods: list[Mapping], reason: str) -> None:
        """Kueue stops pods by deleting them, marked as its termination target."""
        for pod in pods:
            condition = {
                "type": POD_COND_TERMINATION_TARGET,
                "status": "True",
                "reason": "StoppedByKueue",
                "message": reason,
                "lastTransitionTime": now_rfc3339(),
            }
            namespace, name = p.key(pod)
            try:
                await self.kube.patch(
                    pod_path(namespace, name) + "/status",
                    {"status": {"conditions": [condition]}},
                    "application/strategic-merge-patch+json",
                )
            except KubeError as exc:
                if not exc.not_found:
                    raise
        await self._delete_pods(pods, reason)

    async def _delete_pods(self, pods: list[Mapping], why: str) -> None:
        for pod in pods:
            if p.deleting(pod):
                continue
            await self.kube.delete(pod_path(*p.key(pod)))
            log.info("deleted pod %s/%s: %s", *p.key(pod), why)

    async def _finalize(self, pods) -> None:
        """Remove our finalizer: the Workload has what it needs of these pods."""
        for pod in pods:
            if p.finalized(pod):
                continue
            finalizers = [f for f in p.meta(pod).get("finalizers") or [] if f != POD_FINALIZER]
            patch = {
                "metadata": {
                    "resourceVersion": p.meta(pod).get("resourceVersion"),
                    "finalizers": finalizers or None,
                }
            }
            await self._patch_pod(pod, patch)

    async def _patch_pod(self, pod: Mapping, patch: dict) -> bool:
        try:
            await self.kube.patch(pod_path(*p.key(pod)), patch)
        except KubeError as exc:
            if exc.gone_or_changed:
                return False  # gone, or changed: the watch brings the newer pod
            raise
        return True

    async def _add_owners(self, workload: WorkloadInfo, pods: list[Mapping]) -> None:
        ops: list[dict] = [
            {"op": "test", "path": "/metadata/resourceVersion", "value": workload.resource_version}
        ]
        ops += [
            {"op": "add", "path": "/metadata/ownerReferences/-", "value": ref}
            for ref in g.group_owners(pods)
        ]
        try:
            await self.kube.patch(workload_path(workload.namespace, workload.name), ops, JSON_PATCH)
        except KubeError as exc:
            if exc.gone_or_changed or exc.status == 422:  # a failed test is 422
                return
            raise
        log.info(
            "workload %s/%s: %d member(s) added as owners",
            workload.namespace,
            workload.name,
            len(pods),
        )

    async def _delete_workload(self, workload: WorkloadInfo) -> None:
        await self.kube.delete(workload_path(workload.namespace, workload.name))
        log.info("deleted workload %s/%s: its pods are gone", workload.namespace, workload.name)


def _ref(pod: Mapping) -> Ref:
    meta = p.meta(pod)
    return Ref("v1", "Pod", meta.get("namespace") or "", meta["name"], meta.get("uid") or "")
