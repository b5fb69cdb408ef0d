"""A Workload pod set's `topologyRequest` (Kueue's JSON shape) to and from the solver's request.

The Workload carries the request in Kueue's fields, so a Workload created by hand works as one
created from a Job; the multi-layer constraints use Kueue v1beta2's field name.
"""

from __future__ import annotations

from collections.abc import Mapping

from tas.api.annotations import inner_preferred_of
from tas.solver.types import SliceLayer, TopologyRequest

CONSTRAINTS_FIELD = "podsetSliceRequiredTopologyConstraints"


def to_api(request: TopologyRequest) -> dict:
    out: dict = {}
    if request.required:
        out["required"] = request.required
    if request.preferred:
        out["preferred"] = request.preferred
    if request.unconstrained:
        out["unconstrained"] = True
    if request.pod_index_label:
        out["podIndexLabel"] = request.pod_index_label
    if request.sub_group_index_label:
        out["subGroupIndexLabel"] = request.sub_group_index_label
    if request.sub_group_count is not None:
        out["subGroupCount"] = request.sub_group_count
    if request.group_name:
        out["podSetGroupName"] = request.group_name
    if len(request.slice_layers) == 1:
        out["podSetSliceRequiredTopology"] = request.slice_layers[0].level
        out["podSetSliceSize"] = request.slice_layers[0].size
    elif request.slice_layers:
        out[CONSTRAINTS_FIELD] = [
            {"topology": x.level, "size": x.size} for x in request.slice_layers
        ]
    return out


def from_api(
    api: Mapping | None, template_annotations: Mapping[str, str] | None = None
) -> TopologyRequest:
    """The solver's request; a missing topologyRequest is the implied request. Our lower
    preferred level is not a field of Kueue's topologyRequest: it is read from the pod
    template's annotations (TASRequiredWithPreferred)."""
    inner_preferred = inner_preferred_of(template_annotations or {})
    if not api:
        return TopologyRequest(inner_preferred=inner_preferred)
    if api.get(CONSTRAINTS_FIELD):
        layers = tuple(
            SliceLayer(str(x["topology"]), int(x["size"])) for x in api[CONSTRAINTS_FIELD]
        )
    elif api.get("podSetSliceRequiredTopology"):
        layers = (
            SliceLayer(api["podSetSliceRequiredTopology"], int(api.get("podSetSliceSize") or 0)),
        )
    else:
        layers = ()
    return TopologyRequest(
        required=api.get("required") or None,
        preferred=api.get("preferred") or None,
        inner_preferred=inner_preferred,
        unconstrained=bool(api.get("unconstrained")),
        slice_layers=layers,
        group_name=api.get("podSetGroupName") or None,
        pod_index_label=api.get("podIndexLabel") or None,
        sub_group_index_label=api.get("subGroupIndexLabel") or None,
        sub_group_count=int(api["subGroupCount"]) if api.get("subGroupCount") is not None else None,
    )
