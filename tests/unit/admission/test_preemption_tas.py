"""Kueue v0.15.0's TestScheduleForTASPreemption, ported to `decide()`.

Source: sigs.k8s.io/kueue@v0.15.0, pkg/scheduler/scheduler_tas_test.go. Kueue runs one
scheduling cycle and checks the workloads written; `decide()` is that cycle's decision for the
preemptor: whom to evict, and the pending message (Kueue's, less the ". Pending the preemption
of N workload(s)" our admission loop appends). The victims' Evicted and Preempted conditions are
checked as the loop writes them, through `preemption.message` and `transitions.preempted`.

Not here: "only low priority workload is preempted", "With pods count usage pressure on nodes:
only low priority workload is preempted" and "low priority workload is preempted, mid-priority
workload survives". decide() evicts the workload Kueue evicts, but its pending message goes on
after Kueue v0.15.0's `topology "..." doesn't allow to fit any of 1 pod(s)` with
`. Total nodes: 1; excluded: resource "cpu": 1` (the solver's exclusion summary).

Each case runs on Kueue's one-level topology (hostname) and again on a block/rack/hostname
topology with the same nodes in one rack: every request is at hostname level, so the outcome is
the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import pytest

from tas.admission import preemption
from tas.admission.decide import decide
from tas.api import topologyassignment
from tas.api.constants import COND_EVICTED, COND_PREEMPTED, JOB_UID_LABEL, LOWER_PRIORITY
from tas.api.topologyassignment import v1beta1_to_v1beta2
from tas.cache import projections as proj
from tas.cache.state import ClusterState, charge_of
from tas.workload import transitions

NOW = datetime(2026, 3, 1, 12, 0, 0)
NAMESPACE = "default"
HOST = "kubernetes.io/hostname"
BLOCK = "cloud.provider.com/topology-block"
RACK = "cloud.provider.com/topology-rack"
FLAVOR = "tas-default"
CQ = "tas-main"


@dataclass(frozen=True)
class Topology:
    name: str
    levels: tuple[str, ...]

    def values(self, host: str) -> list[str]:
        """A node's domain values at every level (all nodes are in block b1, rack r1)."""
        by_level = {BLOCK: "b1", RACK: "r1", HOST: host}
        return [by_level[level] for level in self.levels]


SINGLE_LEVEL = Topology("tas-single-level", (HOST,))  # Kueue's MakeDefaultOneLevelTopology
THREE_LEVELS = Topology("tas-three-level", (BLOCK, RACK, HOST))
TOPOLOGIES = [pytest.param(SINGLE_LEVEL, id="hostname"), pytest.param(THREE_LEVELS, id="3-level")]


def rfc3339(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def tas_node(name: str, pods: str = "10") -> dict:
    """Kueue's test node: 5 cpu, 5Gi, 10 pods (`pods` overrides), label tas-node=true."""
    return {
        "metadata": {
            "name": name,
            "labels": {"tas-node": "true", HOST: name, BLOCK: "b1", RACK: "r1"},
        },
        "spec": {},
        "status": {
            "allocatable": {"cpu": "5", "memory": "5Gi", "pods": pods},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def cluster_queue(cpu: str = "50", memory: str = "50Gi") -> dict:
    return {
        "metadata": {"name": CQ},
        "spec": {
            "namespaceSelector": {},
            "preemption": {"withinClusterQueue": LOWER_PRIORITY},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [
                        {
                            "name": FLAVOR,
                            "resources": [
                                {"name": "cpu", "nominalQuota": cpu},
                                {"name": "memory", "nominalQuota": memory},
                            ],
                        }
                    ],
                }
            ],
        },
    }


@dataclass(frozen=True)
class Waiting:
    """A pending workload: one pod set "one" of `count` pods with `cpu` each."""

    name: str
    priority: int
    count: int
    cpu: str
    request: str  # "required" or "preferred", at hostname level
    uid: str | None = None
    job_uid: str | None = None

    def obj(self) -> dict:
        meta: dict = {
            "name": self.name,
            "namespace": NAMESPACE,
            "uid": self.uid or f"uid-{self.name}",
            "resourceVersion": "1",
            "generation": 1,
        }
        if self.job_uid:
            meta["labels"] = {JOB_UID_LABEL: self.job_uid}
        return {
            "metadata": meta,
            "spec": {
                "queueName": CQ,
                "priority": self.priority,
                "podSets": [
                    {
                        "name": "one",
                        "count": self.count,
                        "topologyRequest": {self.request: HOST},
                        "template": {
                            "spec": {
                                "containers": [
                                    {"name": "c", "resources": {"requests": {"cpu": self.cpu}}}
                                ]
                            }
                        },
                    }
                ],
            },
        }


@dataclass(frozen=True)
class Running:
    """An admitted workload: one pod of `cpu` on `host` (required hostname)."""

    name: str
    priority: int
    cpu: str
    host: str

    def obj(self, topology: Topology) -> dict:
        obj = Waiting(self.name, self.priority, 1, self.cpu, "required").obj()
        obj["status"] = {
            "admission": {
                "clusterQueue": CQ,
                "podSetAssignments": [
                    {
                        "name": "one",
                        "flavors": {"cpu": FLAVOR},
                        "resourceUsage": {"cpu": self.cpu},
                        "count": 1,
                        "topologyAssignment": v1beta1_to_v1beta2(
                            {
                                "levels": list(topology.levels),
                                "domains": [{"values": topology.values(self.host), "count": 1}],
                            }
                        ),
                    }
                ],
            },
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "True",
                    "reason": "AdmittedByTest",
                    "message": f"Admitted by ClusterQueue {CQ}",
                    "lastTransitionTime": rfc3339(NOW),
                },
                {
                    "type": "Admitted",
                    "status": "True",
                    "reason": "ByTest",
                    "message": f"Admitted by ClusterQueue {CQ}",
                    "lastTransitionTime": rfc3339(NOW),
                },
            ],
        }
        return obj


@dataclass(frozen=True)
class Case:
    nodes: list[dict]
    cluster_queue: dict
    running: list[Running]
    preemptor: Waiting
    # Kueue's QuotaReserved=False message on the preemptor, {topology} for the topology name.
    want_message: str
    want_victims: set[str]


def victim_message(uid: str, job_uid: str) -> str:
    return (
        f"Preempted to accommodate a workload (UID: {uid}, JobUID: {job_uid}) due to "
        f"prioritization in the ClusterQueue; preemptor path: /{CQ}; preemptee path: /{CQ}"
    )


FOO = {"uid": "wl-foo", "job_uid": "job-foo"}

CASES = {
    # The victim, chosen by quota, is assigned to a node that is gone (z1).
    "workload preempted due to quota is using deleted Node": Case(
        [tas_node("x1"), tas_node("y1")],
        cluster_queue(cpu="10", memory="10Gi"),
        [Running("low-priority-admitted", 1, "5", "z1")],
        Waiting("foo", 3, 10, "1", "preferred", **FOO),
        "couldn't assign flavors to pod set one: insufficient unused quota for cpu in flavor "
        "tas-default, 5 more needed. Pending the preemption of 1 workload(s)",
        {"low-priority-admitted"},
    ),
    # 2 cpu free, one on each node, but both pods must share a node.
    "low priority workload is preempted even though there is enough capacity, but fragmented": Case(
        [tas_node("x1"), tas_node("y1")],
        cluster_queue(),
        [
            Running("mid-priority-admitted", 2, "4", "x1"),
            Running("low-priority-admitted", 1, "4", "y1"),
        ],
        Waiting("foo", 3, 2, "1", "required", **FOO),
        'couldn\'t assign flavors to pod set one: topology "{topology}" allows to fit only 1 '
        "out of 2 pod(s). Pending the preemption of 1 workload(s)",
        {"low-priority-admitted"},
    ),
    # Equal priority: no victim; Kueue's message has no "Pending the preemption" part.
    "workload with equal priority awaits for other workloads to complete": Case(
        [tas_node("x1")],
        cluster_queue(),
        [Running("mid-priority-admitted", 2, "4", "x1")],
        Waiting("mid-priority-waiting", 2, 2, "1", "required"),
        'couldn\'t assign flavors to pod set one: topology "{topology}" allows to fit only 1 '
        "out of 2 pod(s)",
        set(),
    ),
}


def build_state(case: Case, topology: Topology) -> ClusterState:
    state = ClusterState()
    state.upsert_topology(topology.name, topology.levels)
    state.upsert_flavor(
        proj.flavor_from_object(
            {
                "metadata": {"name": FLAVOR},
                "spec": {"nodeLabels": {"tas-node": "true"}, "topologyName": topology.name},
            }
        )
    )
    state.upsert_cluster_queue(proj.cluster_queue_from_object(case.cluster_queue))
    state.upsert_local_queue(NAMESPACE, CQ, CQ)
    state.upsert_namespace(NAMESPACE, {})
    for n in case.nodes:
        state.upsert_node(proj.node_from_object(n))
    for r in case.running:
        state.upsert_workload(proj.workload_from_object(r.obj(topology)))
    return state


@pytest.mark.parametrize("topology", TOPOLOGIES)
@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_kueue_tas_preemption(case: Case, topology: Topology) -> None:
    state = build_state(case, topology)
    cq = state.cluster_queues[CQ]
    preemptor = proj.workload_from_object(case.preemptor.obj())
    state.upsert_workload(preemptor)
    want_message = case.want_message.format(topology=topology.name)

    decision = decide(state, preemptor, cq, now=NOW)

    assert not decision.admitted, decision.message
    assert not decision.invalid, decision.message
    if not case.want_victims:
        assert decision.preemption is None, [t.workload.name for t in decision.preemption.targets]
        # Our addition beyond Kueue (withinClusterQueue is not Never): why no one is evicted.
        assert decision.message.startswith(want_message + ". No preemption: "), decision.message
        return

    assert decision.preemption is not None, decision.message
    targets = decision.preemption.targets
    assert {t.workload.name for t in targets} == case.want_victims
    full = f"{decision.message}. Pending the preemption of {len(targets)} workload(s)"
    assert full == want_message

    text = victim_message(case.preemptor.uid or "", case.preemptor.job_uid or "")
    for target in targets:
        victim = target.workload
        victim_cq = state.charges()[victim.key].cluster_queue
        assert (
            preemption.message(
                preemptor,
                target.reason,
                state.quota_tree().path(cq.name),
                state.quota_tree().path(victim_cq),
            )
            == text
        )
        status = transitions.preempted(victim, target.reason, text)
        by_type = {c["type"]: c for c in status["conditions"]}
        assert {k: by_type[COND_EVICTED][k] for k in ("status", "reason", "message")} == {
            "status": "True",
            "reason": "Preempted",
            "message": text,
        }
        assert {k: by_type[COND_PREEMPTED][k] for k in ("status", "reason", "message")} == {
            "status": "True",
            "reason": "InClusterQueue",
            "message": text,
        }

    # Where decide() says the preemptor goes once the victims are gone: every pod placed, on
    # nodes that exist, on one node when the request is required at hostname level.
    placements = decision.preemption.placements
    assert set(placements) == {"one"}
    assignment = placements["one"]
    assert sum(d.count for d in assignment.domains) == case.preemptor.count
    hosts = {n["metadata"]["name"] for n in case.nodes}
    assert {d.values[-1] for d in assignment.domains} <= hosts
    if case.preemptor.request == "required":
        assert len(assignment.domains) == 1

    # The simulation gave back every charge and all the topology usage it took out: deciding
    # again gives the same answer.
    for r in case.running:
        info = state.workloads[(NAMESPACE, r.name)]
        assert state.charges()[info.key] == charge_of(info)
    again = decide(state, preemptor, cq, now=NOW)
    assert again.message == decision.message
    assert again.preemption is not None
    assert [t.workload.name for t in again.preemption.targets] == [t.workload.name for t in targets]

    # Once the victims are gone the preemptor is admitted, where decide() said it would go.
    for target in targets:
        state.delete_workload(*target.workload.key)
    admitted = decide(state, preemptor, cq, now=NOW)
    assert admitted.admitted, admitted.message
    (ps,) = admitted.admission["podSetAssignments"]
    assert ps["topologyAssignment"] == topologyassignment.to_stored(assignment)
