"""The topology view's model: what `tas view` draws in the browser and `tas top` in the terminal.

Plain, immutable data built from the operator's cache (view/live.py) or from a `tas simulate`
trace at a chosen time (view/trace.py); the renderers (view/html.py, view/text.py) read only
this. Quantities are the solver's milli-units (cpu "1" -> 1000, one pod -> 1000 "pods").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from tas.solver.types import Resources

# Why a host is not offered to new pods, in the words `kubectl get nodes` uses.
CORDONED = "cordoned"  # spec.unschedulable
NOT_READY = "not-ready"
TAINTED = "tainted"  # a NoSchedule or NoExecute taint the flavor does not tolerate


def summed(amounts: Iterable[Resources]) -> dict[str, int]:
    """Resources added up per name: a domain's hosts, a host's uses."""
    total: dict[str, int] = {}
    for item in amounts:
        for resource, value in item.items():
            total[resource] = total.get(resource, 0) + value
    return total


@dataclass(frozen=True)
class Use:
    """One consumer of a host: an admitted workload (`workload` is "namespace/name"), or every
    pod outside topology-aware admission together (`workload` is None)."""

    workload: str | None
    requests: Resources
    pods: int


@dataclass(frozen=True)
class HostView:
    name: str
    allocatable: Resources
    uses: tuple[Use, ...]
    free: Resources
    marks: tuple[str, ...] = ()  # CORDONED, NOT_READY, TAINTED
    numa_zones: tuple[HostView, ...] = ()  # with TASNumaAwareScheduling: one per zone


@dataclass(frozen=True)
class DomainView:
    """A domain of one topology level above the hosts: a block, a rack."""

    level: str
    value: str
    free: Resources
    allocatable: Resources
    domains: tuple[DomainView, ...] = ()  # the next level down, if it is not the hosts
    hosts: tuple[HostView, ...] = ()  # the hosts, at the lowest level above them
    # Where the topology's lowest level is not the hostname, pods are placed on these lowest
    # domains, not on nodes: the admitted workloads' uses are the domain's, its hosts show
    # only what runs outside topology-aware admission.
    uses: tuple[Use, ...] = ()


@dataclass(frozen=True)
class FlavorView:
    """A topology-aware ResourceFlavor: its Topology's levels and its nodes as a tree."""

    name: str
    topology: str
    levels: tuple[str, ...]  # node labels, top level first (hostname last when it is a level)
    domains: tuple[DomainView, ...]  # the top level
    hosts: tuple[HostView, ...] = ()  # when the hostname is the topology's only level


@dataclass(frozen=True)
class WorkloadView:
    """A workload holding quota in a topology flavor (`admitted`) or waiting (`pending`)."""

    key: str  # namespace/name
    queue: str  # its LocalQueue
    cluster_queue: str
    pods: int
    admitted: bool
    reason: str = ""  # a pending one's QuotaReserved message, verbatim
    needs: str = ""  # what it asks for, e.g. "16 pods of cpu=1, required in one rack"
    hosts: tuple[str, ...] = ()  # an admitted one's hosts


@dataclass(frozen=True)
class PlacementGroupView:
    key: str  # namespace/name
    level: str
    domains: tuple[str, ...]  # the domains it owns or holds, as "level=value"


@dataclass(frozen=True)
class ReplacementView:
    """A hot swap: a workload's pods moved from a failed node."""

    workload: str
    failed: str
    replacement: str
    at: float  # unix seconds


@dataclass(frozen=True)
class ClusterView:
    flavors: tuple[FlavorView, ...]
    workloads: tuple[WorkloadView, ...]  # admitted first, then pending in queue order
    placement_groups: tuple[PlacementGroupView, ...] = ()
    replacements: tuple[ReplacementView, ...] = ()  # the most recent first
    at: float = 0.0  # unix seconds (live) or the trace's clock (offline)
    extras: Mapping[str, str] = field(default_factory=dict)  # e.g. the trace's name
