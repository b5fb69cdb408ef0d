"""Kueue's own kubectl plugin, kueuectl (built from Kueue's release, v1beta2 clients), against our
operator: it lists our Workloads, ClusterQueues and LocalQueues, and `stop` / `resume
workload` (spec.active) evict a running Job's Workload and admit it again."""

from __future__ import annotations

import subprocess

import pytest

from e2e import jobs
from e2e.harness import ROOT, Cluster, wait_for
from e2e.topology import RACK_LABEL

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="session")
def kueuectl() -> str:
    """Built once into the cache (about 2-5 min cold), like the control plane's binaries."""
    out = subprocess.run(
        ["bash", str(ROOT / "e2e" / "build-kueue.sh"), "kueuectl"],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip().splitlines()[-1]


def run(cluster: Cluster, kueuectl: str, *args: str) -> str:
    out = subprocess.run(
        [kueuectl, f"--kubeconfig={cluster.kubeconfig}", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, f"kubectl kueue {' '.join(args)}: {out.stderr}"
    return out.stdout


def rows(table: str) -> list[list[str]]:
    return [line.split() for line in table.strip().splitlines()[1:]]


def test_kueuectl_lists_our_objects(
    cluster: Cluster, namespace: str, user_queue: str, kueuectl: str
) -> None:
    cluster.apply(jobs.job("listed", user_queue, pods=2), namespace)
    workload = jobs.wait_admitted(cluster, namespace, "listed")
    name = workload["metadata"]["name"]
    listed = rows(run(cluster, kueuectl, "list", "workload", "-n", namespace))
    (row,) = [r for r in listed if r[0] == name]
    # NAME, JOB TYPE, JOB NAME, LOCALQUEUE, CLUSTERQUEUE, STATUS, ...
    assert row[1:6] == ["job", "listed", user_queue, "tas-cluster-queue", "ADMITTED"]
    queues = rows(run(cluster, kueuectl, "list", "clusterqueue"))
    assert "tas-cluster-queue" in {r[0] for r in queues}
    local = rows(run(cluster, kueuectl, "list", "localqueue", "-n", namespace))
    assert [r[0:2] for r in local] == [[user_queue, "tas-cluster-queue"]]


def test_kueuectl_stop_and_resume_a_workload(
    cluster: Cluster, namespace: str, user_queue: str, kueuectl: str
) -> None:
    annotations = {jobs.PREFIX + "podset-required-topology": RACK_LABEL}
    cluster.apply(jobs.job("paused", user_queue, pods=3, annotations=annotations), namespace)
    name = jobs.wait_admitted(cluster, namespace, "paused")["metadata"]["name"]
    jobs.wait_running(cluster, namespace, "paused", 3)

    run(cluster, kueuectl, "stop", "workload", name, "-n", namespace)
    stopped = wait_for(
        lambda: (
            (c := jobs.condition(jobs.workload_of(cluster, namespace, "paused"), "Requeued"))
            and c["status"] == "False"
            and c
        ),
        timeout=90,
        what="the stopped workload released (Requeued=False)",
    )
    assert stopped["reason"] == "Deactivated"
    wl = jobs.workload_of(cluster, namespace, "paused")
    assert jobs.condition(wl, "Evicted")["reason"] == "Deactivated"
    assert jobs.condition(wl, "QuotaReserved")["status"] == "False"
    assert cluster.get_json("job", "-n", namespace, "paused")["spec"]["suspend"] is True
    wait_for(lambda: not jobs.pods_of(cluster, namespace, "paused"), timeout=90, what="pods gone")

    run(cluster, kueuectl, "resume", "workload", name, "-n", namespace)
    workload = jobs.wait_admitted(cluster, namespace, "paused", timeout=90)
    assert jobs.condition(workload, "Requeued")["reason"] == "Reactivated"
    jobs.wait_running(cluster, namespace, "paused", 3)
