"""LocalQueue: the namespaced name users submit to; it points at a ClusterQueue."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

from pydantic import Field

from tas.api import kinds
from tas.api.models.common import (
    ADMITTED_COLUMN,
    PENDING_COLUMN,
    Condition,
    CRDInfo,
    Int32,
    KubeModel,
    KueueResource,
    ObjectName,
    PrinterColumn,
    Quantity,
    cel,
    conditions_field,
    schema,
)
from tas.api.models.fairsharing import FairSharing, LocalQueueFairSharingStatus

CLUSTER_QUEUE_IMMUTABLE = cel("self == oldSelf", "clusterQueue cannot be changed")


class LocalQueueSpec(KubeModel):
    cluster_queue: ObjectName | None = Field(
        None, json_schema_extra=schema(CLUSTER_QUEUE_IMMUTABLE)
    )
    """The ClusterQueue that admits this queue's workloads."""
    fair_sharing: FairSharing | None = None
    """This queue's weight in admission fair sharing."""


class LocalQueueResourceUsage(KubeModel):
    name: str
    total: Quantity = 0


class LocalQueueFlavorUsage(KubeModel):
    name: ObjectName
    resources: list[LocalQueueResourceUsage] = Field(
        default_factory=list,
        max_length=64,
        json_schema_extra=schema(list_type="map", list_map_keys=("name",), required=True),
    )


class LocalQueueStatusBase(KubeModel):
    """The fields both versions share (v1beta1 names the usage differently)."""

    conditions: list[Condition] = conditions_field(
        "Active, true while the ClusterQueue behind this queue can admit."
    )
    pending_workloads: Int32 = Field(0, ge=0)
    """Workloads of this queue waiting for admission."""
    reserving_workloads: Int32 = Field(0, ge=0)
    """Workloads of this queue holding a quota reservation."""
    admitted_workloads: Int32 = Field(0, ge=0)
    """Workloads of this queue admitted and not finished."""
    flavors_reservation: list[LocalQueueFlavorUsage] = Field(
        default_factory=list,
        max_length=64,
        json_schema_extra=schema(list_type="map", list_map_keys=("name",)),
    )
    """Quota reserved by this queue's workloads, per flavor."""
    fair_sharing: LocalQueueFairSharingStatus | None = None
    """The queue's decayed usage, written when admission fair sharing is configured."""


def flavor_usage_field() -> Any:
    return Field(
        default_factory=list,
        max_length=64,
        description="Quota used by this queue's admitted workloads, per flavor.",
        json_schema_extra=schema(list_type="map", list_map_keys=("name",)),
    )


class LocalQueueStatus(LocalQueueStatusBase):
    flavors_usage: list[LocalQueueFlavorUsage] = flavor_usage_field()


class LocalQueue(KueueResource):
    """A namespace's entry point to a ClusterQueue."""

    crd: ClassVar[CRDInfo] = CRDInfo(
        resource=kinds.LOCAL_QUEUES,
        versions=("v1beta1", "v1beta2"),
        short_names=("queue", "queues", "lq"),
        status_subresource=True,
        printer_columns=(
            PrinterColumn("ClusterQueue", ".spec.clusterQueue", description="Backing ClusterQueue"),
            PENDING_COLUMN,
            replace(ADMITTED_COLUMN, description=ADMITTED_COLUMN.description + "."),
        ),
    )

    kind: str = "LocalQueue"
    spec: LocalQueueSpec = Field(default_factory=LocalQueueSpec)
    """The ClusterQueue behind this queue."""
    status: LocalQueueStatus = Field(default_factory=LocalQueueStatus)
    """Counts and the Active condition, written by the operator."""
