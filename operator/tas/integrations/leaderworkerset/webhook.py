"""A queued LeaderWorkerSet's webhooks (Kueue's leaderworkerset_webhook.go), pure.

Mutating, at creation and update: both pod templates are marked so that the pods are gated at
creation. Validating, at creation and update: the bounds on `replicas` and `size`, both
templates' topology annotations, and an immutable queue name.
"""

from __future__ import annotations

from collections.abc import Mapping

from tas.api.annotations import TopologyRequestError
from tas.api.constants import (
    POD_GROUP_SERVING_ANNOTATION,
    POD_SUSPENDING_PARENT_ANNOTATION,
    QUEUE_NAME_LABEL,
)
from tas.api.frameworks import Framework
from tas.config import DEFAULT_MAX_LEADERWORKERSET_REPLICAS
from tas.integrations.leaderworkerset.workload import bound_problems, leader_template, pod_sets
from tas.jobframework.workload import queue_name


def mutate(lws: Mapping) -> dict:
    """The merge patch that marks both pod templates, so that the pods are gated at creation;
    {} for a LeaderWorkerSet without a queue. Beyond Kueue, which marks them with annotations
    only, the queue-name label goes on them too: the pod webhook is called only for pods that
    carry it."""
    queue = queue_name(lws)
    if not queue:
        return {}
    mark = {
        "metadata": {
            "labels": {QUEUE_NAME_LABEL: queue},
            "annotations": {
                POD_SUSPENDING_PARENT_ANNOTATION: str(Framework.LEADERWORKERSET),
                POD_GROUP_SERVING_ANNOTATION: "true",
            },
        }
    }
    out: dict = {"workerTemplate": mark}
    if leader_template(lws) is not None:
        out["leaderTemplate"] = mark
    return {"spec": {"leaderWorkerTemplate": out}}


def validate(
    lws: Mapping,
    old: Mapping | None = None,
    *,
    max_replicas: int = DEFAULT_MAX_LEADERWORKERSET_REPLICAS,
) -> list[str]:
    errors = bound_problems(lws, max_replicas, old)
    if errors:
        return errors
    try:
        pod_sets(
            lws,
        )
    except TopologyRequestError as exc:
        errors.append(str(exc))
    if old is not None and queue_name(old) != queue_name(lws):
        errors.append(f"metadata.labels[{QUEUE_NAME_LABEL}]: field is immutable")
    return errors
