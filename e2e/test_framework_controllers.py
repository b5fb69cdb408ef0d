"""Kueue's samples for the framework kinds under their REAL controllers (built by
`e2e/build-bins.sh integrations`, run out of cluster by e2e/integrations.py): PyTorchJob
(training-operator), MPIJob (mpi-operator), RayCluster (KubeRay), TrainJob (Trainer, with the
JobSet controller) and AppWrapper (AppWrapper controller, wrapping a PyTorchJob the
training-operator runs). Each sample, unchanged but for its namespace, is admitted; the
controller makes its pods and kwok runs them; each pod is on the host its Workload's topology
assignment gives it, in rank order where the kind has a rank label; deleting the object releases
the quota.

RayJob is not here: KubeRay submits a RayJob's entrypoint through the Ray dashboard of its
RayCluster's head pod, which kwok's pods do not serve, so the RayJob never gets past
Initializing (test_ray.py plays that part).

Each round is also timed, create -> all pods Running, against a batch/v1 Job with the same
number of pods in the same session; the medians are printed (`-s`), not asserted.
`make e2e-integrations` runs these; `make test` does not.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
import yaml

from e2e import integrations, jobs
from e2e.harness import ROOT, Cluster, wait_for
from e2e.topology import HOSTNAME_LABEL

pytestmark = pytest.mark.integrations

SAMPLES = ROOT / "e2e" / "fixtures" / "kueue-examples"
CLUSTER_QUEUE = "tas-cluster-queue"
PODSET_LABEL = "kueue.x-k8s.io/podset"
WORKLOAD_ANNOTATION = "kueue.x-k8s.io/workload"
GATES = {"kueue.x-k8s.io/admission", "kueue.x-k8s.io/topology"}
REPLICA_INDEX = "training.kubeflow.org/replica-index"
JOB_INDEX = "jobset.sigs.k8s.io/job-index"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
# Rounds timed per kind (and per baseline Job); the first is also checked in full.
ROUNDS = int(os.environ.get("TAS_FRAMEWORK_ROUNDS", "3"))


@dataclass(frozen=True)
class Kind:
    sample: str  # in e2e/fixtures/kueue-examples
    resource: str  # kubectl's name for it
    controllers: tuple[str, ...]  # started in this order
    watches: tuple[str, ...]  # the operator's watches that must have picked up the CRDs
    pods: str  # label selector for its pods, `{name}` the object's name
    rank: tuple[str, ...] = ()  # labels ordering a pod set's pods (missing counts as 0)

    @property
    def text(self) -> str:
        obj = yaml.safe_load((SAMPLES / self.sample).read_text())
        obj["metadata"].pop("namespace", None)  # the PyTorchJob sample names `default`
        return yaml.safe_dump(obj)

    @property
    def name(self) -> str:
        return yaml.safe_load(self.text)["metadata"]["name"]

    @property
    def selector(self) -> str:
        return self.pods.format(name=self.name)


TRAINING = "training.kubeflow.org/job-name={name}"
KINDS = {
    "pytorchjob": Kind(
        "sample-pytorchjob.yaml", "pytorchjobs.kubeflow.org", ("training-operator",),
        ("pytorchjobs",), TRAINING, (REPLICA_INDEX,),
    ),
    "mpijob": Kind(
        "sample-mpijob.yaml", "mpijobs.kubeflow.org", ("mpi-operator",),
        ("mpijobs",), TRAINING, (REPLICA_INDEX,),
    ),
    "raycluster": Kind(
        "ray-cluster-sample.yaml", "rayclusters.ray.io", ("kuberay",),
        ("rayclusters",), "ray.io/cluster={name}",
    ),
    "trainjob": Kind(
        "sample-trainjob.yaml", "trainjobs.trainer.kubeflow.org", ("jobset", "trainer"),
        ("jobsets", "trainjobs", "clustertrainingruntimes", "trainjob-jobsets"),
        "jobset.sigs.k8s.io/jobset-name={name}", (JOB_INDEX, COMPLETION_INDEX),
    ),
    "appwrapper": Kind(
        # Its PyTorchJob is `pytorch-simple`; the AppWrapper's own label is on its pods too.
        "pytorch-sample.yaml", "appwrappers.workload.codeflare.dev",
        ("training-operator", "appwrapper"), ("appwrappers", "pytorchjobs"),
        "workload.codeflare.dev/appwrapper={name}", (REPLICA_INDEX,),
    ),
}  # fmt: skip
LATENCIES: dict[str, dict[str, list[float]]] = {}  # kind -> {"kind"|"job": seconds per round}


@pytest.fixture(scope="module")
def controllers(cluster: Cluster, operator) -> Iterator[Callable[[Kind], None]]:
    """Starts a kind's controllers once for the module (several kinds share one) and waits
    until the operator handles its CRDs; stops them all at the end."""
    started: dict[str, integrations.Controller] = {}

    def start(kind: Kind) -> None:
        for name in kind.controllers:
            if name in started:
                continue
            if not integrations.built(cluster, name):
                pytest.fail(f"the {name} controller is not built: run `make e2e-integrations`")
            started[name] = integrations.Controller(cluster, name).start()
        integrations.wait_handled(cluster, operator.log, kind.watches, {kind.sample: kind.text})

    start.started = started  # type: ignore[attr-defined]  # for the failure report
    yield start
    for controller in reversed(started.values()):
        controller.stop()
    print_latencies()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    start = item.funcargs.get("controllers")
    if report.failed and start is not None:
        for name, controller in start.started.items():
            report.sections.append((f"{name} log", controller.log()[-4000:]))


def running_pods(cluster: Cluster, namespace: str, selector: str, count: int) -> list[dict]:
    def running():
        items = cluster.get_json("pods", "-n", namespace, "-l", selector)["items"]
        live = [p for p in items if not p["metadata"].get("deletionTimestamp")]
        up = [p for p in live if p["status"].get("phase") == "Running"]
        return up if len(up) == count == len(live) else None

    return wait_for(running, timeout=180, what=f"{count} pods {selector} Running")


def admitted_workloads(cluster: Cluster) -> int:
    status = cluster.get_json("clusterqueue", CLUSTER_QUEUE).get("status") or {}
    return status.get("admittedWorkloads", 0)


def assert_placed_in_rank_order(workload: dict, pods: list[dict], rank: tuple[str, ...]) -> None:
    """Each pod set's pods, ordered by the kind's rank labels, fill its assignment's domains in
    order (as many per host where the kind has no rank); each pod pinned there and ungated."""
    for ps in workload["status"]["admission"]["podSetAssignments"]:
        ta = ps["topologyAssignment"]
        assert ta["levels"] == [HOSTNAME_LABEL], ta["levels"]
        slots = [d["values"][0] for d in ta["domains"] for _ in range(d["count"])]
        mine = [p for p in pods if p["metadata"]["labels"].get(PODSET_LABEL) == ps["name"]]
        mine.sort(key=lambda p: tuple(int(p["metadata"]["labels"].get(k, 0)) for k in rank))
        hosts = [p["spec"]["nodeName"] for p in mine]
        if rank:
            assert hosts == slots, f"pod set {ps['name']}: {hosts} != {slots}"
        else:
            assert sorted(hosts) == sorted(slots), f"pod set {ps['name']}: {hosts} != {slots}"
        for p in mine:
            assert p["spec"]["nodeSelector"][HOSTNAME_LABEL] == p["spec"]["nodeName"]
            assert not {g["name"] for g in p["spec"].get("schedulingGates") or []} & GATES
            assert p["metadata"]["annotations"][WORKLOAD_ANNOTATION] == workload["metadata"]["name"]
    assert len(pods) == sum(ps["count"] for ps in workload["spec"]["podSets"])


def delete_and_wait_released(cluster: Cluster, namespace: str, resource: str, name: str) -> None:
    """Deleting the object deletes its Workload and frees its quota; its pods go."""
    before = admitted_workloads(cluster)
    cluster.kubectl("delete", resource, "-n", namespace, name, "--wait=false")
    wait_for(
        lambda: jobs.workload_of(cluster, namespace, name) is None,
        timeout=90,
        what=f"the workload of {name} deleted",
    )
    wait_for(lambda: admitted_workloads(cluster) < before, timeout=60, what="the quota released")


def wait_pods_gone(cluster: Cluster, namespace: str, selector: str) -> None:
    wait_for(
        lambda: not cluster.get_json("pods", "-n", namespace, "-l", selector)["items"],
        timeout=120,
        what=f"pods {selector} gone",
    )


def run_sample(cluster: Cluster, namespace: str, kind: Kind, check: bool) -> tuple[float, int]:
    """One round: create, admitted, all pods Running (timed), checked if `check`, deleted;
    the time and the number of pods."""
    t0 = time.monotonic()
    cluster.kubectl("create", "-n", namespace, "-f", "-", input=kind.text)
    wl = jobs.wait_admitted(cluster, namespace, kind.name, timeout=120)
    count = sum(ps["count"] for ps in wl["spec"]["podSets"])
    pods = running_pods(cluster, namespace, kind.selector, count)
    elapsed = time.monotonic() - t0
    if check:
        assert_placed_in_rank_order(wl, pods, kind.rank)
    delete_and_wait_released(cluster, namespace, kind.resource, kind.name)
    wait_pods_gone(cluster, namespace, kind.selector)
    return elapsed, count


def run_job(cluster: Cluster, namespace: str, name: str, pods: int) -> float:
    """The baseline: a queued batch/v1 Job of `pods` 1-cpu pods, create -> all Running."""
    t0 = time.monotonic()
    cluster.apply(jobs.job(name, "user-queue", pods=pods), namespace)
    running = jobs.wait_running(cluster, namespace, name, pods, timeout=180)
    elapsed = time.monotonic() - t0
    assert all(p["spec"]["nodeName"] for p in running)
    delete_and_wait_released(cluster, namespace, "job", name)
    wait_pods_gone(cluster, namespace, f"job-name={name}")
    return elapsed


def print_latencies() -> None:
    print("\ncreate -> all pods Running, median of rounds (s): kind vs batch/v1 Job, same pods")
    for kind, times in LATENCIES.items():
        k, j = times.get("kind", []), times.get("job", [])
        if k and j:
            print(
                f"  {kind:11} {statistics.median(k):6.2f}  vs Job {statistics.median(j):6.2f}"
                f"   (rounds {[round(t, 2) for t in k]} / {[round(t, 2) for t in j]})"
            )


@pytest.mark.parametrize("kind", list(KINDS.values()), ids=list(KINDS))
def test_kueues_sample_runs_where_assigned_under_its_real_controller(
    cluster: Cluster, namespace: str, user_queue: str, controllers, kind: Kind
):
    controllers(kind)
    times = LATENCIES.setdefault(kind.sample.removesuffix(".yaml"), {"kind": [], "job": []})
    rounds = [run_sample(cluster, namespace, kind, check=r == 0) for r in range(ROUNDS)]
    times["kind"] += [elapsed for elapsed, _ in rounds]
    pods = rounds[0][1]
    times["job"] += [run_job(cluster, namespace, f"baseline-{r}", pods) for r in range(ROUNDS)]
