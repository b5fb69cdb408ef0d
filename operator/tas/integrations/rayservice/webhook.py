"""A queued RayService's webhooks, as Kueue's pkg/controller/jobs/rayservice/rayservice_webhook.go.

Mutating, at creation: suspended until admitted, by its cluster spec's `suspend`. Validating,
at creation and update: Kueue's refusals of the cluster spec, each naming its field, every
template's topology annotations, and on update a queue name that changes only while suspended.
"""

from __future__ import annotations

from collections.abc import Mapping

from tas.integrations.ray import cluster_spec
from tas.integrations.rayservice.controller import CLUSTER_SPEC, RAY_SERVICE, cluster_of
from tas.jobframework import webhook
from tas.jobframework.workload import queue_name


def mutate(obj: Mapping) -> dict:
    """A queued RayService is created with its cluster suspended."""
    if RAY_SERVICE.suspended(obj):
        return {}
    return {"spec": {"rayClusterSpec": {"suspend": True}}}


def validate(obj: Mapping, old: Mapping | None = None) -> list[str]:
    """The reasons to refuse, each naming its field; [] for a RayService without a queue."""
    if not queue_name(obj):
        return []
    errors = cluster_spec.problems(cluster_of(obj), CLUSTER_SPEC)
    errors += webhook.validate(RAY_SERVICE, obj)
    if old is not None:
        errors += webhook.validate_queue_name_update(RAY_SERVICE, old, obj)
    return errors
