"""Kueue's current API on the real cluster: Kueue's TAS documentation (v1beta2) applied unchanged,
every kind written in one version and read in the other through the conversion webhook, and
the operator's own reads and writes in v1beta2, the stored version."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from e2e import jobs
from e2e.harness import ROOT, Cluster, wait_for
from e2e.topology import BLOCK_LABEL, HOSTNAME_LABEL, RACK_LABEL
from tas.api.topologyassignment import from_v1beta2

pytestmark = pytest.mark.e2e

DOCS = ROOT / "examples" / "kueue-tas" / "v1beta2"
V1BETA1, V1BETA2 = "kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta2"
INDEX_LABEL = "batch.kubernetes.io/job-completion-index"


def versioned(plural: str, version: str) -> str:
    return f"{plural}.{version.rsplit('/', 1)[1]}.kueue.x-k8s.io"


def slots_v1beta2(workload: dict) -> list[str]:
    """The host of each rank, decoded from the compact v1beta2 assignment."""
    (ps,) = workload["status"]["admission"]["podSetAssignments"]
    assignment = from_v1beta2(ps["topologyAssignment"])
    assert assignment.levels == (HOSTNAME_LABEL,)
    return [d.values[0] for d in assignment.domains for _ in range(d.count)]


def slots_v1beta1(workload: dict) -> list[str]:
    (ps,) = workload["status"]["admission"]["podSetAssignments"]
    return [d["values"][0] for d in ps["topologyAssignment"]["domains"] for _ in range(d["count"])]


def admitted_workload(cluster: Cluster, namespace: str, job: str, version: str) -> dict:
    def find() -> dict | None:
        for wl in cluster.get_json(versioned("workloads", version), "-n", namespace)["items"]:
            owners = wl["metadata"].get("ownerReferences") or []
            if any(o["name"] == job for o in owners) and jobs.condition(wl, "Admitted"):
                return wl if jobs.condition(wl, "Admitted")["status"] == "True" else None
        return None

    return wait_for(find, timeout=90, what=f"{job}'s Workload admitted ({version})")


@pytest.mark.parametrize(
    ("sample", "pods", "check"),
    [
        # 40 one-cpu pods cannot fit one 32-cpu block: preferred spreads over the fewest.
        ("sample-job-preferred.yaml", 40, lambda racks, blocks: len(blocks) == 2),
        ("sample-job-required.yaml", 10, lambda racks, blocks: len(racks) == 1),
        ("sample-job-unconstrained.yaml", 6, lambda racks, blocks: True),
    ],
    ids=["preferred-block", "required-rack", "unconstrained"],
)
def test_kueue_docs_in_v1beta2_apply_unchanged_and_place_every_pod(
    cluster: Cluster, operator, sample: str, pods: int, check
) -> None:
    cluster.kubectl("apply", "-f", str(DOCS / "sample-queues.yaml"))
    name = (
        cluster.kubectl("create", "-n", "default", "-o", "name", "-f", str(DOCS / sample))
        .stdout.strip()
        .split("/")[-1]
    )
    try:
        workload = admitted_workload(cluster, "default", name, V1BETA2)
        assert workload["apiVersion"] == V1BETA2
        assert workload["status"]["admission"]["clusterQueue"] == "tas-cluster-queue"
        slots = slots_v1beta2(workload)
        assert len(slots) == pods
        # The same Workload read by a v1beta1 client shows the same placement, domain by domain.
        old = cluster.get_json(versioned("workloads", V1BETA1), "-n", "default", wl_name(workload))
        assert old["apiVersion"] == V1BETA1 and slots_v1beta1(old) == slots
        running = jobs.wait_running(cluster, "default", name, pods)
        by_rank = {int(p["metadata"]["labels"][INDEX_LABEL]): p for p in running}
        assert [by_rank[i]["spec"]["nodeName"] for i in range(pods)] == slots
        racks, blocks = jobs.racks_and_blocks(cluster, set(slots))
        assert check(racks, blocks), (racks, blocks)
    finally:
        cluster.kubectl(
            "delete",
            "job",
            "-n",
            "default",
            name,
            "--cascade=foreground",
            "--wait=true",
            check=False,
        )


def wl_name(workload: dict) -> str:
    return workload["metadata"]["name"]


def test_the_operator_writes_the_stored_version_and_kueues_v1beta1_reads_it(
    cluster: Cluster, namespace: str, user_queue: str
) -> None:
    """A Job's Workload is made and admitted by the operator in v1beta2; a v1beta1 read shows
    v1beta1's fields (domains, priorityClassName and priorityClassSource)."""
    cluster.apply(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": f"{namespace}-high"},
            "value": 1000,
        }
    )
    job = jobs.job(
        "prio",
        user_queue,
        pods=2,
        annotations={jobs.PREFIX + "podset-required-topology": RACK_LABEL},
    )
    job["spec"]["template"]["spec"]["priorityClassName"] = f"{namespace}-high"
    cluster.apply(job, namespace)
    try:
        new = admitted_workload(cluster, namespace, "prio", V1BETA2)
        assert new["spec"]["priorityClassRef"] == {
            "group": "scheduling.k8s.io",
            "kind": "PriorityClass",
            "name": f"{namespace}-high",
        }
        old = cluster.get_json(versioned("workloads", V1BETA1), "-n", namespace, wl_name(new))
        assert old["spec"]["priorityClassName"] == f"{namespace}-high"
        assert old["spec"]["priorityClassSource"] == "scheduling.k8s.io/priorityclass"
        assert "priorityClassRef" not in old["spec"]
        assert slots_v1beta1(old) == slots_v1beta2(new)
    finally:
        cluster.kubectl("delete", "priorityclass", f"{namespace}-high", check=False)


KINDS = {
    "topologies": "Topology",
    "resourceflavors": "ResourceFlavor",
    "cohorts": "Cohort",
    "workloadpriorityclasses": "WorkloadPriorityClass",
    "clusterqueues": "ClusterQueue",
    "localqueues": "LocalQueue",
}


def kind_cases(namespace: str) -> list[tuple[str, dict, dict, dict]]:
    """(plural, v1beta1 body, fields read in v1beta2, fields read back in v1beta1)."""
    tag = namespace[-8:]
    cohort = f"co-{tag}"
    return [
        (
            "topologies",
            {"metadata": {"name": f"t-{tag}"}, "spec": {"levels": [{"nodeLabel": BLOCK_LABEL}]}},
            {"spec.levels": [{"nodeLabel": BLOCK_LABEL}]},
            {"spec.levels": [{"nodeLabel": BLOCK_LABEL}]},
        ),
        (
            "resourceflavors",
            {"metadata": {"name": f"f-{tag}"}, "spec": {"nodeLabels": {"x": "y"}}},
            {"spec.nodeLabels": {"x": "y"}},
            {"spec.nodeLabels": {"x": "y"}},
        ),
        (
            "cohorts",
            {"metadata": {"name": cohort}, "spec": {"parentName": f"root-{tag}"}},
            {"spec.parentName": f"root-{tag}"},
            {"spec.parentName": f"root-{tag}"},
        ),
        (
            "workloadpriorityclasses",
            {"metadata": {"name": f"p-{tag}"}, "value": 10},
            {"value": 10},
            {"value": 10},
        ),
        (
            "clusterqueues",
            {
                "metadata": {"name": f"cq-{tag}"},
                "spec": {"cohort": cohort, "flavorFungibility": {"whenCanBorrow": "Borrow"}},
            },
            # v1beta2's names, and the deprecated Borrow as Kueue stores it (its meaning).
            {"spec.cohortName": cohort, "spec.flavorFungibility.whenCanBorrow": "MayStopSearch"},
            {"spec.cohort": cohort, "spec.flavorFungibility.whenCanBorrow": "MayStopSearch"},
        ),
        (
            "localqueues",
            {
                "metadata": {"name": f"lq-{tag}", "namespace": namespace},
                "spec": {"clusterQueue": f"cq-{tag}"},
            },
            {"spec.clusterQueue": f"cq-{tag}"},
            {"spec.clusterQueue": f"cq-{tag}"},
        ),
    ]


def test_every_kind_written_in_one_version_reads_back_in_the_other(
    cluster: Cluster, namespace: str
) -> None:
    cases = kind_cases(namespace)
    try:
        for plural, body, in_v1beta2, in_v1beta1 in cases:
            cluster.apply({"apiVersion": V1BETA1, "kind": KINDS[plural], **body})
            args = ["-n", namespace] if "namespace" in body["metadata"] else []
            name = body["metadata"]["name"]
            new = cluster.get_json(versioned(plural, V1BETA2), *args, name)
            assert new["apiVersion"] == V1BETA2
            assert {p: dig(new, p) for p in in_v1beta2} == in_v1beta2, plural
            # Written again in v1beta2 (a label), read again in v1beta1: nothing lost.
            cluster.kubectl("label", versioned(plural, V1BETA2), *args, name, "seen=yes")
            old = cluster.get_json(versioned(plural, V1BETA1), *args, name)
            assert old["apiVersion"] == V1BETA1 and old["metadata"]["labels"]["seen"] == "yes"
            assert {p: dig(old, p) for p in in_v1beta1} == in_v1beta1, plural
            assert "cohortName" not in old.get("spec", {})
    finally:
        for plural, body, _, _ in reversed(cases):
            args = ["-n", namespace] if "namespace" in body["metadata"] else []
            cluster.kubectl(
                "delete", versioned(plural, V1BETA2), *args, body["metadata"]["name"], check=False
            )


def dig(obj: dict, path: str):
    for part in path.split("."):
        obj = obj[part]
    return obj


def test_examples_are_kueues_v1beta2_documents() -> None:
    """The documents under examples/kueue-tas/v1beta2 are v1beta2 throughout (a check that the
    copy kept Kueue's apiVersion)."""
    for path in Path(DOCS).glob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc["apiVersion"].startswith("kueue.x-k8s.io"):
                assert doc["apiVersion"] == V1BETA2, path.name


# A featureGates list as a Kueue v0.17 install carries it (its chart's managerConfig): speed and
# non-TAS gates we accept without effect, beside the TAS ones we implement.
KUEUE_INSTALL_GATES = (
    "TopologyAwareScheduling=true,LocalQueueMetrics=true,HierarchicalCohorts=true,"
    "TASCacheTopologyTree=true,TASCachingRemainingResources=true,VectorizedResourceRequests=true,"
    "MultiKueue=true,PartialAdmission=true,VisibilityOnDemand=true,TASProfileMixed=true,"
    "TASFailedNodeReplacement=true,TASBalancedPlacement=false,AdmissionFairSharing=true,"
    "ElasticJobsViaWorkloadSlices=false,ManagedJobsNamespaceSelectorAlwaysRespected=true"
)


def test_the_operator_starts_with_a_kueue_installs_feature_gates(
    cluster: Cluster, namespace: str, user_queue: str, operator_swap
) -> None:
    swapped = operator_swap(gates=KUEUE_INSTALL_GATES)
    log = swapped.log()
    assert "feature gate MultiKueue=true accepted, no effect here" in log
    assert "feature gate TASCacheTopologyTree=true accepted, no effect here" in log
    cluster.apply(jobs.job("gated", user_queue, pods=2), namespace)
    jobs.wait_admitted(cluster, namespace, "gated")
