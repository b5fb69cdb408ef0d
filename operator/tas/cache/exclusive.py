"""What an exclusive placement group holds, charged to its ClusterQueue (gate
TASPlacementGroups).

A group with an exclusive level takes whole domains of that level: no one else is admitted
into them while it has pods there. So that holding a block costs a block, the whole capacity
of the domains its members hold (the allocatable of the flavor's nodes in them) counts against
the quota of the ClusterQueue its members are admitted through: the members' own requests, and
beyond them the rest of those domains' capacity, the group's hold.

Pure: the members' charges, the flavors, topologies and nodes in; the hold out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tas.api.placementgroups import GroupSpec
from tas.cache.charges import Charge
from tas.cache.projections import FlavorInfo
from tas.solver.types import HOSTNAME_LEVEL, Node

Path = tuple[str, ...]


@dataclass(frozen=True)
class Hold:
    """The quota a group's exclusive domains take beyond its members' own requests."""

    cluster_queue: str
    flavor: str
    level: str  # the exclusive level
    domains: frozenset[Path]
    usage: Mapping[str, int]  # resource -> milli-units


def exclusive_hold(
    charges: Iterable[Charge],
    spec: GroupSpec | None,
    flavors: Mapping[str, FlavorInfo],
    topologies: Mapping[str, tuple[str, ...]],
    nodes: Mapping[str, Node],
) -> Hold | None:
    """The hold of a group whose members hold these charges; None when the group is not
    exclusive or holds nothing. Members are admitted through one ClusterQueue and one flavor
    (the first charge's); other charges' pod sets are left out."""
    if spec is None or spec.exclusive_topology is None:
        return None
    held = [(c.cluster_queue, ps) for c in charges for ps in c.pod_sets if ps.assignment]
    if not held:
        return None
    cluster_queue, first = held[0]
    flavor = flavors.get(first.flavor)
    levels = topologies.get(flavor.topology_name or "") if flavor else None
    if flavor is None or not levels or spec.exclusive_topology not in levels:
        return None
    wanted = levels[: levels.index(spec.exclusive_topology) + 1]
    domains: set[Path] = set()
    own: dict[str, int] = {}
    for queue, ps in held:
        if (queue, ps.flavor) != (cluster_queue, first.flavor) or ps.assignment is None:
            continue
        for resource, value in ps.per_pod.items():
            own[resource] = own.get(resource, 0) + ps.count * value
        for domain in ps.assignment.domains:
            path = _domain(wanted, ps.assignment.levels, domain.values, nodes)
            if path is not None:
                domains.add(path)
    capacity = domain_capacity(domains, wanted, flavor, nodes.values())
    usage = {r: v - own.get(r, 0) for r, v in capacity.items() if v > own.get(r, 0)}
    return Hold(cluster_queue, first.flavor, spec.exclusive_topology, frozenset(domains), usage)


def domain_capacity(
    domains: set[Path], wanted: tuple[str, ...], flavor: FlavorInfo, nodes: Iterable[Node]
) -> dict[str, int]:
    """The allocatable of the flavor's nodes in these domains of the levels `wanted`."""
    total: dict[str, int] = {}
    for node in nodes:
        if any(node.labels.get(k) != v for k, v in flavor.node_labels.items()):
            continue
        if tuple(node.labels.get(level) for level in wanted) not in domains:
            continue
        for resource, value in node.allocatable.items():
            total[resource] = total.get(resource, 0) + value
    return total


def _domain(
    wanted: tuple[str, ...], levels: tuple[str, ...], values, nodes: Mapping[str, Node]
) -> Path | None:
    """The domain of the levels `wanted` that an assignment's domain lies in: from its own
    values when they name those levels, else from its node's labels (a hostname domain)."""
    named = dict(zip(levels, values, strict=False))
    if all(level in named for level in wanted):
        return tuple(named[level] for level in wanted)
    node = nodes.get(values[-1]) if levels[-1:] == (HOSTNAME_LEVEL,) else None
    if node is None or any(level not in node.labels for level in wanted):
        return None
    return tuple(node.labels[level] for level in wanted)
