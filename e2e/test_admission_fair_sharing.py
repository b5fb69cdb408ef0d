"""Admission fair sharing end to end, on Kueue's documented example
(site/static/examples/admission-fs/ of kubernetes-sigs/kueue v0.17): two LocalQueues of weight 1
on one StrictFIFO ClusterQueue of 9 cpu with the usage-based admission scope, and Jobs of 3 cpu.

LocalQueue lq-a fills the queue first; its usage, sampled every second with a 10 s half life,
shows in its status. Then one more lq-a Job and three lq-b Jobs wait (the lq-a one is older).
When lq-a's running Jobs go, the three lq-b Jobs are admitted before the older lq-a one: the
queue that used more waits (without admission fair sharing the older lq-a Job would go first).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import yaml

from e2e import chart, jobs
from e2e.harness import Cluster, wait_for
from tas.api.quantity import parse_quantity

pytestmark = pytest.mark.e2e

# Kueue's admission-fair-sharing-setup.yaml, verbatim but for the names (a test's own
# ClusterQueue and flavor; the LocalQueues go to the test's namespace).
SETUP = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: "afs-default-flavor"
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: "afs-cluster-queue"
spec:
  namespaceSelector: {} # match all.
  queueingStrategy: "StrictFIFO"
  admissionScope:
    admissionMode: "UsageBasedAdmissionFairSharing"
  resourceGroups:
  - coveredResources: ["cpu"]
    flavors:
    - name: "afs-default-flavor"
      resources:
      - name: "cpu"
        nominalQuota: 9
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: "lq-a"
spec:
  clusterQueue: "afs-cluster-queue"
  fairSharing:
    weight: "1"
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: "lq-b"
spec:
  clusterQueue: "afs-cluster-queue"
  fairSharing:
    weight: "1"
"""

# Kueue's lq-{a,b}-simple-job.yaml, with a name for generateName.
SIMPLE_JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  labels:
    kueue.x-k8s.io/queue-name: {queue}
spec:
  parallelism: 1
  template:
    spec:
      containers:
      - name: dummy-job
        image: alpine
        command: ["/bin/sleep", "infinity"]
        resources:
          requests:
            cpu: 3
      restartPolicy: Never
"""

KUEUE_CONFIG = {
    "apiVersion": "config.kueue.x-k8s.io/v1beta2",
    "kind": "Configuration",
    "admissionFairSharing": {"usageHalfLifeTime": "10s", "usageSamplingInterval": "1s"},
}


@pytest.fixture
def fair_operator(cluster: Cluster, operator_swap):
    path = Path(tempfile.mkdtemp(prefix="afs-")) / "kueue-config.yaml"
    path.write_text(yaml.safe_dump(KUEUE_CONFIG))
    proc = operator_swap(gates=chart.deployment_gates(cluster), extra=("--kueue-config", str(path)))
    cluster.apply(SETUP.split("---\n")[0])
    cluster.apply(SETUP.split("---\n")[1])
    yield proc
    cluster.kubectl("delete", "clusterqueue", "afs-cluster-queue", "--wait=false", check=False)


def submit(cluster: Cluster, namespace: str, name: str, queue: str) -> None:
    cluster.apply(SIMPLE_JOB.format(name=name, queue=queue), namespace)


def admitted(cluster: Cluster, namespace: str, name: str) -> bool:
    c = jobs.condition(jobs.workload_of(cluster, namespace, name), "Admitted")
    return bool(c and c["status"] == "True")


def fair_status(cluster: Cluster, namespace: str, queue: str) -> dict:
    lq = cluster.get_json("localqueues.v1beta2.kueue.x-k8s.io", "-n", namespace, queue)
    fair = (lq.get("status") or {}).get("fairSharing") or {}
    return fair.get("admissionFairSharingStatus") or {}


def consumed_cpu(cluster: Cluster, namespace: str, queue: str) -> str | None:
    return (fair_status(cluster, namespace, queue).get("consumedResources") or {}).get("cpu")


def test_the_queue_that_used_less_is_admitted_first(
    cluster: Cluster, namespace: str, fair_operator
):
    for doc in SETUP.split("---\n")[2:]:
        cluster.apply(doc, namespace)
    for name in ("a1", "a2", "a3"):
        submit(cluster, namespace, name, "lq-a")
    for name in ("a1", "a2", "a3"):
        jobs.wait_admitted(cluster, namespace, name, timeout=30)
    # lq-a's decayed usage shows in its status; lq-b has used nothing
    wait_for(
        lambda: consumed_cpu(cluster, namespace, "lq-a") not in (None, "0"),
        timeout=15,
        what="lq-a's consumedResources",
    )
    assert consumed_cpu(cluster, namespace, "lq-b") in (None, "0")

    submit(cluster, namespace, "a4", "lq-a")  # older than the lq-b Jobs
    for name in ("b1", "b2", "b3"):
        submit(cluster, namespace, name, "lq-b")
    wait_for(
        lambda: all(jobs.workload_of(cluster, namespace, n) for n in ("a4", "b1", "b2", "b3")),
        timeout=15,
        what="the waiting Jobs' workloads",
    )
    cluster.kubectl(
        "delete", "job", "a1", "a2", "a3", "-n", namespace, "--cascade=background", "--wait=false"
    )
    wait_for(
        lambda: all(admitted(cluster, namespace, n) for n in ("b1", "b2", "b3")),
        timeout=30,
        what="lq-b's Jobs admitted",
    )
    assert not admitted(cluster, namespace, "a4")
    wait_for(
        lambda: consumed_cpu(cluster, namespace, "lq-b") not in (None, "0"),
        timeout=15,
        what="lq-b's consumedResources",
    )


def test_a_restarted_operator_goes_on_from_the_stored_usage(
    cluster: Cluster, namespace: str, fair_operator
):
    """lq-a's Jobs are gone: its live usage is 0, its stored usage is not. After a restart the
    next samples decay the stored usage (Kueue v0.17 would have started again from 0)."""
    for doc in SETUP.split("---\n")[2:]:
        cluster.apply(doc, namespace)
    for name in ("a1", "a2"):
        submit(cluster, namespace, name, "lq-a")
    for name in ("a1", "a2"):
        jobs.wait_admitted(cluster, namespace, name, timeout=30)
    wait_for(
        lambda: consumed_cpu(cluster, namespace, "lq-a") not in (None, "0"),
        timeout=15,
        what="lq-a's consumedResources",
    )
    cluster.kubectl("delete", "job", "a1", "a2", "-n", namespace, "--cascade=background")
    wait_for(
        lambda: not any(jobs.workload_of(cluster, namespace, n) for n in ("a1", "a2")),
        timeout=30,
        what="lq-a's workloads gone",
    )
    fair_operator.stop()
    before = fair_status(cluster, namespace, "lq-a")
    fair_operator.start()
    stored = before["consumedResources"]["cpu"]
    # decayed from the stored value, sampled again (a start from nothing would leave the
    # stored value as it is: the status is merged, and an empty consumedResources removes
    # nothing)
    wait_for(
        lambda: consumed_cpu(cluster, namespace, "lq-a") != stored,
        timeout=20,
        what="a sample after the restart",
    )
    after = parse_quantity(consumed_cpu(cluster, namespace, "lq-a") or "0")
    assert 0 < after < parse_quantity(stored)
