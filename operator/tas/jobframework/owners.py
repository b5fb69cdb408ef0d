"""Whether an object is admitted with the object controlling it (Kueue's
jobframework.IsOwnerManagedByKueue): its controller (the ownerReference with controller: true) is
of a kind admitted as a whole, so the object is never queued on its own (a JobSet's Jobs, a
TrainJob's JobSet, their pods)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tas.api.frameworks import Resource


def controller_of(obj: Mapping) -> Mapping | None:
    """The ownerReference marked controller, if any (there is at most one)."""
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return next((ref for ref in refs if ref.get("controller")), None)


@dataclass(frozen=True)
class ManagedOwners:
    kinds: frozenset[tuple[str, str]]  # (API group, kind) of the kinds admitted as a whole

    @classmethod
    def of(cls, resources: Iterable[Resource]) -> ManagedOwners:
        return cls(frozenset((r.group, r.kind) for r in resources))

    def controller(self, obj: Mapping) -> str | None:
        """The uid of the object's controller if it is of a managed kind, else None."""
        ref = controller_of(obj)
        if ref is None:
            return None
        api_version = ref.get("apiVersion") or ""
        group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
        if (group, ref.get("kind")) not in self.kinds:
            return None
        return ref.get("uid") or None
