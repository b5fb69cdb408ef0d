"""NUMA zones per node, as the solver needs them (behind the TASNUMAZones gate).

A zone's free capacity is what its NodeResourceTopology reports available, less what we have
placed there that the report may not show yet:
- pods we pinned to a zone (the zone annotation, set at ungating) once bound to the node,
  unless the node's latest report arrived while they were Running there: the exporter counts
  running pods. The cache says which pods are ours (a charge covers them): a zone annotation on
  any other pod counts for nothing, whoever wrote it;
- pods of admitted workloads on the node that are not bound there yet, in admission order and
  in each in the order placement counted them (solver leader_first): those the ungater already
  pinned in the zones it gave them, the others packed into the zones first fit (solver
  numa.pack, as `tas solve` and `tas simulate` pack them); the ungater pins each of those to
  the zone this packing gives it.

Pure bookkeeping: ClusterState feeds it and asks it; it never writes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tas.api.numazones import parse_numa_zones
from tas.cache.projections import Key, PodInfo
from tas.solver import numa
from tas.solver.types import NodeNuma, NumaShape

PodSetKey = tuple[Key, str]  # (workload, pod set)


@dataclass(frozen=True)
class Pending:
    """Pods of an admitted workload assigned to a node and not pinned to a zone yet."""

    podset: PodSetKey
    shape: NumaShape
    count: int
    # The zones of those already on their way (ungated, pinned, not bound yet), at most `count`.
    pinned: tuple[tuple[str, ...], ...] = ()


class NumaLedger:
    def __init__(self) -> None:
        self.reports: dict[str, NodeNuma] = {}  # node -> zones as its report has them
        self.zoned: dict[str, set[Key]] = defaultdict(set)  # node -> our bound pinned pods
        self.reported: dict[str, set[Key]] = defaultdict(set)  # ...that its report includes
        self._pins: dict[Key, tuple[str, str | None, str]] = {}  # pod -> (node, zone, phase)

    def report(self, node: str, zones: NodeNuma | None, pods: Mapping[Key, PodInfo]) -> None:
        """A new report (None: gone, or no longer single-numa-node): it includes the pinned
        pods running on the node now."""
        if zones is None:
            self.reports.pop(node, None)
            self.reported.pop(node, None)
            return
        self.reports[node] = zones
        self.reported[node] = {
            key
            for key in self.zoned.get(node, ())
            if (pod := pods.get(key)) is not None
            and pod.phase == "Running"
            and pod.node_name == node
        }

    def pin(self, key: Key, pod: PodInfo | None, node: str | None) -> set[str]:
        """Count `pod` in the zone its annotation names on `node` (None: not counted: gone,
        unbound, or not ours); the nodes whose zones this changes."""
        before = self._pins.get(key)
        after = (node, pod.numa_zone, pod.phase) if node and pod is not None else None
        if before == after:
            return set()
        if before is not None and (after is None or after[0] != before[0]):
            _discard(self.zoned, before[0], key)
            _discard(self.reported, before[0], key)
        if after is None:
            del self._pins[key]
        else:
            self._pins[key] = after
            self.zoned[after[0]].add(key)
            if after[2] != "Running":
                _discard(self.reported, after[0], key)
        return {p[0] for p in (before, after) if p and p[0] in self.reports}

    def free(
        self, node: str, pods: Mapping[Key, PodInfo], pending: Iterable[Pending]
    ) -> tuple[NodeNuma, dict[PodSetKey, list[tuple[str, ...]]]] | None:
        """The node's zones less our pinned pods the report does not show and our pending
        pods, and the zones given to the pending pods not pinned yet; None when the node has
        no report."""
        zones = self.reports.get(node)
        if zones is None:
            return None
        reported = self.reported.get(node, set())
        # One `taken` per pod shape, not per pod (the pods of a workload share theirs).
        pinned: dict[tuple, tuple[NumaShape, list[tuple[str, ...]]]] = {}
        for key in sorted(self.zoned.get(node, ())):
            pod = pods.get(key)
            if key in reported or pod is None or pod.numa is None:
                continue
            shape_key = (
                tuple(tuple(sorted(c.items())) for c in pod.numa.containers),
                pod.numa.names,
            )
            pinned.setdefault(shape_key, (pod.numa, []))[1].append(
                parse_numa_zones(pod.numa_zone, pod.numa)
            )
        for shape, pod_zones in pinned.values():
            zones = numa.taken(zones, shape, pod_zones)
        items = list(pending)
        zones, chosen = numa.pack(
            zones, [numa.Batch(item.shape, item.count, item.pinned) for item in items]
        )
        plans = {
            item.podset: pods
            for item, pods in zip(items, chosen, strict=True)
            if item.count > len(item.pinned)
        }
        return zones, plans


def _discard(index: dict[str, set[Key]], node: str, key: Key) -> None:
    pods = index.get(node)
    if pods is not None:
        pods.discard(key)
        if not pods:
            del index[node]
