"""Kueue v0.15.0's classical preemption cases that need no cohort, ported to `decide()`.

Sources (sigs.k8s.io/kueue@v0.15.0, pkg/scheduler/preemption/preemption_test.go):
- TestPreemption: every case whose ClusterQueue has no cohort, or whose outcome does not
  depend on its cohort (our ClusterQueues have none). Kueue's test hands the preemptor an
  assignment built by hand; here `decide()` finds the flavor itself, so each case checks that
  it lands on the flavor Kueue's assignment names, then whom it evicts.
- TestCandidatesOrdering: the order victims are tried in, on `preemption.candidate_order`.
- TestPreemptionMessage: the one case that names a reason and both paths.

Each case keeps Kueue's name, its expected victims (`wantPreempted` and which workloads get the
Evicted condition) and, where Kueue states them, the victims' Evicted and Preempted conditions.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import pytest

from tas.admission import preemption
from tas.admission.decide import decide
from tas.api.constants import (
    COND_EVICTED,
    COND_PREEMPTED,
    JOB_UID_LABEL,
    LOWER_OR_NEWER_EQUAL_PRIORITY,
    LOWER_PRIORITY,
    NEVER,
    REASON_IN_CLUSTER_QUEUE,
)
from tas.cache import projections as proj
from tas.cache.state import Charge, ClusterState, charge_of
from tas.workload import transitions

NOW = datetime(2026, 3, 1, 12, 0, 0)  # Kueue's `now`, truncated to the second
NAMESPACE = "default"


def rfc3339(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


# ---- ClusterQueues, as Kueue's test defines them (without cohorts) --------------------------


def cluster_queue(name: str, groups: list, within: str) -> dict:
    """groups: [(covered resources, [(flavor, {resource: nominalQuota})])]."""
    return {
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": list(covered),
                    "flavors": [
                        {
                            "name": flavor,
                            "resources": [{"name": r, "nominalQuota": q} for r, q in quota.items()],
                        }
                        for flavor, quota in flavors
                    ],
                }
                for covered, flavors in groups
            ],
            "preemption": {"withinClusterQueue": within},
        },
    }


# Kueue: one group for cpu (flavor "default"), one for memory (flavors "alpha" then "beta").
STANDALONE = cluster_queue(
    "standalone",
    [
        (["cpu"], [("default", {"cpu": "6"})]),
        (["memory"], [("alpha", {"memory": "3Gi"}), ("beta", {"memory": "3Gi"})]),
    ],
    LOWER_PRIORITY,
)
# Kueue's c2 is in cohort "cohort"; the case below gives it no room to borrow into (its
# assignment is Preempt), so its outcome does not depend on the cohort.
C2 = cluster_queue("c2", [(["cpu", "memory"], [("default", {"cpu": "6", "memory": "3Gi"})])], NEVER)
PREVENT_STARVATION = cluster_queue(
    "preventStarvation", [(["cpu"], [("default", {"cpu": "6"})])], LOWER_OR_NEWER_EQUAL_PRIORITY
)


# ---- Workloads ------------------------------------------------------------------------------


def kueue_workload(
    name: str,
    requests: dict[str, str],
    *,
    priority: int | None = None,
    pod_set: str = "main",
    created: datetime | None = None,
    uid: str | None = None,
    job_uid: str | None = None,
) -> dict:
    """Kueue's MakeWorkload: one pod set of one pod with these requests."""
    meta: dict = {
        "name": name,
        "namespace": NAMESPACE,
        "uid": f"uid-{name}" if uid is None else uid,
        "resourceVersion": "1",
        "generation": 1,
    }
    if created is not None:
        meta["creationTimestamp"] = rfc3339(created)
    if job_uid:
        meta["labels"] = {JOB_UID_LABEL: job_uid}
    spec: dict = {
        "queueName": "lq",
        "podSets": [
            {
                "name": pod_set,
                "count": 1,
                "template": {
                    "spec": {"containers": [{"name": "c", "resources": {"requests": requests}}]}
                },
            }
        ],
    }
    if priority is not None:
        spec["priority"] = priority
    return {"metadata": meta, "spec": spec}


def reserve_quota(obj: dict, cq: str, flavors: dict[str, str], at: datetime = NOW) -> dict:
    """Kueue's ReserveQuotaAt: status.admission in `cq` (resource -> flavor) and QuotaReserved
    True since `at`."""
    ps = obj["spec"]["podSets"][0]
    requests = ps["template"]["spec"]["containers"][0]["resources"]["requests"]
    obj["status"] = {
        "admission": {
            "clusterQueue": cq,
            "podSetAssignments": [
                {
                    "name": ps["name"],
                    "flavors": dict(flavors),
                    "resourceUsage": {r: requests[r] for r in flavors},
                    "count": ps["count"],
                }
            ],
        },
        "conditions": [
            {
                "type": "QuotaReserved",
                "status": "True",
                "reason": "AdmittedByTest",
                "message": f"Admitted by ClusterQueue {cq}",
                "lastTransitionTime": rfc3339(at),
            }
        ],
    }
    return obj


def admitted(
    name: str,
    cq: str,
    requests: dict[str, str],
    flavors: dict[str, str],
    *,
    priority: int | None = None,
    created: datetime | None = None,
    reserved: datetime = NOW,
) -> dict:
    return reserve_quota(
        kueue_workload(name, requests, priority=priority, created=created), cq, flavors, reserved
    )


def incoming(
    requests: dict[str, str],
    *,
    priority: int | None = None,
    pod_set: str = "main",
    created: datetime | None = None,
    base: bool = True,
) -> dict:
    """Kueue's `in` workload; `base` is its baseIncomingWl (UID wl-in, job-uid job-in)."""
    return kueue_workload(
        "in",
        requests,
        priority=priority,
        pod_set=pod_set,
        created=created,
        uid="wl-in" if base else None,
        job_uid="job-in" if base else None,
    )


def state_with(cluster_queue_obj: dict, workloads: list[dict]) -> ClusterState:
    state = ClusterState()
    for flavor in ("default", "alpha", "beta"):  # Kueue's flavors: no node labels, no topology
        state.upsert_flavor(proj.flavor_from_object({"metadata": {"name": flavor}, "spec": {}}))
    state.upsert_cluster_queue(proj.cluster_queue_from_object(cluster_queue_obj))
    state.upsert_local_queue(NAMESPACE, "lq", cluster_queue_obj["metadata"]["name"])
    state.upsert_namespace(NAMESPACE, {})
    for obj in workloads:
        state.upsert_workload(proj.workload_from_object(obj))
    return state


def kueue_message(cq: str) -> str:
    """The victims' message in Kueue's expectations (preemptor `in`, same ClusterQueue)."""
    return (
        "Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization "
        f"in the ClusterQueue; preemptor path: /{cq}; preemptee path: /{cq}"
    )


# ---- TestPreemption -------------------------------------------------------------------------


@dataclass
class Case:
    cluster_queue: dict
    admitted: list[dict]
    incoming: dict
    want_victims: set[str]  # wantPreempted == len(want_victims)
    # Kueue's Evicted/Preempted message on each victim (None: Kueue states none, no victims).
    want_victim_message: str | None = None
    # The flavor Kueue's hand-made assignment preempts in (checked on decide's charge).
    want_flavor: str | None = None


S = "standalone"
CPU = {"cpu": "default"}

CASES = {
    "preempt lowest priority": Case(
        STANDALONE,
        [
            admitted("low", S, {"cpu": "2"}, CPU, priority=-1),
            admitted("mid", S, {"cpu": "2"}, CPU),
            admitted("high", S, {"cpu": "2"}, CPU, priority=1),
        ],
        incoming({"cpu": "2"}, priority=1),
        {"low"},
        kueue_message(S),
        "default",
    ),
    "preempt multiple": Case(
        STANDALONE,
        [
            admitted("low", S, {"cpu": "2"}, CPU, priority=-1),
            admitted("mid", S, {"cpu": "2"}, CPU),
            admitted("high", S, {"cpu": "2"}, CPU, priority=1),
        ],
        incoming({"cpu": "3"}, priority=1),
        {"low", "mid"},
        kueue_message(S),
        "default",
    ),
    "no preemption for low priority": Case(
        STANDALONE,
        [
            admitted("low", S, {"cpu": "3"}, CPU, priority=-1),
            admitted("mid", S, {"cpu": "3"}, CPU),
        ],
        incoming({"cpu": "1"}, priority=-1, base=False),
        set(),
    ),
    "not enough low priority workloads": Case(
        STANDALONE,
        [
            admitted("low", S, {"cpu": "3"}, CPU, priority=-1),
            admitted("mid", S, {"cpu": "3"}, CPU),
        ],
        incoming({"cpu": "4"}, base=False),
        set(),
    ),
    "some free quota, preempt low priority": Case(
        STANDALONE,
        [
            admitted("low", S, {"cpu": "1"}, CPU, priority=-1),
            admitted("mid", S, {"cpu": "1"}, CPU),
            admitted("high", S, {"cpu": "3"}, CPU, priority=1),
        ],
        incoming({"cpu": "2"}, priority=1),
        {"low"},
        kueue_message(S),
        "default",
    ),
    "minimal set excludes low priority": Case(
        STANDALONE,
        [
            admitted("low", S, {"cpu": "1"}, CPU, priority=-1),
            admitted("mid", S, {"cpu": "2"}, CPU),
            admitted("high", S, {"cpu": "3"}, CPU, priority=1),
        ],
        incoming({"cpu": "2"}, priority=1),
        {"mid"},
        kueue_message(S),
        "default",
    ),
    # Adapted: Kueue's preemptor also requests 1 cpu (flavor "default", from the other
    # resource group) and its hand-made assignment puts memory on "beta". decide() admits on
    # one flavor of one resource group, and picks the first flavor where preemption makes
    # room, so here the preemptor requests memory only and the memory flavors are listed
    # beta first. The point of the case stands: the lowest priority workload ("low") is in
    # flavor alpha and is left alone; "mid" in beta is evicted.
    "only preempt workloads using the chosen flavor (adapted)": Case(
        cluster_queue(
            "standalone",
            [
                (["cpu"], [("default", {"cpu": "6"})]),
                (["memory"], [("beta", {"memory": "3Gi"}), ("alpha", {"memory": "3Gi"})]),
            ],
            LOWER_PRIORITY,
        ),
        [
            admitted("low", S, {"memory": "2Gi"}, {"memory": "alpha"}, priority=-1),
            admitted("mid", S, {"memory": "1Gi"}, {"memory": "beta"}),
            admitted("high", S, {"memory": "1Gi"}, {"memory": "beta"}, priority=1),
        ],
        incoming({"memory": "2Gi"}, priority=1),
        {"mid"},
        kueue_message(S),
        "beta",
    ),
    "can't preempt workloads in ClusterQueue for withinClusterQueue=Never": Case(
        C2,
        [admitted("c2-low", "c2", {"cpu": "3"}, CPU, priority=-1)],
        incoming({"cpu": "4"}, priority=1),
        set(),
    ),
    "preempt newer workloads with the same priority": Case(
        PREVENT_STARVATION,
        [
            admitted("wl1", "preventStarvation", {"cpu": "2"}, CPU, priority=2),
            admitted(
                "wl2",
                "preventStarvation",
                {"cpu": "2"},
                CPU,
                priority=1,
                created=NOW,
                reserved=NOW + timedelta(seconds=1),
            ),
            admitted(
                "wl3", "preventStarvation", {"cpu": "2"}, CPU, priority=1, created=NOW, reserved=NOW
            ),
        ],
        incoming(
            {"cpu": "2"},
            priority=1,
            pod_set="launcher",
            created=NOW - timedelta(seconds=15),
        ),
        {"wl2"},
        kueue_message("preventStarvation"),
        "default",
    ),
}


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_kueue_preemption(case: Case) -> None:
    state = state_with(case.cluster_queue, case.admitted)
    cq = state.cluster_queues[case.cluster_queue["metadata"]["name"]]
    preemptor = proj.workload_from_object(case.incoming)
    state.upsert_workload(preemptor)  # pending in the cache, as the loop sees it

    decision = decide(state, preemptor, cq, now=NOW)

    assert not decision.admitted, decision.message
    assert not decision.invalid, decision.message
    if not case.want_victims:
        assert decision.preemption is None, [t.workload.name for t in decision.preemption.targets]
        if cq.within_cluster_queue == NEVER:
            assert ". No preemption" not in decision.message, decision.message
        return

    assert decision.preemption is not None, decision.message
    targets = decision.preemption.targets
    assert len(targets) == len(case.want_victims)  # Kueue's wantPreempted
    assert {t.workload.name for t in targets} == case.want_victims
    # Where the preemptor goes once they are gone: the flavor Kueue's assignment preempts in.
    assert decision.charge is not None
    assert {ps.flavor for ps in decision.charge.pod_sets} == {case.want_flavor}

    for target in targets:
        victim = target.workload
        victim_charge = state.charges()[victim.key]
        tree = state.quota_tree()
        text = preemption.message(
            preemptor, target.reason, tree.path(cq.name), tree.path(victim_charge.cluster_queue)
        )
        assert text == case.want_victim_message
        status = transitions.preempted(victim, target.reason, text)
        by_type = {c["type"]: c for c in status["conditions"]}
        assert {k: by_type[COND_EVICTED][k] for k in ("status", "reason", "message")} == {
            "status": "True",
            "reason": "Preempted",
            "message": case.want_victim_message,
        }
        assert {k: by_type[COND_PREEMPTED][k] for k in ("status", "reason", "message")} == {
            "status": "True",
            "reason": "InClusterQueue",
            "message": case.want_victim_message,
        }
    assert {t.reason for t in targets} == {REASON_IN_CLUSTER_QUEUE}

    # The cache is as it was: the simulation restored every charge it took out.
    for obj in case.admitted:
        info = state.workloads[(NAMESPACE, obj["metadata"]["name"])]
        assert state.charges()[info.key] == charge_of(info)

    # Once the victims are gone the preemptor is admitted, in that flavor.
    for target in targets:
        state.delete_workload(*target.workload.key)
    after = decide(state, preemptor, cq, now=NOW)
    assert after.admitted, after.message
    assert {f for ps in after.admission["podSetAssignments"] for f in ps["flavors"].values()} == {
        case.want_flavor
    }


# ---- TestCandidatesOrdering -----------------------------------------------------------------

PREEMPTOR_CQ = "preemptor"


def candidate(
    name: str,
    cq: str | None,
    *,
    priority: int | None = None,
    reserved: datetime = NOW,
    evicted: bool = False,
) -> tuple[proj.WorkloadInfo, Charge]:
    """Kueue's workload.NewInfo of a MakeWorkload: ReserveQuotaAt(MakeAdmission(cq)) when `cq`
    is given; an Evicted True condition when `evicted`."""
    obj = kueue_workload(name, {}, priority=priority, uid="")  # Kueue's have no UID
    if cq is not None:
        obj["status"] = {
            "admission": {"clusterQueue": cq, "podSetAssignments": []},
            "conditions": [
                {"type": "QuotaReserved", "status": "True", "lastTransitionTime": rfc3339(reserved)}
            ],
        }
    if evicted:
        status = obj.setdefault("status", {"conditions": []})
        status["conditions"].append(
            {"type": "Evicted", "status": "True", "lastTransitionTime": rfc3339(NOW)}
        )
    info = proj.workload_from_object(obj)
    # Kueue's Info.ClusterQueue is the admission's ClusterQueue, "" without one.
    charge = charge_of(info) or Charge(cluster_queue="", pod_sets=())
    return info, charge


ORDERING = {
    "workloads sorted by priority": (
        [
            candidate("high", PREEMPTOR_CQ, priority=10),
            candidate("low", PREEMPTOR_CQ, priority=-10),
        ],
        ["low", "high"],
    ),
    "evicted workload first": (
        [
            candidate("other", PREEMPTOR_CQ, priority=10),
            candidate("evicted", None, evicted=True),
        ],
        ["evicted", "other"],
    ),
    "workload from different CQ first": (
        [
            candidate("preemptorCq", PREEMPTOR_CQ, priority=10),
            candidate("other", "other", priority=10),
        ],
        ["other", "preemptorCq"],
    ),
    "old workloads last": (
        [
            candidate("older", PREEMPTOR_CQ, reserved=NOW - timedelta(seconds=1)),
            candidate("younger", PREEMPTOR_CQ, reserved=NOW + timedelta(seconds=1)),
            candidate("current", PREEMPTOR_CQ, reserved=NOW),
        ],
        ["younger", "current", "older"],
    ),
    # Kueue runs this one with AdmissionFairSharing on; the two are in different
    # ClusterQueues, so LocalQueue usage is not compared and the queue decides.
    "workloads from different CQ are sorted based on priority and timestamp": (
        [
            candidate("mid_lq_usage", PREEMPTOR_CQ, priority=10),
            candidate("high_lq_usage_different_cq", "different_cq", priority=1),
        ],
        ["high_lq_usage_different_cq", "mid_lq_usage"],
    ),
}


@pytest.mark.parametrize(("candidates", "want"), list(ORDERING.values()), ids=list(ORDERING))
def test_kueue_candidates_ordering(candidates, want) -> None:
    for items in (candidates, list(reversed(candidates))):  # the input order must not matter
        got = sorted(items, key=preemption.candidate_order(PREEMPTOR_CQ, NOW))
        assert [w.name for w, _ in got] == want


# ---- TestPreemptionMessage ------------------------------------------------------------------


def test_kueue_preemption_message_with_reason_and_paths() -> None:
    obj = kueue_workload("p", {}, uid="uid", job_uid="juid")
    preemptor = proj.workload_from_object(obj)
    assert preemption.message(preemptor, REASON_IN_CLUSTER_QUEUE, "/a", "/b") == (
        "Preempted to accommodate a workload (UID: uid, JobUID: juid) due to prioritization "
        "in the ClusterQueue; preemptor path: /a; preemptee path: /b"
    )
