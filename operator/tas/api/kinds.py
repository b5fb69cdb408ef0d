"""Our own kinds (Kueue's API, and ours beyond it) as the API server serves them: group, the
version each CRD stores, plural, kind and scope, defined here once. The CRD models
(tas.api.models) name their CRDs from these; the storage migration reads them without building
those models (pydantic builds them in about 0.7 s of CPU, which a restart need not pay)."""

from __future__ import annotations

from tas.api.constants import GROUP, TAS_GROUP
from tas.api.frameworks import Resource

STORED = "v1beta2"  # the version every Kueue kind stores

CLUSTER_QUEUES = Resource(GROUP, STORED, "clusterqueues", "ClusterQueue", True, namespaced=False)
COHORTS = Resource(GROUP, STORED, "cohorts", "Cohort", True, namespaced=False)
LOCAL_QUEUES = Resource(GROUP, STORED, "localqueues", "LocalQueue", True)
RESOURCE_FLAVORS = Resource(
    GROUP, STORED, "resourceflavors", "ResourceFlavor", True, namespaced=False
)
TOPOLOGIES = Resource(GROUP, STORED, "topologies", "Topology", True, namespaced=False)
WORKLOADS = Resource(GROUP, STORED, "workloads", "Workload", True)
WORKLOAD_PRIORITY_CLASSES = Resource(
    GROUP, STORED, "workloadpriorityclasses", "WorkloadPriorityClass", True, namespaced=False
)
PLACEMENT_GROUPS = Resource(TAS_GROUP, "v1alpha1", "placementgroups", "PlacementGroup", True)

ALL = (
    CLUSTER_QUEUES,
    COHORTS,
    LOCAL_QUEUES,
    RESOURCE_FLAVORS,
    TOPOLOGIES,
    WORKLOADS,
    WORKLOAD_PRIORITY_CLASSES,
    PLACEMENT_GROUPS,
)
