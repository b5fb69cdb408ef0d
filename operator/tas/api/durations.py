"""Durations as Go writes them (time.ParseDuration): "90s", "5m", "1h30m", "1.5s", "-2m", "0".

One parser for every place a user gives a duration (Kueue's Configuration, our annotations), so
they all accept the same text."""

from __future__ import annotations

import re

_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
MAX_SECONDS = (2**63 - 1) / 1e9  # Go's time.Duration is int64 nanoseconds: longer overflows


def go_duration(text: object) -> float | None:
    """The duration in seconds, or None when `text` is not one Go would accept."""
    if not isinstance(text, str):
        return None
    body = text[1:] if text[:1] in "+-" else text
    if body == "0":
        return 0.0
    parts = _PART.findall(body)
    if not parts or "".join(n + u for n, u in parts) != body:
        return None
    seconds = sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)
    if seconds > MAX_SECONDS:
        return None
    return -seconds if text.startswith("-") else seconds
