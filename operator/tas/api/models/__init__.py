"""Pydantic models of the kueue.x-k8s.io objects we serve; the CRDs are generated from them."""

from tas.api.models.clusterqueue import ClusterQueue, ClusterQueueSpec, ClusterQueueStatus
from tas.api.models.cohort import Cohort, CohortSpec
from tas.api.models.common import Condition, KueueResource, LabelSelector, ObjectMeta
from tas.api.models.localqueue import LocalQueue, LocalQueueSpec, LocalQueueStatus
from tas.api.models.placementgroup import PlacementGroup, PlacementGroupSpec
from tas.api.models.resourceflavor import ResourceFlavor, ResourceFlavorSpec
from tas.api.models.topology import Topology, TopologyLevel, TopologySpec
from tas.api.models.workload import (
    Admission,
    PodSet,
    PodSetAssignment,
    PodSetTopologyRequest,
    TopologyAssignment,
    TopologyDomainAssignment,
    Workload,
    WorkloadSpec,
    WorkloadStatus,
)
from tas.api.models.workloadpriorityclass import WorkloadPriorityClass

# Every resource we serve, in a stable order (crdgen writes one CRD for each).
RESOURCES: tuple[type[KueueResource], ...] = (
    Topology,
    ResourceFlavor,
    ClusterQueue,
    Cohort,
    LocalQueue,
    Workload,
    WorkloadPriorityClass,
    PlacementGroup,
)

__all__ = [
    "RESOURCES",
    "Admission",
    "ClusterQueue",
    "ClusterQueueSpec",
    "ClusterQueueStatus",
    "Cohort",
    "CohortSpec",
    "Condition",
    "KueueResource",
    "LabelSelector",
    "LocalQueue",
    "LocalQueueSpec",
    "LocalQueueStatus",
    "ObjectMeta",
    "PlacementGroup",
    "PlacementGroupSpec",
    "PodSet",
    "PodSetAssignment",
    "PodSetTopologyRequest",
    "ResourceFlavor",
    "ResourceFlavorSpec",
    "Topology",
    "TopologyAssignment",
    "TopologyDomainAssignment",
    "TopologyLevel",
    "TopologySpec",
    "Workload",
    "WorkloadPriorityClass",
    "WorkloadSpec",
    "WorkloadStatus",
]
