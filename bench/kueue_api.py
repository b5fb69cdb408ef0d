"""Kueue objects as the benchmarks write and read them: in v1beta2.

v1beta2 is the version the operator stores (and Kueue since v0.16). The API server converts
a v1beta1 ClusterQueue, LocalQueue, Cohort or Workload through the operator's conversion
webhook, so one written before the operator serves is refused ("connection refused"), and a
read or a watch in v1beta1 fails while the operator is down. The benchmarks therefore write
v1beta2 and read the version their controller stores; a topologyAssignment read in v1beta2
(compact `slices`) is decoded here to v1beta1's `domains`, which the benchmarks compare.
"""

from __future__ import annotations

from collections.abc import Mapping

from e2e import jobs

from tas.api.constants import GROUP
from tas.api.conversion import V1BETA2, convert
from tas.api.topologyassignment import v1beta2_to_v1beta1

V1BETA1 = f"{GROUP}/v1beta1"
WORKLOADS = f"workloads.v1beta2.{GROUP}"  # for kubectl get: the stored version, by name


def v1beta2(doc: Mapping) -> dict:
    """`doc` (any version of a Kueue kind) in v1beta2, as the operator's webhook converts it."""
    return convert(doc, V1BETA2)


def local_queue(name: str, cluster_queue: str) -> dict:
    return v1beta2(jobs.local_queue(name, cluster_queue))


def cluster_queue(name: str, quota: dict[str, object], flavor: str = "tas-flavor") -> dict:
    return v1beta2(jobs.cluster_queue(name, quota, flavor))


def workloads_path(namespace: str, version: str = V1BETA2) -> str:
    """The Workloads of a namespace in `version` ("kueue.x-k8s.io/v1beta2" or "v1beta2")."""
    return f"/apis/{GROUP}/{version.rsplit('/', 1)[-1]}/namespaces/{namespace}/workloads"


def domains(topology_assignment: Mapping | None) -> list[dict]:
    """An assignment's v1beta1 `domains` ({values, count}, in order), whichever version it was
    read in: a v1beta2 one (`slices`) is decoded."""
    if not topology_assignment:
        return []
    if "slices" in topology_assignment:
        return v1beta2_to_v1beta1(topology_assignment)["domains"]
    return list(topology_assignment.get("domains") or [])


def as_v1beta1(topology_assignment: Mapping | None) -> dict | None:
    """An assignment in v1beta1's shape ({levels, domains}), whichever version it was read in."""
    if topology_assignment is None:
        return None
    return {
        "levels": list(topology_assignment.get("levels") or []),
        "domains": domains(topology_assignment),
    }
