"""PlacementGroup (ours, tas-operator.io/v1alpha1; gate TASPlacementGroups): constraints that
hold across the workloads that name the group, and the state they leave behind.

The operator makes one from the first member's annotations when none exists; a user may also
create it first. The status is written by the operator: it is what a restart reads back.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from tas.api import kinds
from tas.api.constants import PLACEMENT_GROUP_MAX_PARTITIONS, TAS_GROUP
from tas.api.models.common import (
    AGE_COLUMN,
    CRDInfo,
    Int32,
    KubeModel,
    KueueResource,
    LabelKey,
    PrinterColumn,
    cel,
    schema,
)


class PlacementGroupSpec(KubeModel):
    affinity_topology: LabelKey | None = None
    """Every pod of the group lands in one domain of this level (chosen by the first member,
    free again when the group is empty)."""
    anti_affinity_topology: LabelKey | None = None
    """No two pods of the group share a domain of this level."""
    partitions: Int32 | None = Field(default=None, ge=1, le=PLACEMENT_GROUP_MAX_PARTITIONS)
    """Split the group's pods into this many partitions of sizes within 1 of each other."""
    partition_topology: LabelKey | None = None
    """A domain of this level holds pods of one partition only."""
    exclusive_topology: LabelKey | None = None
    """The group takes whole domains of this level, empty when taken; no other pod enters."""


class PartitionStatus(KubeModel):
    partition: Int32 = Field(ge=1)
    """The partition's number (the pods' placement-group-partition label)."""
    domains: list[list[str]] = Field(default_factory=list)
    """The domains of the partition level it holds, as their level values."""
    pods: Int32 = 0


class PlacementGroupStatus(KubeModel):
    members: list[str] = Field(default_factory=list, json_schema_extra=schema(list_type="atomic"))
    """The admitted Workloads of the group."""
    pods: Int32 = 0
    """Pods of the admitted members."""
    affinity_domain: list[str] | None = None
    """The domain every member lands in (affinity), as its level values."""
    owned_domains: list[list[str]] | None = None
    """The domains the group holds whole (exclusivity)."""
    partitions: list[PartitionStatus] | None = None
    """Each partition's domains; kept so a restart keeps every partition where it was."""


class PlacementGroup(KueueResource):
    """Workloads placed together over time: affinity, anti-affinity, partitions, exclusivity."""

    crd: ClassVar[CRDInfo] = CRDInfo(
        resource=kinds.PLACEMENT_GROUPS,
        versions=("v1alpha1",),
        short_names=("pg",),
        status_subresource=True,
        printer_columns=(
            PrinterColumn("Members", ".status.members", "string", "Admitted members"),
            PrinterColumn("Pods", ".status.pods", "integer", "Pods of the admitted members"),
            PrinterColumn("Domain", ".status.affinityDomain", "string", "The affinity domain"),
            AGE_COLUMN,
        ),
        categories=("tas",),
    )

    api_version: str = f"{TAS_GROUP}/v1alpha1"
    kind: str = "PlacementGroup"
    spec: PlacementGroupSpec = Field(
        default_factory=PlacementGroupSpec,
        json_schema_extra=schema(
            cel(
                "has(self.partitions) == has(self.partitionTopology)",
                "partitions and partitionTopology must be set together",
            ),
            cel("self == oldSelf", "spec is immutable: the members are placed by it"),
        ),
    )
    """The group's constraints, each at a topology level."""
    status: PlacementGroupStatus | None = None
    """The group's state, written by the operator."""
