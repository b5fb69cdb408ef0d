"""The defragmentation annotations (ours, gate TASDefragmentation): whether a running
workload may be moved, and after how long. Read from a Job's, a Workload's or a LocalQueue's
annotations; a bad value is a MovableError naming the annotation."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tas.api.constants import DEFAULT_MOVABLE_AFTER_SECONDS, MOVABLE, MOVABLE_AFTER
from tas.api.durations import go_duration

MAX_MOVABLE_AFTER_SECONDS = 7 * 24 * 3600.0  # a week: anything longer is surely a mistake


class MovableError(ValueError):
    def __init__(self, annotation: str, detail: str) -> None:
        super().__init__(f"annotation {annotation}: {detail}")
        self.annotation = annotation
        self.detail = detail


@dataclass(frozen=True)
class Movable:
    movable: bool | None  # None: not given (the LocalQueue's default applies)
    after: float | None  # seconds; None: not given


def parse(annotations: Mapping[str, str]) -> Movable:
    """The two annotations as given; raises MovableError."""
    raw = annotations.get(MOVABLE)
    movable = None
    if raw is not None:
        if raw not in ("true", "false"):
            raise MovableError(MOVABLE, f'must be "true" or "false", got {raw!r}')
        movable = raw == "true"
    after_raw = annotations.get(MOVABLE_AFTER)
    after = None if after_raw is None else duration_seconds(after_raw)
    return Movable(movable, after)


def duration_seconds(text: str) -> float:
    """A duration as Go writes one ("5m", "1h30m", "45s", "0"); raises MovableError."""
    seconds = go_duration(text)
    if seconds is None or seconds < 0:
        raise MovableError(
            MOVABLE_AFTER, f'must be a duration such as "5m", "90s" or "1h30m", got {text!r}'
        )
    if seconds > MAX_MOVABLE_AFTER_SECONDS:
        raise MovableError(MOVABLE_AFTER, f"must be at most a week (168h), got {text!r}")
    return seconds


def effective(own: Movable, default: Movable | None) -> tuple[bool, float]:
    """Whether it may move and after how many seconds: its own annotations, else its
    LocalQueue's, else not movable and the default wait."""
    default = default or Movable(None, None)
    movable = own.movable if own.movable is not None else bool(default.movable)
    after = own.after if own.after is not None else default.after
    return movable, DEFAULT_MOVABLE_AFTER_SECONDS if after is None else after
