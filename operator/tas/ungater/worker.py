"""Ungates an admitted workload's pods, one workload at a time (see plan.py for the choice)."""

from __future__ import annotations

import logging

from tas import metrics
from tas.api.constants import TOPOLOGY_SCHEDULING_GATE
from tas.cache.projections import Key
from tas.cache.state import ClusterState
from tas.kube import Kube, KubeError, pod_path
from tas.ungater.plan import plan

log = logging.getLogger(__name__)
STRATEGIC = "application/strategic-merge-patch+json"


class Ungater:
    def __init__(self, state: ClusterState, kube: Kube) -> None:
        self.state = state
        self.kube = kube
        # pod uid -> domain, for pods we ungated whose update the watch has not shown yet;
        # rebuilt after a restart from the nodeSelectors of the pods themselves.
        self.expected: dict[str, tuple[str, ...]] = {}
        self.ungated = 0

    async def sync(self, key: Key) -> None:
        workload = self.state.workloads.get(key)
        if workload is None or not workload.admitted:
            return
        pods = self.state.pods_of(*key)
        seen = {p.uid: p for p in pods}
        for uid in [u for u in self.expected if u in seen and not seen[u].gated]:
            del self.expected[uid]
        for admission in workload.admissions:
            if admission.assignment is None:
                continue
            pod_set_pods = [p for p in pods if p.pod_set == admission.name]
            for ungate in plan(
                admission.assignment, pod_set_pods, self.expected, workload.unhealthy_nodes
            ):
                patch = {
                    "spec": {
                        "schedulingGates": [{"$patch": "delete", "name": TOPOLOGY_SCHEDULING_GATE}],
                        "nodeSelector": ungate.node_selector,
                    }
                }
                try:
                    await self.kube.patch(
                        pod_path(ungate.pod.namespace, ungate.pod.name), patch, STRATEGIC
                    )
                except KubeError as exc:
                    if exc.status == 404:
                        continue  # the pod is gone; its replacement will come through the watch
                    raise
                self.expected[ungate.pod.uid] = ungate.domain
                self.ungated += 1
                metrics.PODS_UNGATED.inc()
                log.debug(
                    "ungated %s/%s onto %s", ungate.pod.namespace, ungate.pod.name, ungate.domain
                )

    def forget_pod(self, uid: str) -> None:
        self.expected.pop(uid, None)
