"""The live view: the operator's cache (ClusterState) as the view model, read, never changed.

Per topology-aware ResourceFlavor, its Topology's levels as a tree (blocks -> racks -> hosts).
Each host shows its allocatable (with the solver's default of 110 pods where a node gives
none), one Use per admitted workload with pods there (its pod sets' pods on the host, times
their per-pod requests, "pods" included), one Use (workload None) for every pod outside
topology-aware admission together, and what the solver's snapshot says remains free. Free is
never below zero: pods outside topology-aware admission can over-commit a node, and then its
uses add up to more than its allocatable. A host the solver does not count (cordoned, NotReady)
has nothing free: nothing would be placed there. A domain's allocatable and free are its
hosts' sums. Nodes without every level's label are not drawn: the solver ignores them too.

`build` reads the cache in one go; `build_paced` reads it in one go too (so the view is of one
moment), then builds the view giving way to the event loop every PACE_EVERY hosts or
workloads, so that a 5,000-node cluster never holds the loop.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby

from tas.admission.decide import pending_order
from tas.api.placementgroups import GroupSpec
from tas.cache import placementgroups
from tas.cache.charges import Charge
from tas.cache.projections import Key, WorkloadInfo
from tas.cache.state import ClusterState
from tas.pacing import Pacer
from tas.solver.capacity import DEFAULT_PODS_ALLOCATABLE
from tas.solver.filters import first_untolerated_taint
from tas.solver.types import HOSTNAME_LEVEL, ONE_POD, PODS, Node, Resources, Toleration
from tas.view.model import (
    CORDONED,
    NOT_READY,
    TAINTED,
    ClusterView,
    DomainView,
    FlavorView,
    HostView,
    PlacementGroupView,
    ReplacementView,
    Use,
    WorkloadView,
    summed,
)
from tas.view.words import needs, short_level, waiting_reason

PACE_EVERY = 200  # hosts or workloads built between two chances for the loop to run others

Path = tuple[str, ...]  # a domain's or host's values at the levels above it
Steps = Generator[None, None, ClusterView]  # yields where the loop may run others


def build(
    state: ClusterState,
    *,
    replacements: Iterable[ReplacementView] = (),
    now: float | None = None,
) -> ClusterView:
    """The cluster as the cache holds it now."""
    steps = _view(state, replacements, now)
    while (view := _step(steps)) is None:
        pass
    return view


async def build_paced(
    state: ClusterState,
    pacer: Pacer,
    *,
    replacements: Iterable[ReplacementView] = (),
    now: float | None = None,
) -> ClusterView:
    """As `build`, giving way to the loop's other tasks whenever the pacer says so."""
    steps = _view(state, replacements, now)
    while (view := _step(steps)) is None:
        await pacer.maybe_yield()
    return view


def _step(steps: Steps) -> ClusterView | None:
    """One step of the build; the view once it is done."""
    try:
        next(steps)
    except StopIteration as done:
        return done.value
    return None


def _view(state: ClusterState, replacements: Iterable[ReplacementView], now: float | None) -> Steps:
    flavors = [_read_flavor(state, name) for name in topology_flavors(state)]
    admitted, pending = _read_workloads(state)
    groups = _placement_groups(state)
    at = time.time() if now is None else now
    built = []
    for flavor in flavors:
        built.append((yield from _flavor_view(flavor)))
    workloads = yield from _workload_views(state, admitted, pending)
    return ClusterView(
        flavors=tuple(built),
        workloads=workloads,
        placement_groups=groups,
        replacements=tuple(sorted(replacements, key=lambda r: -r.at)),
        at=at,
    )


def topology_flavors(state: ClusterState) -> list[str]:
    """The ResourceFlavors whose Topology the cache holds, by name."""
    return sorted(
        name
        for name, flavor in state.flavors.items()
        if flavor.topology_name and flavor.topology_name in state.topologies
    )


# ---- reading one flavor from the cache ----------------------------------------------------------


@dataclass(frozen=True)
class _Flavor:
    """What one flavor's tree is built from, read from the cache at one moment."""

    name: str
    topology: str
    levels: tuple[str, ...]
    tolerations: tuple[Toleration, ...]
    nodes: list[tuple[Path, Node, Node | None]]  # (its path, the node, as the snapshot has it)
    remaining: Mapping[Path, Mapping[str, int]]  # the snapshot's, per leaf key
    uses: Mapping[Path, tuple[Use, ...]]  # the admitted workloads', per leaf key

    @property
    def hostname_lowest(self) -> bool:
        return self.levels[-1] == HOSTNAME_LEVEL


def _read_flavor(state: ClusterState, name: str) -> _Flavor:
    info = state.flavors[name]
    levels = state.topologies[info.topology_name or ""]
    snapshot = state.snapshot(name)
    nodes = [
        (tuple(node.labels[level] for level in levels), node, snapshot.node(node.name))
        for node in state.nodes.values()
        if all(node.labels.get(k) == v for k, v in info.node_labels.items())
        and all(level in node.labels for level in levels)
    ]
    nodes.sort(key=lambda item: (item[0], item[1].name))
    return _Flavor(
        name=name,
        topology=info.topology_name or "",
        levels=levels,
        tolerations=info.tolerations,
        nodes=nodes,
        remaining=snapshot.remaining(),
        uses=_uses_by_leaf(state, name, levels[-1] == HOSTNAME_LEVEL),
    )


def _uses_by_leaf(state: ClusterState, flavor: str, by_host: bool) -> dict[Path, tuple[Use, ...]]:
    """Per leaf (a host, or the lowest domain's path): one Use per workload whose charge
    takes capacity there in this flavor's snapshot."""
    pods: dict[Path, dict[Key, int]] = {}
    requests: dict[Path, dict[Key, dict[str, int]]] = {}
    for key, charge in state.charges().items():
        for ps in charge.pod_sets:
            if ps.assignment is None or not state.counts_in(ps, flavor):
                continue
            for domain in ps.assignment.domains:
                leaf = (domain.values[-1],) if by_host else tuple(domain.values)
                pods.setdefault(leaf, {})[key] = pods.get(leaf, {}).get(key, 0) + domain.count
                total = requests.setdefault(leaf, {}).setdefault(key, {})
                for resource, value in ps.per_pod.items():
                    total[resource] = total.get(resource, 0) + value * domain.count
    return {
        leaf: tuple(
            Use(workload=_name(key), requests=requests[leaf][key], pods=count)
            for key, count in sorted(by_workload.items())
        )
        for leaf, by_workload in pods.items()
    }


# ---- building one flavor's tree --------------------------------------------------------------


def _flavor_view(flavor: _Flavor) -> Generator[None, None, FlavorView]:
    hosts: list[tuple[Path, HostView]] = []
    for index, (path, node, counted) in enumerate(flavor.nodes):
        if index and index % PACE_EVERY == 0:
            yield
        hosts.append((path, _host_view(flavor, path, node, counted)))
    if flavor.hostname_lowest:
        above = [(path[:-1], host) for path, host in hosts]
        domain_levels = flavor.levels[:-1]
        domain_uses: Mapping[Path, tuple[Use, ...]] = {}
    else:
        above, domain_levels, domain_uses = hosts, flavor.levels, flavor.uses
    return FlavorView(
        name=flavor.name,
        topology=flavor.topology,
        levels=flavor.levels,
        domains=_domains(domain_levels, above, domain_uses, 0) if domain_levels else (),
        hosts=() if domain_levels else tuple(host for _, host in hosts),
    )


def _host_view(flavor: _Flavor, path: Path, node: Node, counted: Node | None) -> HostView:
    allocatable = {PODS: DEFAULT_PODS_ALLOCATABLE, **node.allocatable}
    outside = {r: v for r, v in (counted.usage if counted else {}).items() if v}
    uses = flavor.uses.get(path[-1:], ()) if flavor.hostname_lowest else ()
    if outside:
        uses = (*uses, Use(workload=None, requests=outside, pods=outside.get(PODS, 0) // ONE_POD))
    offered = node.ready and not node.unschedulable  # the solver counts it
    if flavor.hostname_lowest:
        free = _clamped(flavor.remaining.get(path[-1:], {})) if offered else {}
    else:  # the workloads' uses are the domain's: here only what runs outside them
        free = _clamped(_minus(allocatable, outside)) if offered else {}
    return HostView(
        name=node.name,
        allocatable=allocatable,
        uses=uses,
        free=free,
        marks=_marks(node, flavor.tolerations),
        numa_zones=_zones(counted),
    )


def _marks(node: Node, tolerations: tuple[Toleration, ...]) -> tuple[str, ...]:
    marks = []
    if node.unschedulable:
        marks.append(CORDONED)
    if not node.ready:
        marks.append(NOT_READY)
    if first_untolerated_taint(node.taints, tolerations) is not None:
        marks.append(TAINTED)
    return tuple(marks)


def _zones(counted: Node | None) -> tuple[HostView, ...]:
    """A NUMA node's zones (the cache has them with TASNUMAZones): each zone's free capacity
    as the solver counts it, which is all the report tells of the zone."""
    if counted is None or counted.numa is None:
        return ()
    return tuple(
        HostView(name=zone.name, allocatable=dict(zone.free), uses=(), free=dict(zone.free))
        for zone in counted.numa.zones
    )


def _domains(
    levels: Sequence[str],
    hosts: list[tuple[Path, HostView]],
    leaf_uses: Mapping[Path, tuple[Use, ...]],
    depth: int,
) -> tuple[DomainView, ...]:
    """The domains at `levels[depth]` over hosts sorted by path."""
    out = []
    for value, group in groupby(hosts, key=lambda item: item[0][depth]):
        members = list(group)
        if depth + 1 < len(levels):
            children = _domains(levels, members, leaf_uses, depth + 1)
            out.append(
                DomainView(
                    level=levels[depth],
                    value=value,
                    free=summed(d.free for d in children),
                    allocatable=summed(d.allocatable for d in children),
                    domains=children,
                )
            )
            continue
        on_hosts = tuple(host for _, host in members)
        uses = leaf_uses.get(members[0][0][: depth + 1], ())
        out.append(
            DomainView(
                level=levels[depth],
                value=value,
                free=_clamped(
                    _minus(summed(h.free for h in on_hosts), summed(u.requests for u in uses))
                ),
                allocatable=summed(h.allocatable for h in on_hosts),
                hosts=on_hosts,
                uses=uses,
            )
        )
    return tuple(out)


# ---- workloads and placement groups -----------------------------------------------------------


def _read_workloads(
    state: ClusterState,
) -> tuple[list[tuple[WorkloadInfo, Charge]], list[WorkloadInfo]]:
    """Those holding capacity in a topology (queue order), and those waiting (queue order)."""
    charges = state.charges()
    holding = {
        key: charge
        for key, charge in charges.items()
        if key in state.workloads and any(ps.assignment for ps in charge.pod_sets)
    }
    admitted = pending_order([state.workloads[key] for key in holding])
    pending = pending_order(
        [state.workloads[key] for key in state.pending if key in state.workloads]
    )
    return [(w, holding[w.key]) for w in admitted], pending


def _workload_views(
    state: ClusterState, admitted: list[tuple[WorkloadInfo, Charge]], pending: list[WorkloadInfo]
) -> Generator[None, None, tuple[WorkloadView, ...]]:
    out: list[WorkloadView] = []
    for workload, charge in admitted:
        if len(out) % PACE_EVERY == PACE_EVERY - 1:
            yield
        hosts = {
            d.values[-1] for ps in charge.pod_sets if ps.assignment for d in ps.assignment.domains
        }
        out.append(
            WorkloadView(
                key=_name(workload.key),
                queue=workload.queue_name,
                cluster_queue=charge.cluster_queue,
                pods=sum(ps.count for ps in charge.pod_sets),
                admitted=True,
                needs=needs(workload.pod_sets),
                hosts=tuple(sorted(hosts)),
            )
        )
    for workload in pending:
        if len(out) % PACE_EVERY == PACE_EVERY - 1:
            yield
        out.append(
            WorkloadView(
                key=_name(workload.key),
                queue=workload.queue_name,
                cluster_queue=state.cluster_queue_of(workload) or "",
                pods=sum(ps.count for ps in workload.pod_sets),
                admitted=False,
                reason=waiting_reason(workload),
                needs=needs(workload.pod_sets),
            )
        )
    return tuple(out)


def _placement_groups(state: ClusterState) -> tuple[PlacementGroupView, ...]:
    """Each placement group with members or an object: the domains it holds at the level of
    its tightest constraint (exclusive, else affinity, else partitions)."""
    out = []
    for key in sorted({*state.group_members, *state.placement_groups}):
        spec = state.group_spec(key)
        level, domains = "", tuple[str, ...]()
        if spec is not None:
            try:
                status = placementgroups.status_now(state, key, spec)
            except ValueError:  # a level the flavor's topology does not have
                status = {}
            level, paths = _held(spec, status)
            domains = tuple(f"{short_level(level)}={path[-1]}" for path in paths if path)
        out.append(PlacementGroupView(key=_name(key), level=level, domains=domains))
    return tuple(out)


def _held(spec: GroupSpec, status: Mapping) -> tuple[str, list]:
    """The level of a group's tightest constraint and the domains it holds there."""
    if spec.exclusive_topology:
        return spec.exclusive_topology, list(status.get("ownedDomains") or [])
    if spec.affinity_topology:
        domain = status.get("affinityDomain")
        return spec.affinity_topology, [domain] if domain else []
    if spec.partition_topology:
        partitions = status.get("partitions") or []
        return spec.partition_topology, [d for p in partitions for d in p.get("domains") or []]
    return spec.anti_affinity_topology or "", []


# ---- arithmetic on resources ------------------------------------------------------------------


def _name(key: Key) -> str:
    return f"{key[0]}/{key[1]}"


def _minus(a: Resources, b: Resources) -> dict[str, int]:
    return {name: a.get(name, 0) - b.get(name, 0) for name in {*a, *b}}


def _clamped(resources: Resources) -> dict[str, int]:
    """Free room is never below zero (pods outside topology-aware admission over-commit)."""
    return {name: max(0, value) for name, value in resources.items()}
