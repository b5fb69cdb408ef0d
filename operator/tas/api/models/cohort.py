"""Cohort: ClusterQueues that lend each other unused quota; a Cohort object may add quota of
its own and hang under a parent cohort."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from tas.api import kinds
from tas.api.models.clusterqueue import ResourceGroup
from tas.api.models.common import CRDInfo, KubeModel, KueueResource, ObjectName, schema
from tas.api.models.fairsharing import FairSharing, FairSharingStatus


class CohortSpec(KubeModel):
    parent_name: ObjectName | None = None
    """The cohort this one belongs to; its quota is then shared with the parent's members."""
    resource_groups: list[ResourceGroup] = Field(
        default_factory=list, max_length=16, json_schema_extra=schema(list_type="atomic")
    )
    """Quota of the cohort itself, lent to its members."""
    fair_sharing: FairSharing | None = None
    """This cohort's weight within its parent when fair sharing is configured."""


class CohortStatus(KubeModel):
    fair_sharing: FairSharingStatus | None = None
    """Recorded only when fair sharing is on."""


class Cohort(KueueResource):
    """A node of the tree of cohorts. A cohort named by a ClusterQueue exists without one."""

    crd: ClassVar[CRDInfo] = CRDInfo(
        resource=kinds.COHORTS,
        versions=("v1beta1", "v1beta2"),
        status_subresource=True,
    )

    kind: str = "Cohort"
    spec: CohortSpec = Field(default_factory=CohortSpec)
    """Its parent and its own quota."""
    status: CohortStatus = Field(default_factory=CohortStatus)
