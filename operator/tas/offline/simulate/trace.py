"""A trace: a scenario (docs/reference/scenario-format.md) whose workloads arrive and leave in simulated time.

Everything a scenario holds reads exactly as `tas solve` reads it, through the scenario reader's
own parser. A trace adds, per workload, `arrival` (seconds), `duration` (seconds; absent: it never
leaves) and `group` (the placement group it joins: a name, or a mapping with the name and the
PlacementGroup spec's constraints, which every member giving them must give alike); and it may
give its nodes as a compact `pool` instead of a list. A malformed trace raises ScenarioError
naming the field, as a malformed scenario does.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from tas import features
from tas.api import movable
from tas.api.constants import DEFAULT_MOVABLE_AFTER_SECONDS
from tas.api.fairsharing import AdmissionFairSharing
from tas.api.placementgroups import GROUP_NAME, MAX_PARTITIONS, GroupRef, GroupSpec
from tas.offline.fields import (  # a trace's errors read like a scenario's
    ScenarioError,
    check_keys,
    expect,
    key_path,
    quantities,
    read_field,
    string_map,
)
from tas.offline.reader import Scenario, Workload, parse_scenario, topology_levels
from tas.offline.yaml_loader import load_document, read_text

POOL_KEYS = ("blocks", "racksPerBlock", "hostsPerRack")
MAX_POOL_NODES = 100_000
# a trace's group mapping: the PlacementGroup spec's camelCase names -> GroupSpec's
GROUP_LEVELS = {
    "affinityTopology": "affinity_topology",
    "antiAffinityTopology": "anti_affinity_topology",
    "partitionTopology": "partition_topology",
    "exclusiveTopology": "exclusive_topology",
}
GROUP_FIELDS = {**GROUP_LEVELS, "partitions": "partitions"}


@dataclass(frozen=True)
class TracedWorkload:
    workload: Workload
    index: int  # its position in the trace: breaks ties between equal arrival times
    arrival: float  # seconds from the start of the trace
    duration: float | None  # seconds it runs once admitted; None: it never leaves
    # The placement group it joins, with the group's constraints (those another member gives,
    # when it gives the name alone); used with the gate TASPlacementGroups only.
    group: GroupRef | None = None
    # Gate TASDefragmentation: whether it may be moved once it has run `movable_after` seconds
    # (the annotations tas-operator.io/movable and movable-after in its `annotations`).
    movable: bool = False
    movable_after: float = DEFAULT_MOVABLE_AFTER_SECONDS
    # The LocalQueue it is submitted to (`localQueue`); None: its ClusterQueue's own.
    local_queue: str | None = None

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

    @property
    def admission_fair_sharing(self) -> AdmissionFairSharing | None:
        """Kueue's `admissionFairSharing` section, as the scenario reader read it (None:
        absent)."""
        return self.scenario.fair_sharing.admission_fair_sharing


def read(path: str, gate_overrides: Mapping[str, bool] | None = None) -> Trace:
    """The trace in the file at `path` (YAML or JSON); ScenarioError when it cannot be read or
    is malformed."""
    return parse_trace(load_document(read_text(path)), gate_overrides)


def parse_trace(document: Any, gate_overrides: Mapping[str, bool] | None = None) -> Trace:
    """Check a loaded trace in full. `gate_overrides` are applied on top of its featureGates
    (`tas simulate --compare`), before anything that depends on a gate is read."""
    document = dict(expect(document, dict, "(document)"))
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
        _traced(workload, index, document["workloads"][index], scenario.levels)
        for index, workload in enumerate(scenario.workloads)
    )
    workloads = _with_group_specs(workloads)
    return Trace(
        scenario=scenario,
        workloads=workloads,
        gates=features.from_mapping(document.get("featureGates") or {}),
    )


def _pool_nodes(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """`pool: {blocks, racksPerBlock, hostsPerRack, allocatable}`: identical hosts on a
    three-level topology, named and labelled as bench/scenarios.py names them (b0-r3-h12)."""
    levels = topology_levels(document)
    pool = read_field(document, "pool", dict, "")
    if len(levels) != 3:
        raise ScenarioError(
            "pool", f"needs a topology of 3 levels (block, rack, host), not {len(levels)}"
        )
    counts = []
    for key in POOL_KEYS:
        count = read_field(pool, key, int, "pool")
        if count < 1:
            raise ScenarioError(f"pool.{key}", f"must be at least 1, got {count}")
        counts.append(count)
    blocks, racks, hosts = counts
    if blocks * racks * hosts > MAX_POOL_NODES:
        raise ScenarioError("pool", f"more than {MAX_POOL_NODES} nodes")
    allocatable = read_field(pool, "allocatable", dict, "pool")
    quantities(allocatable, "pool.allocatable")  # checked here, to name the pool's field
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


def _traced(
    workload: Workload, index: int, entry: Mapping[str, Any], levels: tuple[str, ...]
) -> TracedWorkload:
    path = f"workloads[{index}]"
    if entry.get("running") is not None:
        raise ScenarioError(f"{path}.running", "has no meaning in a trace: give an arrival")
    arrival = _seconds(entry, "arrival", path)
    duration = _optional_seconds(entry, "duration", path)
    if duration is not None and duration <= 0:
        raise ScenarioError(f"{path}.duration", f"must be more than 0 seconds, got {duration}")
    may_move, after = _movable(entry, path)
    return TracedWorkload(
        workload=workload,
        index=index,
        arrival=arrival,
        duration=duration,
        group=_group(entry.get("group"), f"{path}.group", levels, len(workload.podsets)),
        movable=may_move,
        movable_after=after,
        local_queue=read_field(entry, "localQueue", str, path, None),
    )


def _movable(entry: Mapping[str, Any], path: str) -> tuple[bool, float]:
    """The workload's `annotations` (a Workload's metadata.annotations): the defragmentation
    ones are read, the others ignored."""
    if entry.get("annotations") is None:
        return False, DEFAULT_MOVABLE_AFTER_SECONDS
    annotations = string_map(entry["annotations"], f"{path}.annotations")
    try:
        return movable.effective(movable.parse(annotations), None)
    except movable.MovableError as error:
        raise ScenarioError(
            key_path(f"{path}.annotations", error.annotation), error.detail
        ) from None


def _seconds(entry: Mapping[str, Any], key: str, path: str) -> float:
    value = _optional_seconds(entry, key, path)
    if value is None:
        raise ScenarioError(f"{path}.{key}", "is required")
    return value


def _optional_seconds(entry: Mapping[str, Any], key: str, path: str) -> float | None:
    value = entry.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ScenarioError(f"{path}.{key}", f"must be a number of seconds, got {value!r}")
    if not math.isfinite(value) or value < 0:
        raise ScenarioError(
            f"{path}.{key}", f"must be a finite number of seconds >= 0, got {value}"
        )
    return float(value)


def _group(value: Any, path: str, levels: tuple[str, ...], podsets: int) -> GroupRef | None:
    """A group name, or `{name, affinityTopology, ...}`; the spec is None for a name alone."""
    if value is None:
        return None
    if not isinstance(value, str | dict):
        raise ScenarioError(path, f"must be a string or a mapping, got {value!r}")
    if podsets != 1:  # as the operator: a member's pod set is placed by the group's rules
        raise ScenarioError(
            path, f"a placement group takes workloads of one pod set, not {podsets}"
        )
    if isinstance(value, str):
        return GroupRef(_group_name(value, path), None)
    check_keys(value, path)
    for key in value:
        if key != "name" and key not in GROUP_FIELDS:
            known = ", ".join(("name", *GROUP_FIELDS))
            raise ScenarioError(f"{path}.{key}", f"unknown field (known: {known})")
    name = _group_name(read_field(value, "name", str, path), f"{path}.name")
    spec: dict[str, Any] = {}
    for key, attr in GROUP_LEVELS.items():
        level = read_field(value, key, str, path, None)
        if level is not None and level not in levels:
            raise ScenarioError(
                f"{path}.{key}", f"{level!r} is not a level of the topology ({', '.join(levels)})"
            )
        spec[attr] = level
    partitions = read_field(value, "partitions", int, path, None)
    if partitions is not None and not 1 <= partitions <= MAX_PARTITIONS:
        raise ScenarioError(
            f"{path}.partitions", f"must be from 1 to {MAX_PARTITIONS}, got {partitions}"
        )
    if (partitions is None) != (spec["partition_topology"] is None):
        missing = "partitionTopology" if partitions is not None else "partitions"
        raise ScenarioError(f"{path}.{missing}", "is required with the other partition field")
    return GroupRef(name, GroupSpec(partitions=partitions, **spec))


def _group_name(name: str, path: str) -> str:
    if len(name) > 253 or not GROUP_NAME.fullmatch(name):
        raise ScenarioError(
            path,
            f"{name!r} is not a valid object name (lowercase alphanumerics, '-' and '.', at "
            "most 253 characters)",
        )
    return name


def _with_group_specs(workloads: tuple[TracedWorkload, ...]) -> tuple[TracedWorkload, ...]:
    """Every member with its group's constraints: those the first member giving them gives
    (none if none does); another member that gives different ones is an error."""
    given: dict[str, tuple[int, GroupSpec]] = {}  # group -> (first member giving it, spec)
    for traced in workloads:
        ref = traced.group
        if ref is None or ref.spec is None:
            continue
        first, spec = given.setdefault(ref.name, (traced.index, ref.spec))
        differences = ref.spec.differences(spec)
        if differences:
            attr = differences[0]
            key = next(k for k, a in GROUP_FIELDS.items() if a == attr)
            raise ScenarioError(
                f"workloads[{traced.index}].group.{key}",
                f"{getattr(ref.spec, attr)!r} differs from workloads[{first}].group's "
                f"{getattr(spec, attr)!r}: the members of group {ref.name} give the same "
                "constraints, or the name alone",
            )
    resolved = []
    for traced in workloads:
        if traced.group is not None:
            _, spec = given.get(traced.group.name, (0, GroupSpec()))
            traced = replace(traced, group=GroupRef(traced.group.name, spec))
        resolved.append(traced)
    return tuple(resolved)
