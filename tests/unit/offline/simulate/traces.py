"""Small traces built in code for the `tas simulate` tests."""

from __future__ import annotations

from typing import Any

from tas.offline.simulate import run
from tas.offline.simulate.trace import parse_trace

BLOCK = "cloud.provider.com/topology-block"
RACK = "cloud.provider.com/topology-rack"
HOST = "kubernetes.io/hostname"
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"


def job(
    name: str,
    arrival: float,
    pods: int,
    cpu: str,
    duration: float | None = None,
    level: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    podset: dict[str, Any] = {"name": "main", "count": pods, "requests": {"cpu": cpu}}
    if level is not None:
        podset["annotations"] = {REQUIRED: level}
    entry = {"name": name, "arrival": arrival, "podSets": [podset], **extra}
    if duration is not None:
        entry["duration"] = duration
    return entry


def two_racks(workloads: list[dict[str, Any]], cpu: str = "4", **extra: Any) -> dict[str, Any]:
    """One block, two racks of two hosts, `cpu` each (the compact pool form)."""
    return {
        "topology": {"levels": [{"nodeLabel": level} for level in (BLOCK, RACK, HOST)]},
        "pool": {"blocks": 1, "racksPerBlock": 2, "hostsPerRack": 2, "allocatable": {"cpu": cpu}},
        "workloads": workloads,
        **extra,
    }


def simulate(document: dict[str, Any], observe: run.Observer | None = None) -> dict[str, Any]:
    return run.simulate(parse_trace(document), observe)


def running_over_time(document: dict[str, Any]) -> list[tuple[float, set[str]]]:
    """(time, names of the running workloads) after each event."""
    seen: list[tuple[float, set[str]]] = []
    simulate(document, lambda now, running: seen.append((now, set(running))))
    return seen
