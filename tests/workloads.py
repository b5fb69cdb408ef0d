"""An admitted Workload as the operator writes it, every field we model filled in: shared by
the model tests (it round-trips exactly) and the CRD tests (the API server keeps all of it)."""

from __future__ import annotations

from typing import Any

from tas.api.constants import GROUP, HOSTNAME_LABEL

RACK = "cloud.provider.com/topology-rack"
CONTAINER = {"name": "c", "image": "busybox"}


def _pod_sets() -> list[dict[str, Any]]:
    main = {
        "name": "main",
        "count": 6,
        "template": {
            "metadata": {"annotations": {f"{GROUP}/podset-required-topology": "rack"}},
            "spec": {
                "containers": [{**CONTAINER, "resources": {"requests": {"cpu": "1"}}}],
                "restartPolicy": "Never",
            },
        },
        "topologyRequest": {
            "required": RACK,
            "podIndexLabel": "batch.kubernetes.io/job-completion-index",
            "podsetSliceRequiredTopologyConstraints": [
                {"topology": RACK, "size": 6},
                {"topology": HOSTNAME_LABEL, "size": 2},
            ],
        },
    }
    leader = {
        "name": "leader",
        "count": 1,
        "template": {
            "metadata": {"labels": {"role": "leader"}},
            "spec": {"containers": [dict(CONTAINER)]},
        },
        "topologyRequest": {
            "required": RACK,
            "podSetGroupName": "group",
            "podIndexLabel": "batch.kubernetes.io/job-completion-index",
        },
    }
    workers = {
        "name": "workers",
        "count": 8,
        "minCount": 4,
        "template": {
            "metadata": {"annotations": {f"{GROUP}/podset-required-topology": RACK}},
            "spec": {
                "containers": [{**CONTAINER, "resources": {"requests": {"cpu": "500m"}}}],
                "tolerations": [{"operator": "Exists"}],
            },
        },
        "topologyRequest": {
            "preferred": RACK,
            "subGroupIndexLabel": "jobset.sigs.k8s.io/job-index",
            "subGroupCount": 2,
            "podsetSliceRequiredTopologyConstraints": [
                {"topology": RACK, "size": 4},
                {"topology": HOSTNAME_LABEL, "size": 2},
            ],
        },
    }
    return [main, leader, workers]


def _assignment(*counts: tuple[str, int]) -> dict[str, Any]:
    return {
        "levels": [HOSTNAME_LABEL],
        "domains": [{"values": [node], "count": count} for node, count in counts],
    }


def _pod_set_assignments() -> list[dict[str, Any]]:
    flavors = {"cpu": "tas-flavor"}
    return [
        {
            "name": "main",
            "flavors": flavors,
            "resourceUsage": {"cpu": "6"},
            "count": 6,
            "topologyAssignment": _assignment(("node-1", 4), ("node-2", 2)),
        },
        {
            "name": "leader",
            "flavors": flavors,
            "resourceUsage": {"cpu": 1, "memory": "1Gi"},
            "count": 1,
            "topologyAssignment": _assignment(("node-1", 1)),
        },
        {
            "name": "workers",
            "flavors": flavors,
            "resourceUsage": {"cpu": "4"},
            "count": 8,
            "topologyAssignment": _assignment(("node-1", 4), ("node-2", 4)),
            "delayedTopologyRequest": "Ready",
        },
    ]


def admitted_workload(namespace: str = "team-a", name: str = "job-sample-1a2b3") -> dict[str, Any]:
    """A v1beta1 Workload, admitted in ClusterQueue tas-cluster-queue from tas-user-queue."""
    return {
        "apiVersion": f"{GROUP}/v1beta1",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "queueName": "tas-user-queue",
            "priorityClassName": "high",
            "priorityClassSource": f"{GROUP}/workloadpriorityclass",
            "priority": 100,
            "active": True,
            "podSets": _pod_sets(),
        },
        "status": {
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "True",
                    "reason": "QuotaReserved",
                    "message": "Quota reserved in ClusterQueue tas-cluster-queue",
                    "lastTransitionTime": "2026-11-21T10:00:00Z",
                    "observedGeneration": 1,
                },
                {
                    "type": "Admitted",
                    "status": "True",
                    "reason": "Admitted",
                    "message": "The workload is admitted",
                    "lastTransitionTime": "2026-11-21T10:00:01Z",
                },
            ],
            "admission": {
                "clusterQueue": "tas-cluster-queue",
                "podSetAssignments": _pod_set_assignments(),
            },
            "requeueState": {"count": 2, "requeueAt": "2026-11-21T09:59:00Z"},
            "unhealthyNodes": [{"name": "node-3"}],
        },
    }
