"""Keeps each queued Job and its Workload in step (see lifecycle.py for the decisions)."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from tas.api.annotations import TopologyRequestError
from tas.api.constants import REASON_INVALID_TOPOLOGY_REQUEST
from tas.cache.projections import Key, WorkloadInfo
from tas.cache.state import ClusterState
from tas.jobs import lifecycle
from tas.jobs.workload import build_workload, queue_name
from tas.kube import KUEUE, Kube, KubeError, Ref, job_path, workload_path
from tas.workload import transitions
from tas.workload.writer import WorkloadWriter

log = logging.getLogger(__name__)


class JobController:
    def __init__(
        self,
        state: ClusterState,
        kube: Kube,
        writer: WorkloadWriter,
        *,
        multi_layer_enabled: bool = True,
    ) -> None:
        self.state = state
        self.kube = kube
        self.writer = writer
        self.multi_layer_enabled = multi_layer_enabled
        self.jobs: dict[Key, dict] = {}  # latest queued Job bodies (no managedFields)

    def upsert(self, job: Mapping) -> Key:
        meta = job["metadata"]
        body = {
            "metadata": {
                k: meta.get(k) for k in ("name", "namespace", "uid", "resourceVersion", "labels")
            },
            "spec": job.get("spec") or {},
            "status": job.get("status") or {},
        }
        key = (meta["namespace"], meta["name"])
        self.jobs[key] = body
        return key

    def forget(self, namespace: str, name: str) -> None:
        self.jobs.pop((namespace, name), None)

    def workload_of(self, job: Mapping) -> WorkloadInfo | None:
        key = self.state.workload_by_owner.get(job["metadata"]["uid"])
        return self.state.workloads.get(key) if key else None

    async def sync(self, key: Key) -> None:
        job = self.jobs.get(key)
        if job is None or not queue_name(job):
            return  # deleted (its Workload goes with it, by owner reference) or not ours
        workload = self.workload_of(job)
        done = lifecycle.finished(job)
        if done:
            if workload and not workload.finished:
                await self._finish(workload, done)
            return
        if workload is None:
            await self._create_workload(job)
        elif workload.admitted:
            if lifecycle.suspended(job):
                await self._start(job, workload)
        elif not lifecycle.suspended(job):
            await self._stop(job, workload)  # pending, or evicted: its pods must go
        elif lifecycle.needs_start_time_reset(job):
            await self._reset_start_time(job)  # so the next start may rewrite the template
        elif (restore := lifecycle.restore_patch(job, workload)) is not None:
            await self._patch_job(job, restore, "template restored")
        elif workload.evicted and workload.has_quota:
            if not self._active_pods(workload):
                await self._write_status(
                    workload, transitions.released(workload), "requeued after eviction"
                )
        elif lifecycle.needs_new_workload(
            job, workload, multi_layer_enabled=self.multi_layer_enabled
        ):
            log.info("job %s/%s changed while suspended; re-creating its workload", *key)
            await self.kube.delete(workload_path(workload.namespace, workload.name))

    def _active_pods(self, workload: WorkloadInfo) -> bool:
        pods = self.state.pods_of(workload.namespace, workload.name)
        return lifecycle.pods_hold_capacity(pods, self.state.nodes)

    async def _create_workload(self, job: Mapping) -> None:
        meta = job["metadata"]
        try:
            workload = build_workload(job, multi_layer_enabled=self.multi_layer_enabled)
        except TopologyRequestError as exc:
            # The validating webhook refuses these; a Job that slipped past it gets an event.
            await self.kube.event(
                Ref("batch/v1", "Job", meta["namespace"], meta["name"], meta["uid"]),
                "Warning",
                REASON_INVALID_TOPOLOGY_REQUEST,
                str(exc),
            )
            return
        try:
            await self.kube.create(f"{KUEUE}/namespaces/{meta['namespace']}/workloads", workload)
        except KubeError as exc:
            if exc.status != 409:  # already there: the watch will show it
                raise
        else:
            log.info(
                "created workload %s for job %s/%s",
                workload["metadata"]["name"],
                meta["namespace"],
                meta["name"],
            )

    async def _start(self, job: Mapping, workload: WorkloadInfo) -> None:
        patch = lifecycle.start_patch(job, workload, self.state.flavors)
        meta = job["metadata"]
        try:
            await self.kube.patch(job_path(meta["namespace"], meta["name"]), patch)
        except KubeError as exc:
            if exc.status == 409:
                return  # a newer Job is on its way through the watch
            raise
        log.info("started job %s/%s (workload %s)", meta["namespace"], meta["name"], workload.name)

    async def _patch_job(self, job: Mapping, patch: dict, what: str) -> None:
        meta = job["metadata"]
        try:
            await self.kube.patch(job_path(meta["namespace"], meta["name"]), patch)
        except KubeError as exc:
            if exc.status in (404, 409):
                return  # gone, or a newer Job is on its way through the watch
            raise
        log.info("job %s/%s: %s", meta["namespace"], meta["name"], what)

    async def _stop(self, job: Mapping, workload: WorkloadInfo) -> None:
        meta = job["metadata"]
        try:
            await self.kube.patch(
                job_path(meta["namespace"], meta["name"]), lifecycle.stop_patch(job)
            )
        except KubeError as exc:
            if exc.status == 409:
                return
            raise
        log.info(
            "suspended job %s/%s: workload %s is not admitted",
            meta["namespace"],
            meta["name"],
            workload.name,
        )

    async def _reset_start_time(self, job: Mapping) -> None:
        meta = job["metadata"]
        try:
            await self.kube.patch(
                job_path(meta["namespace"], meta["name"]) + "/status",
                {"status": {"startTime": None}},
            )
        except KubeError as exc:
            if exc.status in (404, 409):
                return
            raise

    async def _finish(self, workload: WorkloadInfo, done: lifecycle.Finished) -> None:
        status = transitions.finished(workload, done.succeeded, done.message)
        await self._write_status(workload, status, f"finished: {done.message}")

    async def _write_status(self, workload: WorkloadInfo, status: dict, what: str) -> None:
        if await self.writer.write_status(workload, status):
            log.info("workload %s/%s %s", workload.namespace, workload.name, what)
        # else: stale or gone; the newer object (re-read or watched) brings us back
