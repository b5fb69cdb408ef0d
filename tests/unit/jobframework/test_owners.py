"""Kueue's IsOwnerManagedByKueue: an object whose controller is of a managed kind is admitted
with it; the ownerReference must be the controller, of the kind's API group and kind."""

from __future__ import annotations

import pytest

from tas.api.frameworks import JOB, JOBSET
from tas.jobframework.owners import ManagedOwners

OWNERS = ManagedOwners.of([JOB, JOBSET])


def ref(api_version: str, kind: str, controller: bool = True) -> dict:
    return {"apiVersion": api_version, "kind": kind, "uid": "u", "controller": controller}


@pytest.mark.parametrize(
    ("refs", "wanted"),
    [
        ([ref("jobset.x-k8s.io/v1alpha2", "JobSet")], "u"),
        ([ref("jobset.x-k8s.io/v1", "JobSet")], "u"),  # any version of the group
        ([ref("batch/v1", "Job")], "u"),
        ([ref("jobset.x-k8s.io/v1alpha2", "JobSet", controller=False)], None),
        ([ref("example.com/v1alpha2", "JobSet")], None),  # another group's JobSet
        ([ref("apps/v1", "ReplicaSet")], None),
        ([ref("v1", "Job")], None),  # the core group has no Job
        ([], None),
    ],
    ids=[
        "jobset-controller",
        "other-version",
        "job-controller",
        "not-the-controller",
        "other-group",
        "unmanaged-kind",
        "core-group",
        "no-owner",
    ],
)
def test_the_controller_of_a_managed_kind_is_found(refs, wanted):
    assert OWNERS.controller({"metadata": {"ownerReferences": refs}}) == wanted


def test_no_managed_kind_manages_nothing():
    obj = {"metadata": {"ownerReferences": [ref("batch/v1", "Job")]}}
    assert ManagedOwners.of([]).controller(obj) is None
