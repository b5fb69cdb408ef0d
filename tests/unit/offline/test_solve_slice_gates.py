"""`tas solve examples/scenarios/partial-slices.yaml`: with TASPartialSlices and
TASGroupedPodSetSlicing on (the scenario's featureGates), a LeaderWorkerSet group's leader
joins its partial slice of workers, and a Job's partial slice takes the other rack; without the
gates the same document is refused, naming the annotation."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import yaml

from tests.unit.offline.test_solve import run, solved

EXAMPLE = Path(__file__).parents[3] / "examples" / "scenarios" / "partial-slices.yaml"


def rack_of(host: str) -> str:
    return host.rsplit("-", 1)[0]  # b1-r2-h3 -> b1-r2


def pods_per_rack(podset: dict) -> Counter:
    counts: Counter = Counter()
    for domain in podset["topologyAssignment"]["domains"]:
        counts[rack_of(domain["values"][0])] += domain["count"]
    return counts


def test_the_example_places_partial_slices_with_the_gates_on(tmp_path) -> None:
    by_name = {w["name"]: w for w in solved(tmp_path, EXAMPLE.read_text())}
    assert by_name["lws"]["admitted"] and by_name["eval"]["admitted"]
    leader, workers = by_name["lws"]["podSets"]
    [leader_domain] = leader["topologyAssignment"]["domains"]
    leader_rack = rack_of(leader_domain["values"][0])
    racks = pods_per_rack(workers)
    assert sorted(racks.values()) == [3, 4, 4, 4]
    assert racks[leader_rack] == 3  # the leader and the partial slice share a rack
    assert sorted(pods_per_rack(by_name["eval"]["podSets"][0]).values()) == [2, 4]


def test_the_example_is_refused_with_the_gates_off(tmp_path) -> None:
    document = yaml.safe_load(EXAMPLE.read_text())
    del document["featureGates"]
    result = run(tmp_path, document)
    assert result.returncode != 0
    assert result.stderr.strip() == (
        'workloads[0].podSets[1].annotations["kueue.x-k8s.io/podset-group-name"]: "lws" may '
        'not be set together with "kueue.x-k8s.io/podset-slice-size"'
    )


def test_the_example_is_admitted_through_cluster_queues_under_its_gates(tmp_path) -> None:
    """With clusterQueues the admission decision checks the group again: it must read the
    scenario's gates too, not the command's defaults."""
    document = yaml.safe_load(EXAMPLE.read_text())
    document["clusterQueues"] = [{"name": "cq", "nominalQuota": {"cpu": "100"}}]
    by_name = {w["name"]: w for w in solved(tmp_path, document)}
    assert by_name["lws"]["admitted"], by_name["lws"]
    assert by_name["eval"]["admitted"], by_name["eval"]
