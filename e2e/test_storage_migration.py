"""Upgrades that change the stored version, on a cluster of their own (they replace the CRDs):

- `helm upgrade` from the previous chart, whose CRDs stored v1beta1;
- installing where Kueue ran (v0.15, then v0.17) and was uninstalled, whose CRDs keep
  `storedVersions: [v1beta1, v1beta2]`.

Either way the operator's conversion webhook serves the old objects at once, the leader
rewrites every object in v1beta2 and trims `storedVersions` (checked in etcd itself, where
each object's JSON names the version it is stored in), nothing is lost, and admission goes on.
At the end v1beta1 is removed from a CRD, as Kueue v0.20 does: every object still reads.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from e2e import chart, jobs, topology
from e2e.harness import (
    ROOT,
    Cluster,
    cluster_env,
    local_cluster,
    stop_local_cluster,
    wait_for,
)
from e2e.operator_process import OperatorProcess
from tas.api import kinds

pytestmark = pytest.mark.e2e

API_PORT, ETCD_PORT = 21443, 17379
PREVIOUS_CHART = ROOT / "e2e" / "fixtures" / "tas-operator-0.1.0.tgz"  # stored v1beta1
# Our CRDs and the version each stores.
OURS = {k.crd_name: k.version for k in kinds.ALL}
V1BETA1, V1BETA2 = "kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta2"
HOST1 = topology.node_name(1, 1, 1)


@pytest.fixture(scope="module")
def own_cluster() -> Iterator[Cluster]:
    env = cluster_env(ROOT / ".cluster" / "migration", API_PORT, ETCD_PORT)
    stop_local_cluster(env)  # always a fresh cluster
    cluster = local_cluster(env)
    cluster.apply(topology.node_list(topology.Shape(blocks=2, racks=2, hosts=2)))
    yield cluster
    stop_local_cluster(env)


def stored_api_version(resource: str, name: str, namespace: str | None = None) -> str:
    """The apiVersion of an object as etcd holds it (etcd's JSON gateway)."""
    key = "/".join(
        ["/registry/kueue.x-k8s.io", resource, *([namespace] if namespace else []), name]
    )
    body = json.dumps({"key": base64.b64encode(key.encode()).decode()}).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{ETCD_PORT}/v3/kv/range", body, {"Content-Type": "application/json"}
    )
    (kv,) = json.loads(urllib.request.urlopen(request, timeout=10).read())["kvs"]
    return json.loads(base64.b64decode(kv["value"]))["apiVersion"]


def stored_versions(cluster: Cluster, crd: str) -> list[str]:
    return cluster.get_json("crd", crd)["status"]["storedVersions"]


def helm(cluster: Cluster, *args: str) -> None:
    chart.helm(cluster, *args, "-n", chart.NAMESPACE, *chart.host_values(cluster))


def remove_ours(cluster: Cluster) -> None:
    """No release and none of our CRDs (deleting a CRD deletes its objects)."""
    cluster.kubectl("delete", "namespace", chart.NAMESPACE, "--wait=true", check=False)
    subprocess.run(
        [
            cluster.tool("helm"),
            f"--kubeconfig={cluster.kubeconfig}",
            "uninstall",
            chart.RELEASE,
            "-n",
            chart.NAMESPACE,
        ],
        capture_output=True,
        timeout=120,
    )
    for crd in OURS:
        cluster.kubectl("delete", "crd", crd, "--ignore-not-found", "--wait=true")


def old_objects(namespace: str) -> list[dict]:
    """What a v1beta1 user and the previous operator wrote: the queues (a cohort and
    Kueue's deprecated Borrow among them), a priority class, and an admitted Workload that
    holds host b1-r1-h1 whole."""
    admitted = {
        "apiVersion": V1BETA1,
        "kind": "Workload",
        "metadata": {"name": "held", "namespace": namespace},
        "spec": {
            "queueName": "tas-user-queue",
            "priority": 5,
            "priorityClassName": "old-class",
            "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass",
            "podSets": [
                {
                    "name": "main",
                    "count": 8,
                    "template": {
                        "spec": {
                            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]
                        }
                    },
                }
            ],
        },
    }
    return [
        {
            "apiVersion": V1BETA1,
            "kind": "Topology",
            "metadata": {"name": "default"},
            "spec": {"levels": [{"nodeLabel": label} for label in topology.LEVELS]},
        },
        yaml.safe_load((ROOT / "examples" / "kueue-tas" / "resource-flavor.yaml").read_text()),
        {
            "apiVersion": V1BETA1,
            "kind": "ClusterQueue",
            "metadata": {"name": "tas-cluster-queue"},
            "spec": {
                "namespaceSelector": {},
                "cohort": "team",
                "flavorFungibility": {"whenCanBorrow": "Borrow"},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory"],
                        "flavors": [
                            {
                                "name": "tas-flavor",
                                "resources": [
                                    {"name": "cpu", "nominalQuota": 100},
                                    {"name": "memory", "nominalQuota": "100Gi"},
                                ],
                            }
                        ],
                    }
                ],
            },
        },
        {"apiVersion": V1BETA1, "kind": "Cohort", "metadata": {"name": "team"}, "spec": {}},
        {
            "apiVersion": V1BETA1,
            "kind": "WorkloadPriorityClass",
            "metadata": {"name": "old-class"},
            "value": 5,
        },
        {
            **jobs.local_queue("tas-user-queue", "tas-cluster-queue"),
            "metadata": {"name": "tas-user-queue", "namespace": namespace},
        },
        admitted,
    ]


ADMITTED_STATUS = {
    "conditions": [
        {
            "type": "QuotaReserved",
            "status": "True",
            "reason": "QuotaReserved",
            "message": "Quota reserved in ClusterQueue tas-cluster-queue",
            "lastTransitionTime": "2026-11-20T10:00:00Z",
        },
        {
            "type": "Admitted",
            "status": "True",
            "reason": "Admitted",
            "message": "The workload is admitted",
            "lastTransitionTime": "2026-11-20T10:00:00Z",
        },
    ],
    "admission": {
        "clusterQueue": "tas-cluster-queue",
        "podSetAssignments": [
            {
                "name": "main",
                "flavors": {"cpu": "tas-flavor"},
                "resourceUsage": {"cpu": "8"},
                "count": 8,
                "topologyAssignment": {
                    "levels": ["kubernetes.io/hostname"],
                    "domains": [{"values": [HOST1], "count": 8}],
                },
            }
        ],
    },
}

PLURALS = {k.kind: k.plural for k in kinds.ALL}


def write_old(cluster: Cluster, namespace: str) -> list[dict]:
    objects = old_objects(namespace)
    for obj in objects:
        cluster.apply(obj)
    cluster.kubectl(
        "patch",
        "workloads.v1beta1.kueue.x-k8s.io",
        "held",
        "-n",
        namespace,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": ADMITTED_STATUS}),
    )
    return objects


def where(obj: dict) -> tuple[str, str, str | None]:
    meta = obj["metadata"]
    return PLURALS[obj["kind"]], meta["name"], meta.get("namespace")


def assert_nothing_lost(cluster: Cluster, objects: list[dict]) -> None:
    """Read in v1beta1 as written (Borrow reads as its meaning, MayStopSearch)."""
    for obj in objects:
        plural, name, namespace = where(obj)
        args = ["-n", namespace] if namespace else []
        now = cluster.get_json(f"{plural}.v1beta1.kueue.x-k8s.io", *args, name)
        expected = json.loads(
            json.dumps(obj.get("spec", {})).replace('"Borrow"', '"MayStopSearch"')
        )
        assert contained(expected, now.get("spec", {})), (plural, name, now.get("spec"))
    held = cluster.get_json(
        "workloads.v1beta1.kueue.x-k8s.io", "-n", objects[-1]["metadata"]["namespace"], "held"
    )
    assert held["status"]["admission"] == ADMITTED_STATUS["admission"]


def contained(expected: object, actual: object) -> bool:
    """Every key and value of `expected` is in `actual` (which may add the API's defaults)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and contained(v, actual[k]) for k, v in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(contained(a, b) for a, b in zip(expected, actual, strict=True))
        )
    return expected == actual


def run_operator(cluster: Cluster) -> OperatorProcess:
    proc = OperatorProcess(
        cluster,
        kubeconfig=chart.service_account_kubeconfig(cluster),
        gates=chart.deployment_gates(cluster),
    )
    proc.start(sync_timeout=180)
    return proc


def assert_migrated(cluster: Cluster, objects: list[dict]) -> None:
    for crd, version in OURS.items():
        wait_for(
            lambda c=crd, v=version: stored_versions(cluster, c) == [v],
            timeout=120,
            what=f"{crd} storedVersions trimmed",
        )
    for obj in objects:
        plural, name, namespace = where(obj)
        assert stored_api_version(plural, name, namespace) == V1BETA2, (plural, name)


def assert_admission_goes_on(cluster: Cluster, namespace: str) -> None:
    """A new Job is admitted, and not onto the host the pre-upgrade Workload holds."""
    cluster.apply(
        jobs.job(
            "after",
            "tas-user-queue",
            pods=4,
            annotations={jobs.PREFIX + "podset-required-topology": topology.RACK_LABEL},
        ),
        namespace,
    )
    workload = jobs.wait_admitted(cluster, namespace, "after", timeout=90)
    assert HOST1 not in jobs.assignment_counts(workload)


def drop_v1beta1(cluster: Cluster) -> None:
    """What Kueue v0.20 does: v1beta1 is no longer a version of the CRD. Allowed only once
    nothing is stored in it, and every object still reads."""
    crd = cluster.get_json("crd", "workloads.kueue.x-k8s.io")
    index = [v["name"] for v in crd["spec"]["versions"]].index("v1beta1")
    cluster.kubectl(
        "patch",
        "crd",
        "workloads.kueue.x-k8s.io",
        "--type=json",
        "-p",
        json.dumps([{"op": "remove", "path": f"/spec/versions/{index}"}]),
    )


def test_helm_upgrade_from_the_v1beta1_chart(own_cluster: Cluster) -> None:
    cluster = own_cluster
    remove_ours(cluster)
    helm(cluster, "install", chart.RELEASE, str(PREVIOUS_CHART), "--create-namespace")
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", *OURS)
    assert stored_versions(cluster, "workloads.kueue.x-k8s.io") == ["v1beta1"]
    namespace = cluster.create_namespace("upgrade")
    objects = write_old(cluster, namespace)
    assert stored_api_version("workloads", "held", namespace) == V1BETA1

    helm(cluster, "upgrade", chart.RELEASE, str(chart.CHART))
    operator = run_operator(cluster)
    try:
        assert_migrated(cluster, objects)
        assert_nothing_lost(cluster, objects)
        assert_admission_goes_on(cluster, namespace)
        drop_v1beta1(cluster)
        held = cluster.get_json("workloads.kueue.x-k8s.io", "-n", namespace, "held")
        assert held["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]["slices"]
    finally:
        operator.stop()


def kueue_crds(version: str) -> Path:
    out = subprocess.run(
        ["bash", str(ROOT / "e2e" / "build-kueue.sh"), "--config"],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "TAS_KUEUE_VERSION": version},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return Path(out.stdout.strip().splitlines()[-1]) / "config" / "components" / "crd" / "bases"


def test_install_where_kueue_ran(own_cluster: Cluster) -> None:
    cluster = own_cluster
    remove_ours(cluster)
    for crd in (
        "admissionchecks",
        "multikueueclusters",
        "multikueueconfigs",
        "provisioningrequestconfigs",
    ):
        cluster.kubectl("delete", "crd", f"{crd}.kueue.x-k8s.io", "--ignore-not-found")
    kinds = [
        "topologies",
        "resourceflavors",
        "clusterqueues",
        "cohorts",
        "localqueues",
        "workloadpriorityclasses",
        "workloads",
    ]
    for version in ("0.15.0", "0.17.0"):  # Kueue v0.15 stored v1beta1, v0.17 stores v1beta2
        bases = kueue_crds(version)
        for kind in kinds:
            cluster.kubectl(
                "apply",
                "--server-side",
                "--force-conflicts",
                "-f",
                str(bases / f"kueue.x-k8s.io_{kind}.yaml"),
            )
        cluster.kubectl(
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            "crd",
            *[f"{k}.kueue.x-k8s.io" for k in kinds],
        )
        if version == "0.15.0":
            namespace = cluster.create_namespace("kueue")
            objects = write_old(cluster, namespace)
    assert stored_versions(cluster, "workloads.kueue.x-k8s.io") == ["v1beta1", "v1beta2"]
    later = {
        "apiVersion": V1BETA2,
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": "new-class"},
        "value": 9,
    }
    cluster.apply(later)
    assert stored_api_version("workloadpriorityclasses", "new-class") == V1BETA2

    # Kueue is gone, its CRDs stay; our chart takes them over.
    chart.install(cluster)
    operator = run_operator(cluster)
    try:
        assert_migrated(cluster, [*objects, later])
        assert_nothing_lost(cluster, objects)
        assert_admission_goes_on(cluster, namespace)
    finally:
        operator.stop()
