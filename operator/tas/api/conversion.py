"""Conversion between the versions we serve, field by field as Kueue's v1beta1 conversions do
(`apis/kueue/v1beta1/*_conversion.go`): plain dicts in, plain dicts out, no I/O.

v1beta2 is the stored version. What differs (see models/v1beta1.py):

- Workload: `priorityClassName` + `priorityClassSource` <-> `priorityClassRef{group, kind,
  name}`; the topology assignment's `domains` <-> compact `slices`.
- ClusterQueue: `cohort` <-> `cohortName`; v1beta1's deprecated flavorFungibility values
  `Borrow` and `Preempt` become `MayStopSearch` (as in Kueue, they do not come back).
- LocalQueue: status `flavorUsage` <-> `flavorsUsage`.

Every other kind (and Topology's v1alpha1) has the same schema in every version: only
`apiVersion` changes. As in Kueue, a v1beta1 `priorityClassName` without a known
`priorityClassSource` has no v1beta2 form and is dropped.

`review` answers a ConversionReview (apiextensions.k8s.io/v1) as the API server sends it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from tas.api import topologyassignment
from tas.api.constants import (
    GROUP,
    KUEUE_API_VERSION,
    KUEUE_V1BETA1_API_VERSION,
    MAY_STOP_SEARCH,
    POD_PRIORITY_CLASS,
    POD_PRIORITY_CLASS_SOURCE,
    WORKLOAD_PRIORITY_CLASS,
    WORKLOAD_PRIORITY_CLASS_SOURCE,
)

V1BETA1, V1BETA2 = KUEUE_V1BETA1_API_VERSION, KUEUE_API_VERSION
# Every apiVersion of ours an object may be converted to or from.
SERVED = frozenset({f"{GROUP}/v1alpha1", V1BETA1, V1BETA2})

Obj = dict[str, Any]

# v1beta1 priorityClassSource <-> v1beta2 priorityClassRef's (group, kind).
_PRIORITY_REFS = {
    WORKLOAD_PRIORITY_CLASS_SOURCE: WORKLOAD_PRIORITY_CLASS,
    POD_PRIORITY_CLASS_SOURCE: POD_PRIORITY_CLASS,
}
# Looked up with what a stored object holds, which may be anything.
_PRIORITY_SOURCES: dict[tuple[object, object], str] = {
    ref: source for source, ref in _PRIORITY_REFS.items()
}
_OLD_FUNGIBILITY = {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"}


class ConversionError(ValueError):
    """An object that cannot be converted; the message names the field."""


# --- Workload -----------------------------------------------------------------------------------


def _workload_up(obj: Obj) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        name = spec.pop("priorityClassName", None)
        ref = _PRIORITY_REFS.get(spec.pop("priorityClassSource", None) or "")
        if name and ref:
            spec["priorityClassRef"] = {"group": ref[0], "kind": ref[1], "name": name}
    _each_assignment(obj, topologyassignment.v1beta1_to_stored)


def _workload_down(obj: Obj) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        ref = spec.pop("priorityClassRef", None)
        if isinstance(ref, Mapping):
            source = _PRIORITY_SOURCES.get((ref.get("group"), ref.get("kind")))
            if source is not None and ref.get("name"):
                spec["priorityClassName"] = ref["name"]
                spec["priorityClassSource"] = source
    _each_assignment(obj, topologyassignment.v1beta2_to_v1beta1)


def _each_assignment(obj: Obj, convert: Callable[[Mapping], dict]) -> None:
    admission = (obj.get("status") or {}).get("admission")
    if not isinstance(admission, dict):
        return
    for i, assignment in enumerate(admission.get("podSetAssignments") or []):
        topology = assignment.get("topologyAssignment") if isinstance(assignment, dict) else None
        if topology is None:
            continue
        try:
            assignment["topologyAssignment"] = convert(topology)
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            field = f"status.admission.podSetAssignments[{i}].topologyAssignment"
            raise ConversionError(f"{field}: {exc}") from None


# --- ClusterQueue and LocalQueue ----------------------------------------------------------------


def _rename(fields: Any, old: str, new: str) -> None:
    if isinstance(fields, dict) and old in fields:
        value = fields.pop(old)
        if value is not None:
            fields[new] = value


def _cluster_queue_up(obj: Obj) -> None:
    spec = obj.get("spec")
    _rename(spec, "cohort", "cohortName")
    fungibility = (spec or {}).get("flavorFungibility") if isinstance(spec, dict) else None
    if isinstance(fungibility, dict):
        for field, old in _OLD_FUNGIBILITY.items():
            if fungibility.get(field) == old:
                fungibility[field] = MAY_STOP_SEARCH


def _cluster_queue_down(obj: Obj) -> None:
    _rename(obj.get("spec"), "cohortName", "cohort")


def _local_queue_up(obj: Obj) -> None:
    _rename(obj.get("status"), "flavorUsage", "flavorsUsage")


def _local_queue_down(obj: Obj) -> None:
    _rename(obj.get("status"), "flavorsUsage", "flavorUsage")


# kind -> (v1beta1 to v1beta2, v1beta2 to v1beta1), each changing the object in place.
_CONVERTERS: dict[str, tuple[Callable[[Obj], None], Callable[[Obj], None]]] = {
    "Workload": (_workload_up, _workload_down),
    "ClusterQueue": (_cluster_queue_up, _cluster_queue_down),
    "LocalQueue": (_local_queue_up, _local_queue_down),
}


def convert(obj: Mapping[str, Any], api_version: str) -> Obj:
    """A copy of `obj` in `api_version`; raises ConversionError naming what is wrong."""
    if not isinstance(obj, Mapping):
        raise ConversionError("object: not a JSON object")
    source = obj.get("apiVersion")
    for field, value in (("apiVersion", source), ("desiredAPIVersion", api_version)):
        if value not in SERVED:
            raise ConversionError(f"{field}: {value!r} is not a version of {GROUP} we serve")
    out = copy.deepcopy(dict(obj))
    out["apiVersion"] = api_version
    up, down = _CONVERTERS.get(str(obj.get("kind")), (None, None))
    if up is None or down is None or source == api_version:
        return out
    if source != V1BETA2:
        up(out)
    if api_version != V1BETA2:
        down(out)
    return out


def review(body: Mapping[str, Any]) -> Obj:
    """The answer to a ConversionReview: every object converted, or a Failure that says why
    (the API server then refuses the request with that message; nothing is stored)."""
    request = body.get("request") if isinstance(body, Mapping) else None
    if not isinstance(request, Mapping):
        raise ConversionError("request: missing")
    response: Obj = {"uid": request.get("uid", "")}
    try:
        objects = request.get("objects")
        if not isinstance(objects, list):
            raise ConversionError("request.objects: not a list")
        desired = str(request.get("desiredAPIVersion"))
        converted = []
        for i, obj in enumerate(objects):
            try:
                converted.append(convert(obj, desired))
            except ConversionError as exc:
                raise ConversionError(f"objects[{i}] ({_named(obj)}): {exc}") from None
        response["convertedObjects"] = converted
        response["result"] = {"status": "Success"}
    except ConversionError as exc:
        response["result"] = {"status": "Failure", "message": str(exc)}
    return {"apiVersion": body.get("apiVersion"), "kind": "ConversionReview", "response": response}


def _named(obj: Any) -> str:
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    meta = meta if isinstance(meta, Mapping) else {}
    kind = obj.get("kind") if isinstance(obj, Mapping) else None
    path = "/".join(str(p) for p in (meta.get("namespace"), meta.get("name")) if p)
    return f"{kind} {path or '?'}"
