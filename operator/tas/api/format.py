"""Milli-unit integers back to Kubernetes quantity strings, for status fields people read."""

from __future__ import annotations

_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def _byte_sized(resource: str) -> bool:
    return resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-")


def format_milli(resource: str, milli: int) -> str:
    if milli % 1000:
        return f"{milli}m"
    value = milli // 1000
    if _byte_sized(resource) and value:
        for suffix, size in _BINARY:
            if value % size == 0:
                return f"{value // size}{suffix}"
    return str(value)
