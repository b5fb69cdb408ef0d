"""The one registry of feature gates: every name Kueue v0.17.0 to v0.20 knows, plus our own.

Gates are set from `--feature-gates A=true,B=false`, the TAS_FEATURE_GATES environment variable,
the chart's `featureGates` list or a scenario's `featureGates` map. Each gate is one of three
kinds (`Kind`): implemented here under Kueue's name, accepted with no effect here (a Kueue
feature we do not implement, or one that only makes Kueue faster), or our own. Our default is
Kueue v0.17.0's (the release we run side by side); a gate v0.17.0 does not know takes the
default of the release that added it. A name no Kueue release knows, or a value that is not
true/false, is an error naming it. `python -m tas.features --markdown` writes
docs/reference/feature-gates.md from this registry.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum

from tas.solver.types import SolverOptions

ENV_VAR = "TAS_FEATURE_GATES"
OUR_STAGE = "Alpha (tas-operator)"
OUR_BETA_STAGE = "Beta (tas-operator)"  # ours, on by default


class Gate(StrEnum):
    """The gates code may ask about: `gates.enabled(Gate.TAS_PROFILE_MIXED)`."""

    TOPOLOGY_AWARE_SCHEDULING = "TopologyAwareScheduling"
    ADMISSION_FAIR_SHARING = "AdmissionFairSharing"
    TAS_PROFILE_MIXED = "TASProfileMixed"
    TAS_FAILED_NODE_REPLACEMENT = "TASFailedNodeReplacement"
    TAS_FAILED_NODE_REPLACEMENT_FAIL_FAST = "TASFailedNodeReplacementFailFast"
    TAS_REPLACE_NODE_ON_POD_TERMINATION = "TASReplaceNodeOnPodTermination"
    TAS_REPLACE_NODE_ON_NODE_TAINTS = "TASReplaceNodeOnNodeTaints"
    TAS_REPLACE_MULTIPLE_FAILED_NODES = "TASReplaceMultipleFailedNodes"
    TAS_BALANCED_PLACEMENT = "TASBalancedPlacement"
    TAS_MULTI_LAYER_TOPOLOGY = "TASMultiLayerTopology"
    TAS_RESPECT_NODE_AFFINITY_PREFERRED = "TASRespectNodeAffinityPreferred"
    TAS_HANDLE_OVERLAPPING_FLAVORS = "TASHandleOverlappingFlavors"
    TAS_NODE_FEASIBILITY_FOR_ALL_LEVELS = "TASNodeFeasibilityForAllLevels"
    TAS_PARTIAL_SLICES = "TASPartialSlices"
    TAS_GROUPED_POD_SET_SLICING = "TASGroupedPodSetSlicing"
    SKIP_REASSIGNMENT_FOR_POD_OWNED_WORKLOADS = "SkipReassignmentForPodOwnedWorkloads"
    LOCAL_QUEUE_METRICS = "LocalQueueMetrics"
    TAS_ASSIGNMENTS_ENCODING_BY_HOSTNAME_PREFIX = "TASAssignmentsEncodingByHostnamePrefix"
    TAS_NUMA_ZONES = "TASNUMAZones"
    TAS_PLACEMENT_GROUPS = "TASPlacementGroups"
    TAS_PROFILE_FRAGMENTATION_AWARE = "TASProfileFragmentationAware"
    TAS_REQUIRED_WITH_PREFERRED = "TASRequiredWithPreferred"
    TAS_MULTI_ROLE_POD_SET_GROUPS = "TASMultiRolePodSetGroups"
    TAS_DRAINING_DOMAINS = "TASDrainingDomains"
    TAS_TOPOLOGY_RELAXATION = "TASTopologyRelaxation"
    TAS_DEFRAGMENTATION = "TASDefragmentation"
    TAS_REMOVE_PODS_ON_DELETED_NODES = "TASRemovePodsOnDeletedNodes"
    FAIR_SHARING_PREEMPT_WITHIN_NOMINAL = "FairSharingPreemptWithinNominal"
    FAIR_SHARING_PRIORITIZE_NON_BORROWING = "FairSharingPrioritizeNonBorrowing"
    PRIORITY_SORTING_WITHIN_COHORT = "PrioritySortingWithinCohort"


class Kind(StrEnum):
    IMPLEMENTED = "implemented"
    NO_EFFECT = "accepted, no effect"
    OURS = "ours"


# Why a gate accepted with no effect has none; shown in the start-up line for it.
NOT_IMPLEMENTED = "not implemented"
SPEED_ONLY = "speed only in Kueue"
ALWAYS_ON = "always on here"


@dataclass(frozen=True)
class GateSpec:
    name: str
    default: bool  # ours
    stage: str  # Kueue's label in the release whose default is ours; ours: OUR_(BETA_)STAGE
    depends_on: tuple[str, ...] = ()  # effective only when all of these are on
    doc: str = ""  # what the gate does here
    kind: Kind = Kind.IMPLEMENTED
    kueue_v0_17: bool | None = None  # Kueue v0.17.0's default; None: it has no such gate
    kueue_v0_20: bool | None = None  # Kueue v0.20's default; None: no such gate (any more)
    no_effect: str = ""  # for Kind.NO_EFFECT: why


_TAS = Gate.TOPOLOGY_AWARE_SCHEDULING  # every TAS* gate needs it
_REPLACE = (Gate.TAS_FAILED_NODE_REPLACEMENT.value,)


def _kueue(
    name: str,
    stage: str,
    v0_17: bool | None,
    v0_20: bool | None,
    doc: str,
    *,
    kind: Kind = Kind.NO_EFFECT,
    default: bool | None = None,
    needs: tuple[str, ...] = (),
    why: str = NOT_IMPLEMENTED,
) -> GateSpec:
    """A Kueue gate: our default is v0.17.0's unless given (required when v0.17.0 lacks it);
    every TAS* gate needs TopologyAwareScheduling, as in Kueue."""
    if default is None:
        if v0_17 is None:
            raise ValueError(f"{name}: Kueue v0.17.0 lacks it, so give our default")
        default = v0_17
    if name.startswith("TAS"):
        needs = (_TAS, *needs)
    return GateSpec(
        name=name,
        default=default,
        stage=stage,
        depends_on=needs,
        doc=doc,
        kind=kind,
        kueue_v0_17=v0_17,
        kueue_v0_20=v0_20,
        no_effect=why if kind is Kind.NO_EFFECT else "",
    )


def _ours(gate: Gate, doc: str, *, on: bool = False, needs: tuple[str, ...] = ()) -> GateSpec:
    stage = OUR_BETA_STAGE if on else OUR_STAGE
    return GateSpec(gate.value, on, stage, (_TAS, *needs), doc, Kind.OURS)


# Stage and defaults per release from pkg/features/kube_features.go at v0.17.0, v0.18.0, v0.19.0
# and main (v0.20.0-devel), and the pull requests merged after it (TASGroupedPodSetSlicing,
# TASNodeFeasibilityForAllLevels, TASPartialSlices, TASReplaceMultipleFailedNodes).
_SPECS = (
    # ---- implemented here, under Kueue's names ----
    _kueue(
        _TAS,
        "Beta",
        True,
        True,
        "Master switch for topology-aware admission.",
        kind=Kind.IMPLEMENTED,
    ),
    _kueue(
        "TASProfileMixed",
        "Beta",
        True,
        True,
        "LeastFreeCapacity for unconstrained requests, BestFit for required/preferred.",
        kind=Kind.IMPLEMENTED,
    ),
    _kueue(
        "TASFailedNodeReplacement",
        "Beta",
        True,
        True,
        "Replace a failed node under a workload.",
        kind=Kind.IMPLEMENTED,
    ),
    _kueue(
        "TASFailedNodeReplacementFailFast",
        "Beta",
        True,
        True,
        "Try a replacement once; evict the workload when none fits.",
        kind=Kind.IMPLEMENTED,
        needs=_REPLACE,
    ),
    _kueue(
        "TASReplaceNodeOnPodTermination",
        "Beta",
        True,
        True,
        "A NotReady node counts as failed once the workload's pods on it stop.",
        kind=Kind.IMPLEMENTED,
        needs=_REPLACE,
    ),
    _kueue(
        "TASReplaceNodeOnNodeTaints",
        "Beta",
        True,
        True,
        "Untolerated NoSchedule/NoExecute taints count as node failure.",
        kind=Kind.IMPLEMENTED,
        # Kueue declares only TopologyAwareScheduling, but its node controller, which reads
        # the taints, runs only with TASFailedNodeReplacement.
        needs=_REPLACE,
    ),
    _kueue(
        "TASReplaceMultipleFailedNodes",
        "Alpha",
        None,
        False,
        "Replace several failed nodes of one workload, one at a time, instead of evicting it "
        "at the second (alias: TASMultipleNodeReplacement).",
        kind=Kind.IMPLEMENTED,
        default=False,
        needs=_REPLACE,
    ),
    _kueue(
        "TASBalancedPlacement",
        "Alpha",
        False,
        False,
        "Balanced placement for preferred requests.",
        kind=Kind.IMPLEMENTED,
    ),
    _kueue(
        "TASMultiLayerTopology",
        "Alpha",
        False,
        True,
        "The podset-slice-required-topology-constraints annotation (up to 3 layers).",
        kind=Kind.IMPLEMENTED,
    ),
    _kueue(
        "TASRespectNodeAffinityPreferred",
        "Alpha",
        None,
        False,
        "Preferred node affinity overrides the domain ordering.",
        kind=Kind.IMPLEMENTED,
        default=False,
    ),
    _kueue(
        "TASHandleOverlappingFlavors",
        "Beta",
        None,
        True,
        "Usage is counted per node across flavors that share nodes, so two flavors over the "
        "same nodes do not both offer the same room.",
        kind=Kind.IMPLEMENTED,
        default=True,
    ),
    _kueue(
        "TASNodeFeasibilityForAllLevels",
        "Beta",
        None,
        True,
        "In a topology whose lowest level is not the hostname, a domain fits only if its "
        "nodes one by one fit the pods (capacity, taints, selectors, affinity). Off here "
        "(on in Kueue v0.20) to keep placements identical to Kueue v0.17.0.",
        kind=Kind.IMPLEMENTED,
        default=False,
    ),
    _kueue(
        "TASPartialSlices",
        "Alpha",
        None,
        True,
        "A slice size that does not divide the pod set's count leaves one smaller, last "
        "slice instead of being refused (one slice layer only). Off here (on in Kueue v0.20) "
        "to keep placements identical to Kueue v0.17.0.",
        kind=Kind.IMPLEMENTED,
        default=False,
    ),
    _kueue(
        "TASGroupedPodSetSlicing",
        "Beta",
        None,
        True,
        "Pod sets of one podset-group-name may also ask for slices (e.g. a LeaderWorkerSet's "
        "workers sliced per host under the group's block). Off here (on in Kueue v0.20) to "
        "keep placements identical to Kueue v0.17.0.",
        kind=Kind.IMPLEMENTED,
        default=False,
    ),
    _kueue(
        "SkipReassignmentForPodOwnedWorkloads",
        "Beta",
        None,
        True,
        "Workloads owned by a single Pod keep their assignment on node failure.",
        kind=Kind.IMPLEMENTED,
        default=True,
        needs=(_TAS,),
    ),
    _kueue(
        "LocalQueueMetrics",
        "Beta",
        True,
        True,
        "Kueue's LocalQueue metrics.",
        kind=Kind.IMPLEMENTED,
    ),
    _kueue(
        "AdmissionFairSharing",
        "Beta",
        True,
        True,
        "Kueue's admission fair sharing: with the configuration's admissionFairSharing "
        "section, a ClusterQueue's admissionScope orders its workloads by LocalQueue usage.",
        kind=Kind.IMPLEMENTED,
    ),
    # ---- ours ----
    _ours(
        Gate.TAS_NUMA_ZONES,
        "Count Guaranteed whole-CPU pods per NUMA zone on nodes whose NodeResourceTopology "
        "reports the single-numa-node policy.",
    ),
    _ours(
        Gate.TAS_PLACEMENT_GROUPS,
        "Placement groups across workloads (tas-operator.io/placement-group annotations, "
        "PlacementGroup objects): affinity, anti-affinity, partitions, exclusive domains.",
    ),
    _ours(
        Gate.TAS_PROFILE_FRAGMENTATION_AWARE,
        "Required and preferred requests go to the fitting domain whose parents have the "
        "least room, keeping empty blocks whole (instead of BestFit's tightest domain).",
    ),
    _ours(
        Gate.TAS_REQUIRED_WITH_PREFERRED,
        "A required level with a lower preferred one (tas-operator.io/podset-preferred-"
        "topology): the required domain whose placement spans the fewest lower-level domains.",
    ),
    _ours(
        Gate.TAS_MULTI_ROLE_POD_SET_GROUPS,
        "A podset-group-name group of any number of pod sets, placed as one gang in one domain "
        "of its level, each pod set's slices honoured.",
    ),
    _ours(
        Gate.TAS_DRAINING_DOMAINS,
        "Nodes labelled tas-operator.io/draining=true (a rack or block: all its nodes) take no "
        "new workload and no hot-swap replacement; running workloads stay. A workload that "
        "would fit only with them is told so.",
    ),
    _ours(
        Gate.TAS_TOPOLOGY_RELAXATION,
        "The tas-operator.io/podset-topology-relaxation annotation: after waiting the given "
        "times in its queue, a required pod set is tried at the next listed level.",
    ),
    _ours(
        Gate.TAS_DEFRAGMENTATION,
        "Move running workloads that allow it (tas-operator.io/movable) to open a domain for "
        "a waiting gang: evicted with reason Defragmented, the room held for the gang.",
    ),
    _ours(
        Gate.TAS_REMOVE_PODS_ON_DELETED_NODES,
        "Pods of a hot-swapped workload bound to a node that no longer exists are failed "
        "(DisruptionTarget) and removed at once, as the pod garbage collector would after "
        "its 40 s quarantine, so their replacements start sooner.",
        on=True,
        needs=_REPLACE,
    ),
    # ---- accepted, no effect here: Kueue's TAS gates ----
    _kueue(
        "TASReplaceNodeDueToNotReadyOverFixedTime",
        "Deprecated",
        None,
        False,
        "Kueue: a node NotReady for 30 s counts as failed (always so in v0.17.0). Here a "
        "NotReady node fails at once, or once its pods stop.",
        default=False,
        needs=_REPLACE,
    ),
    _kueue(
        "TASAssignmentsEncodingByHostnamePrefix",
        "Beta",
        None,
        True,
        "The compact v1beta2 topology assignments (what the operator writes and the conversion "
        "webhook makes of a v1beta1 one) are cut into runs of hostnames that share a prefix, "
        "which keeps a Workload of 60,000 nodes far below the size limit.",
        kind=Kind.IMPLEMENTED,
        default=True,
    ),
    _kueue(
        "TASRecomputeAssignmentWithinSchedulingCycle",
        "Beta",
        None,
        True,
        "Kueue: recompute a TAS assignment when an earlier workload of the same cycle took "
        "its room.",
        default=True,
    ),
    _kueue(
        "TASValidateWorkloadSliceSize",
        "Beta",
        None,
        True,
        "Kueue: the Workload webhook rejects slice sizes below 1.",
        default=True,
    ),
    _kueue(
        "TASCacheNodeMatchResults",
        "Beta",
        None,
        True,
        "Kueue: caches node matching per workload within a cycle.",
        default=True,
        why=SPEED_ONLY,
    ),
    _kueue(
        "TASCacheTopologyTree",
        "Beta",
        None,
        True,
        "Kueue: reuses the topology tree across cycles.",
        default=True,
        why=SPEED_ONLY,
    ),
    _kueue(
        "TASCachingRemainingResources",
        "Beta",
        None,
        True,
        "Kueue: caches remaining capacity in TAS snapshots.",
        default=True,
        why=SPEED_ONLY,
    ),
    _kueue(
        "VectorizedResourceRequests",
        "Beta",
        None,
        True,
        "Kueue: slice-indexed resource requests in TAS snapshots.",
        default=True,
        why=SPEED_ONLY,
    ),
    _kueue(
        "ElasticJobsViaWorkloadSlicesWithTAS",
        "Alpha",
        False,
        False,
        "Kueue: TAS for elastic workload slices.",
        needs=("ElasticJobsViaWorkloadSlices",),
    ),
    # ---- accepted, no effect here: Kueue features beyond TAS ----
    _kueue("HierarchicalCohorts", "GA", True, None, "Kueue: cohorts with parents.", why=ALWAYS_ON),
    _kueue("LendingLimit", "GA", True, None, "Kueue: ClusterQueue lendingLimit.", why=ALWAYS_ON),
    _kueue("FlavorFungibility", "Beta", True, True, "Kueue: flavorFungibility.", why=ALWAYS_ON),
    _kueue("AdmissionGatedBy", "Alpha", False, True, "Kueue: admission gated by annotations."),
    _kueue("AssignQueueLabelsForPods", "Beta", True, True, "Kueue: queue-name labels on pods."),
    _kueue(
        "CleanupProvisioningRequestsOnEviction",
        "Beta",
        None,
        True,
        "Kueue: deletes an evicted workload's ProvisioningRequests.",
        default=True,
    ),
    _kueue(
        "ConcurrentAdmission",
        "Alpha",
        None,
        False,
        "Kueue: tries several flavors at once.",
        default=False,
    ),
    _kueue("CustomMetricLabels", "Alpha", False, False, "Kueue: custom labels on metrics."),
    _kueue("DRAExtendedResources", "Alpha", False, None, "Kueue: DRA via extended resources."),
    _kueue(
        "DeferRayServiceFinalizationForRedisCleanup",
        "Beta",
        None,
        True,
        "Kueue: RayService finalization waits for Redis cleanup.",
        default=True,
    ),
    _kueue(
        "DisableWaitForPodsReady",
        "Alpha",
        None,
        False,
        "Kueue: turns waitForPodsReady off.",
        default=False,
    ),
    _kueue("DynamicResourceAllocation", "Alpha", False, None, "Kueue: quota for DRA devices."),
    _kueue("ElasticJobsViaWorkloadSlices", "Alpha", False, True, "Kueue: elastic jobs."),
    _kueue("FailureRecoveryPolicy", "Alpha", False, False, "Kueue: frees pods stuck terminating."),
    _kueue(
        "FairSharingPreemptWithinNominal",
        "Beta",
        True,
        True,
        "Kueue: fair-sharing preemption within nominal quota: a preemptor that stays within "
        "its nominal quota reclaims from borrowing queues whatever their shares.",
        kind=Kind.IMPLEMENTED,
    ),
    _kueue(
        "FairSharingPrioritizeNonBorrowing",
        "Beta",
        True,
        True,
        "Kueue: fair sharing prefers non-borrowing workloads: in the fair-sharing order a "
        "head whose subtree does not borrow on what it requests goes first.",
        kind=Kind.IMPLEMENTED,
    ),
    _kueue(
        "FastQuotaReleaseInPodIntegration",
        "Alpha",
        False,
        False,
        "Kueue: terminating pods release quota at once.",
    ),
    _kueue(
        "FinishOrphanedWorkloads",
        "Beta",
        None,
        True,
        "Kueue: finishes workloads whose owner is gone.",
        default=True,
    ),
    _kueue(
        "FlavorFungibilityPreserveScanProgress",
        "Beta",
        None,
        True,
        "Kueue: keeps the flavor scan position across cycles.",
        default=True,
        needs=("FlavorFungibility",),
    ),
    _kueue(
        "KueueDRAIntegration",
        "Beta",
        None,
        True,
        "Kueue: quota for DRA devices.",
        default=True,
    ),
    _kueue(
        "KueueDRAIntegrationConsumableCapacity",
        "Alpha",
        None,
        False,
        "Kueue: DRA consumable capacity.",
        default=False,
        needs=("KueueDRAIntegration",),
    ),
    _kueue(
        "KueueDRAIntegrationExtendedResource",
        "Alpha",
        None,
        True,
        "Kueue: DRA via extended resources.",
        default=False,
        needs=("KueueDRAIntegration",),
    ),
    _kueue(
        "KueueDRAIntegrationPartitionableDevices",
        "Alpha",
        None,
        True,
        "Kueue: DRA partitionable devices.",
        default=False,
        needs=("KueueDRAIntegration",),
    ),
    _kueue(
        "KueueDRARejectWorkloadsWhenDRADisabled",
        "Beta",
        None,
        True,
        "Kueue: rejects DRA workloads while DRA is off.",
        default=True,
    ),
    _kueue(
        "LWSImmutableGroupSize",
        "Beta",
        None,
        True,
        "Kueue: a queued LeaderWorkerSet's size is immutable.",
        default=True,
    ),
    _kueue("LocalQueueDefaulting", "GA", True, None, "Kueue: a default LocalQueue."),
    _kueue(
        "ManagedJobsNamespaceSelectorAlwaysRespected",
        "Beta",
        True,
        True,
        "Kueue: managedJobsNamespaceSelector applies to labelled jobs too.",
        why=ALWAYS_ON,
    ),
    _kueue(
        "MetricForWorkloadCreationLatency",
        "Beta",
        None,
        True,
        "Kueue: workload creation latency metric.",
        default=True,
    ),
    _kueue(
        "MetricsForCohorts",
        "Beta",
        None,
        True,
        "Kueue: cohort metrics.",
        default=True,
    ),
    _kueue("MultiKueue", "Beta", True, True, "Kueue: MultiKueue."),
    _kueue(
        "MultiKueueAdaptersForCustomJobs",
        "Beta",
        True,
        True,
        "Kueue: MultiKueue for custom jobs.",
    ),
    _kueue(
        "MultiKueueAllowInsecureKubeconfigs",
        "Deprecated",
        False,
        None,
        "Kueue: insecure MultiKueue kubeconfigs.",
    ),
    _kueue(
        "MultiKueueBatchJobWithManagedBy",
        "GA",
        True,
        None,
        "Kueue: MultiKueue uses Job spec.managedBy.",
    ),
    _kueue(
        "MultiKueueClusterProfile",
        "Alpha",
        False,
        False,
        "Kueue: MultiKueue ClusterProfiles.",
    ),
    _kueue(
        "MultiKueueIncrementalDispatcherConfig",
        "Beta",
        None,
        True,
        "Kueue: MultiKueue dispatcher step size.",
        default=True,
    ),
    _kueue(
        "MultiKueueIncrementalDispatcherRespectConfigOrder",
        "Beta",
        None,
        True,
        "Kueue: MultiKueue dispatcher follows the config's cluster order.",
        default=True,
    ),
    _kueue(
        "MultiKueueKubeConfigPathValidation",
        "Alpha",
        None,
        True,
        "Kueue: MultiKueue kubeconfig path validation.",
        default=False,
    ),
    _kueue(
        "MultiKueueManagerQuotaAutomation",
        "Alpha",
        None,
        False,
        "Kueue: MultiKueue manager quota automation.",
        default=False,
    ),
    _kueue(
        "MultiKueueOrchestratedPreemption",
        "Alpha",
        False,
        False,
        "Kueue: MultiKueue orchestrated preemption.",
    ),
    _kueue(
        "MultiKueueRedoAdmissionOnEvictionInWorker",
        "Beta",
        True,
        None,
        "Kueue: MultiKueue readmits on eviction in a worker.",
    ),
    _kueue(
        "MultiKueueRemoteSpecSync",
        "Beta",
        None,
        True,
        "Kueue: MultiKueue forwards spec changes to workers.",
        default=True,
    ),
    _kueue(
        "MultiKueueWaitForWorkloadAdmitted",
        "Beta",
        True,
        None,
        "Kueue: MultiKueue waits for admission before cleanup.",
    ),
    _kueue("ObjectRetentionPolicies", "GA", True, None, "Kueue: object retention policies."),
    _kueue("PartialAdmission", "Beta", True, True, "Kueue: partial admission (min-count)."),
    _kueue(
        "PodIntegrationValidateGroupOwner",
        "Beta",
        None,
        True,
        "Kueue: pod groups adopt only their own Workloads.",
        default=True,
    ),
    _kueue(
        "PrioritizePreemptorWorkloads",
        "Alpha",
        None,
        False,
        "Kueue: workloads waiting on preemptions go first.",
        default=False,
    ),
    _kueue("PriorityBoost", "Alpha", False, False, "Kueue: the priority-boost annotation."),
    _kueue(
        "PrioritySortingWithinCohort",
        "Beta",
        True,
        True,
        "Kueue: priority sorting within a cohort: in the fair-sharing order, equal shares "
        "go to the higher priority.",
        kind=Kind.IMPLEMENTED,
    ),
    _kueue(
        "PropagateBatchJobLabelsToWorkload",
        "GA",
        True,
        None,
        "Kueue: keeps the job-name label on Workload templates.",
    ),
    _kueue(
        "QuotaCheckStrategy",
        "Alpha",
        None,
        True,
        "Kueue: quota check strategies.",
        default=False,
    ),
    _kueue("ReclaimablePods", "Beta", True, True, "Kueue: reclaimable pods release quota."),
    _kueue(
        "RecomputeAssignmentUponPreemptionTargetsOverlap",
        "Beta",
        None,
        True,
        "Kueue: recomputes overlapping preemption targets.",
        default=True,
    ),
    _kueue(
        "RejectUpdatesToCQWithInvalidOnFlavors",
        "Alpha",
        None,
        False,
        "Kueue: rejects invalid onFlavors references.",
        default=False,
    ),
    _kueue(
        "RemoveFinalizersWithStrictPatch",
        "Beta",
        True,
        True,
        "Kueue: removes finalizers with a strict patch.",
    ),
    _kueue("SanitizePodSets", "GA", True, None, "Kueue: deduplicates env vars in pod sets."),
    _kueue(
        "SchedulerLibraryIntegration",
        "Alpha",
        None,
        False,
        "Kueue: node feasibility by scheduler-library.",
        default=False,
    ),
    _kueue(
        "SchedulerLongRequeueInterval",
        "Alpha",
        False,
        None,
        "Kueue: 10 s scheduler requeue interval.",
    ),
    _kueue(
        "SchedulerTimestampPreemptionBuffer",
        "Alpha",
        False,
        None,
        "Kueue: 5 min timestamp buffer for preemption.",
    ),
    _kueue(
        "SchedulingEquivalenceHashing",
        "Beta",
        False,
        True,
        "Kueue: skips equivalent inadmissible workloads.",
    ),
    _kueue("ShortWorkloadNames", "Alpha", False, False, "Kueue: Workload names of 63 characters."),
    _kueue(
        "SkipAncestorCheckForDeletedWorkloads",
        "Beta",
        None,
        True,
        "Kueue: webhooks tolerate a missing owner during deletion.",
        default=True,
    ),
    _kueue(
        "SkipFinalizersForPodsSuspendedByParent",
        "Beta",
        True,
        None,
        "Kueue: no finalizers for serving workloads' pods.",
    ),
    _kueue(
        "SparkApplicationIntegration",
        "Alpha",
        False,
        False,
        "Kueue: the SparkApplication integration.",
    ),
    _kueue("TLSOptions", "Beta", True, True, "Kueue: TLS options for its servers."),
    _kueue(
        "UnadmittedWorkloadsExplicitStatus",
        "Beta",
        None,
        False,
        "Kueue: explicit False admission conditions at once.",
        default=False,
        needs=("UnadmittedWorkloadsObservability",),
    ),
    _kueue(
        "UnadmittedWorkloadsObservability",
        "Beta",
        None,
        True,
        "Kueue: metrics and reasons for unadmitted workloads.",
        default=False,
    ),
    _kueue(
        "ValidateRayAndSparkJobUpdates",
        "Beta",
        None,
        True,
        "Kueue: validates Ray and Spark job updates.",
        default=True,
    ),
    _kueue("VisibilityOnDemand", "Beta", True, True, "Kueue: the visibility API."),
    _kueue(
        "WorkloadIdentifierAnnotations",
        "Beta",
        None,
        True,
        "Kueue: workload identifiers as annotations.",
        default=True,
    ),
    _kueue(
        "WorkloadPriorityClassDefaulting",
        "Alpha",
        None,
        True,
        "Kueue: a default WorkloadPriorityClass.",
        default=False,
    ),
    _kueue(
        "WorkloadRequestUseMergePatch",
        "Alpha",
        False,
        False,
        "Kueue: merge patches for Workload updates.",
    ),
    _kueue(
        "WorkloadValidateResourcesAreNonNegative",
        "Beta",
        None,
        True,
        "Kueue: rejects negative resource requests.",
        default=True,
    ),
    _kueue(
        "WorkloadValidationForPodSetMetadata",
        "Beta",
        None,
        True,
        "Kueue: validates pod set template metadata.",
        default=True,
    ),
)

GATES: dict[str, GateSpec] = {spec.name: spec for spec in _SPECS}

# Another name for a gate: both are accepted and set one value; code asks only for the target.
ALIASES: dict[str, str] = {
    "TASMultipleNodeReplacement": Gate.TAS_REPLACE_MULTIPLE_FAILED_NODES.value,
}

# Every name a user may set.
NAMES: tuple[str, ...] = tuple(sorted([*GATES, *ALIASES]))

# The Kueue releases whose defaults GateSpec records.
RELEASES = ("v0.17.0", "v0.20")


class FeatureGateError(ValueError):
    """An unknown gate name, a value that is not true/false, or an alias in conflict."""


@dataclass(frozen=True)
class FeatureGates:
    """An immutable set of gate values by canonical name; unknown names are rejected."""

    values: Mapping[str, bool]

    def enabled(self, name: str) -> bool:
        if name not in GATES:
            raise FeatureGateError(f"unknown feature gate {name!r}")
        if not self.values.get(name, GATES[name].default):
            return False
        return all(self.enabled(dep) for dep in GATES[name].depends_on)

    def as_dict(self) -> dict[str, bool]:
        """The gates that change something here (implemented and ours), by name."""
        return {name: self.enabled(name) for name, s in GATES.items() if s.kind != Kind.NO_EFFECT}

    def solver_options(self) -> SolverOptions:
        """The gates that change placement, as the solver takes them (it never reads gates)."""
        return SolverOptions(
            profile_mixed=self.enabled(Gate.TAS_PROFILE_MIXED),
            balanced_placement=self.enabled(Gate.TAS_BALANCED_PLACEMENT),
            placement_groups=self.enabled(Gate.TAS_PLACEMENT_GROUPS),
            fragmentation_aware=self.enabled(Gate.TAS_PROFILE_FRAGMENTATION_AWARE),
            respect_node_affinity_preferred=self.enabled(Gate.TAS_RESPECT_NODE_AFFINITY_PREFERRED),
            node_feasibility_all_levels=self.enabled(Gate.TAS_NODE_FEASIBILITY_FOR_ALL_LEVELS),
            partial_slices=self.enabled(Gate.TAS_PARTIAL_SLICES),
            grouped_pod_set_slicing=self.enabled(Gate.TAS_GROUPED_POD_SET_SLICING),
            required_with_preferred=self.enabled(Gate.TAS_REQUIRED_WITH_PREFERRED),
            multi_role_groups=self.enabled(Gate.TAS_MULTI_ROLE_POD_SET_GROUPS),
            draining_domains=self.enabled(Gate.TAS_DRAINING_DOMAINS),
        )


def defaults() -> FeatureGates:
    return FeatureGates({})


# The process's gates, for code that reads a gate where its behaviour lives (as Kueue's
# features.Enabled): set once at start-up by the command, read-only afterwards.
_active = defaults()


def activate(gates: FeatureGates) -> None:
    global _active
    _active = gates


@contextmanager
def activated(gates: FeatureGates) -> Iterator[None]:
    """The process's gates are `gates` inside the block, and what they were again after it (an
    offline command that runs twice with different gates, a test)."""
    previous = _active
    activate(gates)
    try:
        yield
    finally:
        activate(previous)


def enabled(name: str) -> bool:
    """Whether the process's gate `name` is on (defaults until a command activates its own)."""
    return _active.enabled(name)


def _unknown(name: str) -> FeatureGateError:
    close = difflib.get_close_matches(name, NAMES, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return FeatureGateError(
        f"unknown feature gate {name!r}: no Kueue release from v0.17 to v0.20 knows it{hint}"
    )


def _boolean(name: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise FeatureGateError(f"feature gate {name!r}: value {value!r} is not true or false")


def from_mapping(values: Mapping[str, object]) -> FeatureGates:
    """Gates from a mapping such as a scenario's `featureGates`; values must be booleans."""
    parsed: dict[str, bool] = {}
    given_as: dict[str, str] = {}  # canonical name -> the name it was given under
    for name, value in values.items():
        if name not in GATES and name not in ALIASES:
            raise _unknown(name)
        canonical = ALIASES.get(name, name)
        flag = _boolean(name, value)
        if canonical in parsed and parsed[canonical] != flag:
            raise FeatureGateError(
                f"feature gates {given_as[canonical]!r} and {name!r} are one gate "
                f"({canonical}) but are set to different values"
            )
        parsed[canonical] = flag
        given_as[canonical] = name
    return FeatureGates(parsed)


def parse(spec: str) -> FeatureGates:
    """Parse `A=true,B=false` as kube components do."""
    values: dict[str, object] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, sep, value = item.partition("=")
        if not sep:
            raise FeatureGateError(f"feature gate {item!r}: expected NAME=true|false")
        values[name.strip()] = value.strip()  # a name given twice: the last wins, as in kube
    return from_mapping(values)


def from_env_and_flag(flag: str | None, environ: Mapping[str, str] = os.environ) -> FeatureGates:
    """The environment variable first, then the flag, so the flag wins on conflicts."""
    merged = dict(parse(environ.get(ENV_VAR, "")).values)
    merged.update(parse(flag or "").values)
    return FeatureGates(merged)


def no_effect_lines(gates: FeatureGates) -> list[str]:
    """One line per gate that was set but does nothing here, for the start-up log."""
    return [
        f"feature gate {name}={str(value).lower()} accepted, no effect here "
        f"({GATES[name].no_effect})"
        for name, value in sorted(gates.values.items())
        if GATES[name].kind is Kind.NO_EFFECT
    ]


def kueue_defaults(release: str) -> dict[str, bool]:
    """Each gate's default in a Kueue release ("v0.17.0" or "v0.20"), for the gates it has."""
    if release not in RELEASES:
        raise FeatureGateError(f"unknown Kueue release {release!r} (known: {', '.join(RELEASES)})")
    found = {
        name: spec.kueue_v0_17 if release == "v0.17.0" else spec.kueue_v0_20
        for name, spec in GATES.items()
    }
    return {name: value for name, value in found.items() if value is not None}


def preset(release: str) -> str:
    """The `--feature-gates` value that gives a Kueue release's defaults to the gates that have
    an effect here and whose default differs from ours."""
    return ",".join(
        f"{name}={str(value).lower()}"
        for name, value in sorted(kueue_defaults(release).items())
        if GATES[name].kind is Kind.IMPLEMENTED and GATES[name].default != value
    )


KIND_ORDER = (Kind.IMPLEMENTED, Kind.OURS, Kind.NO_EFFECT)


def _on_off(value: bool | None, missing: str) -> str:
    return missing if value is None else ("on" if value else "off")


def _what_it_does(spec: GateSpec) -> str:
    text = spec.doc
    if spec.kind is Kind.NO_EFFECT:
        text = f"No effect ({spec.no_effect}). {text}"
    needs = [name for name in spec.depends_on if name != _TAS]
    if needs:
        text += f" Needs {', '.join(needs)}."
    return text


def markdown_table() -> list[str]:
    lines = [
        "| gate | kind | stage | our default | v0.17.0 default | v0.20 default | what it does here |",
        "|---|---|---|---|---|---|---|",
    ]
    for spec in sorted(GATES.values(), key=lambda s: (KIND_ORDER.index(s.kind), s.name)):
        gone = "—" if spec.kind is Kind.OURS else "removed"
        lines.append(
            f"| `{spec.name}` | {spec.kind} | {spec.stage} | {_on_off(spec.default, '')} "
            f"| {_on_off(spec.kueue_v0_17, '—')} | {_on_off(spec.kueue_v0_20, gone)} "
            f"| {_what_it_does(spec)} |"
        )
    return lines


PAGE = """\
# Feature gates

<!-- Generated from operator/tas/features.py by `python -m tas.features --markdown`. -->

tas-operator accepts every feature-gate name of Kueue v0.17.0 to v0.20, so a `featureGates`
list copied from a Kueue installation works unchanged, and adds gates of its own. Set
them with `tas operator --feature-gates A=true,B=false`, the `TAS_FEATURE_GATES` environment
variable (the flag wins where both set a gate), the chart's `featureGates` value, or the
`featureGates` map of a scenario or trace file (`tas solve`, `tas simulate`). A value is `true`
or `false`. A name that no Kueue release from v0.17 to v0.20 knows stops start-up with a
message naming it and the closest known name.

Each gate is one of three kinds:

- **implemented**: the behaviour is here, under Kueue's name.
- **accepted, no effect**: a Kueue feature that is not implemented here, one that only makes
  Kueue faster, or one that is always on here. `tas operator` logs one line for each such
  gate that is set, e.g.
  `feature gate MultiKueue=true accepted, no effect here (not implemented)`.
- **ours**: beyond Kueue, off by default until proven; on by default (Beta) only where it
  changes no decision and only does sooner what Kubernetes itself would do.

Our default is Kueue v0.17.0's, the release we run side by side. A gate Kueue v0.17.0 does
not have takes the default of the release that added it, except `TASNodeFeasibilityForAllLevels`,
`TASPartialSlices` and `TASGroupedPodSetSlicing`, which stay off so that placements stay
identical to Kueue v0.17.0's.

A gate takes effect only while the gates it needs are on: every `TAS*` gate needs
`TopologyAwareScheduling`, and the table names the others.

Two names set one gate, and setting both to different values is an error: {aliases}.

## Kueue v0.20's defaults

For Kueue v0.20's defaults, for every gate that has an effect here:

```
--feature-gates {v0_20}
```

(`tas.features.preset("v0.20")` gives this value; `tas.features.kueue_defaults("v0.20")` gives
every gate's default in v0.20.)

## All gates

Kueue's stages and defaults are those of `pkg/features/kube_features.go` in each release. For
the four gates merged after v0.19 (`TASGroupedPodSetSlicing`, `TASNodeFeasibilityForAllLevels`,
`TASPartialSlices`, `TASReplaceMultipleFailedNodes`) they are those of their pull requests, as
v0.20 was not yet released. "Stage" is Kueue's label in the release whose default is ours.

{table}
"""


def markdown() -> str:
    """docs/reference/feature-gates.md."""
    return PAGE.format(
        v0_20=preset("v0.20"),
        aliases=", ".join(f"`{alias}` is `{name}`" for alias, name in ALIASES.items()),
        table="\n".join(markdown_table()),
    )


if __name__ == "__main__":
    if sys.argv[1:] != ["--markdown"]:
        sys.exit("usage: python -m tas.features --markdown")
    sys.stdout.write(markdown())
