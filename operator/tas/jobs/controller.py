"""Keeps each queued Job and its Workload in step: the generic reconciler on batch/v1 Job."""

from __future__ import annotations

from collections.abc import Container

from tas.cache.state import ClusterState
from tas.jobframework.namespaces import EVERY_NAMESPACE
from tas.jobframework.reconciler import JobReconciler
from tas.jobs.lifecycle import JOB
from tas.kube import Kube
from tas.workload.writer import WorkloadWriter


def job_controller(
    state: ClusterState,
    kube: Kube,
    writer: WorkloadWriter,
    *,
    managed: Container[str] = EVERY_NAMESPACE,
    multi_layer_enabled: bool = True,
    partial_slices_enabled: bool = False,
    grouped_slicing_enabled: bool = False,
) -> JobReconciler:
    return JobReconciler(
        JOB,
        state,
        kube,
        writer,
        managed=managed,
        multi_layer_enabled=multi_layer_enabled,
        partial_slices_enabled=partial_slices_enabled,
        grouped_slicing_enabled=grouped_slicing_enabled,
    )
