"""ClusterQueue: quota per (flavor, resource), and the queue that admits against it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field

from tas.api import kinds
from tas.api.constants import BEST_EFFORT_FIFO
from tas.api.models.common import (
    ADMITTED_COLUMN,
    PENDING_COLUMN,
    Condition,
    CRDInfo,
    Int32,
    KubeModel,
    KueueResource,
    LabelSelector,
    NonNegativeQuantity,
    ObjectName,
    PrinterColumn,
    Quantity,
    cel,
    conditions_field,
    schema,
)
from tas.api.models.fairsharing import AdmissionScope, FairSharing, FairSharingStatus

QueueingStrategy = Literal["StrictFIFO", "BestEffortFIFO"]
PreemptionPolicy = Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"]
ReclaimPolicy = Literal["Never", "LowerPriority", "Any"]
BorrowPolicy = Literal["Never", "LowerPriority"]

BORROWING_NEEDS_COHORT = cel(
    "!has(self.cohortName) && has(self.resourceGroups) ? self.resourceGroups.all(rg, "
    "rg.flavors.all(f, f.resources.all(r, !has(r.borrowingLimit)))) : true",
    "borrowingLimit must be nil when cohort is empty",
)
PREFERENCE_NEEDS_TRY_NEXT = cel(
    "!has(self.preference) || (self.whenCanBorrow == 'TryNextFlavor' && "
    "self.whenCanPreempt == 'TryNextFlavor')",
    "preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor",
)

BORROW_NEEDS_RECLAIM = cel(
    "!(self.reclaimWithinCohort == 'Never' && has(self.borrowWithinCohort) && "
    "self.borrowWithinCohort.policy != 'Never')",
    "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
)

FLAVORS_COVER_ALL_RESOURCES = cel(
    "self.flavors.all(f, size(f.resources) == size(self.coveredResources))",
    "each flavor must list exactly as many resources as coveredResources",
)


class ResourceQuota(KubeModel):
    name: str
    """Resource name, e.g. cpu, memory, nvidia.com/gpu."""
    nominal_quota: NonNegativeQuantity
    """How much of the resource this ClusterQueue may admit in this flavor."""
    borrowing_limit: NonNegativeQuantity | None = None
    """How much more it may borrow from its cohort's unused quota (absent: no limit)."""
    lending_limit: NonNegativeQuantity | None = None
    """How much of its nominal quota the cohort may borrow (absent: all of it)."""


class FlavorQuotas(KubeModel):
    name: ObjectName
    """Name of a ResourceFlavor."""
    resources: list[ResourceQuota] = Field(
        min_length=1,
        max_length=64,
        json_schema_extra=schema(list_type="map", list_map_keys=("name",)),
    )
    """Quota for each covered resource, in the order of coveredResources."""


class ResourceGroup(KubeModel):
    """Resources whose quota is given together, by one list of flavors tried in order."""

    model_config = ConfigDict(json_schema_extra=schema(FLAVORS_COVER_ALL_RESOURCES))

    covered_resources: list[str] = Field(min_length=1, max_length=64)
    """The resources of this group, e.g. [cpu, memory]."""
    flavors: list[FlavorQuotas] = Field(
        min_length=1,
        max_length=64,
        json_schema_extra=schema(list_type="map", list_map_keys=("name",)),
    )
    """Flavors in the order admission tries them."""


class BorrowWithinCohort(KubeModel):
    policy: BorrowPolicy = Field("Never", json_schema_extra=schema(default="Never"))
    """Whether to preempt in the cohort while borrowing: Never or LowerPriority."""
    max_priority_threshold: Int32 | None = None
    """Only workloads of this priority or lower may be preempted while borrowing."""


class ClusterQueuePreemption(KubeModel):
    """Kueue's preemption policies. Only withinClusterQueue acts until cohorts are served."""

    model_config = ConfigDict(json_schema_extra=schema(BORROW_NEEDS_RECLAIM))

    reclaim_within_cohort: ReclaimPolicy = Field("Never", json_schema_extra=schema(default="Never"))
    """Preempt workloads of other ClusterQueues in the cohort that borrow this queue's quota."""
    borrow_within_cohort: BorrowWithinCohort | None = None
    """Preempt in the cohort while borrowing."""
    within_cluster_queue: PreemptionPolicy = Field(
        "Never", json_schema_extra=schema(default="Never")
    )
    """Preempt workloads of this ClusterQueue: Never, LowerPriority, LowerOrNewerEqualPriority."""


class FlavorFungibility(KubeModel):
    """Whether a workload tries the next flavor before borrowing or preempting in this one."""

    model_config = ConfigDict(json_schema_extra=schema(PREFERENCE_NEEDS_TRY_NEXT))

    when_can_borrow: Literal["MayStopSearch", "TryNextFlavor"] = Field(
        "MayStopSearch", json_schema_extra=schema(default="MayStopSearch")
    )
    """MayStopSearch: take a flavor that fits by borrowing. TryNextFlavor: look for a flavor
    that fits without borrowing first."""
    when_can_preempt: Literal["MayStopSearch", "TryNextFlavor"] = Field(
        "TryNextFlavor", json_schema_extra=schema(default="TryNextFlavor")
    )
    """TryNextFlavor: look for a flavor that fits without preempting first. MayStopSearch:
    preempt in the first flavor where preemption makes room."""
    preference: Literal["BorrowingOverPreemption", "PreemptionOverBorrowing"] | None = None
    """When every flavor needs borrowing or preemption, which to prefer."""


class ClusterQueueSpecBase(KubeModel):
    """The fields both versions share (v1beta1 names the cohort differently)."""

    resource_groups: list[ResourceGroup] = Field(
        default_factory=list, max_length=16, json_schema_extra=schema(list_type="atomic")
    )
    """Groups of resources and the flavors that give quota for them."""
    queueing_strategy: QueueingStrategy = Field(
        BEST_EFFORT_FIFO, json_schema_extra=schema(default=BEST_EFFORT_FIFO)
    )
    """StrictFIFO: the oldest workload blocks the ones behind it. BestEffortFIFO (default): a
    workload that does not fit does not block newer ones that do."""
    namespace_selector: LabelSelector | None = None
    """Namespaces whose LocalQueues may use this ClusterQueue: absent selects none, {} all."""
    preemption: ClusterQueuePreemption | None = None
    """When a pending workload may evict admitted ones to make room (default: never)."""
    flavor_fungibility: FlavorFungibility | None = None
    """Whether to try the next flavor before borrowing or preempting."""
    fair_sharing: FairSharing | None = None
    """This queue's weight when fair sharing is configured."""
    admission_scope: AdmissionScope | None = None
    """Whether admission fair sharing orders this queue's workloads."""


class ClusterQueueSpec(ClusterQueueSpecBase):
    model_config = ConfigDict(json_schema_extra=schema(BORROWING_NEEDS_COHORT))

    cohort_name: ObjectName | None = None
    """The cohort whose members lend each other their unused quota."""


class ResourceUsage(KubeModel):
    name: str
    total: Quantity = 0
    """Quota in use, including what is borrowed."""
    borrowed: Quantity = 0
    """Quota in use above nominalQuota."""


class FlavorUsage(KubeModel):
    name: ObjectName
    resources: list[ResourceUsage] = Field(
        default_factory=list,
        max_length=64,
        json_schema_extra=schema(list_type="map", list_map_keys=("name",), required=True),
    )


def _usage_field(description: str) -> Any:
    return Field(
        default_factory=list,
        max_length=64,
        description=description,
        json_schema_extra=schema(list_type="map", list_map_keys=("name",)),
    )


class ClusterQueueStatus(KubeModel):
    conditions: list[Condition] = conditions_field(
        "Active, with reason Ready or why it cannot admit."
    )
    flavors_reservation: list[FlavorUsage] = _usage_field(
        "Quota reserved by the workloads of this ClusterQueue, per flavor."
    )
    flavors_usage: list[FlavorUsage] = _usage_field(
        "Quota used by the admitted workloads of this ClusterQueue, per flavor."
    )
    pending_workloads: Int32 = Field(0, ge=0)
    """Workloads waiting for admission."""
    reserving_workloads: Int32 = Field(0, ge=0)
    """Workloads holding a quota reservation."""
    admitted_workloads: Int32 = Field(0, ge=0)
    """Workloads admitted and not finished."""
    fair_sharing: FairSharingStatus | None = None
    """The queue's weighted share, written when fair sharing is configured."""


def cluster_queue_columns(cohort_path: str) -> tuple[PrinterColumn, ...]:
    """Kueue's columns; the cohort's field is named differently in v1beta1."""
    return (
        PrinterColumn(
            "Cohort", cohort_path, description="Cohort that this ClusterQueue belongs to"
        ),
        PrinterColumn(
            "Strategy",
            ".spec.queueingStrategy",
            description="The queueing strategy used to prioritize workloads",
            priority=1,
        ),
        PENDING_COLUMN,
        replace(ADMITTED_COLUMN, priority=1),
    )


class ClusterQueue(KueueResource):
    """Quota for a set of namespaces, and the order in which their workloads are admitted."""

    crd: ClassVar[CRDInfo] = CRDInfo(
        resource=kinds.CLUSTER_QUEUES,
        versions=("v1beta1", "v1beta2"),
        short_names=("cq",),
        status_subresource=True,
        printer_columns=cluster_queue_columns(".spec.cohortName"),
    )

    kind: str = "ClusterQueue"
    spec: ClusterQueueSpec = Field(default_factory=ClusterQueueSpec)
    """Quota and queueing policy."""
    status: ClusterQueueStatus = Field(default_factory=ClusterQueueStatus)
    """Counts, usage and the Active condition, written by the operator."""
