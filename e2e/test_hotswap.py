"""Hot swap end to end: a node fails under a running rack-required Job; the operator finds a
replacement inside the rack, or evicts and requeues the Job when there is none.

These tests use their own Topology, ResourceFlavor (node-group `hotswap`), ClusterQueue and
nodes, so the other tests' capacity is untouched.
"""

from __future__ import annotations

import json
import time
import urllib.request
import uuid
from collections.abc import Iterator

import pytest

from e2e import jobs, topology
from e2e.harness import Cluster, wait_for

pytestmark = pytest.mark.e2e

GROUP = "hotswap"
REQUIRED_RACK = {jobs.PREFIX + "podset-required-topology": topology.RACK_LABEL}
NOT_READY = "node-not-ready.stage.kwok.x-k8s.io"


def install_hotswap_queue(
    cluster: Cluster, name: str = "hotswap", group: str = GROUP, quota: dict | None = None
) -> str:
    """A Topology, ResourceFlavor (node-group `group`) and ClusterQueue, all named `name`,
    with `quota` (default: 1000 cpu)."""
    kueue = "kueue.x-k8s.io/v1beta1"
    levels = [{"nodeLabel": label} for label in topology.LEVELS]
    cluster.apply(
        {
            "apiVersion": kueue,
            "kind": "Topology",
            "metadata": {"name": name},
            "spec": {"levels": levels},
        }
    )
    flavor_spec = {"nodeLabels": {topology.NODE_GROUP_LABEL: group}, "topologyName": name}
    cluster.apply(
        {
            "apiVersion": kueue,
            "kind": "ResourceFlavor",
            "metadata": {"name": name},
            "spec": flavor_spec,
        }
    )
    quota = quota or {"cpu": 1000}
    resources = [{"name": r, "nominalQuota": q} for r, q in quota.items()]
    groups = [
        {"coveredResources": list(quota), "flavors": [{"name": name, "resources": resources}]}
    ]
    cq_spec = {"namespaceSelector": {}, "resourceGroups": groups}
    cluster.apply(
        {"apiVersion": kueue, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": cq_spec}
    )
    return name


def make_rack(cluster: Cluster, block: str, hosts: int = 3) -> list[str]:
    """A rack of `hosts` nodes of 4 cpu in block `block` (node-group `hotswap`), made Ready."""
    rack = f"{block}-r1"
    names = [f"{rack}-h{h}" for h in range(1, hosts + 1)]
    for name in names:
        node = topology.node_manifest(
            name, block, rack, {"cpu": "4", "memory": "16Gi", "pods": "110"}
        )
        node["metadata"]["labels"][topology.NODE_GROUP_LABEL] = GROUP
        cluster.apply(node)
    wait_for(lambda: all(ready(cluster, n) for n in names), timeout=120, what="rack nodes Ready")
    return names


@pytest.fixture(scope="module")
def hotswap_queue(cluster: Cluster, operator) -> str:
    return install_hotswap_queue(cluster)


@pytest.fixture
def rack_nodes(cluster: Cluster) -> Iterator[callable]:
    """Make `racks` x `hosts` nodes of 4 cpu in a block of their own; removed afterwards."""
    made: list[str] = []

    def make(racks: int, hosts: int) -> dict[str, list[str]]:
        block = f"hs{uuid.uuid4().hex[:5]}"
        out: dict[str, list[str]] = {}
        for r in range(1, racks + 1):
            rack = f"{block}-r{r}"
            for h in range(1, hosts + 1):
                name = f"{rack}-h{h}"
                manifest = topology.node_manifest(
                    name, block, rack, {"cpu": "4", "memory": "16Gi", "pods": "110"}
                )
                manifest["metadata"]["labels"][topology.NODE_GROUP_LABEL] = GROUP
                cluster.apply(manifest)
                out.setdefault(rack, []).append(name)
                made.append(name)
        wait_for(
            lambda: all(ready(cluster, n) for n in made), timeout=90, what="hot swap nodes Ready"
        )
        return out

    yield make
    for name in made:
        cluster.kubectl("delete", "node", name, "--wait=false", check=False)


def add_racks(
    cluster: Cluster, racks: dict[str, int], cpu: str, group: str, names: list[str]
) -> None:
    """Nodes `<rack>-h<i>` for each rack `<block>-<r>` and its host count, of `cpu` each, in
    node-group `group`, waited Ready; each name is added to `names` as it is made (the caller
    deletes them, also when this fails half way)."""
    for rack, hosts in racks.items():
        for h in range(1, hosts + 1):
            name = f"{rack}-h{h}"
            manifest = topology.node_manifest(
                name, rack.rsplit("-", 1)[0], rack, {"cpu": cpu, "memory": "8Gi", "pods": "110"}
            )
            manifest["metadata"]["labels"][topology.NODE_GROUP_LABEL] = group
            cluster.apply(manifest)
            names.append(name)
    wait_for(lambda: all(ready(cluster, n) for n in names), timeout=60, what="nodes Ready")


def ready(cluster: Cluster, node: str) -> bool:
    n = cluster.get_json("node", node)
    ok = any(
        c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions", [])
    )
    return ok and not any(
        t["key"] == "node.kubernetes.io/not-ready" for t in n["spec"].get("taints", [])
    )


@pytest.fixture
def queue(cluster: Cluster, namespace: str, hotswap_queue: str) -> str:
    cluster.apply(
        jobs.local_queue("q", hotswap_queue),
        namespace,
    )
    return "q"


def running_on(cluster: Cluster, namespace: str, job: str, count: int, timeout: float = 120):
    pods = jobs.wait_running(cluster, namespace, job, count, timeout=timeout)
    return jobs.placement(pods)


def wait_placement(cluster: Cluster, namespace: str, job: str, expected, timeout: float = 180):
    """Running pods (not terminating) exactly as expected; stale pods of a dead node may linger
    as Running until the pod garbage collector removes them."""

    def matches():
        pods = [
            p
            for p in jobs.pods_of(cluster, namespace, job)
            if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
        ]
        placed = jobs.placement(pods)
        return placed if placed == expected else None

    return wait_for(matches, timeout=timeout, what=f"pods of {job} running as {dict(expected)}")


def start_rack_job(cluster, namespace, queue, pods: int, name: str = "train"):
    cluster.apply(jobs.job(name, queue, pods=pods, cpu="2", annotations=REQUIRED_RACK), namespace)
    jobs.wait_admitted(cluster, namespace, name)
    return running_on(cluster, namespace, name, pods)


def test_not_ready_node_is_replaced_by_a_spare_in_the_same_rack(
    cluster: Cluster, operator, namespace, queue, rack_nodes
):
    racks = rack_nodes(racks=1, hosts=3)
    rack_hosts = next(iter(racks.values()))
    before = start_rack_job(cluster, namespace, queue, pods=4)
    assert len(before) == 2  # BestFit packs two full nodes, leaving the third spare
    failed = sorted(before)[0]
    spare = next(h for h in rack_hosts if h not in before)
    t0 = time.monotonic()
    cluster.kubectl("label", "node", failed, f"{NOT_READY}=true")

    def replaced():
        wl = jobs.workload_of(cluster, namespace, "train")
        counts = jobs.assignment_counts(wl)
        return counts if failed not in counts and not wl["status"].get("unhealthyNodes") else None

    counts = wait_for(replaced, timeout=120, what="the assignment to drop the failed node")
    assert counts[spare] == 2 and sum(counts.values()) == 4
    wait_placement(cluster, namespace, "train", counts, timeout=120)
    print(f"\nhot swap: node failure -> replacement pods Running in {time.monotonic() - t0:.1f}s")
    wl = jobs.workload_of(cluster, namespace, "train")
    assert (jobs.condition(wl, "Evicted") or {}).get("status") != "True"
    key = f"{namespace}/{wl['metadata']['name']}"
    wait_for(
        lambda: (key, failed, spare) in viewed_replacements(operator.view_url),
        timeout=30,
        what="the topology view to show the replacement",
    )


def viewed_replacements(view_url: str) -> set[tuple[str, str, str]]:
    with urllib.request.urlopen(f"{view_url}model.json", timeout=10) as response:
        view = json.load(response)
    return {(r["workload"], r["failed"], r["replacement"]) for r in view["replacements"]}


def was_evicted(cluster: Cluster, namespace: str) -> dict | None:
    """The Evicted condition, while it holds (NodeFailures) or after the workload was admitted
    again (False, "Previously: ..." as Kueue writes it): re-admission may be that quick."""
    cond = jobs.condition(jobs.workload_of(cluster, namespace, "train"), "Evicted")
    if cond and (cond["reason"] == "NodeFailures" or cond["message"].startswith("Previously: ")):
        return cond
    return None


def test_no_spare_in_the_rack_evicts_and_the_job_runs_elsewhere(
    cluster: Cluster, namespace, queue, rack_nodes
):
    racks = rack_nodes(racks=2, hosts=3)
    first = start_rack_job(cluster, namespace, queue, pods=6)  # a whole rack
    (rack_of_first,) = {r for r, hs in racks.items() if set(first) <= set(hs)}
    cluster.kubectl("label", "node", sorted(first)[0], f"{NOT_READY}=true")

    cond = wait_for(lambda: was_evicted(cluster, namespace), timeout=120, what="eviction")
    assert sorted(first)[0] in cond["message"]
    assert "no replacement for unhealthy node(s)" in cond["message"]
    admitted = jobs.wait_admitted(cluster, namespace, "train", timeout=120)
    other_rack = next(r for r in racks if r != rack_of_first)
    assert set(jobs.assignment_counts(admitted)) == set(racks[other_rack])
    wait_placement(cluster, namespace, "train", jobs.assignment_counts(admitted), timeout=120)


def test_deleted_node_is_replaced(cluster: Cluster, namespace, queue, rack_nodes):
    racks = rack_nodes(racks=1, hosts=3)
    before = start_rack_job(cluster, namespace, queue, pods=4)
    failed = sorted(before)[0]
    spare = next(h for h in next(iter(racks.values())) if h not in before)
    left = [
        p["metadata"]["name"]
        for p in jobs.pods_of(cluster, namespace, "train")
        if p["spec"].get("nodeName") == failed
    ]
    cluster.kubectl("delete", "node", failed)
    counts = wait_for(
        lambda: (
            (c := jobs.assignment_counts(jobs.workload_of(cluster, namespace, "train"))).get(spare)
            and c
        ),
        timeout=60,
        what="replacement onto the spare node",
    )
    assert failed not in counts
    wait_placement(cluster, namespace, "train", counts, timeout=180)
    # The pods left on the deleted node were removed by the operator (the pod garbage
    # collector, which would do it after its quarantine, records no event).
    assert left
    for name in left:
        assert "NodeDeleted" in {e["reason"] for e in jobs.events_of(cluster, namespace, name)}


def test_untolerated_no_execute_taint_is_replaced(cluster: Cluster, namespace, queue, rack_nodes):
    racks = rack_nodes(racks=1, hosts=3)
    before = start_rack_job(cluster, namespace, queue, pods=4)
    failed = sorted(before)[0]
    spare = next(h for h in next(iter(racks.values())) if h not in before)
    cluster.kubectl("taint", "node", failed, "maintenance=now:NoExecute")
    counts = wait_for(
        lambda: (
            (c := jobs.assignment_counts(jobs.workload_of(cluster, namespace, "train"))).get(spare)
            and c
        ),
        timeout=90,
        what="replacement onto the spare node",
    )
    wait_placement(cluster, namespace, "train", counts, timeout=120)


def test_a_node_that_recovers_before_replacement_leaves_the_list(
    cluster: Cluster, namespace, queue, rack_nodes, operator_swap
):
    operator_swap(gates="TASFailedNodeReplacementFailFast=false")
    rack_nodes(racks=1, hosts=3)
    before = start_rack_job(cluster, namespace, queue, pods=6)  # the whole rack: no spare
    failed = sorted(before)[0]
    cluster.kubectl("label", "node", failed, f"{NOT_READY}=true")
    wait_for(
        lambda: (
            [
                n["name"]
                for n in jobs.workload_of(cluster, namespace, "train")["status"].get(
                    "unhealthyNodes", []
                )
            ]
            == [failed]
        ),
        timeout=120,
        what="the node listed as unhealthy",
    )
    cluster.kubectl("label", "node", failed, f"{NOT_READY}-")
    wait_for(
        lambda: not jobs.workload_of(cluster, namespace, "train")["status"].get("unhealthyNodes"),
        timeout=90,
        what="the recovered node taken off the list",
    )
    wl = jobs.workload_of(cluster, namespace, "train")
    assert (jobs.condition(wl, "Evicted") or {}).get("status") != "True"
    wait_placement(cluster, namespace, "train", before, timeout=120)  # back where they were


def test_a_second_failed_node_evicts_as_in_kueue(
    cluster: Cluster, namespace, queue, rack_nodes, operator_swap
):
    # Without fail-fast the first node stays listed while there is no spare; the second evicts.
    operator_swap(gates="TASFailedNodeReplacementFailFast=false")
    rack_nodes(racks=1, hosts=4)
    before = start_rack_job(cluster, namespace, queue, pods=8)  # the whole rack
    first, second = sorted(before)[:2]
    cluster.kubectl("label", "node", first, f"{NOT_READY}=true")
    wait_for(
        lambda: jobs.workload_of(cluster, namespace, "train")["status"].get("unhealthyNodes"),
        timeout=120,
        what="the first node listed as unhealthy",
    )
    cluster.kubectl("label", "node", second, f"{NOT_READY}=true")

    cond = wait_for(
        lambda: was_evicted(cluster, namespace), timeout=150, what="eviction on the second failure"
    )
    assert "multiple TAS assigned node failures" in cond["message"] and second in cond["message"]
    wait_for(
        lambda: cluster.get_json("job", "-n", namespace, "train")["spec"].get("suspend") is True,
        timeout=60,
        what="the Job suspended",
    )


def test_two_failed_nodes_are_both_replaced_with_the_new_gate(
    cluster: Cluster, namespace, queue, rack_nodes, operator_swap
):
    # As Kueue's TASReplaceMultipleFailedNodes: the Workload tolerates as many unhealthy nodes
    # at once as its eviction threshold says (default 1), and they are replaced one by one.
    operator_swap(gates="TASMultipleNodeReplacement=true")
    racks = rack_nodes(racks=1, hosts=4)
    before = start_rack_job(cluster, namespace, queue, pods=4)
    spares = [h for h in next(iter(racks.values())) if h not in before]
    name = jobs.workload_of(cluster, namespace, "train")["metadata"]["name"]
    threshold = "kueue.x-k8s.io/tas-unhealthy-nodes-eviction-threshold=2"
    cluster.kubectl("annotate", "workload", name, "-n", namespace, threshold)
    for node in sorted(before):
        cluster.kubectl("label", "node", node, f"{NOT_READY}=true")

    def both_replaced():
        counts = jobs.assignment_counts(jobs.workload_of(cluster, namespace, "train"))
        return counts if set(counts) == set(spares) else None

    counts = wait_for(both_replaced, timeout=150, what="both nodes replaced")
    wait_placement(cluster, namespace, "train", counts, timeout=120)
    wl = jobs.workload_of(cluster, namespace, "train")
    assert (jobs.condition(wl, "Evicted") or {}).get("status") != "True"


def test_a_failed_node_beyond_the_eviction_threshold_evicts_with_the_new_gate(
    cluster: Cluster, namespace, queue, rack_nodes, operator_swap
):
    # The default threshold (1): the first failed node stays listed while there is no spare
    # (fail-fast waits within the threshold), the second evicts, as without the gate.
    operator_swap(gates="TASMultipleNodeReplacement=true")
    rack_nodes(racks=1, hosts=4)
    before = start_rack_job(cluster, namespace, queue, pods=8)  # the whole rack: no spare
    first, second = sorted(before)[:2]
    cluster.kubectl("label", "node", first, f"{NOT_READY}=true")
    wait_for(
        lambda: jobs.workload_of(cluster, namespace, "train")["status"].get("unhealthyNodes"),
        timeout=120,
        what="the first node listed as unhealthy",
    )
    time.sleep(5)  # time enough for a fail-fast eviction, if there were to be one
    wl = jobs.workload_of(cluster, namespace, "train")
    assert (jobs.condition(wl, "Evicted") or {}).get("status") != "True"
    cluster.kubectl("label", "node", second, f"{NOT_READY}=true")
    cond = wait_for(
        lambda: was_evicted(cluster, namespace), timeout=150, what="eviction on the second failure"
    )
    assert "multiple TAS assigned node failures" in cond["message"] and second in cond["message"]
