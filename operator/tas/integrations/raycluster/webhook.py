"""A queued RayCluster's webhooks, as Kueue's pkg/controller/jobs/raycluster/raycluster_webhook.go.

Mutating, at creation: suspended until admitted, unless a RayJob or RayService controls it (its
parent is admitted instead). Validating, at creation and update: Kueue's refusals of the spec,
each naming its field, every template's topology annotations, and on update a queue name that
changes only while suspended.
"""

from __future__ import annotations

from collections.abc import Mapping

from tas.integrations.ray import cluster_spec
from tas.integrations.raycluster.controller import RAY_CLUSTER, SPEC, ray_parent, spec_of
from tas.jobframework import webhook
from tas.jobframework.workload import queue_name


def mutate(obj: Mapping) -> dict:
    if ray_parent(obj) is not None:
        return {}
    return webhook.suspend(RAY_CLUSTER, obj)


def validate(obj: Mapping, old: Mapping | None = None) -> list[str]:
    """The reasons to refuse, each naming its field; [] for a RayCluster without a queue."""
    if not queue_name(obj):
        return []
    errors = cluster_spec.problems(spec_of(obj), SPEC, cluster_spec.AUTOSCALING_NEEDS_ELASTIC)
    errors += webhook.validate(RAY_CLUSTER, obj)
    if old is not None:
        errors += webhook.validate_queue_name_update(RAY_CLUSTER, old, obj)
    return errors
