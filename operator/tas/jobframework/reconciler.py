"""Keeps each queued object of a GenericJob kind (Job, JobSet) and its Workload in step.

- no Workload yet                      -> create it (the object is held suspended by the webhook)
- Workload admitted, object suspended  -> start: gate, labels, flavor nodeSelector/tolerations
- Workload not admitted, object runs   -> stop: suspend (its controller removes the pods)
- object finished                      -> Workload Finished
- stopped object                       -> its templates restored to what the user wrote
- suspended object edited or resized   -> the Workload is re-created from it
- Workload evicted                     -> quota released once its pods stop holding capacity
"""

from __future__ import annotations

import logging
from collections.abc import Container, Mapping

from tas.api.constants import MOVABLE, MOVABLE_AFTER
from tas.cache.projections import Key, WorkloadInfo
from tas.cache.state import ClusterState
from tas.jobframework.creation import NOT_BUILT, create_workload, not_built_reason
from tas.jobframework.interface import GenericJob, JobWithSkip
from tas.jobframework.namespaces import EVERY_NAMESPACE
from tas.jobframework.workload import (
    build_workload,
    needs_new_workload,
    pods_hold_capacity,
    queue_name,
)
from tas.kube import Kube, KubeError, Ref, workload_path
from tas.workload import transitions
from tas.workload.writer import WorkloadWriter

log = logging.getLogger(__name__)

KEPT_METADATA = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "labels",
    "ownerReferences",
    "deletionTimestamp",
)


class JobReconciler:
    def __init__(
        self,
        job: GenericJob,
        state: ClusterState,
        kube: Kube,
        writer: WorkloadWriter,
        *,
        managed: Container[str] = EVERY_NAMESPACE,
    ) -> None:
        self.job = job
        self.kind = job.resource.kind
        self.state = state
        self.kube = kube
        self.writer = writer
        self.managed = managed  # the namespaces whose objects are ours
        self.objects: dict[
            Key, dict
        ] = {}  # latest queued objects (no managedFields, no status noise)

    def upsert(self, obj: Mapping) -> Key:
        meta = obj["metadata"]
        kept = {k: meta.get(k) for k in KEPT_METADATA}
        annotations = meta.get("annotations") or {}
        moving = {k: annotations[k] for k in (MOVABLE, MOVABLE_AFTER) if k in annotations}
        if moving:  # read by build_workload (gate TASDefragmentation)
            kept["annotations"] = moving
        body = {
            "metadata": kept,
            "spec": obj.get("spec") or {},
            "status": obj.get("status") or {},
        }
        key = (meta["namespace"], meta["name"])
        self.objects[key] = body
        return key

    def forget(self, namespace: str, name: str) -> None:
        self.objects.pop((namespace, name), None)

    def workload_of(self, obj: Mapping) -> WorkloadInfo | None:
        key = self.state.workload_by_owner.get(obj["metadata"]["uid"])
        return self.state.workloads.get(key) if key else None

    def ref(self, obj: Mapping) -> Ref:
        meta = obj["metadata"]
        return Ref(
            self.job.resource.api_version, self.kind, meta["namespace"], meta["name"], meta["uid"]
        )

    async def sync(self, key: Key) -> None:
        obj = self.objects.get(key)
        if obj is None or not queue_name(obj) or key[0] not in self.managed:
            return  # deleted (its Workload goes with it, by owner reference) or not ours
        if obj["metadata"].get("deletionTimestamp"):
            # Being deleted (a foreground deletion removes its Workload first): as Kueue, left
            # alone; a Workload made for it now would be admitted and start it again.
            return
        if isinstance(self.job, JobWithSkip) and self.job.skips(obj):
            return
        workload = self.workload_of(obj)
        done = self.job.finished(obj)
        if done:
            if workload and not workload.finished:
                status = transitions.finished(workload, done.succeeded, done.message)
                await self._write_status(workload, status, f"finished: {done.message}")
            return
        suspended = self.job.suspended(obj)
        if workload is None:
            await self._create_workload(obj)
        elif workload.admitted:
            if suspended:
                await self._patch(
                    obj, self.job.start_patch(obj, workload, self.state.flavors), "started"
                )
        elif not suspended:
            await self._patch(
                obj, self.job.stop_patch(obj), f"suspended: {workload.name} is not admitted"
            )
        elif self.job.needs_start_time_reset(obj):
            await self._reset_start_time(obj)  # so the next start may rewrite the templates
        elif (restore := self.job.restore_patch(obj, workload)) is not None:
            await self._patch(obj, restore, "templates restored")
        elif workload.evicted and workload.has_quota:
            pods = self.state.pods_of(workload.namespace, workload.name)
            if not pods_hold_capacity(pods, self.state.nodes):
                await self._write_status(
                    workload, transitions.released(workload), "requeued after eviction"
                )
        elif needs_new_workload(
            self.job,
            obj,
            workload,
            defaults=self.state.pod_defaults(key[0]),
        ):
            log.info("%s %s/%s changed while suspended; re-creating its workload", self.kind, *key)
            await self.kube.delete(workload_path(workload.namespace, workload.name))

    async def _create_workload(self, obj: Mapping) -> None:
        meta = obj["metadata"]
        try:
            workload = build_workload(
                self.job,
                obj,
                classes=self.state.priority_classes(),
                defaults=self.state.pod_defaults(meta["namespace"]),
            )
        except NOT_BUILT as exc:
            await self.kube.event(self.ref(obj), "Warning", not_built_reason(exc), str(exc))
            return
        await create_workload(
            self.kube, workload, self.ref(obj), f"{self.kind} {meta['namespace']}/{meta['name']}"
        )

    async def _patch(self, obj: Mapping, patch: dict, what: str) -> None:
        meta = obj["metadata"]
        try:
            await self.kube.patch(self.job.resource.path(meta["namespace"], meta["name"]), patch)
        except KubeError as exc:
            if exc.gone_or_changed:
                return  # gone, or a newer object is on its way through the watch
            raise
        log.info("%s %s/%s: %s", self.kind, meta["namespace"], meta["name"], what)

    async def _reset_start_time(self, obj: Mapping) -> None:
        meta = obj["metadata"]
        try:
            await self.kube.patch(
                self.job.resource.path(meta["namespace"], meta["name"]) + "/status",
                {"status": {"startTime": None}},
            )
        except KubeError as exc:
            if exc.gone_or_changed:
                return
            raise

    async def _write_status(self, workload: WorkloadInfo, status: dict, what: str) -> None:
        if await self.writer.write_status(workload, status):
            log.info("workload %s/%s %s", workload.namespace, workload.name, what)
        # else: stale or gone; the newer object (re-read or watched) brings us back
