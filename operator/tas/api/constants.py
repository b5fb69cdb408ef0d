"""Every Kueue label, annotation, gate and condition name we speak, defined once.

Values are Kueue's, verbatim, so that Kueue's manifests apply unchanged.
"""

from collections.abc import Mapping
from typing import Final

GROUP = "kueue.x-k8s.io"
PREFIX = "kueue.x-k8s.io/"
# The version the operator reads and writes: Kueue's stored version since v0.16.
KUEUE_API_VERSION = GROUP + "/v1beta2"
# The version served for manifests and clients written before Kueue v0.16 (converted).
KUEUE_V1BETA1_API_VERSION = GROUP + "/v1beta1"
# The CRDs whose versions' schemas differ, which the API server converts through our webhook
# (as Kueue's do, for the same kinds); for the others it only rewrites apiVersion.
CONVERTED_CRDS = tuple(
    f"{plural}.{GROUP}" for plural in ("clusterqueues", "cohorts", "localqueues", "workloads")
)

# Job-facing label: which LocalQueue a Job is submitted to.
QUEUE_NAME_LABEL = PREFIX + "queue-name"
WORKLOAD_PRIORITY_CLASS_LABEL = PREFIX + "priority-class"
JOB_UID_LABEL = PREFIX + "job-uid"  # Kueue labels a Workload with its owner's uid
# Workload.spec.priorityClassRef's (group, kind): which kind of class its name names.
WORKLOAD_PRIORITY_CLASS = (GROUP, "WorkloadPriorityClass")
POD_PRIORITY_CLASS = ("scheduling.k8s.io", "PriorityClass")
# The same in v1beta1's spec.priorityClassSource.
WORKLOAD_PRIORITY_CLASS_SOURCE = PREFIX + "workloadpriorityclass"
POD_PRIORITY_CLASS_SOURCE = "scheduling.k8s.io/priorityclass"

# Limits of the Workload CRD's fields (the models in api/models use them), which the webhooks
# check the annotations those fields are made from against: what one accepts, the other does.
LABEL_KEY_MAX = 316  # Kueue's limit for a label key (a topology level)
POD_SET_GROUP_NAME_MAX = 256  # topologyRequest.podSetGroupName
INT32_MAX = 2**31 - 1  # an int32 field: a pod set's count, a slice size

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
JOBSET_JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"  # the Job's index in its replicatedJob
LWS_WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"  # 0: the leader
STATEFULSET_POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
POD_GROUP_POD_INDEX_LABEL = PREFIX + "pod-group-pod-index"
# The Kubeflow training operators' (training-operator v1 and mpi-operator v2beta1 both set it
# on every pod of a replica type: 0, 1, ...).
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
# Names the label whose value a pod group's pod copies into POD_GROUP_POD_INDEX_LABEL.
POD_GROUP_POD_INDEX_LABEL_ANNOTATION = PREFIX + "pod-group-pod-index-label"
INDEX_LABELS = (
    JOB_COMPLETION_INDEX_LABEL,
    JOBSET_JOB_INDEX_LABEL,
    LWS_WORKER_INDEX_LABEL,
    STATEFULSET_POD_INDEX_LABEL,
    POD_GROUP_POD_INDEX_LABEL,
    REPLICA_INDEX_LABEL,
)
# On a pod template: subtract this from the pods' index to get their rank in the pod set (an
# MPIJob's workers when the launcher, replica index 0, also works).
POD_INDEX_OFFSET_ANNOTATION = PREFIX + "pod-index-offset"

# Plain pods and pod groups (Kueue's pod integration), verbatim.
MANAGED_LABEL = PREFIX + "managed"  # "true" on every pod the pod integration manages
MANAGED_VALUE = "true"
POD_FINALIZER = MANAGED_LABEL  # Kueue's pod finalizer has the managed label's name
ADMISSION_SCHEDULING_GATE = PREFIX + "admission"
POD_GROUP_NAME_LABEL = PREFIX + "pod-group-name"
POD_GROUP_TOTAL_COUNT_ANNOTATION = PREFIX + "pod-group-total-count"
POD_GROUP_FAST_ADMISSION_ANNOTATION = PREFIX + "pod-group-fast-admission"
POD_GROUP_SERVING_ANNOTATION = PREFIX + "pod-group-serving"
POD_SUSPENDING_PARENT_ANNOTATION = PREFIX + "pod-suspending-parent"
ROLE_HASH_ANNOTATION = PREFIX + "role-hash"
RETRIABLE_IN_GROUP_ANNOTATION = PREFIX + "retriable-in-group"
IS_GROUP_WORKLOAD_ANNOTATION = PREFIX + "is-group-workload"
PREBUILT_WORKLOAD_LABEL = PREFIX + "prebuilt-workload-name"
POD_COND_TERMINATION_TARGET = "TerminationTarget"
COND_WAITING_FOR_REPLACEMENT_PODS = "WaitingForReplacementPods"

HOSTNAME_LABEL = "kubernetes.io/hostname"

# On a Workload: how many of its nodes may be unhealthy at once before it is evicted rather than
# having them replaced one by one (an integer in [1, 8], default 1), under the gate Kueue calls
# TASReplaceMultipleFailedNodes (alias: TASMultipleNodeReplacement).
UNHEALTHY_NODES_EVICTION_THRESHOLD_ANNOTATION = PREFIX + "tas-unhealthy-nodes-eviction-threshold"

# Beyond Kueue (gate TASNUMAZones): the NUMA zone the operator counted a pod in, for a node
# agent to pin it there. Pod scope, or one pinned container: the zone's name ("node-0");
# container scope with several: "container=zone" pairs joined by commas.
NUMA_ZONE_ANNOTATION = PREFIX + "numa-zone"

# Workload condition types.
COND_QUOTA_RESERVED = "QuotaReserved"
COND_ADMITTED = "Admitted"
COND_FINISHED = "Finished"
COND_EVICTED = "Evicted"
COND_REQUEUED = "Requeued"
COND_PREEMPTED = "Preempted"

# Condition reasons, as Kueue writes them.
REASON_QUOTA_RESERVED = "QuotaReserved"
REASON_PENDING = "Pending"
REASON_ADMITTED = "Admitted"
REASON_NO_RESERVATION = "NoReservation"
REASON_SUCCEEDED = "Succeeded"
REASON_FAILED = "Failed"
REASON_NODE_FAILURES = "NodeFailures"
REASON_EVICTED = "Evicted"
REASON_PREEMPTED = "Preempted"  # the Evicted condition's reason, and the victim's event
REASON_DEACTIVATED = "Deactivated"  # spec.active set to false (kueuectl stop workload)
REASON_REACTIVATED = "Reactivated"  # spec.active back to true: the Requeued condition's reason
# The Preempted condition's reasons (Kueue's): why the victim had to go.
REASON_IN_CLUSTER_QUEUE = "InClusterQueue"
REASON_IN_COHORT_RECLAMATION = "InCohortReclamation"
REASON_IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"
REASON_IN_COHORT_FAIR_SHARING = "InCohortFairSharing"
REASON_INVALID_TOPOLOGY_REQUEST = "InvalidTopologyRequest"
REASON_PRIORITY_CLASS_NOT_FOUND = "PriorityClassNotFound"  # ours: the Workload waits for it
# Kueue's event on an owner whose Workload cannot be made (an incomplete pod group ...); ours
# also when the API server refuses it, or the owner asks for more than the operator allows.
REASON_ERR_WORKLOAD_COMPOSE = "ErrWorkloadCompose"

# ClusterQueue condition reasons.
REASON_READY = "Ready"
REASON_TOPOLOGY_NOT_FOUND = "TopologyNotFound"
REASON_FLAVOR_NOT_FOUND = "FlavorNotFound"
REASON_COHORT_CYCLE = "CohortHasCycle"  # ours: Kueue leaves such a queue inactive, unexplained

# Pod condition set when a pod pinned to a failed node is terminated.
POD_COND_TERMINATED_BY_KUEUE = "TerminatedByKueue"
REASON_UNSCHEDULABLE_ON_ASSIGNED_NODE = "UnschedulableOnAssignedNode"
# Kubernetes' condition on a pod it removes; ours when a pod is removed from a deleted node.
POD_COND_DISRUPTION_TARGET = "DisruptionTarget"
REASON_NODE_DELETED = "NodeDeleted"

# ClusterQueue queueing strategies (Final: the literal types of ClusterQueue's field).
STRICT_FIFO: Final = "StrictFIFO"
BEST_EFFORT_FIFO: Final = "BestEffortFIFO"

# ClusterQueue.spec.preemption policies.
NEVER = "Never"
LOWER_PRIORITY = "LowerPriority"
LOWER_OR_NEWER_EQUAL_PRIORITY = "LowerOrNewerEqualPriority"
ANY = "Any"  # reclaimWithinCohort
# ClusterQueue.spec.flavorFungibility
MAY_STOP_SEARCH = "MayStopSearch"
TRY_NEXT_FLAVOR = "TryNextFlavor"

# ClusterQueue and LocalQueue condition type.
COND_ACTIVE = "Active"

# More Workload reasons (QuotaReserved=False, Evicted, Requeued, Finished).
REASON_INADMISSIBLE = "Inadmissible"

# Default PodSet name (Kueue's CRD default).
DEFAULT_PODSET_NAME = "main"

# --- Beyond Kueue: placement groups (gate TASPlacementGroups), under our own API group ---------
TAS_GROUP = "tas-operator.io"
TAS_PREFIX = TAS_GROUP + "/"
# PodTemplate annotations: the group a pod set joins, and the group's constraints (each at a
# topology level). The PlacementGroup object, made from the first member's annotations when it
# does not exist, holds the constraints and the group's state.
PLACEMENT_GROUP = TAS_PREFIX + "placement-group"
PLACEMENT_GROUP_AFFINITY = TAS_PREFIX + "placement-group-affinity-topology"
PLACEMENT_GROUP_ANTI_AFFINITY = TAS_PREFIX + "placement-group-anti-affinity-topology"
PLACEMENT_GROUP_PARTITIONS = TAS_PREFIX + "placement-group-partitions"
PLACEMENT_GROUP_PARTITION_TOPOLOGY = TAS_PREFIX + "placement-group-partition-topology"
PLACEMENT_GROUP_EXCLUSIVE = TAS_PREFIX + "placement-group-exclusive-topology"
PLACEMENT_GROUP_MAX_PARTITIONS = 64  # the most a group's pods are split into
# ClusterQueue annotation: "true" lets its workloads join groups that hold domains exclusively
# (an admin's grant: an exclusive group keeps every other tenant out of whole domains).
ALLOW_EXCLUSIVE_PLACEMENT_GROUPS = TAS_PREFIX + "allow-exclusive-placement-groups"
# Pod label: the partition (1..K) of a pod of a partitioned group, set when it is ungated.
PLACEMENT_GROUP_PARTITION_LABEL = TAS_PREFIX + "placement-group-partition"
REASON_PLACEMENT_GROUP_INVALID = "PlacementGroupInvalid"
# PodTemplate annotation (gate TASRequiredWithPreferred): beside Kueue's
# podset-required-topology, a lower level preferred inside the required domain.
TAS_PODSET_PREFERRED_TOPOLOGY = TAS_PREFIX + "podset-preferred-topology"

# --- Beyond Kueue: draining domains (gate TASDrainingDomains) -----------------------------------
# Node label: "true" drains the node. A rack or block drains when every node of it carries it.
# No new workload is placed on a draining node; running ones stay, and hot swap never picks one.
DRAINING_LABEL = TAS_PREFIX + "draining"
DRAINING_VALUE = "true"


def is_draining(labels: Mapping[str, str]) -> bool:
    return labels.get(DRAINING_LABEL) == DRAINING_VALUE


# --- Beyond Kueue: wait, then relax (gate TASTopologyRelaxation) --------------------------------
# PodTemplate annotation beside podset-required-topology: the later stages, each a level (or
# "unconstrained") and how long after the workload joined its queue it is tried there, e.g.
# "block after 10m, unconstrained after 30m" (api/relaxation.py).
PODSET_TOPOLOGY_RELAXATION = TAS_PREFIX + "podset-topology-relaxation"

# --- Beyond Kueue: defragmentation (gate TASDefragmentation) -----------------------------------
# Job or Workload annotations (a LocalQueue's gives its workloads' default): "true" lets the
# operator move the running workload to open a domain for a waiting gang, once it has run for
# MOVABLE_AFTER (a duration, "5m"; default DEFAULT_MOVABLE_AFTER_SECONDS).
MOVABLE = TAS_PREFIX + "movable"
MOVABLE_AFTER = TAS_PREFIX + "movable-after"
DEFAULT_MOVABLE_AFTER_SECONDS = 300.0
REASON_DEFRAGMENTED = "Defragmented"  # the Evicted condition's reason of a moved workload
