"""The Kubeflow training jobs (PyTorchJob, TFJob, XGBoostJob, PaddleJob, JAXJob), MPIJob and
Deployment, end to end with Kueue's documented samples (e2e/fixtures/kueue-examples).

Only the training kinds' CRDs are installed, from the binary cache (training-operator v1.9.3,
mpi-operator v0.8.0: what Kueue v0.17.0's go.mod names): no training operator runs
here, so the test creates the pods as it would, once the job is started: from each replica
type's started template, named `<job>-<type>-<i>`, labelled with their replica index, type
and job name, controlled by the job. mpi-operator's launcher is a batch/v1 Job
`<mpijob>-launcher` (label `app: <mpijob>`) controlled by the MPIJob; the controller manager
makes its pod. Our ungater and our charge then see what they would see under the real
operators. A Deployment's pods come from the controller manager, each admitted on its own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
import yaml

from e2e import integrations, jobs, perkind
from e2e.harness import ROOT, Cluster, wait_for
from e2e.perkind import hotswap_lq, preempting_queue  # noqa: F401 (fixtures)
from e2e.test_hotswap import rack_nodes  # noqa: F401 (fixture)
from e2e.topology import HOSTNAME_LABEL, NODE_GROUP, NODE_GROUP_LABEL, RACK_LABEL

pytestmark = pytest.mark.e2e

SAMPLES = ROOT / "e2e" / "fixtures" / "kueue-examples"
TOPOLOGY_GATE = "kueue.x-k8s.io/topology"
ADMISSION_GATES = {"kueue.x-k8s.io/admission", TOPOLOGY_GATE}
REPLICA_INDEX = "training.kubeflow.org/replica-index"
CLUSTER_QUEUE = "tas-cluster-queue"


@dataclass(frozen=True)
class Kind:
    sample: str
    resource: str  # kubectl's name for it
    field: str  # spec.<field>: replica type -> {replicas, template}
    pod_sets: tuple[tuple[str, int], ...]  # Kueue's, for the sample

    @property
    def obj(self) -> dict:
        obj = yaml.safe_load((SAMPLES / self.sample).read_text())
        obj["metadata"].pop("namespace", None)  # the PyTorchJob sample names `default`
        for spec in obj["spec"][self.field].values():
            for container in spec["template"]["spec"]["containers"]:
                fractions_as_strings(container.get("resources") or {})
        return obj


def fractions_as_strings(resources: dict) -> None:
    """The XGBoostJob sample asks for `cpu: 0.5`, a YAML float, which the training operator's
    CRD refuses (a quantity there is an integer or a string): sent as the string "0.5"."""
    for amounts in resources.values():
        for name, amount in amounts.items():
            if isinstance(amount, float):
                amounts[name] = str(amount)


KINDS = {
    "pytorchjob": Kind(
        "sample-pytorchjob.yaml",
        "pytorchjobs.kubeflow.org",
        "pytorchReplicaSpecs",
        (("master", 1), ("worker", 1)),
    ),
    "tfjob": Kind(
        "sample-tfjob.yaml", "tfjobs.kubeflow.org", "tfReplicaSpecs", (("ps", 1), ("worker", 2))
    ),
    "xgboostjob": Kind(
        "sample-xgboostjob.yaml",
        "xgboostjobs.kubeflow.org",
        "xgbReplicaSpecs",
        (("master", 1), ("worker", 2)),
    ),
    "paddlejob": Kind(
        "sample-paddlejob.yaml", "paddlejobs.kubeflow.org", "paddleReplicaSpecs", (("worker", 2),)
    ),
    "jaxjob": Kind(
        "sample-jaxjob.yaml", "jaxjobs.kubeflow.org", "jaxReplicaSpecs", (("worker", 2),)
    ),
    "mpijob": Kind(
        "sample-mpijob.yaml",
        "mpijobs.kubeflow.org",
        "mpiReplicaSpecs",
        (("launcher", 1), ("worker", 2)),
    ),
}


def create(cluster: Cluster, namespace: str, obj: dict) -> None:
    cluster.kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(obj))


@pytest.fixture(scope="module")
def training_crds(cluster: Cluster, operator) -> None:
    """The CRDs alone, and the operator's handling of each kind (its watch and webhooks)."""
    # Copied by `build-bins.sh manifests` (versions in e2e/versions.env): training-operator's
    # kinds but its own v1 MPIJob, and mpi-operator's v2beta1 MPIJob (Kueue's).
    names = [
        *integrations.install_crds(cluster, "training-operator"),
        *integrations.install_crds(cluster, "mpi-operator"),
    ]
    integrations.wait_handled(
        cluster,
        operator.log,
        [name.split(".")[0] for name in names],  # a kind's watch is named after its plural
        {kind.resource: json.dumps(kind.obj) for kind in KINDS.values()},
        accepted=lambda obj: obj["spec"]["runPolicy"]["suspend"] is True,  # created suspended
    )


# ---- the training operators' part ------------------------------------------------------------


def with_labels(template: dict, labels: dict[str, str]) -> dict:
    template = json.loads(json.dumps(template))
    template.setdefault("metadata", {}).setdefault("labels", {}).update(labels)
    return template


def run_replicas(cluster: Cluster, namespace: str, obj: dict, field: str) -> None:
    """What the training operator does once the job is started: a pod per replica, from its
    type's template; an MPIJob's launcher through its launcher Job."""
    name = obj["metadata"]["name"]
    for replica_type, spec in obj["spec"][field].items():
        role = replica_type.lower()
        labels = {
            "training.kubeflow.org/job-name": name,
            "training.kubeflow.org/replica-type": role,
        }
        if obj["kind"] == "MPIJob" and replica_type == "Launcher":
            template = with_labels(spec["template"], labels)
            template["spec"]["restartPolicy"] = "OnFailure"
            meta = {"name": f"{name}-launcher", "labels": {"app": name}}
            job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta}
            job["metadata"]["ownerReferences"] = [integrations.controller_ref(obj)]
            job["spec"] = {"backoffLimit": 0, "template": template}
            create(cluster, namespace, job)
            continue
        for i in range(int(spec.get("replicas", 1))):
            template = with_labels(spec["template"], {**labels, REPLICA_INDEX: str(i)})
            meta = {**template["metadata"], "name": f"{name}-{role}-{i}"}
            meta["ownerReferences"] = [integrations.controller_ref(obj)]
            create(cluster, namespace, {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                                        "spec": template["spec"]})  # fmt: skip


def running_pods(cluster: Cluster, namespace: str, job_name: str, count: int) -> list[dict]:
    def running():
        items = cluster.get_json(
            "pods", "-n", namespace, "-l", f"training.kubeflow.org/job-name={job_name}"
        )["items"]
        up = [p for p in items if p["status"].get("phase") == "Running"]
        return up if len(up) == count else None

    return wait_for(running, timeout=90, what=f"{count} pods of {job_name} Running")


def assert_in_rank_order_where_assigned(workload: dict, pods: list[dict]) -> None:
    """Each pod set's pods, by replica index, fill its assignment's domains in order; each pod
    is pinned to its host and ungated."""
    for ps in workload["status"]["admission"]["podSetAssignments"]:
        ta = ps["topologyAssignment"]
        assert ta["levels"] == [HOSTNAME_LABEL]
        slots = [d["values"][0] for d in ta["domains"] for _ in range(d["count"])]
        mine = [p for p in pods if p["metadata"]["labels"]["kueue.x-k8s.io/podset"] == ps["name"]]
        mine.sort(key=lambda p: int(p["metadata"]["labels"].get(REPLICA_INDEX, "0")))
        assert [p["spec"]["nodeName"] for p in mine] == slots, ps["name"]
        for p in mine:
            assert p["spec"]["nodeSelector"][HOSTNAME_LABEL] == p["spec"]["nodeName"]
            assert not {g["name"] for g in p["spec"].get("schedulingGates") or []} & ADMISSION_GATES
            assert (
                p["metadata"]["annotations"]["kueue.x-k8s.io/workload"]
                == (workload["metadata"]["name"])
            )


def admitted_workloads(cluster: Cluster) -> int:
    status = cluster.get_json("clusterqueue", CLUSTER_QUEUE).get("status") or {}
    return status.get("admittedWorkloads", 0)


def too_big(kind: Kind) -> dict:
    """The sample asking its last replica type to share one rack (16 cpu) with 3 pods of 6."""
    obj = kind.obj
    obj["metadata"]["name"] += "-too-big"
    replica_type = list(obj["spec"][kind.field])[-1]
    spec = obj["spec"][kind.field][replica_type]
    spec["replicas"] = 3
    template = spec["template"]
    template.setdefault("metadata", {})["annotations"] = {
        "kueue.x-k8s.io/podset-required-topology": RACK_LABEL
    }
    for container in template["spec"]["containers"]:
        container["resources"] = {"requests": {"cpu": "6", "memory": "200Mi"}}
    return obj


@pytest.mark.parametrize("kind", list(KINDS.values()), ids=list(KINDS))
def test_kueues_sample_is_admitted_placed_in_rank_order_and_releases_its_quota(
    cluster: Cluster, namespace: str, user_queue: str, training_crds, kind: Kind
):
    obj = kind.obj
    name = obj["metadata"]["name"]
    create(cluster, namespace, obj)
    wl = jobs.wait_admitted(cluster, namespace, name, timeout=60)
    assert tuple((p["name"], p["count"]) for p in wl["spec"]["podSets"]) == kind.pod_sets

    def started_now():
        obj = cluster.get_json(kind.resource, "-n", namespace, name)
        return obj if obj["spec"]["runPolicy"]["suspend"] is False else None

    started = wait_for(started_now, timeout=30, what=f"{name} started")
    for spec in started["spec"][kind.field].values():
        template = spec["template"]
        assert template["spec"]["nodeSelector"][NODE_GROUP_LABEL] == NODE_GROUP
        assert {"name": TOPOLOGY_GATE} in template["spec"]["schedulingGates"]

    run_replicas(cluster, namespace, started, kind.field)
    pods = running_pods(cluster, namespace, name, sum(count for _, count in kind.pod_sets))
    assert_in_rank_order_where_assigned(wl, pods)

    # A required rack that no rack can hold waits, with Kueue's message, suspended.
    big = too_big(kind)
    create(cluster, namespace, big)
    pod_set = kind.pod_sets[-1][0]
    pending = jobs.wait_pending_message(
        cluster, namespace, big["metadata"]["name"], "allows to fit only", timeout=60
    )
    message = jobs.condition(pending, "QuotaReserved")["message"]
    head, _, reason = message.partition(": ")
    assert head.startswith("couldn't assign flavors to pod set ") and pod_set in head, message
    assert reason.startswith('topology "default" allows to fit only 2 out of 3 pod(s)'), message
    waiting = cluster.get_json(kind.resource, "-n", namespace, big["metadata"]["name"])
    assert waiting["spec"]["runPolicy"]["suspend"] is True

    # Deleting the object releases its quota.
    before = admitted_workloads(cluster)
    cluster.kubectl("delete", kind.resource, "-n", namespace, name, "--wait=false")
    wait_for(
        lambda: jobs.workload_of(cluster, namespace, name) is None,
        timeout=60,
        what="its workload deleted",
    )
    wait_for(lambda: admitted_workloads(cluster) < before, timeout=60, what="the quota released")


# ---- Deployment ------------------------------------------------------------------------------


def test_kueues_deployment_sample_has_each_pod_admitted_on_its_own(
    cluster: Cluster, namespace: str, user_queue: str, operator
):
    obj = yaml.safe_load((SAMPLES / "sample-deployment.yaml").read_text())
    create(cluster, namespace, obj)

    def running():
        items = cluster.get_json("pods", "-n", namespace, "-l", "app=nginx")["items"]
        up = [p for p in items if p["status"].get("phase") == "Running"]
        return up if len(up) == 3 else None

    pods = wait_for(running, timeout=90, what="the Deployment's 3 pods Running")
    names = set()
    for pod in pods:
        pod_name = pod["metadata"]["name"]
        wl = jobs.workload_of(cluster, namespace, pod_name)
        assert wl is not None and jobs.condition(wl, "Admitted")["status"] == "True"
        [ps] = wl["status"]["admission"]["podSetAssignments"]
        assert (ps["name"], ps["count"]) == ("main", 1)
        [domain] = ps["topologyAssignment"]["domains"]
        assert pod["spec"]["nodeName"] == domain["values"][0]
        assert pod["spec"]["nodeSelector"][HOSTNAME_LABEL] == pod["spec"]["nodeName"]
        assert pod["metadata"]["annotations"]["kueue.x-k8s.io/pod-suspending-parent"] == (
            "deployment"
        )
        names.add(wl["metadata"]["name"])
    assert len(names) == 3  # a Workload per pod, no group

    cluster.kubectl("delete", "deployment", "-n", namespace, "nginx-deployment")
    wait_for(
        lambda: not cluster.get_json(jobs.WORKLOADS_V1BETA1, "-n", namespace)["items"],
        timeout=90,
        what="the pods' workloads deleted",
    )


# ---- preemption and hot swap -----------------------------------------------------------------

# All six kinds stop through runPolicy.suspend and share the reconciler and the ungater: one
# stands for them (e2e/perkind.py).
UNDER_PREEMPTION_AND_HOT_SWAP = ("pytorchjob",)


def played(kind: Kind) -> perkind.Played:
    return perkind.Played(
        kind.resource,
        templates=lambda obj: [spec["template"] for spec in obj["spec"][kind.field].values()],
        suspended=lambda obj: obj["spec"]["runPolicy"].get("suspend") is True,
        run=lambda cluster, namespace, obj: run_replicas(cluster, namespace, obj, kind.field),
    )


@pytest.mark.parametrize("kind", UNDER_PREEMPTION_AND_HOT_SWAP)
def test_a_preempted_job_is_suspended_with_its_templates_restored_and_requeued(
    cluster: Cluster,
    namespace: str,
    preempting_queue: str,  # noqa: F811 (the fixture)
    training_crds,
    kind: str,
):
    kind_ = KINDS[kind]
    perkind.check_preempted_and_requeued(
        cluster, namespace, preempting_queue, played(kind_), kind_.obj
    )


@pytest.mark.parametrize("kind", UNDER_PREEMPTION_AND_HOT_SWAP)
def test_a_failed_node_under_a_job_is_replaced_by_a_spare_in_its_rack(
    cluster: Cluster,
    namespace: str,
    hotswap_lq: str,  # noqa: F811 (the fixture)
    rack_nodes,  # noqa: F811 (the fixture)
    training_crds,
    kind: str,
):
    [rack] = rack_nodes(racks=1, hosts=3).values()
    perkind.check_failed_node_replaced(
        cluster, namespace, hotswap_lq, played(KINDS[kind]), KINDS[kind].obj, rack
    )
