"""The pod webhooks' decisions (Kueue's pod_webhook.go), pure: a pod in, a patch or errors out.

Mutating, at creation: a pod with the queue-name label, or marked by its StatefulSet or
LeaderWorkerSet, is managed: labelled `kueue.x-k8s.io/managed=true`, held by the finalizer,
gated with `kueue.x-k8s.io/admission` and `kueue.x-k8s.io/topology`, given its role hash, and
(when its owner names one) its pod-group index label. A pod whose owner is already admitted
through another integration (a queued Job's pod) is left alone.

Validating, at creation and update: the managed label's value, a group's name and total count
(both or neither, a count from 1 to the int32 maximum, as a pod set's count), the topology and
placement-group annotations on the pod, and an immutable group name. Every message names the
field.
"""

from __future__ import annotations

from collections.abc import Mapping

from tas.api.annotations import (
    TopologyRequestError,
    parse_topology_request,
    quote,
)
from tas.api.constants import (
    ADMISSION_SCHEDULING_GATE,
    INT32_MAX,
    MANAGED_LABEL,
    MANAGED_VALUE,
    POD_FINALIZER,
    POD_GROUP_NAME_LABEL,
    POD_GROUP_POD_INDEX_LABEL,
    POD_GROUP_POD_INDEX_LABEL_ANNOTATION,
    POD_GROUP_TOTAL_COUNT_ANNOTATION,
    ROLE_HASH_ANNOTATION,
    TOPOLOGY_SCHEDULING_GATE,
)
from tas.api.names import is_dns1123_subdomain
from tas.integrations.pod import pod as p
from tas.jobframework.workload import check_placement_group

LABELS = "metadata.labels"
ANNOTATIONS = "metadata.annotations"


def managed(pod: Mapping) -> bool:
    """Kueue suspends a pod with a queue name, or one its parent marked."""
    return bool(p.queue(pod)) or p.suspending_parent(pod) is not None


def mutate(pod: Mapping, *, tas: bool = True) -> dict:
    """The merge patch (for kopf's admission patch) that makes a pod managed; {} if it is not.
    Lists (finalizers, gates) are given whole."""
    if not managed(pod):
        return {}
    meta = p.meta(pod)
    labels = {MANAGED_LABEL: MANAGED_VALUE}
    index_label = p.annotations(pod).get(POD_GROUP_POD_INDEX_LABEL_ANNOTATION)
    if tas and index_label and index_label in p.labels(pod):
        labels[POD_GROUP_POD_INDEX_LABEL] = p.labels(pod)[index_label]
    finalizers = list(meta.get("finalizers") or [])
    if POD_FINALIZER not in finalizers:
        finalizers.append(POD_FINALIZER)
    gates = list((pod.get("spec") or {}).get("schedulingGates") or [])
    wanted = [ADMISSION_SCHEDULING_GATE] + ([TOPOLOGY_SCHEDULING_GATE] if tas else [])
    for name in wanted:
        if not any(g.get("name") == name for g in gates):
            gates.append({"name": name})
    annotations = {}
    if ROLE_HASH_ANNOTATION not in p.annotations(pod):
        annotations[ROLE_HASH_ANNOTATION] = p.role_hash(pod.get("spec") or {})
    patch: dict = {
        "metadata": {"labels": labels, "finalizers": finalizers},
        "spec": {"schedulingGates": gates},
    }
    if annotations:
        patch["metadata"]["annotations"] = annotations
    return patch


def validate(
    pod: Mapping,
    old: Mapping | None = None,
) -> list[str]:
    """Why Kueue would refuse this managed pod (nothing for a pod that is not managed).

    An update is refused only for a problem the pod did not already have (ratcheting, as the
    API server validates custom resources): a pod made while the webhooks were away must still
    let go of our finalizer, or it, and its namespace, could never be deleted."""
    errors = _problems(pod)
    if old is None:
        return errors
    before = set(_problems(old))
    errors = [error for error in errors if error not in before]
    if p.group_name(old) and p.group_name(pod) != p.group_name(old):
        errors.append(f"{LABELS}[{POD_GROUP_NAME_LABEL}]: field is immutable")
    return errors


def _problems(pod: Mapping) -> list[str]:
    errors: list[str] = []
    value = p.labels(pod).get(MANAGED_LABEL)
    if value is not None and value != MANAGED_VALUE:
        errors.append(
            f"{LABELS}[{MANAGED_LABEL}]: managed label value can only be '{MANAGED_VALUE}'"
        )
    errors += _group_metadata(pod)
    if managed(pod) or p.labels(pod).get(MANAGED_LABEL) == MANAGED_VALUE:
        try:
            parse_topology_request(p.annotations(pod), p.total_count(pod) or 1)
            check_placement_group(p.annotations(pod))
        except TopologyRequestError as exc:
            errors.append(f"{ANNOTATIONS}: {exc}")
    return errors


def _group_metadata(pod: Mapping) -> list[str]:
    name = p.group_name(pod)
    count_text = p.annotations(pod).get(POD_GROUP_TOTAL_COUNT_ANNOTATION)
    both = (
        f"both the '{POD_GROUP_TOTAL_COUNT_ANNOTATION}' annotation and the "
        f"'{POD_GROUP_NAME_LABEL}' label should be set"
    )
    if name is None:
        return (
            [f"{LABELS}[{POD_GROUP_NAME_LABEL}]: Required value: {both}"]
            if count_text is not None
            else []
        )
    errors = []
    if not is_dns1123_subdomain(name):
        errors.append(
            f"{LABELS}[{POD_GROUP_NAME_LABEL}]: Invalid value: {name!r}: must be a lowercase "
            "RFC 1123 subdomain (it names the group's Workload)"
        )
    if count_text is None:
        return [
            *errors,
            f"{ANNOTATIONS}[{POD_GROUP_TOTAL_COUNT_ANNOTATION}]: Required value: {both}",
        ]
    if p.total_count(pod) is None:
        errors.append(
            f"{ANNOTATIONS}[{POD_GROUP_TOTAL_COUNT_ANNOTATION}]: Invalid value: "
            f"{quote(count_text)}: must be a whole number from 1 to {INT32_MAX}"
        )
    return errors
