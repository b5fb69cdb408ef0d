"""Builders for solver tests: Kueue-style nodes, pods and expectations as solver types."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from tas.solver import (
    DomainAssignment,
    Node,
    PodSetRequest,
    Taint,
    TopologyAssignment,
)

BLOCK = "cloud.com/topology-block"
RACK = "cloud.com/topology-rack"
SUBBLOCK = "cloud.com/topology-subblock"
DATACENTER = "cloud.com/datacenter"
AIZONE = "cloud.com/aizone"
HOST = "kubernetes.io/hostname"

ONE_LEVEL = (HOST,)
TWO_LEVELS = (BLOCK, RACK)
THREE_LEVELS = (BLOCK, RACK, HOST)

_SUFFIX = {
    "": 1,
    "m": 0.001,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
}


def quantity(text: str | int) -> int:
    """A Kubernetes quantity ("1", "600m", "1Gi") in milli-units."""
    match = re.fullmatch(r"(\d+)([a-zA-Z]*)", str(text))
    if not match or match.group(2) not in _SUFFIX:
        raise ValueError(f"unsupported quantity {text!r}")
    number, suffix = int(match.group(1)), match.group(2)
    if suffix == "m":
        return number
    return number * _SUFFIX[suffix] * 1000


def kueue_requests(requests: Mapping[str, int]) -> dict[str, int]:
    """Kueue's test requests (cpu in millicores, everything else in units) in milli-units."""
    return {name: value if name == "cpu" else value * 1000 for name, value in requests.items()}


def node(
    name: str,
    labels: Mapping[str, str],
    allocatable: Mapping[str, str],
    *,
    taints: Sequence[Taint] = (),
    ready: bool = True,
    unschedulable: bool = False,
) -> Node:
    return Node(
        name=name,
        labels=dict(labels),
        allocatable={res: quantity(value) for res, value in allocatable.items()},
        taints=tuple(taints),
        ready=ready,
        unschedulable=unschedulable,
    )


@dataclass(frozen=True)
class NonTasPod:
    """A pod outside topology-aware admission, as Kueue's test cluster would hold it."""

    name: str
    node_name: str | None
    phase: str
    requests: Mapping[str, str]


def pod(name: str, node_name: str | None, phase: str, requests: Mapping[str, str]) -> NonTasPod:
    return NonTasPod(name, node_name, phase, requests)


def with_non_tas_usage(nodes: Iterable[Node], pods: Iterable[NonTasPod]) -> list[Node]:
    """Kueue counts a pod's requests plus one "pods" on its node when it is bound and not
    terminal; the solver receives that sum as Node.usage."""
    usage: dict[str, dict[str, int]] = {}
    for p in pods:
        if p.node_name is None or p.phase in ("Succeeded", "Failed"):
            continue
        per_node = usage.setdefault(p.node_name, {})
        for res, value in p.requests.items():
            per_node[res] = per_node.get(res, 0) + quantity(value)
        per_node["pods"] = per_node.get("pods", 0) + 1000
    return [replace(n, usage=usage.get(n.name, {})) for n in nodes]


def assignment(
    levels: Sequence[str], domains: Iterable[tuple[Sequence[str], int]]
) -> TopologyAssignment:
    return TopologyAssignment(
        levels=tuple(levels),
        domains=tuple(DomainAssignment(values=tuple(v), count=c) for v, c in domains),
    )


@dataclass(frozen=True)
class ExpectedPodSet:
    request: PodSetRequest
    want: TopologyAssignment | None = None
    reason: str | None = None


@dataclass(frozen=True)
class PriorUsage:
    """Usage of an already admitted workload on one leaf (Kueue's priorOwnUsage)."""

    values: tuple[str, ...]
    count: int
    requests: Mapping[str, int]  # Kueue's units, see kueue_requests


@dataclass(frozen=True)
class KueueCase:
    name: str
    levels: tuple[str, ...]
    nodes: tuple[Node, ...]
    podsets: tuple[ExpectedPodSet, ...]
    pods: tuple[NonTasPod, ...] = ()
    node_labels: Mapping[str, str] = field(default_factory=dict)
    gates: Mapping[str, bool] = field(default_factory=dict)
    prior_usage: tuple[PriorUsage, ...] = ()
    note: str = ""  # where and why we deliberately differ from Kueue
