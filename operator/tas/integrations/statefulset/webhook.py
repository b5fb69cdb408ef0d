"""A queued StatefulSet's webhooks (Kueue's statefulset_webhook.go), pure.

Mutating, at creation and update: the pod template is marked so that its pods are one pod
group of `replicas` pods: the managed and queue-name labels, the group's name (its Workload's,
`statefulset-<name>-<hash>`), and the annotations of a serving group admitted at its first
pod (fast admission) whose pods are ranked by their StatefulSet index.

Validating, at update: as in Kueue v0.15, `replicas` changes only to or from zero (a resize is
a new group), not back up while the previous group's pods are still there, and the queue name
cannot change while pods run.

Every answer is decided from the reviewed object alone. Kueue also refuses a scale-up while the
previous group's Workload still exists, which it looks up by name in the object's namespace.
Anyone who can reach the webhook port can send a review naming any namespace, so that lookup
would tell them whether a Workload of a name they guess exists in a namespace they cannot
read. Here a group's Workload has no finalizer and is deleted when its last pod goes, the
event that also brings the StatefulSet's `status.replicas` (checked) to zero: the lookup would
cover only the instant between the two.
"""

from __future__ import annotations

from collections.abc import Mapping

from tas.api.constants import (
    MANAGED_LABEL,
    MANAGED_VALUE,
    POD_GROUP_FAST_ADMISSION_ANNOTATION,
    POD_GROUP_NAME_LABEL,
    POD_GROUP_POD_INDEX_LABEL_ANNOTATION,
    POD_GROUP_SERVING_ANNOTATION,
    POD_GROUP_TOTAL_COUNT_ANNOTATION,
    POD_SUSPENDING_PARENT_ANNOTATION,
    QUEUE_NAME_LABEL,
    STATEFULSET_POD_INDEX_LABEL,
)
from tas.api.frameworks import STATEFULSET, Framework
from tas.jobframework.names import workload_name
from tas.jobframework.workload import queue_name


def group_name(name: str) -> str:
    """Kueue's GetWorkloadName: the uid is not known at creation, so it is left out."""
    return workload_name(STATEFULSET.kind, STATEFULSET.group, name, "")


def replicas(sts: Mapping) -> int:
    value = (sts.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def mutate(sts: Mapping) -> dict:
    """The merge patch that marks the pod template; {} for a StatefulSet without a queue."""
    queue = queue_name(sts)
    if not queue:
        return {}
    name = (sts.get("metadata") or {}).get("name") or ""
    return {
        "spec": {
            "template": {
                "metadata": {
                    "labels": {
                        MANAGED_LABEL: MANAGED_VALUE,
                        POD_GROUP_NAME_LABEL: group_name(name),
                        QUEUE_NAME_LABEL: queue,
                    },
                    "annotations": {
                        POD_SUSPENDING_PARENT_ANNOTATION: str(Framework.STATEFULSET),
                        POD_GROUP_TOTAL_COUNT_ANNOTATION: str(replicas(sts)),
                        POD_GROUP_FAST_ADMISSION_ANNOTATION: "true",
                        POD_GROUP_SERVING_ANNOTATION: "true",
                        POD_GROUP_POD_INDEX_LABEL_ANNOTATION: STATEFULSET_POD_INDEX_LABEL,
                    },
                }
            }
        }
    }


def validate_update(old: Mapping, new: Mapping) -> list[str]:
    """Why Kueue would refuse this update, from the two versions of the object alone."""
    errors = []
    old_queue, new_queue = queue_name(old), queue_name(new)
    running = int(((old.get("status") or {}).get("readyReplicas")) or 0) > 0
    if (running or not new_queue) and old_queue != new_queue:
        errors.append(f"metadata.labels[{QUEUE_NAME_LABEL}]: field is immutable")
    if not new_queue:
        return errors
    before, after = replicas(old), replicas(new)
    if before != 0 and after != 0 and before != after:
        errors.append("spec.replicas: field is immutable (scale to 0 and back instead)")
    if before == 0 and after > 0 and int(((new.get("status") or {}).get("replicas")) or 0) > 0:
        errors.append("spec.replicas: Forbidden: scaling down is still in progress")
    return errors
