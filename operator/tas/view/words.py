"""The words the view shows for a workload: why it waits (its condition's, verbatim) and what
it asks for ("16 pods of cpu=1, required in one rack")."""

from __future__ import annotations

from collections.abc import Sequence

from tas.api.constants import COND_ADMITTED, COND_QUOTA_RESERVED
from tas.api.format import format_milli
from tas.cache.projections import WorkloadInfo
from tas.solver.types import PodSetRequest, TopologyRequest

TOPOLOGY_PREFIX = "topology-"  # as in Kueue's examples: cloud.provider.com/topology-rack


def short_level(level: str) -> str:
    """A level's node label as a person names it: `cloud.provider.com/topology-rack` -> rack,
    `kubernetes.io/hostname` -> hostname."""
    name = level.rsplit("/", 1)[-1]
    return name.removeprefix(TOPOLOGY_PREFIX) or name


def waiting_reason(workload: WorkloadInfo) -> str:
    """The message of its QuotaReserved=False condition (else Admitted=False), verbatim: what
    `kubectl describe workload` shows; empty when neither says why."""
    for kind in (COND_QUOTA_RESERVED, COND_ADMITTED):
        condition = workload.condition(kind)
        if condition is not None and condition.get("status") == "False":
            return str(condition.get("message") or "")
    return ""


def needs(pod_sets: Sequence[PodSetRequest]) -> str:
    """What the pod sets ask for, one clause each: named when there are several."""
    clauses = [_pod_set_needs(ps) for ps in pod_sets]
    if len(pod_sets) == 1:
        return clauses[0]
    return "; ".join(f"{ps.name}: {text}" for ps, text in zip(pod_sets, clauses, strict=True))


def _pod_set_needs(ps: PodSetRequest) -> str:
    shape = ", ".join(
        f"{name}={format_milli(name, value)}"
        for name, value in sorted(ps.requests.items())
        if value
    )
    text = f"{ps.count} {'pod' if ps.count == 1 else 'pods'} of {shape or 'no requests'}"
    where = _where(ps.topology)
    return f"{text}, {where}" if where else text


def _where(request: TopologyRequest) -> str:
    parts = []
    if request.required:
        parts.append(f"required in one {short_level(request.required)}")
    elif request.preferred:
        parts.append(f"preferred in one {short_level(request.preferred)}")
    elif request.unconstrained:
        parts.append("anywhere")
    for layer in request.slice_layers:
        parts.append(f"in slices of {layer.size} per {short_level(layer.level)}")
    if request.group_name:
        parts.append(f"with its group {request.group_name}")
    return ", ".join(parts)
