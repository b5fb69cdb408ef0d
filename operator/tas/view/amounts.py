"""Amounts, times and text as people read them on screen: `tas top` and the offline summaries.

No dependencies, so that `tas solve` and `tas simulate` need nothing more to print for people.
"""

from __future__ import annotations

import math

_BINARY = (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
LARGEST = 10**21  # milli-units; beyond this an amount is only said to be huge
DURATIONS = (("d", 86400, 2), ("h", 3600, 1), ("min", 60, 1))  # unit, seconds, from how many


def byte_sized(resource: str) -> bool:
    return resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-")


def amount(resource: str, milli: int) -> str:
    """A resource amount in milli-units, short: cpu 1500 -> 1.5, memory -> 24Gi or 1.5Gi."""
    if abs(milli) >= LARGEST:
        return "huge" if milli > 0 else "-huge"
    value = milli / 1000
    if byte_sized(resource):
        for suffix, size in _BINARY:
            if abs(value) >= size:
                return _trimmed(value / size) + suffix
    return _trimmed(value)


def _trimmed(value: float) -> str:
    """At most one decimal above 10, two below; no trailing zeros."""
    text = f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def duration(seconds: float) -> str:
    """Seconds as a person reads them: 45 s, 12 min, 5.3 h, 2.1 d."""
    if not math.isfinite(seconds):
        return f"{seconds} s"
    for unit, size, least in DURATIONS:
        if abs(seconds) >= size * least:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.3g} s"


def count(number: int) -> str:
    """A count with thousands separators; a huge one is only said to be huge."""
    return f"{number:,}" if abs(number) < LARGEST else "huge"


def printable(text: str) -> str:
    """The text with every character a terminal would act on (escape, carriage return...)
    replaced by "?"."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else "?" for char in text)
