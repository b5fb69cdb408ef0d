"""Placement-group annotations and PlacementGroup specs: parsed and checked, errors naming the
field (gate TASPlacementGroups)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

from tas.api.annotations import label_key_problem
from tas.api.constants import (
    PLACEMENT_GROUP,
    PLACEMENT_GROUP_AFFINITY,
    PLACEMENT_GROUP_ANTI_AFFINITY,
    PLACEMENT_GROUP_EXCLUSIVE,
    PLACEMENT_GROUP_MAX_PARTITIONS,
    PLACEMENT_GROUP_PARTITION_TOPOLOGY,
    PLACEMENT_GROUP_PARTITIONS,
)
from tas.solver.groups import GroupRules

MAX_PARTITIONS = PLACEMENT_GROUP_MAX_PARTITIONS  # the PlacementGroup CRD's spec.partitions
GROUP_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")
# ASCII digits only: str.isdigit() takes "²" (which int() refuses) and "٣" (which it reads).
_PARTITIONS = re.compile(r"[0-9]{1,3}")


class PlacementGroupError(ValueError):
    """An invalid group name or constraint; the message names the annotation or field. For an
    annotation, `annotation`, `value` and `problem` also say which, what and why."""

    def __init__(
        self,
        message: str,
        annotation: str | None = None,
        value: str | None = None,
        problem: str | None = None,
    ) -> None:
        super().__init__(message)
        self.annotation = annotation
        self.value = value
        self.problem = problem or message


def _refuse(annotation: str, value: str | None, problem: str) -> PlacementGroupError:
    shown = f"{annotation} {problem}" if value is None else f"{annotation}: {value!r} {problem}"
    return PlacementGroupError(shown, annotation, value, problem)


@dataclass(frozen=True)
class GroupSpec:
    """A group's constraints by level name (None: not constrained)."""

    affinity_topology: str | None = None
    anti_affinity_topology: str | None = None
    partitions: int | None = None
    partition_topology: str | None = None
    exclusive_topology: str | None = None

    def differences(self, other: GroupSpec) -> list[str]:
        return [f.name for f in fields(self) if getattr(self, f.name) != getattr(other, f.name)]


@dataclass(frozen=True)
class GroupRef:
    """What a pod set says: the group it joins and, if given, the constraints it expects."""

    name: str
    spec: GroupSpec | None


_LEVEL_ANNOTATIONS = {
    "affinity_topology": PLACEMENT_GROUP_AFFINITY,
    "anti_affinity_topology": PLACEMENT_GROUP_ANTI_AFFINITY,
    "partition_topology": PLACEMENT_GROUP_PARTITION_TOPOLOGY,
    "exclusive_topology": PLACEMENT_GROUP_EXCLUSIVE,
}
# the camelCase field names of the PlacementGroup spec, for messages
SPEC_FIELDS = {
    "affinity_topology": "spec.affinityTopology",
    "anti_affinity_topology": "spec.antiAffinityTopology",
    "partitions": "spec.partitions",
    "partition_topology": "spec.partitionTopology",
    "exclusive_topology": "spec.exclusiveTopology",
}


def parse_annotations(annotations: Mapping[str, str]) -> GroupRef | None:
    """The group a pod template joins, or None; raises PlacementGroupError naming the
    annotation."""
    name = annotations.get(PLACEMENT_GROUP)
    constraints = [k for k in (*_LEVEL_ANNOTATIONS.values(), PLACEMENT_GROUP_PARTITIONS)]
    if name is None:
        stray = [k for k in constraints if k in annotations]
        if stray:
            raise _refuse(stray[0], None, f"is set without {PLACEMENT_GROUP}")
        return None
    if len(name) > 253 or not GROUP_NAME.fullmatch(name):
        raise _refuse(
            PLACEMENT_GROUP,
            name,
            "is not a valid object name (lowercase alphanumerics, '-' and '.', at most 253 "
            "characters)",
        )
    if not any(k in annotations for k in constraints):
        return GroupRef(name, None)
    values: dict[str, object] = {}
    for attr, key in _LEVEL_ANNOTATIONS.items():
        level = annotations.get(key)
        if level is None:
            continue
        problem = label_key_problem(level)
        if problem:
            raise _refuse(key, level, problem)
        values[attr] = level
    raw = annotations.get(PLACEMENT_GROUP_PARTITIONS)
    if raw is not None:
        if not _PARTITIONS.fullmatch(raw) or not 1 <= int(raw) <= MAX_PARTITIONS:
            raise _refuse(
                PLACEMENT_GROUP_PARTITIONS,
                raw,
                f"must be a whole number from 1 to {MAX_PARTITIONS}",
            )
        values["partitions"] = int(raw)
    spec = GroupSpec(**values)  # type: ignore[arg-type]
    if (spec.partitions is None) != (spec.partition_topology is None):
        missing = (
            PLACEMENT_GROUP_PARTITION_TOPOLOGY if spec.partitions else PLACEMENT_GROUP_PARTITIONS
        )
        raise _refuse(missing, None, "is required with the other partition annotation")
    return GroupRef(name, spec)


def spec_from_object(spec: Mapping) -> GroupSpec:
    partitions = spec.get("partitions")
    return GroupSpec(
        affinity_topology=spec.get("affinityTopology"),
        anti_affinity_topology=spec.get("antiAffinityTopology"),
        partitions=int(partitions) if partitions is not None else None,
        partition_topology=spec.get("partitionTopology"),
        exclusive_topology=spec.get("exclusiveTopology"),
    )


def spec_to_object(spec: GroupSpec) -> dict:
    out: dict[str, object] = {}
    for attr, path in SPEC_FIELDS.items():
        value = getattr(spec, attr)
        if value is not None:
            out[path.removeprefix("spec.")] = value
    return out


def rules_for(spec: GroupSpec, levels: Sequence[str]) -> GroupRules:
    """The solver's rules for a topology; raises PlacementGroupError naming the spec field
    whose level the topology does not have."""

    def index(attr: str) -> int | None:
        level = getattr(spec, attr)
        if level is None:
            return None
        if level not in levels:
            raise PlacementGroupError(
                f"{SPEC_FIELDS[attr]}: {level} is not a level of the topology "
                f"(levels: {', '.join(levels)})"
            )
        return levels.index(level)

    levels_of = {attr: index(attr) for attr in _LEVEL_ANNOTATIONS}
    try:
        return GroupRules(
            affinity=levels_of["affinity_topology"],
            anti_affinity=levels_of["anti_affinity_topology"],
            partitions=spec.partitions or 0,
            partition_level=levels_of["partition_topology"],
            exclusive=levels_of["exclusive_topology"],
        )
    except ValueError:  # an object stored before its CRD's rules: say which fields
        raise PlacementGroupError(
            "spec.partitions and spec.partitionTopology must be set together"
        ) from None
