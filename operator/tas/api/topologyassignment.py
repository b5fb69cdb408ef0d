"""A pod set's `topologyAssignment` (Kueue's v1beta1 JSON shape) to and from the solver's.

Kept beside topologyrequest.py: the request goes into the Workload's spec, the assignment comes
back in its status; both conversions of each live in one place.
"""

from __future__ import annotations

from collections.abc import Mapping

from tas.solver.types import DomainAssignment, TopologyAssignment


def to_api(assignment: TopologyAssignment, *, sort_by_values: bool = False) -> dict:
    """Kueue's order (the solver's, by full topology path) unless `sort_by_values`, which the
    `tas solve` contract promises."""
    domains = assignment.domains
    if sort_by_values:
        domains = tuple(sorted(domains, key=lambda domain: domain.values))
    return {
        "levels": list(assignment.levels),
        "domains": [{"values": list(d.values), "count": d.count} for d in domains],
    }


def from_api(api: Mapping | None) -> TopologyAssignment | None:
    if not api:
        return None
    return TopologyAssignment(
        levels=tuple(api.get("levels") or ()),
        domains=tuple(
            DomainAssignment(values=tuple(d.get("values") or ()), count=int(d.get("count", 0)))
            for d in api.get("domains") or []
        ),
    )
