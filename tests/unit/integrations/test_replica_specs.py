"""Every replica-specs kind (the Kubeflow training jobs, MPIJob) through the scenarios they share
(replica_specs_cases) and through Kueue's per-kind tables, which each kind's test module holds
(its KIND, PRIORITY_CLASS and, for the Kubeflow jobs, ORDERED_REPLICA_TYPES)."""

from __future__ import annotations

import pytest

from tests.unit.integrations.jaxjob import test_jaxjob as jaxjob
from tests.unit.integrations.mpijob import test_mpijob as mpijob
from tests.unit.integrations.paddlejob import test_paddlejob as paddlejob
from tests.unit.integrations.pytorchjob import test_pytorchjob as pytorchjob
from tests.unit.integrations.replica_specs_cases import *  # noqa: F403 - each one, every kind
from tests.unit.integrations.replica_specs_cases import (
    Kind,
    replica,
    resolved_priority_class,
    training_job,
)
from tests.unit.integrations.tfjob import test_tfjob as tfjob
from tests.unit.integrations.xgboostjob import test_xgboostjob as xgboostjob

KUBEFLOW = [jaxjob, paddlejob, pytorchjob, tfjob, xgboostjob]
KINDS = [*KUBEFLOW, mpijob]


def kind_name(kind: Kind) -> str:
    return kind.job.resource.kind


@pytest.fixture(scope="module", params=[m.KIND for m in KINDS], ids=kind_name)
def kind(request) -> Kind:  # immutable, module-scoped: shared by the hypothesis examples too
    return request.param


def each_kinds(tables: list[tuple[Kind, list]]) -> list:
    """Every case of every kind's table, led by its kind (which overrides the `kind` fixture)."""
    return [
        pytest.param(kind, *case.values, id=f"{kind_name(kind)}-{case.id}")
        for kind, cases in tables
        for case in cases
    ]


@pytest.mark.parametrize(
    ("kind", "run_policy", "templates", "want"),
    each_kinds([(m.KIND, m.PRIORITY_CLASS) for m in KINDS]),
)
def test_priority_class(kind, run_policy, templates, want):
    assert resolved_priority_class(kind, templates, run_policy) == want


@pytest.mark.parametrize(
    ("kind", "present", "want"),
    each_kinds([(m.KIND, m.ORDERED_REPLICA_TYPES) for m in KUBEFLOW]),
)
def test_ordered_replica_types(kind, present, want):
    job = training_job(kind, {t: replica() for t in present})
    assert [ps["name"] for ps in kind.job.pod_sets(job)] == want
