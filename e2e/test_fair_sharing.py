"""Fair sharing end to end: two teams in one cohort, weights 1 and 3, share a topology
flavor of 8 one-cpu hosts (2 blocks of 2 racks of 2) that only the cohort provides.

Team a fills the flavor first (8 one-pod Jobs, in two halves a second apart). Then both teams
keep submitting: team b's Jobs (2 pods, required in one block) preempt team a's (reason
InCohortFairSharing) until the shares are equal, 2 cpu for a and 6 for b (2/8 over weight 1 =
6/8 over weight 3): a 1:3 split. Every victim freed a host a preemptor then used (the
preemption is simulated on the topology), team a's later Jobs preempt nobody, and both
ClusterQueues report the same weightedShare.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import datetime

import pytest

from e2e import jobs, topology
from e2e.harness import Cluster, wait_for
from e2e.test_hotswap import add_racks

pytestmark = pytest.mark.e2e

GROUP = "fairshare"
KUEUE = "kueue.x-k8s.io/v1beta1"
BLOCK = topology.BLOCK_LABEL
IN_A_BLOCK = {"kueue.x-k8s.io/podset-required-topology": BLOCK}


def _kueue_objects(cluster: Cluster, name: str) -> None:
    """Topology, flavor, the cohort holding all the quota and the two teams' queues."""
    levels = [{"nodeLabel": label} for label in topology.LEVELS]
    cluster.apply({"apiVersion": KUEUE, "kind": "Topology", "metadata": {"name": name},
                   "spec": {"levels": levels}})  # fmt: skip
    flavor = {"nodeLabels": {topology.NODE_GROUP_LABEL: GROUP}, "topologyName": name}
    cluster.apply({"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": name},
                   "spec": flavor})  # fmt: skip

    def groups(cpu: int) -> list:
        quota = [{"name": "cpu", "nominalQuota": cpu}]
        return [{"coveredResources": ["cpu"], "flavors": [{"name": name, "resources": quota}]}]

    cluster.apply({"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": name},
                   "spec": {"resourceGroups": groups(8)}})  # fmt: skip
    for team, weight in (("a", "1"), ("b", "3")):
        spec = {
            "cohort": name,
            "namespaceSelector": {},
            "resourceGroups": groups(0),
            "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "Never"},
            "fairSharing": {"weight": weight},
        }
        cluster.apply({"apiVersion": KUEUE, "kind": "ClusterQueue",
                       "metadata": {"name": f"{name}-{team}"}, "spec": spec})  # fmt: skip


@pytest.fixture
def teams(cluster: Cluster, namespace: str, operator_swap, tmp_path) -> Iterator[str]:
    name = f"fs{uuid.uuid4().hex[:4]}"
    names: list[str] = []
    config = tmp_path / "kueue-config.yaml"
    config.write_text(
        json.dumps(
            {
                "apiVersion": "config.kueue.x-k8s.io/v1beta2",
                "kind": "Configuration",
                "fairSharing": {
                    "preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
                },
            }
        )
    )
    try:
        _kueue_objects(cluster, name)
        racks = {f"{name}-b1-r1": 2, f"{name}-b1-r2": 2, f"{name}-b2-r1": 2, f"{name}-b2-r2": 2}
        add_racks(cluster, racks, "1", GROUP, names)
        operator_swap(extra=("--kueue-config", str(config)))
        for team in ("a", "b"):
            cluster.apply(jobs.local_queue(f"lq-{team}", f"{name}-{team}"), namespace)
        yield name
    finally:
        for node in names:
            cluster.kubectl("delete", "node", node, "--wait=false", check=False)


def _hosts(wl: dict) -> set[str]:
    return set(jobs.assignment_counts(wl))


def _admitted(cluster: Cluster, namespace: str, names: list[str]) -> dict[str, dict]:
    out = {}
    for job in names:
        wl = jobs.workload_of(cluster, namespace, job)
        admitted = jobs.condition(wl, "Admitted")
        if wl and admitted and admitted["status"] == "True":
            out[job] = wl
    return out


def _settled(cluster: Cluster, name: str) -> dict | None:
    """Each team's reserved cpu and status.fairSharing, once they are 2 and 6."""
    usage = {}
    for team in ("a", "b"):
        status = cluster.get_json("clusterqueue", f"{name}-{team}").get("status", {})
        total = status.get("flavorsReservation", [{}])[0].get("resources", [{}])[0]
        usage[team] = (total.get("total"), status.get("fairSharing"))
    return usage if usage["a"][0] == "2" and usage["b"][0] == "6" else None


def _fill(cluster: Cluster, namespace: str, names: list[str]) -> dict[str, dict]:
    """Team a's one-pod Jobs, once all are admitted."""
    for job in names:
        cluster.apply(jobs.job(job, "lq-a", pods=1, cpu="1", annotations=IN_A_BLOCK), namespace)
    return wait_for(
        lambda: (lambda got: got if len(got) == len(names) else None)(
            _admitted(cluster, namespace, names)
        ),
        timeout=40,
        what=f"team a's {names} admitted",
    )


def _reserved_second(wl: dict) -> float:
    stamp = jobs.condition(wl, "QuotaReserved")["lastTransitionTime"]
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def test_weights_1_and_3_converge_to_a_1_to_3_split(cluster: Cluster, namespace: str, teams):
    # Kueue orders preemption candidates by admission time, in whole seconds, then by uid. The
    # second half of team a is admitted a second after the first, so that the victims come a
    # block at a time, most recent first: with every time equal, two victims from different
    # blocks would leave no block with room for a gang, and the strategies would stop there.
    a_jobs = [f"a{i}" for i in range(8)]
    first = _fill(cluster, namespace, a_jobs[:4])
    boundary = max(_reserved_second(wl) for wl in first.values()) + 1
    wait_for(lambda: time.time() >= boundary + 0.1, timeout=5, what="the next second")
    first |= _fill(cluster, namespace, a_jobs[4:])
    hosts_of_a = {job: _hosts(wl) for job, wl in first.items()}
    labels = jobs.node_labels(cluster)
    for half in (a_jobs[:4], a_jobs[4:]):  # the solver packs a block before it opens another
        assert len({labels[h][BLOCK] for job in half for h in hosts_of_a[job]}) == 1, hosts_of_a

    # The stream: team b's gangs and more of team a's Jobs, interleaved.
    b_jobs = [f"b{i}" for i in range(4)]
    for i, job in enumerate(b_jobs):
        cluster.apply(jobs.job(job, "lq-b", pods=2, cpu="1", annotations=IN_A_BLOCK), namespace)
        cluster.apply(
            jobs.job(f"a-late{i}", "lq-a", pods=1, cpu="1", annotations=IN_A_BLOCK), namespace
        )
    admitted_b = wait_for(
        lambda: (lambda got: got if len(got) == 3 else None)(_admitted(cluster, namespace, b_jobs)),
        timeout=40,
        what="team b reaches its share",
    )
    b_hosts: set[str] = set()
    for wl in admitted_b.values():
        hosts = _hosts(wl)
        assert len({labels[h][BLOCK] for h in hosts}) == 1, hosts  # the gang in one block
        b_hosts |= hosts

    usage = wait_for(
        lambda: _settled(cluster, teams), timeout=20, what="ClusterQueue statuses at 2 and 6 cpu"
    )
    # Equal shares: 2/8 over weight 1 and 6/8 over weight 3, in thousandths.
    assert usage == {"a": ("2", {"weightedShare": 250}), "b": ("6", {"weightedShare": 250})}

    victims = {}
    for job in a_jobs:
        wl = jobs.workload_of(cluster, namespace, job)
        preempted = jobs.condition(wl, "Preempted")
        if preempted and preempted["status"] == "True":
            victims[job] = preempted
    assert len(victims) == 6, sorted(victims)
    assert {c["reason"] for c in victims.values()} == {"InCohortFairSharing"}
    assert all("due to Fair Sharing within the cohort" in c["message"] for c in victims.values())
    # Every victim freed a host where a preemptor landed: none was taken in vain.
    freed = set().union(*(hosts_of_a[job] for job in victims))
    assert freed == b_hosts
    # Team a, now at its share, preempts nobody; team b's fourth gang waits.
    assert "b3" not in _admitted(cluster, namespace, b_jobs)
    late = _admitted(cluster, namespace, [f"a-late{i}" for i in range(4)])
    assert late == {}
    counts = Counter(jobs.condition(jobs.workload_of(cluster, namespace, j), "Preempted") is None
                     for j in a_jobs)  # fmt: skip
    assert counts[True] == 2
