"""Workload: one job's pods as PodSets, its queue, and the admission the operator decided.

The models are Kueue's v1beta2 (the stored version); v1beta1's differences are in v1beta1.py.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import ConfigDict, Field, StringConstraints

from tas.api import kinds
from tas.api.constants import (
    COND_ADMITTED,
    COND_FINISHED,
    COND_QUOTA_RESERVED,
    DEFAULT_PODSET_NAME,
    POD_SET_GROUP_NAME_MAX,
)
from tas.api.models.common import (
    Condition,
    CRDInfo,
    Int32,
    KubeModel,
    KueueResource,
    LabelKey,
    ObjectName,
    PodSetName,
    PrinterColumn,
    ResourceList,
    Time,
    cel,
    conditions_field,
    find_condition,
    schema,
)

MAX_PODSETS = 18
MAX_SLICE_LAYERS = 3

ONE_TOPOLOGY_MODE = cel(
    "(has(self.required) ? 1 : 0) + (has(self.preferred) ? 1 : 0) + "
    "(has(self.unconstrained) && self.unconstrained ? 1 : 0) <= 1",
    "at most one of required, preferred and unconstrained may be set",
)
SLICE_FIELDS_TOGETHER = cel(
    "has(self.podSetSliceRequiredTopology) == has(self.podSetSliceSize)",
    "podSetSliceRequiredTopology and podSetSliceSize must be set together",
)
SLICE_LAYERS_EXCLUSIVE = cel(
    "!has(self.podsetSliceRequiredTopologyConstraints) || "
    "(!has(self.podSetSliceRequiredTopology) && !has(self.podSetSliceSize))",
    "podsetSliceRequiredTopologyConstraints excludes podSetSliceRequiredTopology and "
    "podSetSliceSize",
)
MIN_COUNT_AT_MOST_COUNT = cel(
    "!has(self.minCount) || self.minCount <= self.count", "minCount must not exceed count"
)
PRIORITY_WITH_CLASS = cel(
    "!has(self.priorityClassRef) || has(self.priority)",
    "priority must be set when priorityClassRef is set",
)
POD_PRIORITY_CLASS_KIND = cel(
    "(self.group == 'scheduling.k8s.io') ? self.kind == 'PriorityClass' : true",
    "only the PriorityClass kind is allowed for the scheduling.k8s.io group",
)
WORKLOAD_PRIORITY_CLASS_KIND = cel(
    "(self.group == 'kueue.x-k8s.io') ? self.kind == 'WorkloadPriorityClass' : true",
    "only the WorkloadPriorityClass kind is allowed for the kueue.x-k8s.io group",
)
_RESERVED = "c.type == 'QuotaReserved' && c.status == 'True'"
ASSIGNMENT_PER_PODSET = cel(
    f"!has(self.status) || !has(self.status.conditions) || !has(self.status.admission) || "
    f"!self.status.conditions.exists(c, {_RESERVED}) || "
    f"size(self.spec.podSets) == size(self.status.admission.podSetAssignments)",
    "status.admission.podSetAssignments must have one entry per spec.podSets entry",
)
QUEUE_NAME_FIXED_WHILE_RESERVED = cel(
    f"!(has(oldSelf.status) && has(oldSelf.status.conditions) && "
    f"oldSelf.status.conditions.exists(c, {_RESERVED}) && "
    f"has(self.status) && has(self.status.conditions) && "
    f"self.status.conditions.exists(c, {_RESERVED})) || "
    f"(has(self.spec.queueName) == has(oldSelf.spec.queueName) && "
    f"(!has(self.spec.queueName) || self.spec.queueName == oldSelf.spec.queueName))",
    "queueName cannot change while the workload holds a quota reservation",
)


# --- spec -------------------------------------------------------------------------------------
class SliceLayer(KubeModel):
    """One layer of a multi-layer slice request."""

    topology: LabelKey
    """Level each slice of this layer must fit in."""
    size: Int32 = Field(ge=1)
    """Pods per slice at this layer."""


class PodSetTopologyRequest(KubeModel):
    """How the pods of a PodSet must be placed in the topology (from the PodTemplate's
    kueue.x-k8s.io/podset-* annotations)."""

    model_config = ConfigDict(
        json_schema_extra=schema(ONE_TOPOLOGY_MODE, SLICE_FIELDS_TOGETHER, SLICE_LAYERS_EXCLUSIVE)
    )

    required: LabelKey | None = None
    """All pods in one domain of this level, or no admission."""
    preferred: LabelKey | None = None
    """All pods in one domain of this level if possible, else of the levels above, else spread."""
    unconstrained: bool | None = None
    """Place anywhere there is room, with no compactness constraint."""
    pod_index_label: str | None = None
    """Pod label holding each pod's index (rank), e.g. batch.kubernetes.io/job-completion-index."""
    sub_group_index_label: str | None = None
    """Pod label holding the index of the replicated job a pod belongs to (JobSet)."""
    sub_group_count: Int32 | None = Field(None, ge=0)
    """Number of replicated jobs in the PodSet (JobSet)."""
    pod_set_group_name: str | None = Field(None, max_length=POD_SET_GROUP_NAME_MAX)
    """PodSets with the same group name get one flavor and one domain together."""
    pod_set_slice_required_topology: LabelKey | None = None
    """Each slice of podSetSliceSize pods must fit in one domain of this level."""
    pod_set_slice_size: Int32 | None = Field(None, ge=1)
    """Pods per slice."""
    podset_slice_required_topology_constraints: list[SliceLayer] | None = Field(
        None, max_length=MAX_SLICE_LAYERS, json_schema_extra=schema(list_type="atomic")
    )
    """Slice layers from the coarsest to the finest (at most 3)."""


class PodTemplateMeta(KubeModel):
    model_config = ConfigDict(
        extra="allow", json_schema_extra={"x-kubernetes-preserve-unknown-fields": True}
    )

    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None


PodSpec = dict[str, Any]
POD_SPEC_SCHEMA: dict[str, Any] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


class PodTemplate(KubeModel):
    """A core/v1 PodTemplateSpec; its spec is kept as given and not validated here."""

    metadata: PodTemplateMeta = Field(default_factory=PodTemplateMeta)
    spec: PodSpec = Field(default_factory=dict, json_schema_extra=POD_SPEC_SCHEMA)


class PodSet(KubeModel):
    """A set of identical pods."""

    model_config = ConfigDict(json_schema_extra=schema(MIN_COUNT_AT_MOST_COUNT))

    name: PodSetName = Field(
        DEFAULT_PODSET_NAME, json_schema_extra=schema(default=DEFAULT_PODSET_NAME)
    )
    template: PodTemplate
    """The pods' template."""
    count: Int32 = Field(1, ge=0, json_schema_extra=schema(default=1, required=True))
    """Number of pods."""
    min_count: Int32 | None = Field(None, ge=1)
    """Fewest pods acceptable under partial admission."""
    topology_request: PodSetTopologyRequest | None = None
    """Topology-aware placement request; absent for a PodSet without TAS annotations."""


class PriorityClassRef(KubeModel):
    """The class a workload's priority was taken from."""

    model_config = ConfigDict(
        json_schema_extra=schema(POD_PRIORITY_CLASS_KIND, WORKLOAD_PRIORITY_CLASS_KIND)
    )

    group: Literal["kueue.x-k8s.io", "scheduling.k8s.io"]
    """kueue.x-k8s.io for a WorkloadPriorityClass, scheduling.k8s.io for a PriorityClass."""
    kind: Literal["WorkloadPriorityClass", "PriorityClass"]
    name: ObjectName = Field(min_length=1)


class WorkloadSpecBase(KubeModel):
    """The fields both versions share (v1beta1 names the priority class differently)."""

    pod_sets: list[PodSet] = Field(
        min_length=1,
        max_length=MAX_PODSETS,
        json_schema_extra=schema(list_type="map", list_map_keys=("name",)),
    )
    """The workload's pods, 1 to 18 PodSets."""
    queue_name: ObjectName | None = None
    """The LocalQueue this workload is submitted to."""
    priority: Int32 | None = None
    """Higher is admitted first."""
    active: bool | None = Field(None, json_schema_extra=schema(default=True))
    """False keeps the workload from admission and evicts it if admitted."""


class WorkloadSpec(WorkloadSpecBase):
    model_config = ConfigDict(json_schema_extra=schema(PRIORITY_WITH_CLASS))

    priority_class_ref: PriorityClassRef | None = None
    """The class the priority was taken from (a WorkloadPriorityClass or a PriorityClass)."""


# --- status -----------------------------------------------------------------------------------
DOMAIN_VALUE = Annotated[str, StringConstraints(max_length=63)]
EXACTLY_ONE_FORM = cel(
    "has(self.universal) != has(self.individual)",
    "exactly one of the fields in [universal individual] must be set",
)
MAX_SLICES = 1000
MAX_SLICE_DOMAINS = 100_000


class IndividualValues(KubeModel):
    """One value per domain: prefix + root + suffix."""

    prefix: DOMAIN_VALUE | None = None
    suffix: DOMAIN_VALUE | None = None
    roots: list[DOMAIN_VALUE] = Field(
        min_length=1, max_length=MAX_SLICE_DOMAINS, json_schema_extra=schema(list_type="atomic")
    )


class SliceLevelValues(KubeModel):
    """The values of one level for the domains of a slice: one for all, or one each."""

    model_config = ConfigDict(json_schema_extra=schema(EXACTLY_ONE_FORM))

    universal: DOMAIN_VALUE | None = None
    individual: IndividualValues | None = None


class SlicePodCounts(KubeModel):
    """The pods of each domain of a slice: one count for all, or one each."""

    model_config = ConfigDict(json_schema_extra=schema(EXACTLY_ONE_FORM))

    universal: Int32 | None = Field(None, ge=1)
    individual: list[Annotated[int, Field(ge=1)]] | None = Field(
        None,
        min_length=1,
        max_length=MAX_SLICE_DOMAINS,
        json_schema_extra=schema(list_type="atomic"),
    )


class TopologyAssignmentSlice(KubeModel):
    """domainCount domains, their values level by level and their pod counts."""

    model_config = ConfigDict(
        json_schema_extra=schema(
            cel(
                "!has(self.podCounts.individual) || "
                "size(self.podCounts.individual) == self.domainCount",
                "podCounts.individual must have length equal to domainCount",
            ),
            cel(
                "self.valuesPerLevel.all(x, !has(x.individual) || "
                "size(x.individual.roots) == self.domainCount)",
                "valuesPerLevel.individual, if set, must have roots of length equal to "
                "domainCount of this TopologyAssignmentSlice",
            ),
        )
    )

    domain_count: Int32 = Field(ge=1)
    values_per_level: list[SliceLevelValues] = Field(
        min_length=1,
        max_length=16,
        json_schema_extra=schema(list_type="atomic"),
    )
    """One entry per level of the assignment."""
    pod_counts: SlicePodCounts


class TopologyAssignment(KubeModel):
    """Where the pods of a PodSet go, in Kueue's compact form: the domains are the slices'
    domains in order, each with its values (one per level) and its pod count."""

    model_config = ConfigDict(
        json_schema_extra=schema(
            cel(
                "self.slices.all(x, size(x.valuesPerLevel) == size(self.levels))",
                "valuesPerLevel must have the same length as the number of levels in this "
                "TopologyAssignment",
            )
        )
    )

    levels: list[Annotated[str, StringConstraints(max_length=317)]] = Field(
        min_length=1, max_length=16, json_schema_extra=schema(list_type="atomic")
    )
    """Node label keys, highest first; only kubernetes.io/hostname when that is the lowest."""
    slices: list[TopologyAssignmentSlice] = Field(
        max_length=MAX_SLICES, json_schema_extra=schema(list_type="atomic")
    )
    """Runs of domains; together, every domain of the assignment."""


class PodSetAssignment(KubeModel):
    name: PodSetName = Field(
        DEFAULT_PODSET_NAME, json_schema_extra=schema(default=DEFAULT_PODSET_NAME, required=True)
    )
    """The PodSet this assignment is for."""
    flavors: dict[str, ObjectName] = Field(default_factory=dict)
    """ResourceFlavor per resource name."""
    resource_usage: ResourceList = Field(default_factory=dict)
    """Total resources of all the PodSet's pods."""
    count: Int32 | None = Field(None, ge=0)
    """Pods admitted."""
    topology_assignment: TopologyAssignment | None = None
    """Placement of the pods in the flavor's topology."""
    delayed_topology_request: Literal["Pending", "Ready"] | None = None
    """Set when the topology assignment is computed later (after admission checks)."""


class Admission(KubeModel):
    """The ClusterQueue that admitted the workload, and what each PodSet got."""

    cluster_queue: ObjectName
    """ClusterQueue that reserved the quota."""
    pod_set_assignments: list[PodSetAssignment] = Field(
        max_length=MAX_PODSETS,
        json_schema_extra=schema(list_type="map", list_map_keys=("name",)),
    )
    """One entry per PodSet."""


class RequeueState(KubeModel):
    count: Int32 | None = Field(None, ge=0)
    """Times the workload was requeued."""
    requeue_at: Time | None = None
    """When the workload goes back into its queue."""


class UnhealthyNode(KubeModel):
    name: str


class WorkloadStatus(KubeModel):
    conditions: list[Condition] = conditions_field(
        "QuotaReserved, Admitted, Finished, Evicted, Requeued, PodsReady."
    )
    admission: Admission | None = None
    """Set when quota is reserved; cleared on eviction."""
    requeue_state: RequeueState | None = None
    """Backoff state after an eviction."""
    unhealthy_nodes: list[UnhealthyNode] = Field(default_factory=list)
    """Failed nodes under this workload that are being replaced."""

    def condition(self, type_: str) -> Condition | None:
        return find_condition(self.conditions, type_)

    def is_true(self, type_: str) -> bool:
        cond = self.condition(type_)
        return cond is not None and cond.status == "True"


class Workload(KueueResource):
    """A unit of admission: a job's pods, its queue and, once admitted, their placement."""

    model_config = ConfigDict(
        json_schema_extra=schema(ASSIGNMENT_PER_PODSET, QUEUE_NAME_FIXED_WHILE_RESERVED)
    )

    crd: ClassVar[CRDInfo] = CRDInfo(
        resource=kinds.WORKLOADS,
        versions=("v1beta1", "v1beta2"),
        short_names=("kwl", "kueueworkload", "kueueworkloads"),
        status_subresource=True,
        printer_columns=(
            PrinterColumn(
                "Queue",
                ".spec.queueName",
                description="Name of the queue this workload was submitted to",
            ),
            PrinterColumn(
                "Reserved in",
                ".status.admission.clusterQueue",
                description="Name of the ClusterQueue where the workload is reserving quota",
            ),
            PrinterColumn(
                "Admitted",
                f".status.conditions[?(@.type=='{COND_ADMITTED}')].status",
                description="Admission status",
            ),
            PrinterColumn(
                "Finished",
                f".status.conditions[?(@.type=='{COND_FINISHED}')].status",
                description="Workload finished",
            ),
            PrinterColumn(
                "Age", ".metadata.creationTimestamp", "date", "Time this workload was created"
            ),
        ),
    )

    kind: str = "Workload"
    spec: WorkloadSpec
    """PodSets, queue and priority."""
    status: WorkloadStatus = Field(default_factory=WorkloadStatus)
    """Conditions and admission, written by the operator."""

    @property
    def quota_reserved(self) -> bool:
        return self.status.is_true(COND_QUOTA_RESERVED)

    @property
    def admitted(self) -> bool:
        return self.status.is_true(COND_ADMITTED)

    @property
    def finished(self) -> bool:
        return self.status.is_true(COND_FINISHED)
