"""Keeps a queued LeaderWorkerSet's group Workloads and its pods' group labels (see workload.py).

Work keys: `("lws", namespace, name)` for a LeaderWorkerSet (its Workloads follow `replicas`),
`("pod", namespace, name)` for one of its pods waiting for its group labels.

`replicas` is the author's number: one beyond the bound (--max-leaderworkerset-replicas), which
the webhook refuses but an object made while it was away may still have, gets a Warning event
and nothing made per replica. Within it, the pod sets are built once for every group.
"""

from __future__ import annotations

import logging
from collections.abc import Container, Mapping

from tas.api.constants import (
    POD_GROUP_NAME_LABEL,
    REASON_ERR_WORKLOAD_COMPOSE,
)
from tas.api.frameworks import LEADERWORKERSET, Framework
from tas.cache.projections import WorkloadInfo
from tas.cache.state import ClusterState
from tas.config import DEFAULT_MAX_LEADERWORKERSET_REPLICAS
from tas.integrations.leaderworkerset import workload as L
from tas.jobframework import pods as p
from tas.jobframework.creation import NOT_BUILT, create_workload, not_built_reason
from tas.jobframework.namespaces import EVERY_NAMESPACE
from tas.jobframework.workload import queue_name
from tas.kube import Kube, KubeError, Ref, pod_path, workload_path
from tas.pacing import paced

log = logging.getLogger(__name__)

WorkKey = tuple[str, str, str]
KEPT_METADATA = ("name", "namespace", "uid", "resourceVersion", "labels", "deletionTimestamp")


def waiting_pod(pod: Mapping) -> bool:
    """A LeaderWorkerSet's managed pod not yet labelled a member of its group."""
    return p.suspending_parent(pod) == str(Framework.LEADERWORKERSET) and not p.labels(pod).get(
        POD_GROUP_NAME_LABEL
    )


class LeaderWorkerSetController:
    def __init__(
        self,
        state: ClusterState,
        kube: Kube,
        pods: Mapping[tuple[str, str], Mapping],
        *,
        max_replicas: int = DEFAULT_MAX_LEADERWORKERSET_REPLICAS,
        managed: Container[str] = EVERY_NAMESPACE,
    ) -> None:
        self.state = state
        self.kube = kube
        self.pods = pods  # the pod integration's managed pods
        self.max_replicas = max_replicas
        self.managed = managed  # the namespaces whose objects are ours
        self.objects: dict[tuple[str, str], dict] = {}
        # Indexes, so that an event costs what it touches, not every pod or Workload:
        self.workload_names: dict[str, set[str]] = {}  # LeaderWorkerSet uid -> its Workloads
        self.waiting: dict[tuple[str, str], set[tuple[str, str]]] = {}  # its pods, by its key
        self._waits_for: dict[tuple[str, str], tuple[str, str]] = {}  # pod -> LeaderWorkerSet
        self._reported: dict[tuple[str, str], str] = {}  # the last refusal sent per object

    def upsert(self, obj: Mapping) -> list[WorkKey]:
        meta = obj["metadata"]
        key = (meta["namespace"], meta["name"])
        self.objects[key] = {
            "metadata": {k: meta.get(k) for k in KEPT_METADATA},
            "spec": obj.get("spec") or {},
        }
        # Its pods that arrived before it wait for it.
        return [("lws", *key), *(("pod", *pk) for pk in sorted(self.waiting.get(key, ())))]

    def forget(self, namespace: str, name: str) -> None:
        self.objects.pop((namespace, name), None)  # its Workloads go by owner reference
        self._reported.pop((namespace, name), None)

    def pod_changed(self, key: tuple[str, str], pod: Mapping | None) -> bool:
        """Index a managed pod (None: gone) under the LeaderWorkerSet it waits for; True when
        it waits."""
        before = self._waits_for.pop(key, None)
        if before is not None:
            _discard(self.waiting, before, key)
        if pod is None or not waiting_pod(pod):
            return False
        owner = (key[0], p.labels(pod).get(L.NAME_LABEL) or "")
        self._waits_for[key] = owner
        self.waiting.setdefault(owner, set()).add(key)
        return True

    def workload_changed(self, workload: WorkloadInfo) -> None:
        """Index a Workload just upserted or deleted under the LeaderWorkerSet owning it."""
        owner = workload.owned_by(LEADERWORKERSET.kind)
        if owner is None:
            return
        if workload.key in self.state.workloads:
            self.workload_names.setdefault(owner.uid, set()).add(workload.name)
        else:
            _discard(self.workload_names, owner.uid, workload.name)

    async def sync(self, key: WorkKey) -> None:
        kind, namespace, name = key
        if namespace not in self.managed:
            return  # Kueue's managedJobsNamespaceSelector: not ours
        if kind == "lws":
            lws = self.objects.get((namespace, name))
            # One being deleted gets no new group Workloads (as the reconciler's owners).
            if lws is not None and queue_name(lws) and not lws["metadata"].get("deletionTimestamp"):
                await self._sync_workloads(lws)
        else:
            pod = self.pods.get((namespace, name))
            if pod is not None and waiting_pod(pod):
                await self._label(pod)

    async def _sync_workloads(self, lws: Mapping) -> None:
        meta = lws["metadata"]
        namespace, uid = meta["namespace"], meta["uid"]
        problems = L.bound_problems(lws, self.max_replicas)
        if problems:  # made while the webhook was away: nothing is made per replica
            await self._refuse(lws, "; ".join(problems))
            return
        have = set(self.workload_names.get(uid, ()))
        wanted: dict[str, int] = {}
        async for index in paced(range(L.replicas(lws))):
            wanted[L.group_workload_name(lws, index)] = index
        missing = [index for name, index in wanted.items() if name not in have]
        if missing:
            await self._create(lws, missing)
        for name in sorted(have - wanted.keys()):  # scaled down: those groups are gone
            await self.kube.delete(workload_path(namespace, name))
            log.info(
                "deleted workload %s/%s: LeaderWorkerSet %s scaled down",
                namespace,
                name,
                meta["name"],
            )

    async def _create(self, lws: Mapping, indexes: list[int]) -> None:
        """The Workloads of these groups, their pod sets built once; stops at the first one
        refused (the rest would be too)."""
        meta = lws["metadata"]
        try:
            first = L.group_workload(
                lws,
                indexes[0],
                classes=self.state.priority_classes(),
                defaults=self.state.pod_defaults(meta["namespace"]),
            )
        except NOT_BUILT as exc:
            await self._refuse(lws, str(exc), not_built_reason(exc))
            return
        self._reported.pop((meta["namespace"], meta["name"]), None)
        for index in indexes:
            name = L.group_workload_name(lws, index)
            workload = {**first, "metadata": {**first["metadata"], "name": name}}
            what = f"LeaderWorkerSet {meta['namespace']}/{meta['name']} group {index}"
            if not await create_workload(self.kube, workload, _ref(lws), what):
                return

    async def _refuse(
        self, lws: Mapping, message: str, reason: str = REASON_ERR_WORKLOAD_COMPOSE
    ) -> None:
        """A Warning event on the object, once per cause (it is synced on every change)."""
        meta = lws["metadata"]
        key = (meta["namespace"], meta["name"])
        if self._reported.get(key) == message:
            return
        self._reported[key] = message
        await self.kube.event(_ref(lws), "Warning", reason, message)
        log.warning("LeaderWorkerSet %s/%s: %s", *key, message)

    async def _label(self, pod: Mapping) -> None:
        namespace, _ = p.key(pod)
        lws = self.objects.get((namespace, p.labels(pod).get(L.NAME_LABEL) or ""))
        if lws is None or not queue_name(lws):
            return  # its LeaderWorkerSet's event brings it back
        patch = L.pod_membership(pod, lws)
        if patch is None:
            return  # no group index yet: the pod's next event brings it back
        try:
            await self.kube.patch(pod_path(*p.key(pod)), patch)
        except KubeError as exc:
            if exc.gone_or_changed:
                return
            raise
        log.info(
            "pod %s/%s joined group %s",
            *p.key(pod),
            patch["metadata"]["labels"][POD_GROUP_NAME_LABEL],
        )


def _ref(lws: Mapping) -> Ref:
    meta = lws["metadata"]
    return Ref(
        LEADERWORKERSET.api_version,
        LEADERWORKERSET.kind,
        meta["namespace"],
        meta["name"],
        meta["uid"],
    )


def _discard(index: dict, key, member) -> None:
    members = index.get(key)
    if members is not None:
        members.discard(member)
        if not members:
            del index[key]
