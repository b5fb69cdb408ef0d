"""Small block/rack/host topologies for the required-with-preferred and multi-role group tests."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from tas.solver import Node, WorkloadPlacement

BLOCK = "block"
RACK = "rack"
HOST = "kubernetes.io/hostname"
LEVELS = (BLOCK, RACK, HOST)


def hosts(racks: dict[str, Sequence[int]]) -> list[Node]:
    """`{"b1-r1": [1, 1], ...}`: the free cpus of each host of each rack, racks named
    <block>-<rack>."""
    out = []
    for rack, cpus in racks.items():
        block = rack.split("-")[0]
        for index, cpu in enumerate(cpus, start=1):
            name = f"{rack}-h{index}"
            out.append(
                Node(
                    name=name,
                    labels={BLOCK: block, RACK: rack, HOST: name},
                    allocatable={"cpu": cpu * 1000, "pods": 110_000},
                )
            )
    return out


def pods_per_host(placement: WorkloadPlacement, podset: str | None = None) -> Counter:
    counts: Counter = Counter()
    for placed in placement.podsets:
        if podset is None or placed.name == podset:
            for domain in placed.assignment.domains:
                counts[domain.values[-1]] += domain.count
    return counts


def rack_of(host: str) -> str:
    return host.rsplit("-", 1)[0]


def block_of(host: str) -> str:
    return host.split("-")[0]


def pods_per(placement: WorkloadPlacement, of, podset: str | None = None) -> Counter:
    """Pods per domain, `of` naming a host's domain (rack_of, block_of)."""
    counts: Counter = Counter()
    for host, count in pods_per_host(placement, podset).items():
        counts[of(host)] += count
    return counts
