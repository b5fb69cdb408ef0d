"""A queued Deployment's webhooks (Kueue's deployment_webhook.go), pure.

Mutating, at creation and update: the pod template is marked so that each pod is a queued
plain pod of the pod integration: the managed and queue-name labels, the Deployment's
WorkloadPriorityClass label, and `kueue.x-k8s.io/pod-suspending-parent: deployment`. Each pod
then gets a Workload of its own (no pod group: a Deployment's pods come and go one by one).

Validating: the queue name must be a valid object name; at update it cannot change while any
pod is ready, nor be removed; a WorkloadPriorityClass cannot be added while pods are ready,
nor ever removed.
"""

from __future__ import annotations

from collections.abc import Mapping

from tas.api.constants import (
    MANAGED_LABEL,
    MANAGED_VALUE,
    POD_SUSPENDING_PARENT_ANNOTATION,
    QUEUE_NAME_LABEL,
    WORKLOAD_PRIORITY_CLASS_LABEL,
)
from tas.api.frameworks import Framework
from tas.api.names import is_dns1123_subdomain
from tas.jobframework.workload import queue_name

QUEUE_NAME_PATH = f"metadata.labels[{QUEUE_NAME_LABEL}]"
PRIORITY_CLASS_PATH = f"metadata.labels[{WORKLOAD_PRIORITY_CLASS_LABEL}]"


def labels(obj: Mapping) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def mutate(deployment: Mapping) -> dict:
    """The merge patch that marks the pod template; {} for a Deployment without a queue."""
    queue = queue_name(deployment)
    if not queue:
        return {}
    template_labels = {MANAGED_LABEL: MANAGED_VALUE, QUEUE_NAME_LABEL: queue}
    priority_class = labels(deployment).get(WORKLOAD_PRIORITY_CLASS_LABEL)
    if priority_class:
        template_labels[WORKLOAD_PRIORITY_CLASS_LABEL] = priority_class
    return {
        "spec": {
            "template": {
                "metadata": {
                    "labels": template_labels,
                    "annotations": {
                        POD_SUSPENDING_PARENT_ANNOTATION: str(Framework.DEPLOYMENT),
                    },
                }
            }
        }
    }


def validate(deployment: Mapping) -> list[str]:
    """At creation: the queue name is an object name (Kueue's ValidateQueueName)."""
    queue = labels(deployment).get(QUEUE_NAME_LABEL)
    if queue is None or is_dns1123_subdomain(queue):
        return []
    return [
        f"{QUEUE_NAME_PATH}: Invalid value: {queue[:253]!r}: a lowercase RFC 1123 subdomain "
        "must consist of lower case alphanumeric characters, '-' or '.', and must start and "
        "end with an alphanumeric character"
    ]


def validate_update(old: Mapping, new: Mapping) -> list[str]:
    """Why Kueue would refuse this update, from the two versions of the object alone."""
    errors = validate(new)
    suspended = int(((old.get("status") or {}).get("readyReplicas")) or 0) == 0
    old_queue, new_queue = queue_name(old), queue_name(new)
    if (not suspended or not new_queue) and old_queue != new_queue:
        errors.append(f"{QUEUE_NAME_PATH}: Invalid value: {new_queue or ''!r}: field is immutable")
    old_class = labels(old).get(WORKLOAD_PRIORITY_CLASS_LABEL)
    new_class = labels(new).get(WORKLOAD_PRIORITY_CLASS_LABEL)
    if not suspended and not old_class and new_class:
        errors.append(
            f"{PRIORITY_CLASS_PATH}: Invalid value: {new_class!r}: "
            "WorkloadPriorityClass cannot be added to a non-suspended workload"
        )
    elif old_class and not new_class:
        errors.append(
            f"{PRIORITY_CLASS_PATH}: Invalid value: '': "
            "WorkloadPriorityClass cannot be removed from a workload"
        )
    return errors
