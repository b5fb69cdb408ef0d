"""Kueue-shaped objects for the fair-sharing tests: ClusterQueues, Cohorts and workloads as
plain dicts, and a ClusterState holding them (flavors without topology unless given)."""

from __future__ import annotations

from datetime import datetime

from tas.api.constants import ANY, LOWER_PRIORITY, NEVER
from tas.api.fairsharing import DEFAULT_PREEMPTION_STRATEGIES, FairSharing
from tas.cache import projections as proj
from tas.cache.state import ClusterState

NOW = datetime(2026, 3, 1, 12, 0, 0)
NAMESPACE = "default"


def rfc3339(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def cq(
    name: str,
    cohort: str | None = None,
    quotas: dict[str, str] | None = None,  # flavor -> cpu nominal
    *,
    within: str = NEVER,
    reclaim: str = NEVER,
    weight: str | None = None,
    borrow_within: tuple[str, int] | None = None,
) -> dict:
    flavors = [
        {"name": f, "resources": [{"name": "cpu", "nominalQuota": q}]}
        for f, q in (quotas or {}).items()
    ]
    spec: dict = {
        "namespaceSelector": {},
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": flavors}] if flavors else [],
        "preemption": {"withinClusterQueue": within, "reclaimWithinCohort": reclaim},
    }
    if borrow_within:
        spec["preemption"]["borrowWithinCohort"] = {
            "policy": borrow_within[0],
            "maxPriorityThreshold": borrow_within[1],
        }
    if cohort:
        spec["cohortName"] = cohort
    if weight is not None:
        spec["fairSharing"] = {"weight": weight}
    return {"metadata": {"name": name}, "spec": spec}


def base_cq(name: str, nominal: str = "3") -> dict:
    """Kueue's baseCQs a, b and c of TestFairPreemptions."""
    return cq(
        name,
        "all",
        {"default": nominal},
        within=LOWER_PRIORITY,
        reclaim=ANY,
        borrow_within=(LOWER_PRIORITY, -3),
    )


BASE_CQS = [base_cq("a"), base_cq("b"), base_cq("c"), cq("preemptible", "all", {"default": "0"})]


def cohort(
    name: str, parent: str | None = None, cpu: str | None = None, weight: str | None = None
) -> dict:
    spec: dict = {}
    if cpu is not None:
        spec["resourceGroups"] = [
            {
                "coveredResources": ["cpu"],
                "flavors": [
                    {"name": "default", "resources": [{"name": "cpu", "nominalQuota": cpu}]}
                ],
            }
        ]
    if parent:
        spec["parentName"] = parent
    if weight is not None:
        spec["fairSharing"] = {"weight": weight}
    return {"metadata": {"name": name}, "spec": spec}


def workload(
    name: str, cpu: str = "1", priority: int = 0, created: datetime = NOW, queue: str = "lq"
) -> dict:
    return {
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "uid": name,  # Kueue's test: the name as UID, for a predictable order
            "resourceVersion": "1",
            "generation": 1,
            "creationTimestamp": rfc3339(created),
        },
        "spec": {
            "queueName": queue,
            "priority": priority,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {
                            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]
                        }
                    },
                }
            ],
        },
    }


def admitted(name: str, queue: str, cpu: str = "1", priority: int = 0, flavor: str = "default"):
    """Kueue's SimpleReserveQuota(queue, flavor, now)."""
    obj = workload(name, cpu, priority)
    obj["status"] = {
        "admission": {
            "clusterQueue": queue,
            "podSetAssignments": [
                {
                    "name": "main",
                    "flavors": {"cpu": flavor},
                    "resourceUsage": {"cpu": cpu},
                    "count": 1,
                }
            ],
        },
        "conditions": [
            {
                "type": "QuotaReserved",
                "status": "True",
                "reason": "QuotaReserved",
                "message": f"Quota reserved in ClusterQueue {queue}",
                "lastTransitionTime": rfc3339(NOW),
            }
        ],
    }
    return obj


def state_of(
    queues: list[dict],
    cohorts: list[dict] = (),
    workloads: list[dict] = (),
    strategies: tuple[str, ...] = DEFAULT_PREEMPTION_STRATEGIES,
    flavors: tuple[str, ...] = ("default",),
) -> ClusterState:
    state = ClusterState()
    state.fair_sharing = FairSharing(preemption_strategies=strategies)
    for flavor in flavors:
        state.upsert_flavor(proj.flavor_from_object({"metadata": {"name": flavor}, "spec": {}}))
    for obj in cohorts:
        state.upsert_cohort(proj.cohort_from_object(obj))
    state.upsert_namespace(NAMESPACE, {})
    for obj in queues:
        state.upsert_cluster_queue(proj.cluster_queue_from_object(obj))
        name = obj["metadata"]["name"]
        state.upsert_local_queue(NAMESPACE, f"lq-{name}", name)
    for obj in workloads:
        state.upsert_workload(proj.workload_from_object(obj))
    return state
