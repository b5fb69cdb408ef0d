"""Pydantic models of the kueue.x-k8s.io objects we serve; the CRDs are generated from them."""

from tas.api.models import v1beta1
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
    PriorityClassRef,
    TopologyAssignment,
    TopologyAssignmentSlice,
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


def model_for(resource: type[KueueResource], version: str) -> type[KueueResource]:
    """The model of `resource` (a stored version's) as served in `version`."""
    if version == "v1beta1":
        return v1beta1.MODELS.get(resource, resource)
    return resource


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
    "PriorityClassRef",
    "ResourceFlavor",
    "ResourceFlavorSpec",
    "Topology",
    "TopologyAssignment",
    "TopologyAssignmentSlice",
    "TopologyLevel",
    "TopologySpec",
    "Workload",
    "WorkloadPriorityClass",
    "WorkloadSpec",
    "WorkloadStatus",
    "model_for",
    "v1beta1",
]
