"""A queued MPIJob's webhooks, as Kueue's pkg/controller/jobs/mpijob/mpijob_webhook.go.

Mutating, at creation: suspended until admitted; with TAS, a launcher that also works
(`runLauncherAsWorker`) makes the workers' replica index start at 1 (mpi-operator numbers the
launcher 0), so the workers' template says to subtract 1 to get a worker's rank - unless the
launcher and the workers form a pod-set group, whose ranks the group already offsets.
Validating, at creation and update: every replica type's topology annotations and the
pod-set group across them.
"""

from __future__ import annotations

from collections.abc import Mapping

from tas.api.constants import POD_INDEX_OFFSET_ANNOTATION, PODSET_GROUP_NAME
from tas.integrations.mpijob.controller import LAUNCHER, MPI_JOB, REPLICA_SPECS_FIELD, WORKER
from tas.jobframework.podset import merge_patch
from tas.jobframework.replica_specs import template


def mutate(obj: Mapping, *, tas: bool = True) -> dict:
    patch = MPI_JOB.suspend_patch(obj)
    if tas and _workers_offset_by_launcher(obj):
        offset = {"template": {"metadata": {"annotations": {POD_INDEX_OFFSET_ANNOTATION: "1"}}}}
        patch = merge_patch(patch, {"spec": {REPLICA_SPECS_FIELD: {WORKER: offset}}})
    return patch


def _workers_offset_by_launcher(obj: Mapping) -> bool:
    spec = obj.get("spec") or {}
    specs = spec.get(REPLICA_SPECS_FIELD) or {}
    if not spec.get("runLauncherAsWorker") or len(specs) != 2 or specs.get(WORKER) is None:
        return False
    launcher_annotations = (template(specs.get(LAUNCHER) or {}).get("metadata") or {}).get(
        "annotations"
    ) or {}
    return PODSET_GROUP_NAME not in launcher_annotations


def validate(obj: Mapping) -> list[str]:
    return MPI_JOB.validate(obj)
