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

# Set by the operator on the pods it manages.
TOPOLOGY_SCHEDULING_GATE = PREFIX + "topology"
WORKLOAD_ANNOTATION = PREFIX + "workload"
PODSET_LABEL = PREFIX + "podset"

# Pod index labels of the integrations (rank order for the ungater).
JOB_COMPLETION_INDEX_LABEL = "batch.kubernetes.io/job-completion-index"

HOSTNAME_LABEL = "kubernetes.io/hostname"

# Workload condition types.
COND_QUOTA_RESERVED = "QuotaReserved"
COND_ADMITTED = "Admitted"
COND_FINISHED = "Finished"
COND_EVICTED = "Evicted"
COND_REQUEUED = "Requeued"

# Condition reasons, as Kueue writes them.
REASON_QUOTA_RESERVED = "QuotaReserved"
REASON_PENDING = "Pending"
REASON_ADMITTED = "Admitted"
REASON_NO_RESERVATION = "NoReservation"
REASON_SUCCEEDED = "Succeeded"
REASON_FAILED = "Failed"
REASON_NODE_FAILURES = "NodeFailures"
REASON_EVICTED = "Evicted"
REASON_INVALID_TOPOLOGY_REQUEST = "InvalidTopologyRequest"

# ClusterQueue condition reasons.
REASON_READY = "Ready"
REASON_TOPOLOGY_NOT_FOUND = "TopologyNotFound"
REASON_FLAVOR_NOT_FOUND = "FlavorNotFound"

# Pod condition set when a pod pinned to a failed node is terminated.
POD_COND_TERMINATED_BY_KUEUE = "TerminatedByKueue"
REASON_UNSCHEDULABLE_ON_ASSIGNED_NODE = "UnschedulableOnAssignedNode"

# ClusterQueue queueing strategies.
STRICT_FIFO = "StrictFIFO"
BEST_EFFORT_FIFO = "BestEffortFIFO"

# ClusterQueue and LocalQueue condition type.
COND_ACTIVE = "Active"

# More Workload reasons (QuotaReserved=False, Evicted, Requeued, Finished).
REASON_INADMISSIBLE = "Inadmissible"

# Default PodSet name (Kueue's CRD default).
DEFAULT_PODSET_NAME = "main"
