"""Keeps a queued LeaderWorkerSet's group Workloads and its pods' group labels (see lws.py).

Work keys: `("lws", namespace, name)` for a LeaderWorkerSet (its Workloads follow `replicas`),
`("pod", namespace, name)` for one of its pods waiting for its group labels.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from tas.api.annotations import TopologyRequestError
from tas.api.constants import (
    POD_GROUP_NAME_LABEL,
    REASON_INVALID_TOPOLOGY_REQUEST,
    REASON_PRIORITY_CLASS_NOT_FOUND,
)
from tas.cache.state import ClusterState
from tas.integrations import LEADERWORKERSET, Framework
from tas.jobframework.priority import PriorityClassMissing
from tas.jobframework.workload import queue_name
from tas.kube import KUEUE, Kube, KubeError, Ref, pod_path, workload_path
from tas.leaderworkerset import lws as L
from tas.pods import pod as p

log = logging.getLogger(__name__)

WorkKey = tuple[str, str, str]
KEPT_METADATA = ("name", "namespace", "uid", "resourceVersion", "labels")


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
        multi_layer_enabled: bool = True,
        partial_slices_enabled: bool = False,
        grouped_slicing_enabled: bool = False,
    ) -> None:
        self.state = state
        self.kube = kube
        self.pods = pods  # the pod integration's managed pods
        self.multi_layer_enabled = multi_layer_enabled
        self.partial_slices_enabled = partial_slices_enabled
        self.grouped_slicing_enabled = grouped_slicing_enabled
        self.objects: dict[tuple[str, str], dict] = {}

    def upsert(self, obj: Mapping) -> list[WorkKey]:
        meta = obj["metadata"]
        key = (meta["namespace"], meta["name"])
        self.objects[key] = {
            "metadata": {k: meta.get(k) for k in KEPT_METADATA},
            "spec": obj.get("spec") or {},
        }
        # Its pods that arrived before it wait for it.
        waiting = [
            ("pod", *pk)
            for pk, pod in self.pods.items()
            if pk[0] == key[0] and waiting_pod(pod) and p.labels(pod).get(L.NAME_LABEL) == key[1]
        ]
        return [("lws", *key), *waiting]

    def forget(self, namespace: str, name: str) -> None:
        self.objects.pop((namespace, name), None)  # its Workloads go by owner reference

    async def sync(self, key: WorkKey) -> None:
        kind, namespace, name = key
        if kind == "lws":
            lws = self.objects.get((namespace, name))
            if lws is not None and queue_name(lws):
                await self._sync_workloads(lws)
        else:
            pod = self.pods.get((namespace, name))
            if pod is not None and waiting_pod(pod):
                await self._label(pod)

    async def _sync_workloads(self, lws: Mapping) -> None:
        meta = lws["metadata"]
        namespace, uid = meta["namespace"], meta["uid"]
        wanted = [L.group_workload_name(lws, i) for i in range(L.replicas(lws))]
        have = {
            w.name
            for w in self.state.workloads.values()
            if w.namespace == namespace and uid in w.owner_uids
        }
        for index, name in enumerate(wanted):
            if name not in have:
                await self._create(lws, index)
        for name in sorted(have - set(wanted)):  # scaled down: those groups are gone
            await self.kube.delete(workload_path(namespace, name))
            log.info(
                "deleted workload %s/%s: LeaderWorkerSet %s scaled down",
                namespace,
                name,
                meta["name"],
            )

    async def _create(self, lws: Mapping, index: int) -> None:
        meta = lws["metadata"]
        ref = Ref(
            LEADERWORKERSET.api_version,
            LEADERWORKERSET.kind,
            meta["namespace"],
            meta["name"],
            meta["uid"],
        )
        try:
            workload = L.group_workload(
                lws,
                index,
                multi_layer_enabled=self.multi_layer_enabled,
                partial_slices_enabled=self.partial_slices_enabled,
                grouped_slicing_enabled=self.grouped_slicing_enabled,
                classes=self.state.priority_classes(),
                defaults=self.state.pod_defaults(meta["namespace"]),
            )
        except TopologyRequestError as exc:
            await self.kube.event(ref, "Warning", REASON_INVALID_TOPOLOGY_REQUEST, str(exc))
            return
        except PriorityClassMissing as exc:
            await self.kube.event(ref, "Warning", REASON_PRIORITY_CLASS_NOT_FOUND, str(exc))
            return
        try:
            await self.kube.create(f"{KUEUE}/namespaces/{meta['namespace']}/workloads", workload)
        except KubeError as exc:
            if exc.status != 409:
                raise
        else:
            log.info(
                "created workload %s for LeaderWorkerSet %s/%s group %d",
                workload["metadata"]["name"],
                meta["namespace"],
                meta["name"],
                index,
            )

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
            if exc.status in (404, 409):
                return
            raise
        log.info(
            "pod %s/%s joined group %s",
            *p.key(pod),
            patch["metadata"]["labels"][POD_GROUP_NAME_LABEL],
        )
