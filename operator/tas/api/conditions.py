"""metav1.Condition lists, updated the way Kubernetes controllers update them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

from tas.api.constants import POD_COND_DISRUPTION_TARGET, POD_COND_TERMINATED_BY_KUEUE


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def set_condition(
    conditions: Iterable[Mapping],
    type_: str,
    status: bool,
    reason: str,
    message: str,
    *,
    generation: int = 0,
    now: str | None = None,
) -> list[dict]:
    """A copy of `conditions` with `type_` set; lastTransitionTime moves only when status flips."""
    text = "True" if status else "False"
    previous = find(conditions, type_)
    updated = {
        "type": type_,
        "status": text,
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": previous.get("lastTransitionTime")
        if previous is not None and previous.get("status") == text
        else (now or now_rfc3339()),
    }
    out = [dict(c) if c.get("type") != type_ else updated for c in conditions]
    return out if previous is not None else [*out, updated]


def find(conditions: Iterable[Mapping], type_: str) -> Mapping | None:
    return next((c for c in conditions if c.get("type") == type_), None)


def pod_terminated_by_kueue(reason: str, message: str, *, fail: bool = True) -> dict:
    """A Pending pod's status patch that fails it so its owner makes a new one, as Kueue fails
    pods it will never let run where they are pinned. `fail=False` only records why (for a pod
    about to be deleted: its node's kubelet owns its phase)."""
    return _pod_failed(POD_COND_TERMINATED_BY_KUEUE, reason, message, fail=fail)


def pod_disrupted(reason: str, message: str) -> dict:
    """A pod's status patch that fails it as Kubernetes fails a pod it removes (the pod garbage
    collector, the taint manager): a Job's podFailurePolicy may match DisruptionTarget."""
    return _pod_failed(POD_COND_DISRUPTION_TARGET, reason, message, fail=True)


def _pod_failed(condition: str, reason: str, message: str, *, fail: bool) -> dict:
    status: dict = {"phase": "Failed"} if fail else {}
    return {
        "status": {
            **status,
            "conditions": [
                {
                    "type": condition,
                    "status": "True",
                    "reason": reason,
                    "message": message,
                    "lastTransitionTime": now_rfc3339(),
                }
            ],
        }
    }
