"""A queued TrainJob's webhooks, as Kueue's trainjob_webhook.go. Pure: the reviewed TrainJob
(and for validation its runtime, which the caller fetches) in, a patch or reasons out.

Mutating, at creation: suspended until admitted, and Kueue's own runtime patch (manager
`kueue.x-k8s.io/manager`) appended, carrying the queue name as a label of the JobSet the
Trainer makes. Kueue writes its pod set patches into it at start. Kueue's webhook rewrites the
whole TrainJob from its Go types, so a quantity given as a number (`cpu: 1`) is stored as its
string ("1"); so does ours: the Trainer's own defaulting webhook rewrites it the same way on every
later update that changes a runtime patch, and its rule that `spec.trainer` never changes would
then refuse Kueue's start.

Validating, at creation and update: the topology annotations of every replicatedJob's pod
template, as the runtime and the TrainJob's runtime patches make it. A TrainJob whose runtime
is missing is refused, as Kueue's webhook refuses it when it cannot build the pod sets.
"""

from __future__ import annotations

from collections.abc import Mapping

from tas.api.annotations import TopologyRequestError
from tas.api.constants import QUEUE_NAME_LABEL
from tas.api.quantity import canonical_number
from tas.integrations.trainjob.controller import KUEUE_MANAGER, pod_sets_of, runtime_patches
from tas.integrations.trainjob.runtime import runtime_ref
from tas.jobframework.workload import queue_name

ADJUST = (
    'Adjust either the "TrainJob.spec.runtimePatches" or the "TrainingRuntime.Template" '
    "annotations for the corresponding Job"
)


def mutate(trainjob: Mapping) -> dict:
    """The merge patch for a queued TrainJob at creation: suspended, Kueue's runtime patch
    (the list is given whole)."""
    queue = queue_name(trainjob)
    if not queue:
        return {}
    ours = {
        "manager": KUEUE_MANAGER,
        "trainingRuntimeSpec": {
            "template": {"metadata": {"labels": {QUEUE_NAME_LABEL: queue}}, "spec": {}}
        },
    }
    patches = [p for p in runtime_patches(trainjob) if p.get("manager") != KUEUE_MANAGER]
    spec: dict = {"suspend": True, "runtimePatches": [*patches, ours]}
    if resources := numbers_as_quantities(trainjob):
        spec["trainer"] = {"resourcesPerNode": resources}
    return {"spec": spec}


def numbers_as_quantities(trainjob: Mapping) -> dict:
    """spec.trainer.resourcesPerNode's quantities given as numbers, as their strings (a merge
    patch of requests and limits; empty when there are none)."""
    trainer = (trainjob.get("spec") or {}).get("trainer") or {}
    out: dict = {}
    resources = trainer.get("resourcesPerNode") if isinstance(trainer, Mapping) else None
    for part in ("requests", "limits"):
        amounts = (resources or {}).get(part) if isinstance(resources, Mapping) else None
        if not isinstance(amounts, Mapping):
            continue
        numbers = {
            name: canonical_number(amount)
            for name, amount in amounts.items()
            if isinstance(amount, int | float) and not isinstance(amount, bool)
        }
        if numbers:
            out[part] = numbers
    return out


def validate(trainjob: Mapping, runtime: Mapping | None) -> list[str]:
    """Why Kueue would refuse this TrainJob with this runtime (None: not found)."""
    if runtime is None:
        return [f"spec.runtimeRef: {runtime_ref(trainjob)} not found"]
    try:
        pod_sets_of(trainjob, runtime)
    except TopologyRequestError as exc:
        return [f"{exc}. {ADJUST}"]
    return []
