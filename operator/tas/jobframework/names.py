"""Workload names, as Kueue derives them from the owner, so that they read the same."""

from __future__ import annotations

import hashlib

HASH_LENGTH = 5
MAX_PREFIX = 252 - HASH_LENGTH  # 253 for a name, less "-" and the hash


def workload_name(kind: str, group: str, owner_name: str, owner_uid: str) -> str:
    """Kueue's GetWorkloadNameForOwnerWithGVK: `<kind>-<name>-<5 hex of the owner>`."""
    prefix = f"{kind.lower()}-{owner_name}"[:MAX_PREFIX]
    digest = hashlib.sha1(f"{kind}\n{group}\n{owner_name}\n{owner_uid}".encode()).hexdigest()
    return f"{prefix}-{digest[:HASH_LENGTH]}"
