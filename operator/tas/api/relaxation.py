"""Wait, then relax (ours, gate TASTopologyRelaxation): the podset-topology-relaxation annotation.

A pod set required at one level (Kueue's podset-required-topology, the first stage) lists the
later stages beside it, each a higher level, or `unconstrained`, and how long after the workload
joined its queue it is tried there:

    kueue.x-k8s.io/podset-required-topology: cloud.provider.com/topology-rack
    tas-operator.io/podset-topology-relaxation: "cloud.provider.com/topology-block after 10m,
        unconstrained after 30m"

Durations are Go's style limited to hours, minutes and seconds (`90s`, `10m`, `1h30m`), each
later than the one before. The time waited counts from the Workload's own timestamps (its
creation, or its last requeue), so a restart of the operator changes nothing. Kueue, and this
operator with the gate off, see only the required level.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from tas.api.annotations import TopologyRequestError, label_key_problem, quote
from tas.api.constants import (
    PODSET_GROUP_NAME,
    PODSET_REQUIRED_TOPOLOGY,
    PODSET_TOPOLOGY_RELAXATION,
)
from tas.api.durations import go_duration
from tas.solver.types import PodSetRequest

UNCONSTRAINED = "unconstrained"
MAX_STAGES = 8
MAX_TEXT = 2048
EXAMPLE = f"cloud.provider.com/topology-block after 10m, {UNCONSTRAINED} after 30m"
_STAGE = re.compile(r"(\S+)\s+after\s+(\S+)", re.ASCII)


@dataclass(frozen=True)
class Stage:
    """Tried at `level` (None: unconstrained) once the workload has waited `after`."""

    level: str | None
    after: timedelta

    def describe(self) -> str:
        return f"required {self.level}" if self.level else UNCONSTRAINED


def _refuse(text: str, problem: str) -> TopologyRequestError:
    return TopologyRequestError(PODSET_TOPOLOGY_RELAXATION, text, problem)


def parse_duration(text: str) -> timedelta | None:
    """A positive or zero duration as Go writes it ("90s", "1h30m"); None when not one."""
    seconds = go_duration(text)
    if seconds is None or seconds < 0:
        return None
    return timedelta(seconds=seconds)


def parse_relaxation(annotations: Mapping[str, str]) -> tuple[Stage, ...]:
    """Every stage, the required level first (after 0), () without the annotation; raises
    TopologyRequestError naming the annotation (the webhook's refusal)."""
    text = annotations.get(PODSET_TOPOLOGY_RELAXATION)
    if text is None:
        return ()
    if len(text) > MAX_TEXT:
        raise _refuse(text, f"must be at most {MAX_TEXT} characters")
    required = annotations.get(PODSET_REQUIRED_TOPOLOGY)
    if required is None:
        raise _refuse(
            text, f"needs {quote(PODSET_REQUIRED_TOPOLOGY)}: its level is the first stage"
        )
    if PODSET_GROUP_NAME in annotations:
        raise _refuse(text, f"may not be set together with {quote(PODSET_GROUP_NAME)}")
    parts = [part.strip() for part in text.split(",")]
    if len(parts) > MAX_STAGES:
        raise _refuse(text, f"must list at most {MAX_STAGES} stages")
    stages = [Stage(required, timedelta(0))]
    for part in parts:
        stages.append(_stage(text, part, stages))
    return tuple(stages)


def _stage(text: str, part: str, before: Sequence[Stage]) -> Stage:
    match = _STAGE.fullmatch(part)
    if match is None:
        raise _refuse(
            text, f'must be a comma-separated list of "LEVEL after DURATION", e.g. {quote(EXAMPLE)}'
        )
    level, duration = match.groups()
    after = parse_duration(duration)
    if after is None or after <= timedelta(0):
        raise _refuse(text, f"has {quote(duration)}, not a duration above 0 such as 90s or 1h30m")
    if after <= before[-1].after:
        raise _refuse(text, f"has {quote(duration)}, not later than the stage before it")
    if before[-1].level is None:
        raise _refuse(text, f"has a stage after {quote(UNCONSTRAINED)}, which must be the last")
    if level == UNCONSTRAINED:
        return Stage(None, after)
    problem = label_key_problem(level)
    if problem is not None:
        raise _refuse(text, f"has level {quote(level)}, which {problem}")
    if any(stage.level == level for stage in before):
        raise _refuse(text, f"names level {quote(level)} twice (the required level included)")
    return Stage(level, after)


def validate_relaxation_levels(stages: Sequence[Stage], levels: Sequence[str]) -> None:
    """Every stage's level is the topology's, each above the one before (the required level,
    first, is checked as Kueue checks it)."""
    previous = len(levels)
    for stage in stages:
        if stage.level is None:
            continue
        if stage.level not in levels:
            if stage.after == timedelta(0):
                return  # the required level: validate_levels says it as Kueue does
            raise _refuse(
                stage.level, f"is not a level of the topology (its levels are: {', '.join(levels)})"
            )
        index = levels.index(stage.level)
        if index >= previous:
            raise _refuse(stage.level, f"is not above {levels[previous]} (the stage before it)")
        previous = index


@dataclass(frozen=True)
class Progress:
    """Where a pod set is on its way: stage `index` (0: the required level) of `total`."""

    pod_set: str
    index: int
    total: int
    current: str  # what it is tried at now
    next_stage: str | None = None  # what it is tried at next
    next_at: datetime | None = None  # when the next stage begins

    def describe(self) -> str:
        now = f"pod set {self.pod_set} at stage {self.index + 1} of {self.total} ({self.current})"
        if self.next_at is None:
            return f"{now}, the last"
        at = self.next_at.strftime("%Y-%m-%dT%H:%M:%SZ")
        return f"{now}; stage {self.index + 2} ({self.next_stage}) begins at {at}"


def relax(
    pod_set: PodSetRequest, stages: Sequence[Stage], queued_at: datetime, now: datetime
) -> tuple[PodSetRequest, Progress]:
    """The pod set as it is tried `now`, having joined its queue at `queued_at`; `stages` as
    parse_relaxation gives them (the required level first)."""
    queued_at = min(queued_at, now)  # a Workload without timestamps waits from now
    waited = now - queued_at
    index = max(0, sum(1 for stage in stages if stage.after <= waited) - 1)
    current = stages[index]
    following = stages[index + 1] if index + 1 < len(stages) else None
    progress = Progress(
        pod_set.name,
        index,
        len(stages),
        current.describe(),
        following.describe() if following else None,
        queued_at + following.after if following else None,
    )
    if not index:
        return pod_set, progress
    topology = replace(
        pod_set.topology, required=current.level, unconstrained=current.level is None
    )
    return replace(pod_set, topology=topology), progress
