"""NUMA zones below a host: how many pods of one shape a node holds when its kubelet runs the
Topology Manager's single-numa-node policy (read from NodeResourceTopology objects).

The rules are seed 002's filter, applied to a whole gang instead of one pod:
- only pods whose every container is Guaranteed with whole CPUs are counted per zone (the
  caller decides that and passes a NumaShape; other pods keep node totals);
- a resource is aligned to one zone when some zone of the node reports it; memory and
  hugepages are not (the KEP lets them flow), nor is a resource no zone reports;
- container scope aligns each container on its own, pod scope the pod's sum;
- the kubelet takes the lowest-numbered zone that fits among equally narrow hints, so pods are
  packed first-fit in zone order, each zone on its own, and a node's count is their sum.

Pure: no Kubernetes objects, no I/O.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from tas.solver.types import CONTAINER_SCOPE, POD_SCOPE, NodeNuma, NumaShape, NumaZone

__all__ = [
    "CONTAINER_SCOPE",
    "POD_SCOPE",
    "Batch",
    "NodeNuma",
    "NumaShape",
    "count",
    "fill_zones",
    "flows",
    "pack",
    "place",
    "plan",
    "taken",
    "units",
    "zones_needed",
]


def flows(resource: str) -> bool:
    """Resources the KEP's filter never pins to a zone."""
    return resource == "memory" or resource.startswith("hugepages-")


def units(numa: NodeNuma, shape: NumaShape) -> list[dict[str, int]]:
    """The requests that must each fit in one zone: every container in spec order (container
    scope) or the pod's sum (pod scope), keeping only the resources the node aligns. A unit
    left empty needs no zone."""
    reported = numa.reported
    raw = list(shape.containers) if numa.scope == CONTAINER_SCOPE else [shape.total()]
    return [
        {
            name: value
            for name, value in unit.items()
            if value > 0 and name in reported and not flows(name)
        }
        for unit in raw
    ]


def _fits(unit: Mapping[str, int], free: Mapping[str, int]) -> bool:
    return all(free.get(name, 0) >= value for name, value in unit.items())


def place(frees: list[dict[str, int]], pod_units: Sequence[Mapping[str, int]]) -> list[int] | None:
    """Put one pod's units into zones, first fit in zone order; the zone index of every unit
    (-1 for an empty one, which takes no zone), or None (and `frees` untouched) when a unit
    fits nowhere."""
    chosen: list[int] = []
    for unit in pod_units:
        if not unit:
            chosen.append(-1)
            continue
        for index, free in enumerate(frees):
            if _fits(unit, free):
                for name, value in unit.items():
                    free[name] -= value
                chosen.append(index)
                break
        else:
            for done, index in zip(pod_units, chosen, strict=False):
                for name, value in done.items():  # an empty unit has no items
                    frees[index][name] += value
            return None
    return chosen


def free_of(numa: NodeNuma) -> list[dict[str, int]]:
    return [dict(zone.free) for zone in numa.zones]


def settle(numa: NodeNuma, before: Sequence[NumaShape]) -> list[dict[str, int]] | None:
    """The zones' free capacity after the pods in `before` (placed earlier in this decision)
    took theirs; None when one of them no longer fits."""
    frees = free_of(numa)
    for shape in before:
        if place(frees, units(numa, shape)) is None:
            return None
    return frees


def count(
    numa: NodeNuma,
    shape: NumaShape,
    limit: int,
    before: Sequence[NumaShape] = (),
) -> int:
    """How many pods of `shape` the node's zones hold, at most `limit`, after `before`."""
    frees = settle(numa, before)
    if frees is None or limit <= 0:
        return 0
    pod_units = [unit for unit in units(numa, shape) if unit]
    if not pod_units:
        return limit
    if len(pod_units) == 1:
        (unit,) = pod_units
        total = sum(max(0, min(free.get(n, 0) // v for n, v in unit.items())) for free in frees)
        return max(0, min(total, limit))
    placed = 0
    while placed < limit and place(frees, pod_units) is not None:
        placed += 1
    return placed


def zones_needed(
    numa: NodeNuma, shape: NumaShape, pods: int, before: Sequence[NumaShape] = ()
) -> int:
    """The fewest zones `pods` pods of `shape` fit in (LeastNUMANodes, for a gang): zones that
    hold the most first, for one aligned request per pod; the zones a first-fit plan uses
    otherwise. 0 when no pod needs a zone."""
    if pods <= 0:
        return 0
    frees = settle(numa, before)
    if frees is None:
        return 0
    pod_units = [unit for unit in units(numa, shape) if unit]
    if not pod_units:
        return 0
    if len(pod_units) == 1:
        (unit,) = pod_units
        room = sorted(
            (max(0, min(free.get(n, 0) // v for n, v in unit.items())) for free in frees),
            reverse=True,
        )
        held = 0
        for used, fits in enumerate(room, start=1):
            held += fits
            if held >= pods:
                return used
        return len(room)
    chosen = plan(numa, shape, pods, before)
    return len({zone for pod in chosen or () for zone in pod if zone})


def plan(
    numa: NodeNuma,
    shape: NumaShape,
    pods: int,
    before: Sequence[NumaShape] = (),
) -> list[tuple[str, ...]] | None:
    """The zone of every unit of each of `pods` pods ("" where a unit takes none), first fit
    after `before`; None when they do not all fit."""
    frees = settle(numa, before)
    if frees is None:
        return None
    pod_units = units(numa, shape)
    aligned = [index for index, unit in enumerate(pod_units) if unit]
    if len(aligned) == 1:
        unit = pod_units[aligned[0]]
        room = [max(0, min(free.get(n, 0) // v for n, v in unit.items())) for free in frees]
        return fill_zones(numa, room, pods, aligned[0], len(pod_units))
    out = []
    for _ in range(pods):
        chosen = place(frees, pod_units)
        if chosen is None:
            return None
        out.append(tuple(numa.zones[i].name if i >= 0 else "" for i in chosen))
    return out


def fill_zones(
    numa: NodeNuma, room: Sequence[int], pods: int, position: int = 0, width: int = 1
) -> list[tuple[str, ...]] | None:
    """`plan` for pods with one aligned unit, given how many each zone holds: first fit fills
    the zones in order. Each pod's tuple has `width` units, the aligned one at `position`;
    None when the zones hold fewer than `pods`."""
    out: list[tuple[str, ...]] = []
    for zone, fits in zip(numa.zones, room, strict=True):
        here = min(pods - len(out), fits)
        if here > 0:
            names = [""] * width
            names[position] = zone.name
            out.extend([tuple(names)] * here)
    return out if len(out) == pods else None


def taken(
    numa: NodeNuma, shape: NumaShape, pods: Sequence[Sequence[str]], sign: int = 1
) -> NodeNuma:
    """The node's zones after the pods of `shape` took (sign -1: gave back) the zones a plan
    names for them, one zone name per unit ("" for none)."""
    frees = {zone.name: dict(zone.free) for zone in numa.zones}
    pod_units = units(numa, shape)
    for pod, times in Counter(tuple(pod) for pod in pods).items():
        for zone_name, unit in zip(pod, pod_units, strict=False):
            free = frees.get(zone_name)
            if free is None:
                continue
            for name, value in unit.items():
                free[name] = free.get(name, 0) - sign * value * times
    return NodeNuma(numa.scope, tuple(NumaZone(z.name, frees[z.name]) for z in numa.zones))


@dataclass(frozen=True)
class Batch:
    """Pods of one pod set on one node: `count` pods of `shape`, of which those in `pinned`
    already have their zones (one zone name per unit, "" for none)."""

    shape: NumaShape
    count: int
    pinned: tuple[tuple[str, ...], ...] = ()


def pack(numa: NodeNuma, batches: Iterable[Batch]) -> tuple[NodeNuma, list[list[tuple[str, ...]]]]:
    """The one packing of admitted pods into a node's zones, used by the operator (cache/numa.py)
    and by `tas solve` and `tas simulate` (TopologySnapshot.numa_zones) alike: batch by batch in
    the order given, the pinned pods keeping their zones, the others first fit. The zones left,
    and the zones of every batch's pods not pinned yet; when the zones hold fewer than that (a
    report shows less than was counted on), of those that fit."""
    plans: list[list[tuple[str, ...]]] = []
    for batch in batches:
        if batch.pinned:
            numa = taken(numa, batch.shape, batch.pinned)
        wanted = batch.count - len(batch.pinned)
        chosen = plan(numa, batch.shape, wanted) if wanted > 0 else []
        if chosen is None:  # pin what fits, one pod at a time
            chosen = []
            while len(chosen) < wanted and (one := plan(numa, batch.shape, 1)) is not None:
                chosen += one
                numa = taken(numa, batch.shape, one)
        elif chosen:
            numa = taken(numa, batch.shape, chosen)
        plans.append(chosen)
    return numa, plans
