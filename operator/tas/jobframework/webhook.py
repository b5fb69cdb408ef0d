"""The webhooks of a kind held suspended until admitted (Kueue's jobframework BaseWebhook), pure:
the reviewed object in, a merge patch or the reasons to refuse it out."""

from __future__ import annotations

from collections.abc import Mapping

from tas import features
from tas.api import movable
from tas.api.annotations import TopologyRequestError
from tas.api.constants import QUEUE_NAME_LABEL
from tas.jobframework.interface import GenericJob
from tas.jobframework.workload import queue_name


def suspend(job: GenericJob, obj: Mapping) -> dict:
    """A queued object is created suspended: its pods wait for its Workload's admission."""
    return {} if job.suspended(obj) else {"spec": {"suspend": True}}


def validate(
    job: GenericJob,
    obj: Mapping,
) -> list[str]:
    """The topology annotations of every pod template, with Kueue's rules; the message names the
    annotation (and the template, for a kind with several)."""
    try:
        job.pod_sets(
            obj,
        )
    except TopologyRequestError as exc:
        return [str(exc)]
    if features.enabled(features.Gate.TAS_DEFRAGMENTATION):
        try:
            movable.parse((obj.get("metadata") or {}).get("annotations") or {})
        except movable.MovableError as exc:
            return [f"metadata.annotations[{exc.annotation}]: {exc.detail}"]
    return []


def validate_queue_name_update(job: GenericJob, old: Mapping, new: Mapping) -> list[str]:
    """Kueue's ValidateJobOnUpdate: the queue name may change only while the object is
    suspended."""
    if job.suspended(new) or queue_name(old) == queue_name(new):
        return []
    return [f"metadata.labels[{QUEUE_NAME_LABEL}]: field is immutable"]
