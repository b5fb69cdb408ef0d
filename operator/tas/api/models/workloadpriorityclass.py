"""WorkloadPriorityClass: a priority for workloads, named by the kueue.x-k8s.io/priority-class
label, apart from the PriorityClass that orders pods on nodes."""

from __future__ import annotations

from typing import ClassVar

from tas.api import kinds
from tas.api.models.common import CRDInfo, Int32, KueueResource, PrinterColumn


class WorkloadPriorityClass(KueueResource):
    """A named workload priority. Higher values are admitted first and may preempt lower ones."""

    crd: ClassVar[CRDInfo] = CRDInfo(
        resource=kinds.WORKLOAD_PRIORITY_CLASSES,
        versions=("v1beta1", "v1beta2"),
        printer_columns=(
            PrinterColumn(
                "Value",
                ".value",
                type="integer",
                description="Value of workloadPriorityClass's Priority",
            ),
        ),
    )

    kind: str = "WorkloadPriorityClass"
    value: Int32
    """The priority of the workloads that name this class."""
    description: str | None = None
    """Free text on when to use this class."""
