"""NUMA zones per node, as the solver needs them (behind the TASNUMAZones gate).

A zone's free capacity is what its NodeResourceTopology reports available, less what we have
placed there that the report may not show yet:
- pods we pinned to a zone (the zone annotation, set at ungating) unless the node's latest
  report arrived while they were Running there: the exporter counts running pods;
- pods of admitted workloads on the node that are not pinned yet, packed into the zones first
  fit, in workload order; the ungater pins each to the zone this packing gives it.

Pure bookkeeping: ClusterState feeds it and asks it; it never writes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tas.api.constants import HOSTNAME_LABEL
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


def host_of(pod: PodInfo) -> str | None:
    return pod.node_name or pod.node_selector.get(HOSTNAME_LABEL)


class NumaLedger:
    def __init__(self) -> None:
        self.reports: dict[str, NodeNuma] = {}  # node -> zones as its report has them
        self.zoned: dict[str, set[Key]] = defaultdict(set)  # node -> pods pinned to a zone
        self.reported: dict[str, set[Key]] = defaultdict(set)  # ...that its report includes

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

    def pod_changed(self, old: PodInfo | None, new: PodInfo | None) -> set[str]:
        """Index a pod's zone pin; the nodes whose zones this changes."""
        pod = new or old
        assert pod is not None
        key = (pod.namespace, pod.name)
        before = host_of(old) if old is not None and old.numa_zone else None
        after = host_of(new) if new is not None and new.numa_zone and not new.terminal else None
        if before and before != after:
            self.zoned[before].discard(key)
            self.reported[before].discard(key)
        if after:
            self.zoned[after].add(key)
            if new is None or new.phase != "Running":
                self.reported[after].discard(key)
        if (
            old is not None
            and new is not None
            and (old.numa_zone, old.phase, before) == (new.numa_zone, new.phase, after)
        ):
            return set()
        return {h for h in (before, after) if h and h in self.reports}

    def free(
        self, node: str, pods: Mapping[Key, PodInfo], pending: Iterable[Pending]
    ) -> tuple[NodeNuma, dict[PodSetKey, list[tuple[str, ...]]]] | None:
        """The node's zones less our pinned pods the report does not show and our pending
        pods, and the zones the pending pods are given; None when the node has no report."""
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
        plans: dict[PodSetKey, list[tuple[str, ...]]] = {}
        for item in pending:
            chosen = numa.plan(zones, item.shape, item.count)
            if chosen is None:  # the report shows less than we counted on: pin what fits
                chosen = []
                while len(chosen) < item.count:
                    one = numa.plan(zones, item.shape, 1)
                    if one is None:
                        break
                    chosen += one
                    zones = numa.taken(zones, item.shape, one)
            else:
                zones = numa.taken(zones, item.shape, chosen)
            plans[item.podset] = chosen
        return zones, plans
