"""The solver's public data types: plain, immutable, no Kubernetes objects.

Quantities are integers in milli-units for every resource (cpu "1" -> 1000, memory "1Ki" ->
1_024_000, pods 10 -> 10_000), so all resources compare and divide the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

HOSTNAME_LEVEL = "kubernetes.io/hostname"
PODS = "pods"
ONE_POD = 1000  # milli-units of the "pods" resource: every pod takes one

Resources = Mapping[str, int]  # resource name -> milli-units


def with_one_pod(requests: Resources) -> dict[str, int]:
    """A pod's requests plus the one "pods" every pod takes (Kueue adds it to every pod set)."""
    return {**requests, PODS: requests.get(PODS, 0) + ONE_POD}


@dataclass(frozen=True)
class Taint:
    key: str
    effect: str  # NoSchedule, PreferNoSchedule, NoExecute
    value: str = ""


@dataclass(frozen=True)
class Toleration:
    key: str = ""  # empty with operator Exists tolerates everything
    operator: str = "Equal"  # Equal or Exists
    value: str = ""
    effect: str = ""  # empty matches every effect
    toleration_seconds: int | None = None


@dataclass(frozen=True)
class NodeSelectorRequirement:
    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist, Gt, Lt
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class NodeSelectorTerm:
    match_expressions: tuple[NodeSelectorRequirement, ...] = ()


@dataclass(frozen=True)
class PreferredSchedulingTerm:
    """One term of preferredDuringSchedulingIgnoredDuringExecution: a node matching
    `preference` scores `weight` (1-100)."""

    weight: int
    preference: NodeSelectorTerm


CONTAINER_SCOPE = "container"  # Topology Manager scopes, as NodeResourceTopology names them
POD_SCOPE = "pod"


@dataclass(frozen=True)
class NumaZone:
    name: str
    free: Resources  # milli-units: the zone's available, less our pods not yet reported


@dataclass(frozen=True)
class NodeNuma:
    """The zones of a node whose Topology Manager policy is single-numa-node."""

    scope: str  # CONTAINER_SCOPE or POD_SCOPE
    zones: tuple[NumaZone, ...]

    @cached_property
    def reported(self) -> frozenset[str]:
        """The resources some zone reports: only these are aligned (computed once)."""
        return frozenset(name for zone in self.zones for name in zone.free)


@dataclass(frozen=True)
class NumaShape:
    """What one pod asks of the Topology Manager: the requests of every container that gets
    exclusive resources (app containers and sidecars), in spec order."""

    containers: tuple[Resources, ...]
    names: tuple[str, ...] = ()  # the containers' names, for the zone annotation

    def total(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for container in self.containers:
            for name, value in container.items():
                out[name] = out.get(name, 0) + value
        return out


@dataclass(frozen=True)
class Node:
    name: str
    labels: Mapping[str, str]
    allocatable: Resources
    usage: Resources = field(default_factory=dict)  # pods outside topology-aware admission
    taints: tuple[Taint, ...] = ()
    ready: bool = True
    unschedulable: bool = False
    # Its NUMA zones when the kubelet runs single-numa-node (solver/numa.py); None: totals only.
    numa: NodeNuma | None = None
    # An admin marked it draining (ours): with SolverOptions.draining_domains no new pod goes
    # there; the usage of pods already there stays counted.
    draining: bool = False


@dataclass(frozen=True)
class SliceLayer:
    """Each group of `size` pods must fit in one domain of `level`."""

    level: str
    size: int


@dataclass(frozen=True)
class TopologyRequest:
    """A pod set's parsed topology annotations. At most one of required/preferred/unconstrained.

    A request with none of the three and no slice layers is "implied": placed as Kueue places
    a pod set without annotations in a TAS-only ClusterQueue (unconstrained, lowest level).
    """

    required: str | None = None
    preferred: str | None = None
    unconstrained: bool = False
    # outermost first; the single-layer annotation is one layer
    slice_layers: tuple[SliceLayer, ...] = ()
    group_name: str | None = None  # podset-group-name: leader + workers share one domain
    # Ours (TASRequiredWithPreferred): with `required`, a lower level preferred inside the
    # required domain (solver/required_preferred.py)
    inner_preferred: str | None = None
    # Rank order for the ungater (placement ignores them): the label holding a pod's index,
    # and for JobSets the label holding its Job's index and the number of Jobs.
    pod_index_label: str | None = None
    sub_group_index_label: str | None = None
    sub_group_count: int | None = None

    @property
    def implied(self) -> bool:
        return not (self.required or self.preferred or self.unconstrained or self.slice_layers)


@dataclass(frozen=True)
class PodSetRequest:
    name: str
    count: int
    requests: Resources  # per pod, without the implicit 1 "pods"
    topology: TopologyRequest = field(default_factory=TopologyRequest)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()
    required_affinity: tuple[NodeSelectorTerm, ...] = ()  # ORed terms; empty = no constraint
    # Scores nodes; orders domains only with TASRespectNodeAffinityPreferred (SolverOptions)
    preferred_affinity: tuple[PreferredSchedulingTerm, ...] = ()
    # Set when every container is Guaranteed with whole CPUs: counted per NUMA zone on nodes
    # that report zones (solver/numa.py). None: node totals only.
    numa: NumaShape | None = None


@dataclass(frozen=True)
class FlavorSpec:
    """The TAS ResourceFlavor: only nodes with all node_labels count; tolerations apply to
    every pod set."""

    node_labels: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()
    # The Topology object's name, quoted in failure messages as Kueue does
    # (`topology "default" allows ...`); None quotes the level the request failed at.
    topology_name: str | None = None


@dataclass(frozen=True)
class SolverOptions:
    """Feature gates that change placement (the solver never reads the gate registry itself)."""

    profile_mixed: bool = True  # TASProfileMixed: LeastFreeCapacity for unconstrained/implied
    balanced_placement: bool = False  # TASBalancedPlacement
    placement_groups: bool = False  # TASPlacementGroups (ours): solver/groups.py
    fragmentation_aware: bool = False  # TASProfileFragmentationAware (ours): solver/profile.py
    # TASRespectNodeAffinityPreferred: where leaves are nodes, the pod set's preferred node
    # affinity score orders domains before BestFit / LeastFreeCapacity
    respect_node_affinity_preferred: bool = False
    # TASNodeFeasibilityForAllLevels: with a lowest level other than the hostname, every node
    # is a leaf below it (solver/feasibility.py)
    node_feasibility_all_levels: bool = False
    # TASPartialSlices: a single slice layer whose size does not divide the count places a
    # last, shorter slice in one domain of the slice level (solver/algorithm.py, "tail").
    partial_slices: bool = False
    # TASGroupedPodSetSlicing: a leader/workers group may carry slices. Placement already
    # handles them; validation (api/annotations.py, admission) reads this to allow them.
    grouped_pod_set_slicing: bool = False
    # TASRequiredWithPreferred (ours): a required request's inner_preferred level is honoured
    # (solver/required_preferred.py); off, it is ignored.
    required_with_preferred: bool = False
    # TASMultiRolePodSetGroups (ours): a pod-set group that is not Kueue's leader and workers
    # is placed as one gang in one domain of its level (solver/role_groups.py).
    multi_role_groups: bool = False
    # TASDrainingDomains (ours): leaves whose nodes are all draining take no new pods.
    draining_domains: bool = False


@dataclass(frozen=True)
class DomainAssignment:
    values: tuple[str, ...]  # one value per level of the assignment's `levels`
    count: int


@dataclass(frozen=True)
class TopologyAssignment:
    """Exactly Kueue's v1beta1 `topologyAssignment`: levels are [hostname] alone when hostname is
    the lowest topology level, else all levels; domains sorted by values, none with count 0."""

    levels: tuple[str, ...]
    domains: tuple[DomainAssignment, ...]


@dataclass(frozen=True)
class PodSetPlacement:
    name: str
    count: int
    assignment: TopologyAssignment
    # hostname -> the zone of each aligned container (pod scope: one) of every pod placed on
    # a node counted by NUMA zones; empty when none was.
    numa_zones: Mapping[str, tuple[tuple[str, ...], ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class WorkloadPlacement:
    """Either every pod set placed (failure is None) or none, with Kueue's reason in numbers."""

    podsets: tuple[PodSetPlacement, ...] = ()
    failure: str | None = None

    @property
    def admitted(self) -> bool:
        return self.failure is None


@dataclass(frozen=True)
class ReplacementPlacement:
    """A pod set's assignment after moving the pods of one failed node (Kueue's hot swap).

    `assignment` is the whole new assignment (surviving domains merged with the new ones);
    `added` holds only the new domains, the usage to account on top of the surviving pods.
    """

    assignment: TopologyAssignment | None = None
    added: TopologyAssignment | None = None
    failure: str | None = None

    @property
    def replaced(self) -> bool:
        return self.failure is None
