"""Every Kueue label, annotation, gate and condition name we speak, defined once.

Values are Kueue's, verbatim, so that Kueue's manifests apply unchanged.
"""

GROUP = "kueue.x-k8s.io"
PREFIX = "kueue.x-k8s.io/"

# Job-facing label: which LocalQueue a Job is submitted to.
QUEUE_NAME_LABEL = PREFIX + "queue-name"

# PodTemplate annotations that make up a topology request.
PODSET_REQUIRED_TOPOLOGY = PREFIX + "podset-required-topology"
PODSET_PREFERRED_TOPOLOGY = PREFIX + "podset-preferred-topology"
PODSET_UNCONSTRAINED_TOPOLOGY = PREFIX + "podset-unconstrained-topology"
PODSET_SLICE_REQUIRED_TOPOLOGY = PREFIX + "podset-slice-required-topology"
PODSET_SLICE_SIZE = PREFIX + "podset-slice-size"
PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS = PREFIX + "podset-slice-required-topology-constraints"
PODSET_GROUP_NAME = PREFIX + "podset-group-name"

TOPOLOGY_ANNOTATIONS = (
    PODSET_REQUIRED_TOPOLOGY,
    PODSET_PREFERRED_TOPOLOGY,
    PODSET_UNCONSTRAINED_TOPOLOGY,
    PODSET_SLICE_REQUIRED_TOPOLOGY,
    PODSET_SLICE_SIZE,
    PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS,
    PODSET_GROUP_NAME,
)

# Set by the operator on the pods it manages.
TOPOLOGY_SCHEDULING_GATE = PREFIX + "topology"
WORKLOAD_ANNOTATION = PREFIX + "workload"
PODSET_LABEL = PREFIX + "podset"
POD_INDEX_OFFSET_ANNOTATION = PREFIX + "pod-index-offset"

# Pod index labels of the integrations (rank order for the ungater).
JOB_COMPLETION_INDEX_LABEL = "batch.kubernetes.io/job-completion-index"

HOSTNAME_LABEL = "kubernetes.io/hostname"

# Finalizer Kueue puts on a Topology / ResourceFlavor in use.
RESOURCE_IN_USE_FINALIZER = PREFIX + "resource-in-use"

# Workload condition types.
COND_QUOTA_RESERVED = "QuotaReserved"
COND_ADMITTED = "Admitted"
COND_FINISHED = "Finished"
COND_EVICTED = "Evicted"
COND_REQUEUED = "Requeued"
COND_PODS_READY = "PodsReady"

# Condition reasons, as Kueue writes them.
REASON_QUOTA_RESERVED = "QuotaReserved"
REASON_PENDING = "Pending"
REASON_ADMITTED = "Admitted"
REASON_NO_RESERVATION = "NoReservation"
REASON_SUCCEEDED = "Succeeded"
REASON_FAILED = "Failed"
REASON_NODE_FAILURES = "NodeFailures"
REASON_EVICTED = "Evicted"
REASON_BACKOFF_FINISHED = "BackoffFinished"
REASON_INVALID_TOPOLOGY_REQUEST = "InvalidTopologyRequest"

# ClusterQueue condition reasons.
REASON_READY = "Ready"
REASON_TOPOLOGY_NOT_FOUND = "TopologyNotFound"
REASON_FLAVOR_NOT_FOUND = "FlavorNotFound"

# Pod condition set when a pod pinned to a failed node is terminated.
POD_COND_TERMINATED_BY_KUEUE = "TerminatedByKueue"
REASON_UNSCHEDULABLE_ON_ASSIGNED_NODE = "UnschedulableOnAssignedNode"

# --- Appended with the CRD models (tas.api.models) ---

# ClusterQueue queueing strategies.
STRICT_FIFO = "StrictFIFO"
BEST_EFFORT_FIFO = "BestEffortFIFO"

# ClusterQueue and LocalQueue condition type.
COND_ACTIVE = "Active"
# Workload condition type that accompanies Evicted when the workload was preempted.
COND_PREEMPTED = "Preempted"

# More ClusterQueue Active reasons, as Kueue writes them.
REASON_TERMINATING = "Terminating"
REASON_STOPPED = "Stopped"
REASON_UNKNOWN = "Unknown"

# LocalQueue Active reasons.
REASON_CLUSTER_QUEUE_DOES_NOT_EXIST = "ClusterQueueDoesNotExist"
REASON_CLUSTER_QUEUE_IS_INACTIVE = "ClusterQueueIsInactive"

# More Workload reasons (QuotaReserved=False, Evicted, Requeued, Finished).
REASON_INADMISSIBLE = "Inadmissible"
REASON_PREEMPTED = "Preempted"
REASON_PODS_READY_TIMEOUT = "PodsReadyTimeout"
REASON_DEACTIVATED = "Deactivated"
REASON_REACTIVATED = "Reactivated"
REASON_CLUSTER_QUEUE_STOPPED = "ClusterQueueStopped"
REASON_LOCAL_QUEUE_STOPPED = "LocalQueueStopped"
REASON_CLUSTER_QUEUE_RESTARTED = "ClusterQueueRestarted"
REASON_LOCAL_QUEUE_RESTARTED = "LocalQueueRestarted"
REASON_REQUEUING_LIMIT_EXCEEDED = "RequeuingLimitExceeded"
REASON_OUT_OF_SYNC = "OutOfSync"

# Default PodSet name (Kueue's CRD default).
DEFAULT_PODSET_NAME = "main"

# PodSetAssignment.delayedTopologyRequest states.
DELAYED_TOPOLOGY_PENDING = "Pending"
DELAYED_TOPOLOGY_READY = "Ready"
