"""A pod template at start, and back: what admission adds to it, and how that is undone.

Kueue's podset.Merge and RestorePodSpec, as JSON merge patches on one template (a Job's, each of
a JobSet's replicatedJobs', a pod's own metadata and spec):

- start: the pod set label and the Workload annotation; the flavor's node labels as
  nodeSelector and its tolerations; the topology gate when the pod set has an assignment (and
  the unconstrained annotation for an implied request, as Kueue marks it). nodeSelector and
  tolerations are rebuilt from the Workload's pod set (what the user wrote) plus the flavor, so
  a start after an eviction carries nothing of the previous admission.
- restore: all of that taken out again, once the owner is stopped.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

from tas.api.constants import (
    PODSET_LABEL,
    PODSET_UNCONSTRAINED_TOPOLOGY,
    TOPOLOGY_SCHEDULING_GATE,
    WORKLOAD_ANNOTATION,
)
from tas.cache.projections import FlavorInfo, PodSetAdmission, toleration_from_object
from tas.solver.types import PodSetRequest, Toleration


def toleration_to_api(t: Toleration) -> dict:
    out: dict = {"operator": t.operator}
    for name, value in (("key", t.key), ("value", t.value), ("effect", t.effect)):
        if value:
            out[name] = value
    if t.toleration_seconds is not None:
        out["tolerationSeconds"] = t.toleration_seconds
    return out


def with_flavor_tolerations(current: list, flavor: FlavorInfo | None) -> list:
    """`current` (as written) and then the flavor's tolerations it does not have yet."""
    have = [toleration_to_api(toleration_from_object(t)) for t in current]
    extra = [
        t for t in map(toleration_to_api, flavor.tolerations if flavor else ()) if t not in have
    ]
    return [*current, *extra]


def start_template(
    template: Mapping,
    pod_set_name: str,
    pod_set: PodSetRequest | None,
    admission: PodSetAdmission | None,
    flavor: FlavorInfo | None,
    workload_name: str,
) -> dict:
    """The merge patch that readies `template` for an admitted pod set."""
    spec = template.get("spec") or {}
    node_selector = dict(pod_set.node_selector if pod_set else {})
    tolerations = [toleration_to_api(t) for t in (pod_set.tolerations if pod_set else ())]
    tolerations = with_flavor_tolerations(tolerations, flavor)
    if flavor is not None:
        node_selector.update(flavor.node_labels)
    # A merge patch merges maps: keys to drop must be set to null.
    selector_patch: dict = {
        k: None for k in spec.get("nodeSelector") or {} if k not in node_selector
    }
    selector_patch.update(node_selector)

    gates = [
        g for g in spec.get("schedulingGates") or [] if g.get("name") != TOPOLOGY_SCHEDULING_GATE
    ]
    annotations = {WORKLOAD_ANNOTATION: workload_name}
    if admission and admission.assignment is not None:
        gates.append({"name": TOPOLOGY_SCHEDULING_GATE})
        if pod_set is not None and pod_set.topology.implied:
            annotations[PODSET_UNCONSTRAINED_TOPOLOGY] = "true"  # as Kueue marks implied requests
    return {
        "metadata": {"labels": {PODSET_LABEL: pod_set_name}, "annotations": annotations},
        "spec": {
            "nodeSelector": selector_patch or None,
            "tolerations": tolerations or None,
            "schedulingGates": gates or None,
        },
    }


def started(template: Mapping) -> bool:
    """The template carries what a start adds (so a restore has something to undo)."""
    meta, spec = template.get("metadata") or {}, template.get("spec") or {}
    return (
        WORKLOAD_ANNOTATION in (meta.get("annotations") or {})
        or PODSET_LABEL in (meta.get("labels") or {})
        or any(g.get("name") == TOPOLOGY_SCHEDULING_GATE for g in spec.get("schedulingGates") or [])
    )


def restore_template(template: Mapping, pod_set: PodSetRequest | None) -> dict | None:
    """The merge patch that undoes `start_template`, or None when there is nothing to undo
    (never started, or restored already: what is there now is the user's)."""
    if pod_set is None or not started(template):
        return None
    meta, spec = template.get("metadata") or {}, template.get("spec") or {}
    ours = [WORKLOAD_ANNOTATION]
    if pod_set.topology.implied:
        ours.append(PODSET_UNCONSTRAINED_TOPOLOGY)
    patch_meta: dict = {}
    annotations = meta.get("annotations") or {}
    if any(k in annotations for k in ours):
        patch_meta["annotations"] = without(annotations, ours)
    if PODSET_LABEL in (meta.get("labels") or {}):
        patch_meta["labels"] = without(meta["labels"], [PODSET_LABEL])

    patch_spec: dict = {}
    selector = dict(spec.get("nodeSelector") or {})
    if selector != dict(pod_set.node_selector):
        stale = [k for k in selector if k not in pod_set.node_selector]
        patch_spec["nodeSelector"] = (
            {**dict.fromkeys(stale), **pod_set.node_selector}
            if pod_set.node_selector
            else without(selector, stale)
        )
    tolerations = [toleration_to_api(t) for t in pod_set.tolerations]
    current = [toleration_to_api(toleration_from_object(t)) for t in spec.get("tolerations") or []]
    if current != tolerations:
        patch_spec["tolerations"] = tolerations or None
    gates = spec.get("schedulingGates") or []
    kept = [g for g in gates if g.get("name") != TOPOLOGY_SCHEDULING_GATE]
    if kept != gates:
        patch_spec["schedulingGates"] = kept or None

    out: dict = {}
    if patch_meta:
        out["metadata"] = patch_meta
    if patch_spec:
        out["spec"] = patch_spec
    return out or None


def without(current: Mapping, keys: list[str]) -> dict | None:
    """The merge patch of a map that drops `keys`; null (the map itself) when nothing is left,
    as Kueue's typed write omits an empty map: a custom resource keeps an emptied map as `{}`."""
    if all(k in keys for k in current):
        return None
    return {k: None for k in keys if k in current}


def merge_patch(target: object, patch: Mapping) -> dict:
    """RFC 7386: `patch` applied to a copy of `target` (null deletes a key). A map emptied by
    deletions goes too, as the API server drops an empty map (`omitempty`)."""
    out = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
            continue
        merged = (
            merge_patch(out.get(key), value) if isinstance(value, Mapping) else copy.deepcopy(value)
        )
        if merged == {} and isinstance(value, Mapping) and None in value.values():
            out.pop(key, None)
        else:
            out[key] = merged
    return out
