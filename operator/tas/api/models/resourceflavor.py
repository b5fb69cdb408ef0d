"""ResourceFlavor: a kind of node; with topologyName it is a TAS flavor."""

from __future__ import annotations

from typing import ClassVar

from pydantic import ConfigDict, Field, model_validator

from tas.api import kinds
from tas.api.models.common import (
    AGE_COLUMN,
    CRDInfo,
    KubeModel,
    KueueResource,
    ObjectName,
    PrinterColumn,
    Taint,
    Toleration,
    cel,
    schema,
)

TOPOLOGY_NEEDS_NODE_LABELS = cel(
    "!has(self.topologyName) || (has(self.nodeLabels) && size(self.nodeLabels) >= 1)",
    "a ResourceFlavor with topologyName needs at least one entry in nodeLabels",
)
TOPOLOGY_NAME_IMMUTABLE = cel(
    "!has(oldSelf.topologyName) || (has(self.topologyName) && "
    "self.topologyName == oldSelf.topologyName)",
    "topologyName cannot be changed or removed once set",
)


class ResourceFlavorSpec(KubeModel):
    model_config = ConfigDict(
        json_schema_extra=schema(TOPOLOGY_NEEDS_NODE_LABELS, TOPOLOGY_NAME_IMMUTABLE)
    )

    node_labels: dict[str, str] = Field(
        default_factory=dict, max_length=8, json_schema_extra=schema(map_type="atomic")
    )
    """Labels of the nodes this flavor stands for (at most 8)."""
    node_taints: list[Taint] = Field(
        default_factory=list, max_length=8, json_schema_extra=schema(list_type="atomic")
    )
    """Taints those nodes have; a PodSet must tolerate them to get this flavor (at most 8)."""
    tolerations: list[Toleration] = Field(
        default_factory=list, max_length=8, json_schema_extra=schema(list_type="atomic")
    )
    """Tolerations added to the pods admitted with this flavor (at most 8)."""
    topology_name: ObjectName | None = None
    """The Topology of this flavor's nodes; setting it makes the flavor topology-aware."""

    @model_validator(mode="after")
    def _check_topology(self) -> ResourceFlavorSpec:
        if self.topology_name and not self.node_labels:
            raise ValueError(TOPOLOGY_NEEDS_NODE_LABELS["message"])
        return self


class ResourceFlavor(KueueResource):
    """A set of nodes, named by their labels, that quota is given for."""

    crd: ClassVar[CRDInfo] = CRDInfo(
        resource=kinds.RESOURCE_FLAVORS,
        versions=("v1beta1", "v1beta2"),
        short_names=("flavor", "flavors", "rf"),
        printer_columns=(
            PrinterColumn("Topology", ".spec.topologyName", description="TAS topology, if any"),
            AGE_COLUMN,
        ),
    )

    kind: str = "ResourceFlavor"
    spec: ResourceFlavorSpec = Field(default_factory=ResourceFlavorSpec)
    """The nodes of this flavor and its topology."""
