"""Which gated pod goes to which assigned domain.

Pure: the assignment and the workload's pods in, (pod, nodeSelector) pairs out. A domain never
gets more pods than assigned: pods already ungated onto it count, and so do pods we ungated
whose update the watch has not shown yet (expectations). Pods that can be ranked (ranks.py:
an Indexed Job's completion index, a JobSet's Job and completion index, a LeaderWorkerSet's
worker index) go by rank, so that rank i always lands in the i-th slot of the assignment, which
keeps neighbours in rank also neighbours in the topology (and a slice's pods in its domain);
other pods fill the domains in order.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from tas.cache.projections import PodInfo
from tas.solver.types import TopologyAssignment
from tas.ungater.ranks import RankRule, ranks

Selector = dict[str, str]


@dataclass(frozen=True)
class Ungate:
    pod: PodInfo
    node_selector: Selector  # the domain's level labels, to merge into the pod's nodeSelector
    domain: tuple[str, ...]
    numa_zone: str | None = None  # NUMA_ZONE_ANNOTATION's value, on a node counted by zones
    partition: int | None = None  # a partitioned placement group's partition (ours)


def domain_selectors(assignment: TopologyAssignment) -> list[tuple[tuple[str, ...], Selector, int]]:
    return [
        (d.values, dict(zip(assignment.levels, d.values, strict=True)), d.count)
        for d in assignment.domains
    ]


def _matches(pod_selector: Mapping[str, str], selector: Selector) -> bool:
    return all(pod_selector.get(k) == v for k, v in selector.items())


def plan(
    assignment: TopologyAssignment,
    pods: Iterable[PodInfo],
    expected: Mapping[str, tuple[str, ...]] | None = None,
    unhealthy: Collection[str] = (),
    rule: RankRule | None = None,
) -> list[Ungate]:
    """`expected` maps pod uid -> domain values for pods ungated but not yet seen ungated.
    Domains on `unhealthy` nodes get nobody: their pods wait for the replacement. `rule` says
    how the pod set's pods are ranked (None: they are not)."""
    expected = expected or {}
    domains = domain_selectors(assignment)
    free = {values: 0 if values[-1] in unhealthy else count for values, _, count in domains}
    gated: list[PodInfo] = []
    for pod in pods:
        if pod.terminal:
            continue  # a finished pod frees its slot for its replacement
        domain: tuple[str, ...] | None
        if pod.uid in expected:
            domain = expected[pod.uid]
        elif pod.gated:
            gated.append(pod)
            continue
        else:
            domain = next((v for v, sel, _ in domains if _matches(pod.node_selector, sel)), None)
        if domain in free and free[domain] > 0:
            free[domain] -= 1

    out: list[Ungate] = []
    by_values = {values: selector for values, selector, _ in domains}

    def take(pod: PodInfo, values: tuple[str, ...]) -> None:
        free[values] -= 1
        out.append(Ungate(pod, by_values[values], values))

    by_rank = ranks(gated, rule)
    if by_rank is not None:
        slots = [values for values, _, count in domains for _ in range(count)]
        leftovers = []
        for pod in sorted(gated, key=lambda p: by_rank[p.uid]):
            rank = by_rank[pod.uid]
            if rank < len(slots) and free[slots[rank]] > 0:
                take(pod, slots[rank])
            else:
                leftovers.append(pod)
        gated = leftovers
    else:
        gated = sorted(gated, key=lambda p: p.name)
    for pod in gated:
        values = next((v for v, _, _ in domains if free[v] > 0), None)
        if values is None:
            break  # more pods than assigned: they wait (e.g. for a replacement)
        take(pod, values)
    return out


def stranded(
    assignment: TopologyAssignment,
    pods: Iterable[PodInfo],
    expected: Mapping[str, tuple[str, ...]] | None = None,
) -> list[PodInfo]:
    """Pods ungated onto a domain the assignment no longer has (a node was replaced while they
    were on their way) and not running yet: they would wait there for good, or run outside the
    assignment once that node came back (bound there while it flapped: still Pending). Their
    owner makes new ones when they are failed. Running pods are left alone."""
    expected = expected or {}
    selectors = [sel for _, sel, _ in domain_selectors(assignment)]
    return [
        pod
        for pod in pods
        if pod.phase == "Pending"
        and not pod.gated
        and not pod.deleting
        and pod.uid not in expected
        and not any(_matches(pod.node_selector, sel) for sel in selectors)
    ]
