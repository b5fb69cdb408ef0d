"""Stripped projections of watched objects: only what placement and admission read.

Whole objects are never kept (managedFields and status churn would cost memory for nothing),
and a projection that equals the previous one tells the caller the event changed nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property

from tas.api import topologyassignment, topologyrequest
from tas.api.constants import (
    ALLOW_EXCLUSIVE_PLACEMENT_GROUPS,
    COND_ADMITTED,
    COND_EVICTED,
    COND_FINISHED,
    COND_QUOTA_RESERVED,
    COND_REQUEUED,
    HOSTNAME_LABEL,
    INDEX_LABELS,
    IS_GROUP_WORKLOAD_ANNOTATION,
    JOB_COMPLETION_INDEX_LABEL,
    JOB_UID_LABEL,
    MAY_STOP_SEARCH,
    NEVER,
    NUMA_ZONE_ANNOTATION,
    POD_INDEX_OFFSET_ANNOTATION,
    PODSET_LABEL,
    REASON_DEACTIVATED,
    STRICT_FIFO,
    TOPOLOGY_SCHEDULING_GATE,
    TRY_NEXT_FLAVOR,
    UNHEALTHY_NODES_EVICTION_THRESHOLD_ANNOTATION,
    WORKLOAD_ANNOTATION,
    is_draining,
)
from tas.api.fairsharing import USAGE_BASED_ADMISSION_FAIR_SHARING
from tas.api.movable import Movable, MovableError
from tas.api.movable import parse as parse_movable
from tas.api.placementgroups import (
    GroupRef,
    GroupSpec,
    parse_annotations,
    spec_from_object,
)
from tas.api.podrequests import numa_shape, pod_requests
from tas.api.quantity import parse_milli, parse_quantity, resources_to_milli
from tas.api.relaxation import Stage, parse_relaxation
from tas.solver.types import (
    CONTAINER_SCOPE,
    POD_SCOPE,
    Node,
    NodeNuma,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    NumaShape,
    NumaZone,
    PodSetRequest,
    PreferredSchedulingTerm,
    Taint,
    Toleration,
    TopologyAssignment,
)

Key = tuple[str, str]  # (namespace, name)


def key_of(obj: Mapping) -> Key:
    meta = obj["metadata"]
    return meta.get("namespace", ""), meta["name"]


def node_from_object(obj: Mapping) -> Node:
    status = obj.get("status") or {}
    spec = obj.get("spec") or {}
    conditions = status.get("conditions") or []
    return Node(
        name=obj["metadata"]["name"],
        labels=dict(obj["metadata"].get("labels") or {}),
        allocatable=resources_to_milli(status.get("allocatable") or {}),
        taints=tuple(
            Taint(key=t["key"], effect=t.get("effect", ""), value=t.get("value") or "")
            for t in spec.get("taints") or []
        ),
        ready=any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions),
        unschedulable=bool(spec.get("unschedulable")),
        draining=is_draining(obj["metadata"].get("labels") or {}),
    )


# NodeResourceTopology (topology.node.k8s.io/v1alpha2): the attributes NFD's topology-updater
# and the resource-topology-exporter publish, and the deprecated topologyPolicies values.
SINGLE_NUMA_NODE = "single-numa-node"
_LEGACY_SINGLE_NUMA = {
    "SingleNUMANodeContainerLevel": CONTAINER_SCOPE,
    "SingleNUMANodePodLevel": POD_SCOPE,
}


class NumaReportError(ValueError):
    """A NodeResourceTopology that cannot be read; the message names the field."""


def numa_from_object(obj: Mapping) -> NodeNuma | None:
    """A node's NUMA zones (type Node) when its Topology Manager runs single-numa-node; None
    for any other policy, whose node keeps its totals."""
    attributes = {
        a.get("name"): a.get("value")
        for a in _list(obj.get("attributes"))
        if isinstance(a, Mapping) and isinstance(a.get("name"), str)
    }
    policy = attributes.get("topologyManagerPolicy")
    if policy is not None:
        if policy != SINGLE_NUMA_NODE:
            return None
        scope = attributes.get("topologyManagerScope") or CONTAINER_SCOPE
        if not isinstance(scope, str) or scope not in (CONTAINER_SCOPE, POD_SCOPE):
            raise NumaReportError(f"attributes[topologyManagerScope]: unknown scope {scope!r}")
    else:
        policies = _list(obj.get("topologyPolicies"))
        legacy = [_LEGACY_SINGLE_NUMA.get(p) for p in policies if isinstance(p, str)]
        scope = next((s for s in legacy if s), None)
        if scope is None:
            return None
    zones = []
    for i, zone in enumerate(_list(obj.get("zones"))):
        if not isinstance(zone, Mapping) or zone.get("type") != "Node":
            continue
        name = zone.get("name")
        if not isinstance(name, str) or not name:
            raise NumaReportError(f"zones[{i}].name: a zone needs a name")
        free: dict[str, int] = {}
        for j, resource in enumerate(_list(zone.get("resources"))):
            field_path = f"zones[{i}].resources[{j}]"
            resource_name = resource.get("name") if isinstance(resource, Mapping) else None
            if not isinstance(resource_name, str) or not resource_name:
                raise NumaReportError(f"{field_path}.name: a resource needs a name")
            try:
                value = parse_milli(resource.get("available"))
            except (TypeError, ValueError) as exc:
                raise NumaReportError(f"{field_path}.available: {exc}") from None
            free[resource_name] = max(0, value)
        zones.append(NumaZone(name, free))
    if not zones:
        raise NumaReportError("zones: no zone of type Node")
    return NodeNuma(scope=scope, zones=tuple(zones))


def _list(value: object) -> list:
    """A field that should be a list; anything else reads as empty."""
    return value if isinstance(value, list) else []


def toleration_from_object(t: Mapping) -> Toleration:
    return Toleration(
        key=t.get("key") or "",
        operator=t.get("operator") or "Equal",
        value=t.get("value") or "",
        effect=t.get("effect") or "",
        toleration_seconds=t.get("tolerationSeconds"),
    )


PREFERRED_AFFINITY_FIELD = "affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"


def preferred_affinity_from_spec(pod_spec: Mapping) -> tuple[PreferredSchedulingTerm, ...]:
    """A pod spec's preferred node affinity terms; a malformed one is a ValueError naming its
    field."""
    node_affinity = (pod_spec.get("affinity") or {}).get("nodeAffinity") or {}
    terms = []
    for i, term in enumerate(
        node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []
    ):
        path = f"{PREFERRED_AFFINITY_FIELD}[{i}]"
        weight = term.get("weight")
        if not isinstance(weight, int) or isinstance(weight, bool):
            raise ValueError(f"{path}.weight: must be an integer, got {weight!r}")
        preference = node_selector_term_from_object(
            term.get("preference") or {}, f"{path}.preference"
        )
        terms.append(PreferredSchedulingTerm(weight=weight, preference=preference))
    return tuple(terms)


REQUIRED_AFFINITY_FIELD = (
    "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
)


def required_affinity_from_spec(pod_spec: Mapping) -> tuple[NodeSelectorTerm, ...]:
    """A pod spec's required node affinity (ORed terms), which Kueue checks on nodes as the
    scheduler will; a malformed term is a ValueError naming its field."""
    node_affinity = (pod_spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    return tuple(
        node_selector_term_from_object(term or {}, f"{REQUIRED_AFFINITY_FIELD}[{i}]")
        for i, term in enumerate(required.get("nodeSelectorTerms") or [])
    )


def node_selector_term_from_object(term: Mapping, path: str) -> NodeSelectorTerm:
    """Its matchExpressions, and matchFields on `metadata.name` read as the node's hostname
    label (the only field they may name; nodes are named after their hostname)."""
    requirements = []
    for field_name in ("matchExpressions", "matchFields"):
        for i, expression in enumerate(term.get(field_name) or []):
            key, operator = expression.get("key"), expression.get("operator")
            if not isinstance(key, str) or not isinstance(operator, str):
                raise ValueError(f"{path}.{field_name}[{i}]: needs a key and an operator")
            if field_name == "matchFields":
                if key != "metadata.name":
                    raise ValueError(f"{path}.matchFields[{i}].key: only metadata.name")
                key = HOSTNAME_LABEL
            values = tuple(str(v) for v in expression.get("values") or ())
            requirements.append(NodeSelectorRequirement(key=key, operator=operator, values=values))
    return NodeSelectorTerm(match_expressions=tuple(requirements))


@dataclass(frozen=True)
class PodInfo:
    namespace: str
    name: str
    uid: str
    node_name: str | None
    phase: str
    requests: Mapping[str, int]
    workload: str | None  # the managing Workload's name, from our annotation
    pod_set: str | None
    gated: bool  # still carries the topology scheduling gate
    node_selector: Mapping[str, str]
    deleting: bool
    owner_uid: str | None = None  # the controlling owner (a Job's pods: the Job)
    # The integrations' index labels the pod carries (INDEX_LABELS), as integers: rank order.
    index_labels: Mapping[str, int] = field(default_factory=dict)
    # POD_INDEX_OFFSET_ANNOTATION as written: the ungater parses it (a bad value is its error).
    index_offset: str | None = None
    numa_zone: str | None = None  # NUMA_ZONE_ANNOTATION, set by our ungater
    numa: NumaShape | None = None  # read only for a pod with a zone annotation

    @property
    def completion_index(self) -> int | None:
        return self.index_labels.get(JOB_COMPLETION_INDEX_LABEL)

    @property
    def terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    @property
    def holds_node(self) -> bool:
        """Bound to a node and not finished: it takes capacity there."""
        return bool(self.node_name) and not self.terminal


def pod_from_object(obj: Mapping) -> PodInfo:
    meta = obj["metadata"]
    spec = obj.get("spec") or {}
    annotations = meta.get("annotations") or {}
    labels = meta.get("labels") or {}
    return PodInfo(
        namespace=meta.get("namespace", ""),
        name=meta["name"],
        uid=meta.get("uid", ""),
        node_name=spec.get("nodeName") or None,
        phase=(obj.get("status") or {}).get("phase") or "Pending",
        requests=pod_requests(spec),
        workload=annotations.get(WORKLOAD_ANNOTATION),
        pod_set=labels.get(PODSET_LABEL),
        gated=any(
            g.get("name") == TOPOLOGY_SCHEDULING_GATE for g in spec.get("schedulingGates") or []
        ),
        node_selector=dict(spec.get("nodeSelector") or {}),
        deleting=bool(meta.get("deletionTimestamp")),
        owner_uid=next(
            (o.get("uid") for o in meta.get("ownerReferences") or [] if o.get("controller")),
            None,
        ),
        index_labels=index_labels(labels),
        index_offset=annotations.get(POD_INDEX_OFFSET_ANNOTATION),
        numa_zone=(zone := annotations.get(NUMA_ZONE_ANNOTATION)),
        numa=numa_shape(spec) if zone else None,
    )


MAX_INDEX_DIGITS = 9  # an index beyond int32 is no rank (Kueue reads them as bounded integers)


def index_labels(labels: Mapping[str, str]) -> dict[str, int]:
    """The rank labels a pod carries, those whose value is a plain decimal number."""
    out = {}
    for key in INDEX_LABELS:
        value = labels.get(key)
        if (
            value is not None
            and value.isascii()
            and value.isdigit()
            and len(value) <= MAX_INDEX_DIGITS
        ):
            out[key] = int(value)
    return out


@dataclass(frozen=True)
class PodPriorityClass:
    """A scheduling.k8s.io/v1 PriorityClass, as a Workload's priority reads it."""

    value: int
    global_default: bool = False


def pod_priority_class_from_object(obj: Mapping) -> PodPriorityClass:
    return PodPriorityClass(
        value=int(obj.get("value") or 0), global_default=bool(obj.get("globalDefault"))
    )


@dataclass(frozen=True)
class ContainerDefaults:
    """What a namespace's LimitRanges (type Container) give a container that does not say:
    limits (`default`) and requests (`defaultRequest`), quantities as written."""

    limits: Mapping[str, str] = field(default_factory=dict)
    requests: Mapping[str, str] = field(default_factory=dict)

    def then(self, later: ContainerDefaults) -> ContainerDefaults:
        """These, and `later`'s for resources these leave open: the API server applies a
        namespace's LimitRanges one after the other, each filling only what is still unset."""
        return ContainerDefaults(
            {**later.limits, **self.limits}, {**later.requests, **self.requests}
        )


@dataclass(frozen=True)
class PodDefaults:
    """What the API server adds to a namespace's pods when it creates them, which a pod
    template (and so a Workload built from one) does not show: LimitRange defaults and the
    RuntimeClass's overhead."""

    containers: ContainerDefaults = field(default_factory=ContainerDefaults)
    overheads: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # class -> podFixed


def _quantities(values: object, path: str) -> dict[str, str]:
    """A ResourceList as written; a value that is no quantity is a ValueError naming it."""
    if values is None:
        return {}
    if not isinstance(values, Mapping):
        raise ValueError(f"{path}: must be a map of resource quantities")
    for name, value in values.items():
        try:
            parse_milli(value)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{path}.{name}: {exc}") from None
    return {str(name): value for name, value in values.items()}


def limit_range_from_object(obj: Mapping) -> ContainerDefaults:
    """A LimitRange's container defaults, with the API server's own defaulting of the object
    (a `max` without `default` is the default limit; a `default` or, failing it, a `min` is
    the default request). Of two Container items, the later wins, as the LimitRanger reads
    them. A bad quantity is a ValueError naming its field."""
    out = ContainerDefaults()
    for i, item in enumerate(_list((obj.get("spec") or {}).get("limits"))):
        if not isinstance(item, Mapping) or item.get("type") != "Container":
            continue
        path = f"spec.limits[{i}]"
        limits = {
            **_quantities(item.get("max"), f"{path}.max"),
            **_quantities(item.get("default"), f"{path}.default"),
        }
        requests = {
            **_quantities(item.get("min"), f"{path}.min"),
            **limits,
            **_quantities(item.get("defaultRequest"), f"{path}.defaultRequest"),
        }
        out = ContainerDefaults(limits, requests).then(out)
    return out


def runtime_class_overhead(obj: Mapping) -> dict[str, str]:
    """A RuntimeClass's `overhead.podFixed` (empty: none); a bad quantity is a ValueError."""
    overhead = obj.get("overhead") or {}
    if not isinstance(overhead, Mapping):
        raise ValueError("overhead: must be a map")
    return _quantities(overhead.get("podFixed"), "overhead.podFixed")


@dataclass(frozen=True)
class FlavorInfo:
    name: str
    node_labels: Mapping[str, str]
    tolerations: tuple[Toleration, ...]
    topology_name: str | None


def flavor_from_object(obj: Mapping) -> FlavorInfo:
    spec = obj.get("spec") or {}
    return FlavorInfo(
        name=obj["metadata"]["name"],
        node_labels=dict(spec.get("nodeLabels") or {}),
        tolerations=tuple(toleration_from_object(t) for t in spec.get("tolerations") or []),
        topology_name=spec.get("topologyName") or None,
    )


@dataclass(frozen=True)
class FlavorQuota:
    flavor: str
    nominal: Mapping[str, int]  # resource -> milli-units
    borrowing_limit: Mapping[str, int] = field(default_factory=dict)  # absent: no limit
    lending_limit: Mapping[str, int] = field(default_factory=dict)  # absent: lends it all


@dataclass(frozen=True)
class ResourceGroup:
    covered: frozenset[str]
    flavors: tuple[FlavorQuota, ...]


@dataclass(frozen=True)
class ClusterQueueInfo:
    name: str
    strict_fifo: bool
    resource_groups: tuple[ResourceGroup, ...]
    namespace_selector: Mapping | None  # None selects nothing, {} selects every namespace
    within_cluster_queue: str = NEVER  # spec.preemption.withinClusterQueue
    cohort: str | None = None
    # spec.admissionScope.admissionMode is UsageBasedAdmissionFairSharing
    usage_based_admission_fair_sharing: bool = False
    reclaim_within_cohort: str = NEVER
    borrow_within_cohort: str = NEVER  # spec.preemption.borrowWithinCohort.policy
    borrow_threshold: int | None = None  # ... .maxPriorityThreshold
    when_can_borrow: str = MAY_STOP_SEARCH  # spec.flavorFungibility
    when_can_preempt: str = TRY_NEXT_FLAVOR
    # Its workloads may join exclusive placement groups (ours: an admin's annotation).
    allows_exclusive_groups: bool = False
    fair_weight: float = 1.0  # spec.fairSharing.weight (Kueue's default 1)


@dataclass(frozen=True)
class PlacementGroupInfo:
    """A PlacementGroup object: its constraints and the partition of each domain it holds."""

    namespace: str
    name: str
    spec: GroupSpec
    partitions: Mapping[tuple[str, ...], int] = field(default_factory=dict)
    written: tuple = ()  # the status as read, to skip writing an unchanged one


def placement_group_from_object(obj: Mapping) -> PlacementGroupInfo:
    meta = obj["metadata"]
    status = obj.get("status") or {}
    partitions = {
        tuple(domain): int(p["partition"])
        for p in status.get("partitions") or []
        for domain in p.get("domains") or []
    }
    return PlacementGroupInfo(
        namespace=meta.get("namespace", ""),
        name=meta["name"],
        spec=spec_from_object(obj.get("spec") or {}),
        partitions=partitions,
        written=_status_key(status),
    )


def _status_key(status: Mapping) -> tuple:
    """A comparable form of a PlacementGroup status."""
    return (
        tuple(status.get("members") or ()),
        int(status.get("pods") or 0),
        tuple(status.get("affinityDomain") or ()),
        tuple(tuple(d) for d in status.get("ownedDomains") or ()),
        tuple(
            (
                int(p["partition"]),
                tuple(tuple(d) for d in p.get("domains") or ()),
                int(p.get("pods") or 0),
            )
            for p in status.get("partitions") or ()
        ),
    )


def placement_group_status_key(status: Mapping) -> tuple:
    return _status_key(status)


@dataclass(frozen=True)
class CohortInfo:
    name: str
    parent: str | None
    resource_groups: tuple[ResourceGroup, ...]
    fair_weight: float = 1.0  # spec.fairSharing.weight (Kueue's default 1)


def _resource_groups(groups: list) -> tuple[ResourceGroup, ...]:
    out = []
    for group in groups or []:
        flavors = []
        for f in group.get("flavors") or []:
            resources = f.get("resources") or []
            flavors.append(
                FlavorQuota(
                    flavor=f["name"],
                    nominal=resources_to_milli(
                        {r["name"]: r.get("nominalQuota", 0) for r in resources}
                    ),
                    borrowing_limit=resources_to_milli(
                        {r["name"]: r["borrowingLimit"] for r in resources if "borrowingLimit" in r}
                    ),
                    lending_limit=resources_to_milli(
                        {r["name"]: r["lendingLimit"] for r in resources if "lendingLimit" in r}
                    ),
                )
            )
        out.append(
            ResourceGroup(
                covered=frozenset(group.get("coveredResources") or []), flavors=tuple(flavors)
            )
        )
    return tuple(out)


def cohort_from_object(obj: Mapping) -> CohortInfo:
    spec = obj.get("spec") or {}
    return CohortInfo(
        name=obj["metadata"]["name"],
        parent=spec.get("parentName") or None,
        resource_groups=_resource_groups(spec.get("resourceGroups") or []),
        fair_weight=fair_weight(spec),
    )


def fair_weight(spec: Mapping) -> float:
    """spec.fairSharing.weight as a number (Kueue's Quantity.AsFloat64Slow); 1 when unset.
    The API server has validated it; a value it let through but that cannot be read counts
    as the default rather than stopping the cache."""
    weight = (spec.get("fairSharing") or {}).get("weight")
    if weight is None:
        return 1.0
    try:
        return max(0.0, float(parse_quantity(weight)))
    except ValueError:
        return 1.0


def cluster_queue_from_object(obj: Mapping) -> ClusterQueueInfo:
    spec = obj.get("spec") or {}
    preemption = spec.get("preemption") or {}
    borrow = preemption.get("borrowWithinCohort") or {}
    fungibility = spec.get("flavorFungibility") or {}
    threshold = borrow.get("maxPriorityThreshold")
    return ClusterQueueInfo(
        name=obj["metadata"]["name"],
        strict_fifo=spec.get("queueingStrategy") == STRICT_FIFO,
        resource_groups=_resource_groups(spec.get("resourceGroups") or []),
        namespace_selector=spec.get("namespaceSelector"),
        within_cluster_queue=preemption.get("withinClusterQueue") or NEVER,
        cohort=spec.get("cohortName") or None,
        usage_based_admission_fair_sharing=(spec.get("admissionScope") or {}).get("admissionMode")
        == USAGE_BASED_ADMISSION_FAIR_SHARING,
        reclaim_within_cohort=preemption.get("reclaimWithinCohort") or NEVER,
        borrow_within_cohort=borrow.get("policy") or NEVER,
        borrow_threshold=None if threshold is None else int(threshold),
        when_can_borrow=fungibility.get("whenCanBorrow") or MAY_STOP_SEARCH,
        when_can_preempt=fungibility.get("whenCanPreempt") or TRY_NEXT_FLAVOR,
        allows_exclusive_groups=(obj["metadata"].get("annotations") or {}).get(
            ALLOW_EXCLUSIVE_PLACEMENT_GROUPS
        )
        == "true",
        fair_weight=fair_weight(spec),
    )


@dataclass(frozen=True)
class PodSetAdmission:
    name: str
    flavor: str | None
    count: int
    assignment: TopologyAssignment | None


@dataclass(frozen=True)
class OwnerRef:
    api_version: str
    kind: str
    name: str
    uid: str


@dataclass(frozen=True)
class WorkloadInfo:
    namespace: str
    name: str
    uid: str
    resource_version: str
    generation: int
    queue_name: str
    priority: int
    created: datetime
    pod_sets: tuple[PodSetRequest, ...]
    admission_cq: str | None
    admissions: tuple[PodSetAdmission, ...]
    conditions: tuple[Mapping, ...]
    unhealthy_nodes: tuple[str, ...]
    admission_raw: Mapping | None = field(
        default=None, compare=False
    )  # status.admission as written
    owner: OwnerRef | None = None  # the controlling owner (a Job, a JobSet, a Pod ...)
    # Every owner: the controller, and for pod groups each pod and the LeaderWorkerSet.
    owners: tuple[OwnerRef, ...] = ()
    is_group: bool = False  # a pod group's Workload (Kueue's is-group-workload annotation)
    # The tas-unhealthy-nodes-eviction-threshold annotation as written (hotswap reads it).
    eviction_threshold: str | None = None
    spec_error: str | None = field(default=None, compare=False)  # why spec.podSets can't be read
    # why an assignment in status.admission can't be read (that pod set has no topology)
    admission_error: str | None = field(default=None, compare=False)
    job_uid: str | None = None  # Kueue's job-uid label: the owner job's uid
    # The placement group its pod set joins (ours, gate TASPlacementGroups), or why the
    # annotations cannot be read.
    placement_group: GroupRef | None = None
    placement_group_error: str | None = field(default=None, compare=False)
    active: bool = True  # spec.active: false takes it out of its queue and evicts it
    priority_class: str = ""  # spec.priorityClassRef.name: Kueue's metrics label workloads by it
    # Each pod set's podset-topology-relaxation stages (ours, gate TASTopologyRelaxation), by
    # pod set name, or why an annotation cannot be read.
    relaxations: Mapping[str, tuple[Stage, ...]] = field(default_factory=dict)
    relaxation_error: str | None = field(default=None, compare=False)
    # Gate TASDefragmentation (ours): its tas-operator.io/movable annotations as given, or why
    # they cannot be read (then it is never moved).
    movable: Movable = field(default=Movable(None, None), compare=False)
    movable_error: str | None = field(default=None, compare=False)

    @property
    def group_key(self) -> tuple[str, str] | None:
        if self.placement_group is None:
            return None
        return (self.namespace, self.placement_group.name)

    @cached_property
    def reserved_at(self) -> datetime | None:
        """When quota was reserved (QuotaReserved True's lastTransitionTime); None while it
        is not, or when the time is not written."""
        cond = self.condition(COND_QUOTA_RESERVED)
        if not cond or cond.get("status") != "True" or not cond.get("lastTransitionTime"):
            return None
        try:
            return _timestamp(cond["lastTransitionTime"])
        except ValueError:
            return None

    @cached_property
    def queued_at(self) -> datetime:
        """When it last joined its queue, as Kueue's wait-time metrics count: the Requeued
        condition's lastTransitionTime when there is one, else its creation."""
        cond = self.condition(COND_REQUEUED)
        if cond and cond.get("lastTransitionTime"):
            try:
                return _timestamp(cond["lastTransitionTime"])
            except ValueError:
                pass
        return self.created

    @property
    def owner_uid(self) -> str | None:
        return self.owner.uid if self.owner else None

    @cached_property
    def owner_uids(self) -> frozenset[str]:
        return frozenset(o.uid for o in self.owners)

    @cached_property
    def owned_by_single_pod(self) -> bool:
        """Kueue's OwnedBySinglePod: a plain pod's Workload, which goes with its pod. A pod
        group's (even of one pod) is not: replacement pods join the same Workload."""
        if len(self.owners) != 1 or self.is_group:
            return False
        return self.owners[0].kind == "Pod" and self.owners[0].api_version == "v1"

    def owned_by(self, kind: str) -> OwnerRef | None:
        return next((o for o in self.owners if o.kind == kind), None)

    @property
    def owner_job(self) -> str | None:
        """The controlling batch/v1 Job's name."""
        o = self.owner
        return o.name if o and o.kind == "Job" and o.api_version == "batch/v1" else None

    @property
    def key(self) -> Key:
        return self.namespace, self.name

    # The flags below are read on every admission cycle: computed once per object (a new
    # object comes with every watch event), not once per read.

    def condition(self, type_: str) -> Mapping | None:
        return next((c for c in self.conditions if c.get("type") == type_), None)

    def is_true(self, type_: str) -> bool:
        cond = self.condition(type_)
        return cond is not None and cond.get("status") == "True"

    @cached_property
    def finished(self) -> bool:
        return self.is_true(COND_FINISHED)

    @cached_property
    def has_quota(self) -> bool:
        """Holds capacity: quota reserved (by us, or left from before a restart) and not finished."""
        return (
            self.is_true(COND_QUOTA_RESERVED)
            and self.admission_cq is not None
            and not self.finished
        )

    @cached_property
    def admitted(self) -> bool:
        return self.is_true(COND_ADMITTED) and self.has_quota

    @cached_property
    def evicted(self) -> bool:
        return self.is_true(COND_EVICTED)

    @cached_property
    def pending(self) -> bool:
        """Waits for admission: no quota, not finished, and active (an inactive workload is
        out of its queue until reactivated, and requeued: Requeued=True first)."""
        return not self.has_quota and not self.finished and self.active and not self.to_reactivate

    @cached_property
    def to_deactivate(self) -> bool:
        """Inactive but holding quota, and not on its way out yet: to be evicted."""
        return not self.active and self.has_quota and not self.evicted

    @cached_property
    def to_reactivate(self) -> bool:
        """Active again after a deactivation (Requeued=False, reason Deactivated)."""
        cond = self.condition(COND_REQUEUED)
        return (
            self.active
            and cond is not None
            and cond.get("status") == "False"
            and cond.get("reason") == REASON_DEACTIVATED
        )

    @cached_property
    def assigned_hosts(self) -> frozenset[str]:
        """Hostnames in the topology assignments (hostname-lowest topologies only)."""
        hosts: set[str] = set()
        for a in self.admissions:
            if a.assignment is not None and a.assignment.levels[-1:] == (HOSTNAME_LABEL,):
                hosts.update(d.values[-1] for d in a.assignment.domains)
        return frozenset(hosts)

    @cached_property
    def nodes_to_replace(self) -> tuple[str, ...]:
        """Unhealthy nodes that still carry part of the assignment of a workload holding quota."""
        if not self.has_quota or not self.unhealthy_nodes:
            return ()
        return tuple(n for n in self.unhealthy_nodes if n in self.assigned_hosts)


def _timestamp(text: str | None) -> datetime:
    if not text:
        return datetime.max
    return datetime.fromisoformat(text.replace("Z", "+00:00")).replace(tzinfo=None)


def workload_from_object(obj: Mapping) -> WorkloadInfo:
    meta = obj["metadata"]
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    pod_sets, error = _pod_set_requests(spec.get("podSets") or [])
    group, group_error = _placement_group_of(spec.get("podSets") or [])
    relaxations, relaxation_error = _relaxations_of(spec.get("podSets") or [])
    admission = status.get("admission") or {}
    assignments = admission.get("podSetAssignments") or []
    # A workload is admitted to one flavor; a pod set that records none (a BestEffort pod set
    # admitted by Kueue, or by us before we recorded one) takes its siblings'.
    one_flavor = next(
        (f for a in assignments for f in (a.get("flavors") or {}).values() if f), None
    )
    admissions, admission_error = _admissions(assignments, one_flavor)
    owners, owner = _owners(meta)
    movable, movable_error = _movable(meta.get("annotations") or {})
    return WorkloadInfo(
        namespace=meta.get("namespace", ""),
        name=meta["name"],
        uid=meta.get("uid", ""),
        resource_version=meta.get("resourceVersion", ""),
        generation=int(meta.get("generation") or 0),
        queue_name=spec.get("queueName") or "",
        priority=int(spec.get("priority") or 0),
        created=_timestamp(meta.get("creationTimestamp")),
        pod_sets=tuple(pod_sets),
        admission_cq=admission.get("clusterQueue"),
        admissions=admissions,
        conditions=tuple(status.get("conditions") or ()),
        unhealthy_nodes=tuple(n["name"] for n in status.get("unhealthyNodes") or []),
        admission_raw=status.get("admission"),
        owner=owner,
        owners=owners,
        is_group=(meta.get("annotations") or {}).get(IS_GROUP_WORKLOAD_ANNOTATION) == "true",
        eviction_threshold=(meta.get("annotations") or {}).get(
            UNHEALTHY_NODES_EVICTION_THRESHOLD_ANNOTATION
        ),
        spec_error=error,
        admission_error=admission_error,
        job_uid=(meta.get("labels") or {}).get(JOB_UID_LABEL),
        placement_group=group,
        placement_group_error=group_error,
        active=spec.get("active") is not False,
        priority_class=(spec.get("priorityClassRef") or {}).get("name") or "",
        relaxations=relaxations,
        relaxation_error=relaxation_error,
        movable=movable,
        movable_error=movable_error,
    )


def _template_annotations(pod_set: Mapping) -> Mapping[str, str]:
    return ((pod_set.get("template") or {}).get("metadata") or {}).get("annotations") or {}


def local_queue_movable(obj: Mapping) -> Movable | None:
    """A LocalQueue's default tas-operator.io/movable annotations for its workloads; None when
    it gives none, or gives a value that cannot be read (the webhook refuses one; an object
    stored before it was served moves nothing)."""
    movable, error = _movable((obj.get("metadata") or {}).get("annotations") or {})
    if error is not None or movable == Movable(None, None):
        return None
    return movable


def _movable(annotations: Mapping[str, str]) -> tuple[Movable, str | None]:
    try:
        return parse_movable(annotations), None
    except MovableError as error:
        return Movable(None, None), str(error)


def _pod_set_requests(pod_sets: list[dict]) -> tuple[list[PodSetRequest], str | None]:
    """The pod sets the spec can be read into, and the last one it cannot (why)."""
    out: list[PodSetRequest] = []
    error = None
    for ps in pod_sets:
        pod_spec = (ps.get("template") or {}).get("spec") or {}
        try:
            out.append(
                PodSetRequest(
                    name=ps["name"],
                    count=int(ps.get("count", 1)),
                    requests=pod_requests(pod_spec),
                    topology=topologyrequest.from_api(
                        ps.get("topologyRequest"), _template_annotations(ps)
                    ),
                    node_selector=dict(pod_spec.get("nodeSelector") or {}),
                    tolerations=tuple(
                        toleration_from_object(t) for t in pod_spec.get("tolerations") or []
                    ),
                    required_affinity=required_affinity_from_spec(pod_spec),
                    preferred_affinity=preferred_affinity_from_spec(pod_spec),
                    numa=numa_shape(pod_spec),
                )
            )
        except (KeyError, TypeError, ValueError) as exc:
            error = f"spec.podSets[{ps.get('name', '?')}]: {exc}"
    return out, error


def _placement_group_of(pod_sets: list[dict]) -> tuple[GroupRef | None, str | None]:
    """The placement group the pod templates' annotations name, and what is wrong with them."""
    group: GroupRef | None = None
    group_error = None
    for ps in pod_sets:
        template = ps.get("template") or {}
        try:
            ref = parse_annotations((template.get("metadata") or {}).get("annotations") or {})
        except Exception as exc:
            # Whatever a tenant's annotation holds, the Workload enters the cache: admission
            # reports the problem on it as a condition, instead of never seeing it.
            group_error = f"spec.podSets[{ps.get('name', '?')}].template: {exc}"
            ref = None
        if ref is not None:
            if group is not None or len(pod_sets) > 1:
                group_error = group_error or (
                    f"spec.podSets[{ps.get('name', '?')}].template: a placement group takes "
                    "workloads of one pod set"
                )
            group = ref
    return group, group_error


def _relaxations_of(pod_sets: list[dict]) -> tuple[dict[str, tuple[Stage, ...]], str | None]:
    """The pod templates' relaxation stages by pod set, and what is wrong with them."""
    out: dict[str, tuple[Stage, ...]] = {}
    error = None
    for ps in pod_sets:
        template = ps.get("template") or {}
        try:
            stages = parse_relaxation((template.get("metadata") or {}).get("annotations") or {})
        except Exception as exc:  # reported on the Workload by admission, never raised here
            error = f"spec.podSets[{ps.get('name', '?')}].template: {exc}"
            continue
        if stages:
            out[str(ps.get("name"))] = stages
    return out, error


def _owners(meta: Mapping) -> tuple[tuple[OwnerRef, ...], OwnerRef | None]:
    """The owner references (those with a uid), and the controller among them."""
    refs = [o for o in meta.get("ownerReferences") or [] if o.get("uid")]
    owners = tuple(
        OwnerRef(o.get("apiVersion") or "", o.get("kind") or "", o.get("name") or "", o["uid"])
        for o in refs
    )
    owner = next((o for o, ref in zip(owners, refs, strict=True) if ref.get("controller")), None)
    return owners, owner


def _admissions(assignments: list, one_flavor: str | None) -> tuple[tuple, str | None]:
    """Each pod set's admission. An assignment that cannot be decoded (only a hand-written
    status can hold one) leaves that pod set without topology, and says why."""
    out, error = [], None
    for i, a in enumerate(assignments):
        try:
            assignment = topologyassignment.from_v1beta2(a.get("topologyAssignment"))
        except topologyassignment.TopologyAssignmentError as exc:
            assignment = None
            error = f"status.admission.podSetAssignments[{i}].topologyAssignment.{exc}"
        out.append(
            PodSetAdmission(
                name=a["name"],
                flavor=next(iter((a.get("flavors") or {}).values()), one_flavor),
                count=int(a.get("count", 0)),
                assignment=assignment,
            )
        )
    return tuple(out), error


def selects_namespace(selector: Mapping | None, namespace_labels: Mapping[str, str]) -> bool:
    """A LabelSelector match (matchLabels and matchExpressions); None matches nothing."""
    if selector is None:
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if namespace_labels.get(k) != v:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], set(expr.get("values") or ())
        has = key in namespace_labels
        if op == "In" and not (has and namespace_labels[key] in values):
            return False
        if op == "NotIn" and has and namespace_labels[key] in values:
            return False
        if op == "Exists" and not has:
            return False
        if op == "DoesNotExist" and has:
            return False
    return True
