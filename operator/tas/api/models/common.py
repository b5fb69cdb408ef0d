"""Building blocks shared by every CRD model: the base class, Kubernetes core types we embed,
name and quantity types, and the markers `crdgen` turns into CRD schema extensions.

Models dump to Kueue-shaped JSON with `obj.to_kube()` (camelCase keys, absent fields left out).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    StringConstraints,
    WithJsonSchema,
)
from pydantic.alias_generators import to_camel

from tas.api.constants import CONVERTED_CRDS, GROUP, LABEL_KEY_MAX
from tas.api.frameworks import Resource
from tas.api.names import DNS1123_LABEL, DNS1123_SUBDOMAIN, DNS1123_SUBDOMAIN_MAX, LABEL_KEY

# --- Markers read by crdgen -------------------------------------------------------------------
# Pydantic's own `default` is dropped from the CRD (a server-side default rewrites stored
# objects); a field that should be defaulted by the apiserver, as Kueue does, says so here.
CRD_DEFAULT = "x-tas-crd-default"
# Make a field required in the CRD even though the Python model gives it a default.
CRD_REQUIRED = "x-tas-crd-required"


def cel(rule: str, message: str) -> dict[str, str]:
    """One `x-kubernetes-validations` entry."""
    return {"rule": rule, "message": message}


def schema(
    *rules: dict[str, str],
    default: Any = None,
    required: bool = False,
    list_type: str | None = None,
    list_map_keys: tuple[str, ...] = (),
    map_type: str | None = None,
) -> dict[str, Any]:
    """The CRD-only parts of a field's schema, for `Field(json_schema_extra=schema(...))`."""
    extra: dict[str, Any] = {}
    if rules:
        extra["x-kubernetes-validations"] = list(rules)
    if default is not None:
        extra[CRD_DEFAULT] = default
    if required:
        extra[CRD_REQUIRED] = True
    if list_type:
        extra["x-kubernetes-list-type"] = list_type
    if list_map_keys:
        extra["x-kubernetes-list-map-keys"] = list(list_map_keys)
    if map_type:
        extra["x-kubernetes-map-type"] = map_type
    return extra


class KubeModel(BaseModel):
    """camelCase on the wire, snake_case in Python; unknown keys are ignored."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        serialize_by_alias=True,
        use_attribute_docstrings=True,
        extra="ignore",
    )

    def to_kube(self) -> dict[str, Any]:
        """JSON-ready dict in Kueue's shape."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


# --- Names ------------------------------------------------------------------------------------
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)

ObjectName = Annotated[
    str, StringConstraints(max_length=DNS1123_SUBDOMAIN_MAX, pattern=DNS1123_SUBDOMAIN)
]
"""Name of a cluster object (ClusterQueue, LocalQueue, ResourceFlavor, Topology)."""
PodSetName = Annotated[str, StringConstraints(max_length=63, pattern=DNS1123_LABEL)]
LabelKey = Annotated[
    str, StringConstraints(min_length=1, max_length=LABEL_KEY_MAX, pattern=LABEL_KEY)
]


class _Int32:
    """Marks an int as Kubernetes int32 in the schema."""

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> dict[str, Any]:
        out = handler(core_schema)
        out["format"] = "int32"
        return out


class _Int64:
    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> dict[str, Any]:
        out = handler(core_schema)
        out["format"] = "int64"
        return out


Int32 = Annotated[int, _Int32()]
Int64 = Annotated[int, _Int64()]

# A resource.Quantity: a number or a string such as "100Gi"; the value is kept as written.
# Arithmetic on quantities lives in tas.api.quantity.
QUANTITY_SCHEMA: dict[str, Any] = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "pattern": QUANTITY_PATTERN,
    "x-kubernetes-int-or-string": True,
}
Quantity = Annotated[
    int | Annotated[str, StringConstraints(pattern=QUANTITY_PATTERN)],
    WithJsonSchema(QUANTITY_SCHEMA),
]
ResourceList = dict[str, Quantity]

# The same, never negative. Checked by schema, not CEL: a rule this deep in three nested lists
# is estimated at 16 x 64 x 64 calls and exceeds the apiserver's CEL cost budget.
NON_NEGATIVE_QUANTITY_PATTERN = r"^\+?" + QUANTITY_PATTERN.removeprefix(r"^(\+|-)?")
NonNegativeQuantity = Annotated[
    Annotated[int, Field(ge=0)]
    | Annotated[str, StringConstraints(pattern=NON_NEGATIVE_QUANTITY_PATTERN)],
    WithJsonSchema({**QUANTITY_SCHEMA, "pattern": NON_NEGATIVE_QUANTITY_PATTERN, "minimum": 0}),
]


def _utc(value: datetime) -> datetime:
    # Kubernetes times are UTC with whole seconds; naive values are taken as UTC.
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).replace(microsecond=0)


Time = Annotated[
    datetime,
    AfterValidator(_utc),
    PlainSerializer(lambda v: v.strftime("%Y-%m-%dT%H:%M:%SZ"), return_type=str, when_used="json"),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]


# --- Kubernetes core types we embed -----------------------------------------------------------
class ObjectMeta(KubeModel):
    """The parts of metadata the operator reads; everything else is kept as it came."""

    model_config = ConfigDict(extra="allow")

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: Time | None = None
    deletion_timestamp: Time | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    finalizers: list[str] | None = None
    owner_references: list[dict[str, Any]] | None = None


class LabelSelectorRequirement(KubeModel):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] | None = Field(None, json_schema_extra=schema(list_type="atomic"))


class LabelSelector(KubeModel):
    """A label query. An empty selector matches everything; an absent one matches nothing."""

    model_config = ConfigDict(json_schema_extra=schema(map_type="atomic"))

    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = Field(
        None, json_schema_extra=schema(list_type="atomic")
    )


TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Taint(KubeModel):
    key: str
    value: str | None = None
    effect: TaintEffect
    time_added: Time | None = None


class Toleration(KubeModel):
    """Tolerates taints matching key, value and effect by the operator."""

    model_config = ConfigDict(
        json_schema_extra=schema(
            cel(
                "(has(self.key) && self.key != '') || (has(self.operator) && "
                "self.operator == 'Exists')",
                "a toleration without a key must use operator Exists (it then matches every taint)",
            ),
            cel(
                "!has(self.operator) || self.operator != 'Exists' || !has(self.value) || "
                "self.value == ''",
                "a toleration with operator Exists must not have a value",
            ),
            cel(
                "!has(self.tolerationSeconds) || (has(self.effect) && self.effect == 'NoExecute')",
                "tolerationSeconds is allowed only with effect NoExecute",
            ),
        )
    )

    key: str | None = None
    operator: Literal["Equal", "Exists"] | None = None
    value: str | None = None
    effect: Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    toleration_seconds: Int64 | None = None


ConditionStatus = Literal["True", "False", "Unknown"]


class Condition(KubeModel):
    """A metav1.Condition."""

    type: Annotated[str, StringConstraints(max_length=316, pattern=LABEL_KEY)]
    status: ConditionStatus
    reason: Annotated[
        str,
        StringConstraints(
            min_length=1, max_length=1024, pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
        ),
    ]
    message: str = Field("", max_length=32768, json_schema_extra=schema(required=True))
    last_transition_time: Time
    observed_generation: Int64 | None = Field(None, ge=0)


def conditions_field(description: str) -> Any:
    """A `conditions` list keyed by type, as in every Kubernetes status."""
    return Field(
        default_factory=list,
        description=description,
        json_schema_extra=schema(list_type="map", list_map_keys=("type",)),
    )


def find_condition(conditions: list[Condition], type_: str) -> Condition | None:
    return next((c for c in conditions if c.type == type_), None)


# --- Resources --------------------------------------------------------------------------------
@dataclass(frozen=True)
class PrinterColumn:
    name: str
    json_path: str
    type: str = "string"
    description: str = ""
    priority: int = 0


AGE_COLUMN = PrinterColumn("Age", ".metadata.creationTimestamp", "date", "Time since creation")
# The counts ClusterQueue and LocalQueue both show (Kueue hides a ClusterQueue's admitted count
# unless asked for -o wide).
PENDING_COLUMN = PrinterColumn(
    "Pending Workloads", ".status.pendingWorkloads", "integer", "Number of pending workloads"
)
ADMITTED_COLUMN = PrinterColumn(
    "Admitted Workloads",
    ".status.admittedWorkloads",
    "integer",
    "Number of admitted workloads that haven't finished yet",
)


@dataclass(frozen=True)
class CRDInfo:
    """What crdgen needs beyond the schema."""

    resource: Resource  # group, plural, scope and the version stored (tas.api.kinds)
    versions: tuple[str, ...]  # served, all with the same schema
    short_names: tuple[str, ...] = ()
    status_subresource: bool = False
    printer_columns: tuple[PrinterColumn, ...] = ()
    categories: tuple[str, ...] = ("kueue",)

    @property
    def plural(self) -> str:
        return self.resource.plural

    @property
    def group(self) -> str:
        return self.resource.group

    @property
    def storage_version(self) -> str:
        return self.resource.version

    @property
    def scope(self) -> Literal["Cluster", "Namespaced"]:
        return "Namespaced" if self.resource.namespaced else "Cluster"

    @property
    def conversion_webhook(self) -> bool:
        return self.resource.crd_name in CONVERTED_CRDS


class KueueResource(KubeModel):
    """A top-level object of group kueue.x-k8s.io."""

    crd: ClassVar[CRDInfo]

    api_version: str = f"{GROUP}/v1beta2"
    kind: str
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    @property
    def name(self) -> str:
        return self.metadata.name or ""

    @property
    def namespace(self) -> str | None:
        return self.metadata.namespace
