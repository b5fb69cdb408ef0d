"""Every Kueue path comes from one function, and a failed call says what happened to the object."""

from __future__ import annotations

import orjson
import pytest

from tas.kube import KubeError, kueue_path, workload_path
from tas.kube.client import error_from

V = "/apis/kueue.x-k8s.io/v1beta2"


@pytest.mark.parametrize(
    ("args", "path"),
    [
        (("topologies",), f"{V}/topologies"),
        (("workloads",), f"{V}/workloads"),
        (("workloads", "team-a"), f"{V}/namespaces/team-a/workloads"),
        (("localqueues", "team-a", "q"), f"{V}/namespaces/team-a/localqueues/q"),
        (("clusterqueues", None, "cq"), f"{V}/clusterqueues/cq"),
    ],
    ids=["collection", "all-namespaces", "one-namespace", "namespaced-object", "cluster-object"],
)
def test_kueue_paths(args: tuple, path: str) -> None:
    assert kueue_path(*args) == path


def test_workload_path_is_a_kueue_path() -> None:
    assert workload_path("ns", "w") == f"{V}/namespaces/ns/workloads/w"


@pytest.mark.parametrize(
    ("status", "conflict", "not_found", "gone_or_changed"),
    [
        (409, True, False, True),
        (404, False, True, True),
        (410, False, False, False),
        (422, False, False, False),
        (0, False, False, False),
        (500, False, False, False),
    ],
    ids=["conflict", "not-found", "gone-watch", "invalid", "no-answer", "server-error"],
)
def test_error_predicates(status: int, conflict: bool, not_found: bool, gone_or_changed: bool):
    error = KubeError(status, "x")
    assert (error.conflict, error.not_found, error.gone_or_changed) == (
        conflict,
        not_found,
        gone_or_changed,
    )


def test_a_create_in_a_namespace_being_deleted_is_told_apart():
    """The API server's Status names the cause; a 403 for another reason is not it."""
    terminating = orjson.dumps(
        {
            "kind": "Status",
            "message": 'workloads "w" is forbidden: unable to create new content in namespace '
            "ns because it is being terminated",
            "reason": "Forbidden",
            "details": {
                "causes": [{"type": "NamespaceTerminating", "field": "metadata.namespace"}]
            },
            "code": 403,
        }
    )
    error = error_from(403, terminating, None)
    assert error.namespace_terminating and "being terminated" in error.message
    assert not error_from(403, b'{"message": "rbac says no"}', None).namespace_terminating
    assert not error_from(403, b'{"details": {"causes": 7}}', None).namespace_terminating
    assert not error_from(403, b"not json", None).namespace_terminating
