"""Kueue's fair-sharing fields on ClusterQueues, Cohorts and LocalQueues (v1beta1 and v1beta2
share them; Kueue v0.17's apis/kueue/*/fairsharing_types.go and localqueue_types.go)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from tas.api.fairsharing import (  # re-exported: the models' readers find them here too
    MAX_WEIGHTED_SHARE,
    NO_ADMISSION_FAIR_SHARING,
    USAGE_BASED_ADMISSION_FAIR_SHARING,
)
from tas.api.models.common import Int64, KubeModel, NonNegativeQuantity, ResourceList, Time, schema

__all__ = [
    "MAX_WEIGHTED_SHARE",
    "NO_ADMISSION_FAIR_SHARING",
    "USAGE_BASED_ADMISSION_FAIR_SHARING",
]


class FairSharing(KubeModel):
    weight: NonNegativeQuantity | None = Field(None, json_schema_extra=schema(default=1))
    """Advantage of this queue or cohort when competing for unused resources of its cohort:
    its share (dominant usage above nominal quota over the cohort's lendable resources) is
    divided by it. 0 gives an infinite share. Default 1."""


class FairSharingStatus(KubeModel):
    weighted_share: Int64
    """The largest ratio, over the resources it provides, of usage above nominal quota to the
    lendable resources of its cohort, divided by its weight (Kueue's dominant resource
    share); 0 while within nominal quota."""


class AdmissionScope(KubeModel):
    admission_mode: Literal["UsageBasedAdmissionFairSharing", "NoAdmissionFairSharing"]
    """UsageBasedAdmissionFairSharing: order this queue's workloads by their LocalQueue's
    decayed usage (with the AdmissionFairSharing configuration); NoAdmissionFairSharing: off."""


class LocalQueueAdmissionFairSharingStatus(KubeModel):
    consumed_resources: ResourceList = Field(default_factory=dict)
    """The LocalQueue's resource usage over time, decayed with the configured half life."""
    last_update: Time
    """When consumedResources was last updated."""


class LocalQueueFairSharingStatus(KubeModel):
    weighted_share: Int64 = 0
    """Kept for Kueue's shape; Kueue writes 0 here."""
    admission_fair_sharing_status: LocalQueueAdmissionFairSharingStatus | None = None
    """The decayed usage admission fair sharing orders workloads by."""
