"""A small cluster for hot swap tests: the real in-memory state, Workloads admitted with the
assignments a test names, a writer that applies what it writes (as the API server and the
watch would), the node controller and the admission loop's replacement pass."""

from __future__ import annotations

import asyncio
import copy
import itertools
from collections.abc import Mapping

from tas.admission.loop import AdmissionLoop
from tas.api.topologyassignment import v1beta1_to_v1beta2
from tas.cache import projections as proj
from tas.cache.state import ClusterState
from tas.hotswap.controller import NodeHealthController
from tas.hotswap.replace import ReplacementRules
from tests.unit.admission.fixtures import HOST, make_state, node

_versions = itertools.count(1000)
JOB = {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "job-uid", "controller": True}
POD = {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "pod-uid", "controller": True}


def pod_set(name: str, hosts: Mapping[str, int], cpu: str = "1", request: dict | None = None):
    """A pod set spec and its admitted assignment (pods per host)."""
    spec = {
        "name": name,
        "count": sum(hosts.values()),
        "template": {
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
        },
    }
    if request:
        spec["topologyRequest"] = request
    admission = {
        "name": name,
        "flavors": {"cpu": "tas"},
        "count": spec["count"],
        "topologyAssignment": v1beta1_to_v1beta2(
            {
                "levels": [HOST],
                "domains": [{"values": [h], "count": c} for h, c in sorted(hosts.items())],
            }
        ),
    }
    return spec, admission


class Cluster:
    """State plus the stored Workload objects; every write lands and is watched back."""

    def __init__(self, nodes: list[dict], *, overlapping: bool = True) -> None:
        self.state: ClusterState = make_state(nodes)
        self.state.overlapping_flavors = overlapping
        self.nodes = {n["metadata"]["name"]: n for n in nodes}
        self.objects: dict[str, dict] = {}
        self.events: list[tuple[str, str, str]] = []  # (workload, reason, message)

    def admitted(
        self,
        name: str,
        pod_sets: list[tuple[dict, dict]],
        *,
        owners: list[dict] | None = None,
        annotations: Mapping[str, str] | None = None,
    ) -> proj.WorkloadInfo:
        meta = {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "generation": 1,
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "ownerReferences": owners if owners is not None else [JOB],
        }
        if annotations:
            meta["annotations"] = dict(annotations)
        self.objects[name] = {
            "metadata": meta,
            "spec": {"queueName": "lq", "podSets": [spec for spec, _ in pod_sets]},
            "status": {
                "admission": {
                    "clusterQueue": "cq",
                    "podSetAssignments": [a for _, a in pod_sets],
                },
                "conditions": [
                    {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
                    {"type": "Admitted", "status": "True", "reason": "Admitted"},
                ],
            },
        }
        return self._watch(name)

    def workload(self, name: str) -> proj.WorkloadInfo:
        return self.state.workloads[("ns", name)]

    def hosts(self, name: str, pod_set: str = "main") -> dict[str, int]:
        admission = next(a for a in self.workload(name).admissions if a.name == pod_set)
        return {d.values[-1]: d.count for d in admission.assignment.domains}

    def set_ready(self, host: str, ready: bool) -> None:
        n = copy.deepcopy(self.nodes[host])
        n["status"]["conditions"][0]["status"] = "True" if ready else "False"
        self.nodes[host] = n
        self.state.upsert_node(proj.node_from_object(n))

    def add_node(self, *args, **kwargs) -> None:
        n = node(*args, **kwargs)
        self.nodes[n["metadata"]["name"]] = n
        self.state.upsert_node(proj.node_from_object(n))

    def _watch(self, name: str) -> proj.WorkloadInfo:
        self.objects[name]["metadata"]["resourceVersion"] = str(next(_versions))
        info = proj.workload_from_object(copy.deepcopy(self.objects[name]))
        self.state.upsert_workload(info)
        return info

    # the WorkloadWriter's surface -------------------------------------------------------------

    async def write_status(self, workload: proj.WorkloadInfo, status: Mapping) -> bool:
        obj = self.objects[workload.name]
        if obj["metadata"]["resourceVersion"] != workload.resource_version:
            return False  # a stale decision: refused, as a 409
        for key, value in status.items():  # a merge patch: null removes the field
            if value is None:
                obj["status"].pop(key, None)
            else:
                obj["status"][key] = copy.deepcopy(value)
        self._watch(workload.name)
        return True

    async def record_event(self, workload, type_: str, reason: str, message: str) -> None:
        self.events.append((workload.name, reason, message))

    async def write_cluster_queue_status(self, name, status) -> None:
        pass

    async def write_local_queue_status(self, namespace, name, status) -> None:
        pass

    # the controllers ---------------------------------------------------------------------------

    def node_check(self, host: str, rules: ReplacementRules) -> None:
        """The node controller looks at one node (no pods here: a NotReady node has failed)."""
        controller = NodeHealthController(
            self.state, None, self, multiple_nodes=rules.multiple_nodes
        )
        asyncio.run(controller.sync(host))

    def replacement_pass(self, rules: ReplacementRules) -> None:
        """One admission cycle, which replaces first, then the writes it started."""
        loop = AdmissionLoop(self.state, self, replacement=rules)

        async def go():
            await loop.cycle()
            await loop.drain()

        asyncio.run(go())


def rack(prefix: str, block: str, rack_name: str, hosts: int, cpu: str = "4") -> list[dict]:
    return [node(f"{prefix}{i}", block, rack_name, cpu=cpu) for i in range(1, hosts + 1)]
