"""A trace: a scenario (SCENARIO.md) whose workloads arrive and leave in simulated time.

Everything a scenario holds reads exactly as `tas solve` reads it, through tas.scenario's own
parser. A trace adds, per workload, `arrival` (seconds), `duration` (seconds; absent: it never
leaves) and `group` (reserved for placement groups: read, kept, not used yet); and it may give
its nodes as a compact `pool` instead of a list. A malformed trace raises ScenarioError naming
the field, as a malformed scenario does.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tas import features
from tas.scenario import (  # and its typed readers: a trace's errors read like a scenario's
    MAX_BYTES,
    Scenario,
    ScenarioError,
    Workload,
    _expect,
    _field,
    _levels,
    _quantities,
    load_document,
    parse_scenario,
)

POOL_KEYS = ("blocks", "racksPerBlock", "hostsPerRack")
MAX_POOL_NODES = 100_000


@dataclass(frozen=True)
class TracedWorkload:
    workload: Workload
    index: int  # its position in the trace: breaks ties between equal arrival times
    arrival: float  # seconds from the start of the trace
    duration: float | None  # seconds it runs once admitted; None: it never leaves
    # Reserved for placement groups (a string or a mapping): kept, not used yet.
    group: str | Mapping[str, Any] | None = None

    @property
    def name(self) -> str:
        return self.workload.name

    @property
    def pods(self) -> int:
        return sum(podset.count for podset in self.workload.podsets)


@dataclass(frozen=True)
class Trace:
    scenario: Scenario  # topology, nodes, flavor, queues and the workloads as solver inputs
    workloads: tuple[TracedWorkload, ...]  # in trace order
    gates: features.FeatureGates  # the trace's featureGates, with any override on top


def read(path: str, gate_overrides: Mapping[str, bool] | None = None) -> Trace:
    """The trace in the file at `path` (YAML or JSON); ScenarioError when it cannot be read or
    is malformed."""
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read(MAX_BYTES + 1)
    except (OSError, UnicodeDecodeError) as error:
        raise ScenarioError(path, f"cannot read: {error}") from None
    if len(text) > MAX_BYTES:
        raise ScenarioError("(document)", f"larger than {MAX_BYTES // 2**20} MiB")
    return parse_trace(load_document(text), gate_overrides)


def parse_trace(document: Any, gate_overrides: Mapping[str, bool] | None = None) -> Trace:
    """Check a loaded trace in full. `gate_overrides` are applied on top of its featureGates
    (`tas simulate --compare`), before anything that depends on a gate is read."""
    document = dict(_expect(document, dict, "(document)"))
    if gate_overrides:
        gates = document.get("featureGates")
        if gates is None or isinstance(gates, dict):  # else the scenario parser reports it
            document["featureGates"] = {**(gates or {}), **gate_overrides}
    if document.get("pool") is not None:
        if document.get("nodes") is not None:
            raise ScenarioError("pool", "give either nodes or pool, not both")
        document["nodes"] = _pool_nodes(document)
    scenario = parse_scenario(document)
    workloads = tuple(
        _traced(workload, index, document["workloads"][index])
        for index, workload in enumerate(scenario.workloads)
    )
    return Trace(
        scenario=scenario,
        workloads=workloads,
        gates=features.from_mapping(document.get("featureGates") or {}),
    )


def _pool_nodes(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """`pool: {blocks, racksPerBlock, hostsPerRack, allocatable}`: identical hosts on a
    three-level topology, named and labelled as bench/scenarios.py names them (b0-r3-h12)."""
    levels = _levels(document)
    pool = _field(document, "pool", dict, "")
    if len(levels) != 3:
        raise ScenarioError(
            "pool", f"needs a topology of 3 levels (block, rack, host), not {len(levels)}"
        )
    counts = []
    for key in POOL_KEYS:
        count = _field(pool, key, int, "pool")
        if count < 1:
            raise ScenarioError(f"pool.{key}", f"must be at least 1, got {count}")
        counts.append(count)
    blocks, racks, hosts = counts
    if blocks * racks * hosts > MAX_POOL_NODES:
        raise ScenarioError("pool", f"more than {MAX_POOL_NODES} nodes")
    allocatable = _field(pool, "allocatable", dict, "pool")
    _quantities(allocatable, "pool.allocatable")  # checked here, to name the pool's field
    nodes = []
    for b in range(blocks):
        for r in range(racks):
            for h in range(hosts):
                name = f"b{b}-r{r}-h{h}"
                values = (f"b{b}", f"b{b}-r{r}", name)
                nodes.append(
                    {
                        "name": name,
                        "labels": dict(zip(levels, values, strict=True)),
                        "allocatable": copy.deepcopy(allocatable),
                    }
                )
    return nodes


def _traced(workload: Workload, index: int, entry: Mapping[str, Any]) -> TracedWorkload:
    path = f"workloads[{index}]"
    if entry.get("running") is not None:
        raise ScenarioError(f"{path}.running", "has no meaning in a trace: give an arrival")
    arrival = _seconds(entry, "arrival", path)
    duration = _seconds(entry, "duration", path, required=False)
    if duration is not None and duration <= 0:
        raise ScenarioError(f"{path}.duration", f"must be more than 0 seconds, got {duration}")
    return TracedWorkload(
        workload=workload,
        index=index,
        arrival=arrival,
        duration=duration,
        group=_group(entry.get("group"), f"{path}.group"),
    )


def _seconds(entry: Mapping[str, Any], key: str, path: str, required: bool = True) -> float | None:
    value = entry.get(key)
    if value is None:
        if required:
            raise ScenarioError(f"{path}.{key}", "is required")
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ScenarioError(f"{path}.{key}", f"must be a number of seconds, got {value!r}")
    if not math.isfinite(value) or value < 0:
        raise ScenarioError(
            f"{path}.{key}", f"must be a finite number of seconds >= 0, got {value}"
        )
    return float(value)


def _group(value: Any, path: str) -> str | Mapping[str, Any] | None:
    """Reserved for placement groups: a name, or a mapping with string keys."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                raise ScenarioError(path, f"keys must be strings, got {key!r}")
        return value
    raise ScenarioError(path, f"must be a string or a mapping, got {value!r}")
