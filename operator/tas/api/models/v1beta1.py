"""Kueue's v1beta1, as far as it differs from v1beta2 (the stored version, the other models).

Served for the manifests and clients written before Kueue v0.16; the conversion webhook
(tas.api.conversion) turns each into the other. Only what differs is declared here:

- Workload: `priorityClassName` + `priorityClassSource` (v1beta2: `priorityClassRef`); the
  topology assignment as `domains: [{values, count}]` (v1beta2: compact `slices`).
- ClusterQueue: `cohort` (v1beta2: `cohortName`); flavorFungibility also takes the old
  `Borrow` and `Preempt` (v1beta2: `MayStopSearch`).
- LocalQueue: status `flavorUsage` (v1beta2: `flavorsUsage`).

Our v1beta1 keeps `podsetSliceRequiredTopologyConstraints` in the topology request, which
Kueue's v1beta1 lacks, so that nothing is lost on a round trip.
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar, Literal

from pydantic import ConfigDict, Field, model_validator

from tas.api.constants import (
    KUEUE_V1BETA1_API_VERSION,
    POD_PRIORITY_CLASS_SOURCE,
    WORKLOAD_PRIORITY_CLASS_SOURCE,
)
from tas.api.models import clusterqueue, localqueue, workload
from tas.api.models.common import CRDInfo, Int32, KubeModel, ObjectName, cel, schema

# --- Workload -------------------------------------------------------------------------------


class TopologyDomainAssignment(KubeModel):
    values: list[str] = Field(
        min_length=1, max_length=16, json_schema_extra=schema(list_type="atomic")
    )
    """The domain's label values, one per entry of levels."""
    count: Int32 = Field(ge=1)
    """Pods to place in this domain."""


class TopologyAssignment(KubeModel):
    """Where the pods of a PodSet go: a pod count per lowest-level domain."""

    levels: list[str] = Field(
        min_length=1, max_length=16, json_schema_extra=schema(list_type="atomic")
    )
    """Node label keys, highest first; only kubernetes.io/hostname when that is the lowest."""
    domains: list[TopologyDomainAssignment]
    """Domains with their pod counts."""

    @model_validator(mode="after")
    def _values_match_levels(self) -> TopologyAssignment:
        for domain in self.domains:
            if len(domain.values) != len(self.levels):
                raise ValueError(
                    f"domain {domain.values} has {len(domain.values)} values "
                    f"for {len(self.levels)} levels"
                )
        return self


class PodSetAssignment(workload.PodSetAssignment):
    topology_assignment: TopologyAssignment | None = None  # type: ignore[assignment]
    """Placement of the pods in the flavor's topology."""


class Admission(workload.Admission):
    pod_set_assignments: list[PodSetAssignment] = Field(  # type: ignore[assignment]
        max_length=workload.MAX_PODSETS,
        json_schema_extra=schema(list_type="map", list_map_keys=("name",)),
    )
    """One entry per PodSet."""


class WorkloadStatus(workload.WorkloadStatus):
    admission: Admission | None = None
    """Set when quota is reserved; cleared on eviction."""


# mypy takes only literal values in Literal[...], not constants; pydantic reads these at run time.
PriorityClassSource = Literal[WORKLOAD_PRIORITY_CLASS_SOURCE, POD_PRIORITY_CLASS_SOURCE, ""]  # type: ignore[valid-type]


class WorkloadSpec(workload.WorkloadSpecBase):
    model_config = ConfigDict(
        json_schema_extra=schema(
            cel(
                "!has(self.priorityClassName) || has(self.priority)",
                "priority must be set when priorityClassName is set",
            )
        )
    )

    priority_class_name: ObjectName | None = None
    """The class the priority was taken from (a WorkloadPriorityClass or a PriorityClass)."""
    priority_class_source: PriorityClassSource | None = None
    """Which kind priorityClassName names."""


class Workload(workload.Workload):
    crd: ClassVar[CRDInfo] = workload.Workload.crd
    api_version: str = KUEUE_V1BETA1_API_VERSION
    spec: WorkloadSpec  # type: ignore[assignment]
    status: WorkloadStatus = Field(default_factory=WorkloadStatus)


# --- ClusterQueue ---------------------------------------------------------------------------


class FlavorFungibility(clusterqueue.FlavorFungibility):
    when_can_borrow: Literal["MayStopSearch", "TryNextFlavor", "Borrow"] = Field(  # type: ignore[assignment]
        "MayStopSearch", json_schema_extra=schema(default="MayStopSearch")
    )
    """MayStopSearch (Borrow, its old name): take a flavor that fits by borrowing.
    TryNextFlavor: look for a flavor that fits without borrowing first."""
    when_can_preempt: Literal["MayStopSearch", "TryNextFlavor", "Preempt"] = Field(  # type: ignore[assignment]
        "TryNextFlavor", json_schema_extra=schema(default="TryNextFlavor")
    )
    """TryNextFlavor: look for a flavor that fits without preempting first. MayStopSearch
    (Preempt, its old name): preempt in the first flavor where preemption makes room."""


class ClusterQueueSpec(clusterqueue.ClusterQueueSpecBase):
    model_config = ConfigDict(
        json_schema_extra=schema(
            cel(
                clusterqueue.BORROWING_NEEDS_COHORT["rule"].replace("cohortName", "cohort"),
                clusterqueue.BORROWING_NEEDS_COHORT["message"],
            )
        )
    )

    cohort: ObjectName | None = None
    """The cohort whose members lend each other their unused quota."""
    flavor_fungibility: FlavorFungibility | None = None
    """Whether to try the next flavor before borrowing or preempting."""


class ClusterQueue(clusterqueue.ClusterQueue):
    crd: ClassVar[CRDInfo] = replace(
        clusterqueue.ClusterQueue.crd,
        printer_columns=clusterqueue.cluster_queue_columns(".spec.cohort"),
    )
    api_version: str = KUEUE_V1BETA1_API_VERSION
    spec: ClusterQueueSpec = Field(default_factory=ClusterQueueSpec)  # type: ignore[assignment]


# --- LocalQueue -----------------------------------------------------------------------------


class LocalQueueStatus(localqueue.LocalQueueStatusBase):
    flavor_usage: list[localqueue.LocalQueueFlavorUsage] = localqueue.flavor_usage_field()


class LocalQueue(localqueue.LocalQueue):
    api_version: str = KUEUE_V1BETA1_API_VERSION
    status: LocalQueueStatus = Field(default_factory=LocalQueueStatus)  # type: ignore[assignment]


# The stored version's model -> v1beta1's, for each kind whose schema differs.
MODELS: dict[type, type] = {
    workload.Workload: Workload,
    clusterqueue.ClusterQueue: ClusterQueue,
    localqueue.LocalQueue: LocalQueue,
}
