"""A pod as every integration reads it.

The pod integration (integrations/pod) reads far more of a pod; these few are what the other
kinds (a LeaderWorkerSet waiting for its pods) share with it.
"""

# No `from __future__ import annotations`: it would bind the name `annotations`, which this
# module defines (a pod's annotations).
from collections.abc import Mapping

from tas.api.constants import POD_SUSPENDING_PARENT_ANNOTATION

Key = tuple[str, str]  # (namespace, name)


def meta(pod: Mapping) -> Mapping:
    return pod.get("metadata") or {}


def labels(pod: Mapping) -> Mapping[str, str]:
    return meta(pod).get("labels") or {}


def annotations(pod: Mapping) -> Mapping[str, str]:
    return meta(pod).get("annotations") or {}


def key(pod: Mapping) -> Key:
    return meta(pod).get("namespace") or "", meta(pod)["name"]


def suspending_parent(pod: Mapping) -> str | None:
    """The framework (StatefulSet, LeaderWorkerSet) whose webhook marked the pod's template."""
    return annotations(pod).get(POD_SUSPENDING_PARENT_ANNOTATION)
