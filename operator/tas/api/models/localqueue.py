"""LocalQueue: the namespaced name users submit to; it points at a ClusterQueue."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from tas.api.models.common import (
    AGE_COLUMN,
    WORKLOAD_COUNT_COLUMNS,
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

CLUSTER_QUEUE_IMMUTABLE = cel("self == oldSelf", "clusterQueue cannot be changed")


class LocalQueueSpec(KubeModel):
    cluster_queue: ObjectName | None = Field(
        None, json_schema_extra=schema(CLUSTER_QUEUE_IMMUTABLE)
    )
    """The ClusterQueue that admits this queue's workloads."""


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


class LocalQueueStatus(KubeModel):
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
    flavor_usage: list[LocalQueueFlavorUsage] = Field(
        default_factory=list,
        max_length=64,
        json_schema_extra=schema(list_type="map", list_map_keys=("name",)),
    )
    """Quota used by this queue's admitted workloads, per flavor."""


class LocalQueue(KueueResource):
    """A namespace's entry point to a ClusterQueue."""

    crd: ClassVar[CRDInfo] = CRDInfo(
        plural="localqueues",
        scope="Namespaced",
        versions=("v1beta1",),
        storage_version="v1beta1",
        short_names=("queue", "queues", "lq"),
        status_subresource=True,
        printer_columns=(
            PrinterColumn("ClusterQueue", ".spec.clusterQueue", description="Backing ClusterQueue"),
            *WORKLOAD_COUNT_COLUMNS,
            AGE_COLUMN,
        ),
    )

    kind: str = "LocalQueue"
    spec: LocalQueueSpec = Field(default_factory=LocalQueueSpec)
    """The ClusterQueue behind this queue."""
    status: LocalQueueStatus = Field(default_factory=LocalQueueStatus)
    """Counts and the Active condition, written by the operator."""
