"""Topology: the ordered node labels that describe the data-centre hierarchy."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, field_validator

from tas.api import kinds
from tas.api.constants import HOSTNAME_LABEL
from tas.api.models.common import (
    AGE_COLUMN,
    CRDInfo,
    KubeModel,
    KueueResource,
    LabelKey,
    PrinterColumn,
    cel,
    schema,
)

MAX_LEVELS = 16

_LAST = "self[size(self) - 1].nodeLabel"
LEVELS_UNIQUE = cel(
    "self.all(a, self.exists_one(b, b.nodeLabel == a.nodeLabel))",
    "topology levels must be unique: each nodeLabel may appear only once",
)
HOSTNAME_LOWEST = cel(
    f"!self.exists(l, l.nodeLabel == '{HOSTNAME_LABEL}') || {_LAST} == '{HOSTNAME_LABEL}'",
    f"{HOSTNAME_LABEL} can only be the lowest topology level",
)
# Kueue lets the levels change only while hostname is the lowest level before and after: the
# leaves are then nodes either way, so existing assignments stay meaningful.
LEVELS_IMMUTABLE = cel(
    f"self == oldSelf || ({_LAST} == '{HOSTNAME_LABEL}' && "
    f"oldSelf[size(oldSelf) - 1].nodeLabel == '{HOSTNAME_LABEL}')",
    "topology levels are immutable, except while kubernetes.io/hostname is the lowest level "
    "both before and after the change",
)


class TopologyLevel(KubeModel):
    """One level of the hierarchy."""

    node_label: LabelKey
    """Node label whose value names this level's domain, e.g. cloud.provider.com/topology-rack."""


class TopologySpec(KubeModel):
    levels: list[TopologyLevel] = Field(
        min_length=1,
        max_length=MAX_LEVELS,
        json_schema_extra=schema(
            LEVELS_IMMUTABLE, LEVELS_UNIQUE, HOSTNAME_LOWEST, list_type="atomic"
        ),
    )
    """Levels from the highest (e.g. block) to the lowest (e.g. rack or kubernetes.io/hostname)."""

    @field_validator("levels")
    @classmethod
    def _check_levels(cls, levels: list[TopologyLevel]) -> list[TopologyLevel]:
        # The same rules as the CRD's, so objects built in Python fail as early.
        labels = [level.node_label for level in levels]
        if len(set(labels)) != len(labels):
            raise ValueError(LEVELS_UNIQUE["message"])
        if HOSTNAME_LABEL in labels[:-1]:
            raise ValueError(HOSTNAME_LOWEST["message"])
        return levels

    @property
    def node_labels(self) -> list[str]:
        return [level.node_label for level in self.levels]


class Topology(KueueResource):
    """The hierarchy of a data centre, as node labels from the highest level to the lowest."""

    crd: ClassVar[CRDInfo] = CRDInfo(
        resource=kinds.TOPOLOGIES,
        versions=("v1alpha1", "v1beta1", "v1beta2"),
        short_names=("topo",),
        # A column shows only the first JSONPath match, so the highest and lowest levels get
        # one each (the lowest says whether leaves are nodes).
        printer_columns=(
            PrinterColumn("Highest Level", ".spec.levels[0].nodeLabel", description="Top level"),
            PrinterColumn("Lowest Level", ".spec.levels[-1:].nodeLabel", description="Leaf level"),
            AGE_COLUMN,
        ),
    )

    kind: str = "Topology"
    spec: TopologySpec
    """The levels of this topology."""
