"""A new Workload's priority, resolved as Kueue resolves it. Pure: the classes come from the
cache (watched WorkloadPriorityClasses and PriorityClasses).

1. The object's `kueue.x-k8s.io/priority-class` label names a WorkloadPriorityClass.
2. Otherwise a PriorityClass the object names itself, for a kind that has such a field (Kueue's
   JobWithPriorityClass: a training job's `runPolicy.schedulingPolicy.priorityClass`).
3. Otherwise the first pod template with a `priorityClassName` names a PriorityClass.
4. Otherwise the PriorityClass with `globalDefault: true` (the lowest value when several).
5. Otherwise priority 0 and no class.

A named class that does not exist is an error: the Workload is not created until it does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tas.api.constants import (
    POD_PRIORITY_CLASS,
    WORKLOAD_PRIORITY_CLASS,
    WORKLOAD_PRIORITY_CLASS_LABEL,
)
from tas.cache.projections import PodPriorityClass


class PriorityClassMissing(LookupError):
    """The class the object names does not exist; the message names the field."""


@dataclass(frozen=True)
class Priority:
    value: int = 0
    class_name: str | None = None
    class_kind: tuple[str, str] = POD_PRIORITY_CLASS  # (group, kind) of the class named

    def to_spec(self) -> dict:
        """The Workload spec fields."""
        spec: dict = {"priority": self.value}
        if self.class_name:
            group, kind = self.class_kind
            spec["priorityClassRef"] = {"group": group, "kind": kind, "name": self.class_name}
        return spec


def resolve(
    labels: Mapping[str, str],
    templates: Iterable[Mapping],
    workload_classes: Mapping[str, int],
    pod_classes: Mapping[str, PodPriorityClass],
    named: tuple[str, str] | None = None,
) -> Priority:
    """`named`: (class name, its field) when the object names a PriorityClass itself."""
    name = labels.get(WORKLOAD_PRIORITY_CLASS_LABEL)
    if name:
        if name not in workload_classes:
            raise PriorityClassMissing(
                f"metadata.labels[{WORKLOAD_PRIORITY_CLASS_LABEL}]: "
                f"WorkloadPriorityClass {name!r} not found"
            )
        return Priority(workload_classes[name], name, WORKLOAD_PRIORITY_CLASS)
    if named and named[0]:
        return _pod_class(*named, pod_classes)
    name = next(
        (
            t["spec"]["priorityClassName"]
            for t in templates
            if isinstance(t.get("spec"), Mapping) and t["spec"].get("priorityClassName")
        ),
        None,
    )
    if name:
        return _pod_class(name, "spec.template.spec.priorityClassName", pod_classes)
    defaults = sorted(
        (pc.value, pc_name) for pc_name, pc in pod_classes.items() if pc.global_default
    )
    if defaults:
        value, name = defaults[0]
        return Priority(value, name, POD_PRIORITY_CLASS)
    return Priority()


def _pod_class(name: str, field: str, pod_classes: Mapping[str, PodPriorityClass]) -> Priority:
    if name not in pod_classes:
        raise PriorityClassMissing(f"{field}: PriorityClass {name!r} not found")
    return Priority(pod_classes[name].value, name, POD_PRIORITY_CLASS)
