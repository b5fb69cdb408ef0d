"""A TrainJob (Kubeflow Trainer v2.2.0) and an AppWrapper (v1.2.0) with only their CRDs installed:
Kueue's samples are suspended at creation, get a Workload with Kueue's pod sets, are admitted and
started, and their pods land where the assignment says, in rank order. The test plays the
controllers' part: for a TrainJob, the Trainer's JobSet (controlled by the TrainJob, built from
the runtime and the runtime patches) and, as the JobSet controller would, its Jobs and pods; for
an AppWrapper, the wrapped PyTorchJob (its podSetInfos merged, as the AppWrapper controller
does) and its pods, as the training operator makes them.

The CRDs (and the Trainer's default torch-distributed runtime) are those `build-bins.sh manifests`
copies into the binary cache, at the versions of e2e/versions.env."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from e2e import integrations, jobs, perkind
from e2e.harness import Cluster, wait_for
from e2e.perkind import hotswap_lq, preempting_queue  # noqa: F401 (fixtures)
from e2e.test_hotswap import rack_nodes  # noqa: F401 (fixture)
from e2e.test_integrations import (
    assert_on_assigned_hosts,
    create,
    pods,
    wait_admitted,
    wait_running,
    workload,
    workload_owned_by,
)
from e2e.topology import RACK_LABEL
from tas.integrations.trainjob.runtime import child_replicated_jobs

pytestmark = pytest.mark.e2e

EXAMPLES = Path(__file__).parent / "fixtures" / "kueue-examples"
TRAINJOB_SAMPLE = (EXAMPLES / "sample-trainjob.yaml").read_text()
APPWRAPPER_SAMPLE = (EXAMPLES / "pytorch-sample.yaml").read_text()
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
JOB_INDEX = "jobset.sigs.k8s.io/job-index"
REPLICA_INDEX = "training.kubeflow.org/replica-index"
APPWRAPPER_LABEL = "workload.codeflare.dev/appwrapper"


def runtime_file(cluster: Cluster) -> Path:
    """The Trainer's default torch-distributed ClusterTrainingRuntime."""
    return integrations.directory(cluster, "trainer") / "extra" / "torch_distributed.yaml"


@pytest.fixture(scope="module")
def crds(cluster: Cluster, operator) -> None:
    """The CRDs alone (no Trainer, AppWrapper or training operator), the Trainer's default
    runtime, and the operator handling them with its webhooks answering."""
    # Copied by `build-bins.sh manifests`, at the versions of e2e/versions.env.
    for controller in ("jobset", "trainer", "appwrapper", "training-operator"):
        integrations.install_crds(cluster, controller)
    cluster.kubectl("apply", "-f", str(runtime_file(cluster)))
    integrations.wait_handled(  # the TrainJob's webhook also needs its runtime cached
        cluster,
        operator.log,
        ("trainjobs", "clustertrainingruntimes", "appwrappers", "trainjob-jobsets"),
        {"TrainJob": TRAINJOB_SAMPLE, "AppWrapper": APPWRAPPER_SAMPLE},
    )


def pod(name: str, template: dict, owner: dict, labels: dict) -> dict:
    meta = template.get("metadata") or {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {**(meta.get("labels") or {}), **labels},
            "annotations": dict(meta.get("annotations") or {}),
            "ownerReferences": [integrations.controller_ref(owner)],
        },
        "spec": {"restartPolicy": "Never", **copy.deepcopy(template["spec"])},
    }


def created(cluster: Cluster, namespace: str, manifest: dict) -> dict:
    out = cluster.kubectl("create", "-n", namespace, "-o", "json", "-f", "-",
                          input=json.dumps(manifest))  # fmt: skip
    return json.loads(out.stdout)


def wait_started(cluster: Cluster, resource: str, namespace: str, name: str) -> dict:
    def started():
        obj = cluster.get_json(resource, "-n", namespace, name)
        return obj if obj["spec"].get("suspend") is False else None

    return wait_for(started, timeout=90, what=f"{resource} {name} started")


def in_rank_order(assignment: dict, running: list[dict]) -> bool:
    """The i-th pod by rank on the i-th slot of the assignment."""
    domains = assignment["topologyAssignment"]["domains"]
    slots = [d["values"][0] for d in domains for _ in range(d["count"])]
    return [p["spec"]["nodeName"] for p in running] == slots


def wait_deleted(cluster: Cluster, namespace: str, name: str) -> None:
    wait_for(
        lambda: workload(cluster, namespace, name) is None, timeout=90, what="workload deleted"
    )


def waits_with(cluster: Cluster, namespace: str, owner: str, text: str) -> None:
    def pending():
        wl = workload_owned_by(cluster, namespace, owner)
        c = jobs.condition(wl, "QuotaReserved")
        if not (c and c["status"] == "False" and text in c["message"]):
            raise AssertionError((wl or {}).get("status"))  # shown when it gives up
        return c

    wait_for(pending, timeout=60, what=f"pending: {text}")


# ---- TrainJob ----------------------------------------------------------------------------------


def trainjob(nodes: int | None = None, cpu: str = "1", required: str | None = None) -> str:
    """Kueue's sample; or with `nodes` of `cpu` each, the trainer's pods in one `required`
    domain (a runtime patch of the user's)."""
    tj = yaml.safe_load(TRAINJOB_SAMPLE)
    if nodes is not None:
        tj["metadata"]["name"] = f"trainjob-{nodes}"
        tj["spec"]["trainer"]["numNodes"] = nodes
        for r in ("requests", "limits"):
            tj["spec"]["trainer"]["resourcesPerNode"][r]["cpu"] = cpu
    if required:
        template = {"metadata": {"annotations": {REQUIRED: required}}}
        rjob = {"name": "node", "template": {"spec": {"template": template}}}
        patch = {"template": {"spec": {"replicatedJobs": [rjob]}}}
        tj["spec"]["runtimePatches"] = [{"manager": "e2e", "trainingRuntimeSpec": patch}]
    return yaml.safe_dump(tj)


def play_trainer(cluster: Cluster, namespace: str, tj: dict) -> list[str]:
    """The JobSet the Trainer makes (controlled by the TrainJob, labelled by Kueue's runtime
    patch), and its Jobs and pods as the JobSet controller makes them; the pods' names by rank."""
    runtime = yaml.safe_load(runtime_file(cluster).read_text())
    name = tj["metadata"]["name"]
    kueue = next(p for p in tj["spec"]["runtimePatches"] if p["manager"].startswith("kueue"))
    rjobs = child_replicated_jobs(tj, runtime)
    for rjob in rjobs:  # as JobSet's webhook defaults it
        rjob["template"]["spec"]["template"]["spec"].setdefault("restartPolicy", "OnFailure")
    jobset = created(cluster, namespace, {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": name,
            "labels": kueue["trainingRuntimeSpec"]["template"]["metadata"]["labels"],
            "ownerReferences": [integrations.controller_ref(tj)],
        },
        "spec": {"replicatedJobs": rjobs},
    })  # fmt: skip
    names = []
    for rjob in rjobs:
        for j in range(rjob.get("replicas", 1)):
            job_name = f"{name}-{rjob['name']}-{j}"
            job_spec = copy.deepcopy(rjob["template"]["spec"])
            job_spec.update(completionMode="Indexed", suspend=True)  # nothing else makes pods
            job = created(cluster, namespace, {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {
                    "name": job_name,
                    "labels": {"jobset.sigs.k8s.io/jobset-name": name, JOB_INDEX: str(j)},
                    "ownerReferences": [integrations.controller_ref(jobset)],
                },
                "spec": job_spec,
            })  # fmt: skip
            for i in range(job_spec["parallelism"]):
                labels = {COMPLETION_INDEX: str(i), JOB_INDEX: str(j)}
                pod_name = f"{job_name}-{i}"
                template = job_spec["template"]
                created(cluster, namespace, pod(pod_name, template, job, labels))
                names.append(pod_name)
    return names


@pytest.mark.parametrize(
    ("manifest", "count"),
    [(TRAINJOB_SAMPLE, 1), (trainjob(4, "3", RACK_LABEL), 4)],
    ids=["kueue-sample", "four-nodes-in-a-rack"],
)
def test_a_trainjob_is_admitted_and_its_pods_land_where_assigned_in_rank_order(
    cluster: Cluster, namespace: str, user_queue: str, crds, manifest: str, count: int
):
    tj = created(cluster, namespace, yaml.safe_load(manifest))
    name = tj["metadata"]["name"]
    assert tj["spec"]["suspend"] is True  # suspended at creation, Kueue's runtime patch added
    assert any(p["manager"] == "kueue.x-k8s.io/manager" for p in tj["spec"]["runtimePatches"])
    wl = wait_admitted(cluster, namespace, lambda: workload_owned_by(cluster, namespace, name),
                       "the TrainJob's workload")  # fmt: skip
    [ps] = wl["spec"]["podSets"]
    assert (ps["name"], ps["count"]) == ("node", count)
    assert ps["topologyRequest"]["podIndexLabel"] == COMPLETION_INDEX
    assert ps["topologyRequest"]["subGroupIndexLabel"] == JOB_INDEX
    tj = wait_started(cluster, "trainjob", namespace, name)
    running = wait_running(cluster, namespace, play_trainer(cluster, namespace, tj))
    assert_on_assigned_hosts(wl, running)
    [assignment] = wl["status"]["admission"]["podSetAssignments"]
    assert in_rank_order(assignment, running)
    if count > 1:
        racks = {jobs.node_labels(cluster)[p["spec"]["nodeName"]][RACK_LABEL] for p in running}
        assert len(racks) == 1
    cluster.kubectl("delete", "trainjob", "-n", namespace, name, "--wait=false")
    wait_deleted(cluster, namespace, wl["metadata"]["name"])  # the quota is released


def test_a_trainjob_whose_rack_cannot_hold_it_waits_with_kueues_message(
    cluster: Cluster, namespace: str, user_queue: str, crds
):
    [name] = create(cluster, namespace, trainjob(5, "3", RACK_LABEL))  # a rack holds 4
    waits_with(cluster, namespace, name, "allows to fit only 4 out of 5 pod(s)")
    assert cluster.get_json("trainjob", "-n", namespace, name)["spec"]["suspend"] is True
    assert not cluster.get_json("jobsets", "-n", namespace)["items"]


# ---- AppWrapper --------------------------------------------------------------------------------


def appwrapper(workers: int | None = None, cpu: str = "1", required: str | None = None) -> str:
    aw = yaml.safe_load(APPWRAPPER_SAMPLE)
    worker = aw["spec"]["components"][0]["template"]["spec"]["pytorchReplicaSpecs"]["Worker"]
    if workers is not None:
        aw["metadata"]["name"] = f"appwrapper-{workers}"
        worker["replicas"] = workers
        worker["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu
    if required:
        worker["template"].setdefault("metadata", {})["annotations"] = {REQUIRED: required}
    return yaml.safe_dump(aw)


def with_info(template: dict, info: dict) -> dict:
    """A pod template with a podSetInfo merged, as the AppWrapper controller merges it."""
    out = copy.deepcopy(template)
    meta = out.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), **(info.get("labels") or {})}
    meta["annotations"] = {**(meta.get("annotations") or {}), **(info.get("annotations") or {})}
    spec = out["spec"]
    spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **(info.get("nodeSelector") or {})}
    for field in ("tolerations", "schedulingGates"):
        spec[field] = [*(spec.get(field) or []), *(info.get(field) or [])]
    return out


def play_appwrapper(cluster: Cluster, namespace: str, aw: dict) -> list[str]:
    """The wrapped PyTorchJob (controlled by the AppWrapper, labelled with its name, its pod
    sets' infos merged) and its pods as the training operator makes them; names by rank."""
    [component] = aw["spec"]["components"]
    wrapped = copy.deepcopy(component["template"])
    specs = wrapped["spec"]["pytorchReplicaSpecs"]
    for replica_type, info in zip(("Master", "Worker"), component["podSetInfos"], strict=True):
        specs[replica_type]["template"] = with_info(specs[replica_type]["template"], info)
    wrapped["metadata"].update(
        labels={APPWRAPPER_LABEL: aw["metadata"]["name"]},
        ownerReferences=[integrations.controller_ref(aw)],
    )
    job = created(cluster, namespace, wrapped)
    names = []
    for replica_type in ("Master", "Worker"):
        for i in range(specs[replica_type]["replicas"]):
            labels = {
                "training.kubeflow.org/job-name": job["metadata"]["name"],
                "training.kubeflow.org/replica-type": replica_type.lower(),
                REPLICA_INDEX: str(i),
            }
            pod_name = f"{job['metadata']['name']}-{replica_type.lower()}-{i}"
            template = specs[replica_type]["template"]
            created(cluster, namespace, pod(pod_name, template, job, labels))
            names.append(pod_name)
    return names


@pytest.mark.parametrize(
    ("manifest", "workers"),
    [(APPWRAPPER_SAMPLE, 1), (appwrapper(3, "2", RACK_LABEL), 3)],
    ids=["kueue-sample", "three-workers-in-a-rack"],
)
def test_an_appwrapper_is_admitted_and_its_pods_land_where_assigned_in_rank_order(
    cluster: Cluster, namespace: str, user_queue: str, crds, manifest: str, workers: int
):
    aw = created(cluster, namespace, yaml.safe_load(manifest))
    name = aw["metadata"]["name"]
    assert aw["spec"]["suspend"] is True  # suspended at creation
    wl = wait_admitted(cluster, namespace, lambda: workload_owned_by(cluster, namespace, name),
                       "the AppWrapper's workload")  # fmt: skip
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [
        (f"{name}-0", 1),
        (f"{name}-1", workers),
    ]
    assert {ps["topologyRequest"]["podIndexLabel"] for ps in wl["spec"]["podSets"]} == {
        REPLICA_INDEX
    }
    aw = wait_started(cluster, "appwrapper", namespace, name)
    running = wait_running(cluster, namespace, play_appwrapper(cluster, namespace, aw))
    assert_on_assigned_hosts(wl, running)
    assignments = wl["status"]["admission"]["podSetAssignments"]
    assert in_rank_order(assignments[0], running[:1])
    assert in_rank_order(assignments[1], running[1:])
    if workers > 1:
        racks = {jobs.node_labels(cluster)[p["spec"]["nodeName"]][RACK_LABEL] for p in running[1:]}
        assert len(racks) == 1
    cluster.kubectl("delete", "appwrapper", "-n", namespace, name, "--wait=false")
    wait_deleted(cluster, namespace, wl["metadata"]["name"])  # the quota is released


def test_an_appwrapper_whose_rack_cannot_hold_it_waits_with_kueues_message(
    cluster: Cluster, namespace: str, user_queue: str, crds
):
    [name] = create(cluster, namespace, appwrapper(3, "7", RACK_LABEL))  # one per host, 2 a rack
    waits_with(cluster, namespace, name, "allows to fit only 2 out of 3 pod(s)")
    assert cluster.get_json("appwrapper", "-n", namespace, name)["spec"]["suspend"] is True
    assert not pods(cluster, namespace)


# ---- preemption and hot swap -------------------------------------------------------------------

# TrainJob and AppWrapper stop through spec.suspend and share the reconciler and the ungater:
# the AppWrapper stands for them (e2e/perkind.py).


def wrapped_templates(aw: dict) -> list[dict]:
    [component] = aw["spec"]["components"]
    return [s["template"] for s in component["template"]["spec"]["pytorchReplicaSpecs"].values()]


PLAYED = {
    "appwrapper": (
        APPWRAPPER_SAMPLE,
        perkind.Played(
            "appwrapper",
            templates=wrapped_templates,
            suspended=lambda obj: obj["spec"].get("suspend") is True,
            run=play_appwrapper,
            started_part=lambda obj: obj["spec"]["components"],  # its podSetInfos
        ),
    ),
}


@pytest.mark.parametrize("kind", list(PLAYED))
def test_a_preempted_wrapper_is_suspended_with_its_pod_sets_restored_and_requeued(
    cluster: Cluster,
    namespace: str,
    preempting_queue: str,  # noqa: F811 (the fixture)
    crds,
    kind: str,
):
    manifest, played = PLAYED[kind]
    perkind.check_preempted_and_requeued(
        cluster, namespace, preempting_queue, played, yaml.safe_load(manifest)
    )


@pytest.mark.parametrize("kind", list(PLAYED))
def test_a_failed_node_under_a_wrapper_is_replaced_by_a_spare_in_its_rack(
    cluster: Cluster,
    namespace: str,
    hotswap_lq: str,  # noqa: F811 (the fixture)
    rack_nodes,  # noqa: F811 (the fixture)
    crds,
    kind: str,
):
    [rack] = rack_nodes(racks=1, hosts=3).values()
    manifest, played = PLAYED[kind]
    perkind.check_failed_node_replaced(
        cluster, namespace, hotswap_lq, played, yaml.safe_load(manifest), rack
    )
