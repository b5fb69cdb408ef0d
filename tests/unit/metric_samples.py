"""Reading Kueue's metrics back from prometheus_client's registry in unit tests."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from tas import metrics


def sample(metric: str, /, *, role: str = metrics.ROLE_STANDALONE, **labels: str) -> float | None:
    """One sample as exposed (None when the series does not exist)."""
    return REGISTRY.get_sample_value(metric, {**labels, "replica_role": role})


def exposed_names() -> set[str]:
    return {family.name for family in REGISTRY.collect()}


@pytest.fixture
def fresh_metrics():
    """The registry is the process's: every queue and cohort earlier tests reported is gone
    (as if deleted) before the test, and the defaults (standalone, LocalQueue metrics on) are
    back after it."""
    metrics.configure(replica_role=metrics.ROLE_STANDALONE, local_queue_metrics=True)
    metrics.end_round((), (), ())
    yield
    metrics.configure(replica_role=metrics.ROLE_STANDALONE, local_queue_metrics=True)
    metrics.end_round((), (), ())
