"""A queued RayJob's webhooks, as Kueue's pkg/controller/jobs/rayjob/rayjob_webhook.go.

Mutating, at creation: suspended until admitted (a RayJob on an existing cluster too, as Kueue
does; KubeRay refuses to run it suspended). Validating, at creation and update, Kueue's
refusals, each naming its field: a `clusterSelector` together with a `rayClusterSpec`, neither
of them, `shutdownAfterJobFinishes` false (the cluster would hold its quota after the job), the
cluster spec's (autoscaling, more than 7 worker groups, a worker group named "head"), every
template's topology annotations; and on update a queue name that changes only while suspended.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

from tas.integrations.ray import cluster_spec
from tas.integrations.rayjob.controller import CLUSTER_SPEC, RAY_JOB, spec_of
from tas.jobframework import webhook
from tas.jobframework.workload import queue_name

mutate = partial(webhook.suspend, RAY_JOB)

EXISTING_CLUSTER = "a kueue managed job should not use an existing cluster"
NO_CLUSTER = "rayClusterSpec is required for Kueue-managed jobs that don't use clusterSelector"
KEEPS_CLUSTER = "a kueue managed job should delete the cluster after finishing"


def validate(obj: Mapping, old: Mapping | None = None) -> list[str]:
    """The reasons to refuse, each naming its field; [] for a RayJob without a queue."""
    if not queue_name(obj):
        return []
    errors = _refusals(spec_of(obj))
    if errors is None:
        errors = _spec_problems(spec_of(obj)) + webhook.validate(RAY_JOB, obj)
    if old is not None:
        errors += webhook.validate_queue_name_update(RAY_JOB, old, obj)
    return errors


def _refusals(spec: Mapping) -> list[str] | None:
    """Kueue's refusals that end its validation (an existing cluster, or none), [] for a
    RayJob on an existing cluster (not Kueue's to admit), None to go on with the rest."""
    selector, cluster = spec.get("clusterSelector"), spec.get("rayClusterSpec")
    if selector and cluster is not None:
        return [f"spec.clusterSelector: Invalid value: {EXISTING_CLUSTER}"]
    if selector:
        return []
    if cluster is None:
        return [f"{CLUSTER_SPEC}: Required value: {NO_CLUSTER}"]
    return None


def _spec_problems(spec: Mapping) -> list[str]:
    errors = []
    if not spec.get("shutdownAfterJobFinishes"):
        errors.append(f"spec.shutdownAfterJobFinishes: Invalid value: false: {KEEPS_CLUSTER}")
    return errors + cluster_spec.problems(spec.get("rayClusterSpec") or {}, CLUSTER_SPEC)
