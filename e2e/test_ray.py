"""KubeRay's RayJob and RayCluster, with only their CRDs installed (no KubeRay controller in
`make test`): the test plays KubeRay's part. It makes what KubeRay makes once the operator
unsuspends an object: for a RayJob, the RayCluster it controls (its labels and rayClusterSpec
copied) and the submitter Job, whose pod the Job controller makes; for a RayCluster, the head
and worker pods it controls, from its started templates. Kueue's documented samples are applied
unchanged (e2e/fixtures/kueue-examples; their queue is `user-queue`)."""

from __future__ import annotations

import copy
import json
from collections import Counter

import pytest
import yaml

from e2e import integrations, jobs, perkind
from e2e.harness import ROOT, Cluster, wait_for
from e2e.perkind import hotswap_lq, preempting_queue  # noqa: F401 (fixtures)
from e2e.test_hotswap import rack_nodes  # noqa: F401 (fixture)
from e2e.topology import HOSTNAME_LABEL, RACK_LABEL

pytestmark = pytest.mark.e2e

EXAMPLES = ROOT / "e2e" / "fixtures" / "kueue-examples"
RAYJOB = (EXAMPLES / "ray-job-sample.yaml").read_text()
RAYCLUSTER = (EXAMPLES / "ray-cluster-sample.yaml").read_text()
GATES = {"kueue.x-k8s.io/admission", "kueue.x-k8s.io/topology"}
PODSET_LABEL = "kueue.x-k8s.io/podset"
FLAVOR_LABELS = {"cloud.provider.com/node-group": "tas-group"}  # the example ResourceFlavor's
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
ORIGIN = "ray.io/originated-from-crd"
CLUSTER_QUEUE = "ray-cq"


@pytest.fixture(scope="module")
def ray_crds(cluster: Cluster, operator) -> None:
    """KubeRay's CRDs (KubeRay's version in e2e/versions.env); the operator picks them up
    while running."""
    integrations.install_crds(cluster, "kuberay")  # copied by `build-bins.sh manifests`
    integrations.wait_handled(
        cluster,
        operator.log,
        ("rayjobs", "rayclusters", "rayservices"),
        {"RayJob": RAYJOB, "RayCluster": RAYCLUSTER},
    )


@pytest.fixture
def small_queue(cluster: Cluster, namespace: str, operator) -> str:
    """`user-queue` on a ClusterQueue with room for the RayJob sample (2.5 cpu) alone."""
    cluster.apply(jobs.cluster_queue(CLUSTER_QUEUE, {"cpu": 3, "memory": "20Gi"}))
    cluster.apply(jobs.local_queue("user-queue", CLUSTER_QUEUE), namespace)
    yield "user-queue"
    cluster.kubectl("delete", "rayjobs,rayclusters", "--all", "-n", namespace, check=False)
    cluster.kubectl("delete", "clusterqueue", CLUSTER_QUEUE, "--wait=false", check=False)


def create(cluster: Cluster, namespace: str, obj: dict) -> dict:
    out = cluster.kubectl("create", "-n", namespace, "-o", "json", "-f", "-", input=json.dumps(obj))
    return json.loads(out.stdout)


def get(cluster: Cluster, kind: str, namespace: str, name: str) -> dict:
    return cluster.get_json(kind, "-n", namespace, name)


def wait_admitted(cluster: Cluster, namespace: str, name: str) -> dict:
    return jobs.wait_admitted(cluster, namespace, name, timeout=60)


def assert_started(spec: dict, templates: dict[str, dict]) -> None:
    """Unsuspended, each template readied for its pod set: the flavor's node labels, the
    topology gate, the pod-set label."""
    assert spec["suspend"] is False
    for pod_set, template in templates.items():
        assert template["metadata"]["labels"][PODSET_LABEL] == pod_set
        assert template["spec"]["nodeSelector"] == FLAVOR_LABELS
        assert {"name": "kueue.x-k8s.io/topology"} in template["spec"]["schedulingGates"]


def cluster_templates(spec: dict) -> dict[str, dict]:
    out = {"head": spec["headGroupSpec"]["template"]}
    out.update({g["groupName"]: g["template"] for g in spec["workerGroupSpecs"]})
    return out


def make_ray_pods(cluster: Cluster, namespace: str, raycluster: dict) -> list[str]:
    """KubeRay's head and worker pods, controlled by the RayCluster, from its templates."""
    name = raycluster["metadata"]["name"]
    names = []
    for group, template in cluster_templates(raycluster["spec"]).items():
        replicas = 1 if group == "head" else next(
            g.get("replicas", 1) for g in raycluster["spec"]["workerGroupSpecs"]
            if g["groupName"] == group
        )  # fmt: skip
        for index in range(replicas):
            pod = copy.deepcopy(template)
            meta = pod.setdefault("metadata", {})
            meta["name"] = f"{name}-{group}-{index}"
            meta["labels"] = {
                **meta.get("labels", {}),
                "ray.io/cluster": name,
                "ray.io/group": group,
            }
            meta["ownerReferences"] = [integrations.controller_ref(raycluster)]
            create(cluster, namespace, {"apiVersion": "v1", "kind": "Pod", **pod})
            names.append(meta["name"])
    return names


def assert_on_assigned_hosts(cluster: Cluster, workload: dict, pods: list[dict]) -> None:
    """Every pod ungated, pinned to a host of its pod set's assignment, as many per host."""
    wanted = {}
    for ps in workload["status"]["admission"]["podSetAssignments"]:
        domains = ps["topologyAssignment"]["domains"]
        wanted[ps["name"]] = Counter({d["values"][-1]: d["count"] for d in domains})
    placed: dict[str, Counter] = {}
    for pod in pods:
        host = pod["spec"]["nodeName"]
        assert pod["spec"]["nodeSelector"][HOSTNAME_LABEL] == host
        assert not {g["name"] for g in pod["spec"].get("schedulingGates") or []} & GATES
        placed.setdefault(pod["metadata"]["labels"][PODSET_LABEL], Counter())[host] += 1
    assert placed == wanted


def wait_running(cluster: Cluster, namespace: str, count: int) -> list[dict]:
    def running():
        found = cluster.get_json("pods", "-n", namespace)["items"]
        ok = len(found) == count and all(p["status"].get("phase") == "Running" for p in found)
        return found if ok else None

    return wait_for(running, timeout=60, what=f"{count} pods Running")


def test_kueue_rayjob_sample_runs_where_admitted_and_frees_its_quota_when_deleted(
    cluster: Cluster, namespace: str, ray_crds, small_queue: str
):
    job = create(cluster, namespace, yaml.safe_load(RAYJOB))
    assert job["spec"]["suspend"] is True  # the webhook suspended it at creation
    workload = wait_admitted(cluster, namespace, "rayjob-sample")
    assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == [
        ("head", 1),
        ("small-group", 1),
        ("submitter", 1),  # K8sJobMode, KubeRay's default submitter
    ]
    # The RayCluster sample waits: the RayJob holds 2.5 of the queue's 3 cpu.
    create(cluster, namespace, yaml.safe_load(RAYCLUSTER))
    jobs.wait_pending_message(cluster, namespace, "raycluster-complete", "insufficient")

    def started():
        spec = get(cluster, "rayjob", namespace, "rayjob-sample")["spec"]
        return spec if spec.get("suspend") is False else None

    spec = wait_for(started, timeout=30, what="the RayJob started")
    templates = cluster_templates(spec["rayClusterSpec"])
    assert_started(spec, {**templates, "submitter": spec["submitterPodTemplate"]})

    # KubeRay's part: the RayCluster (labels copied: its queue name too) and the submitter Job.
    job = get(cluster, "rayjob", namespace, "rayjob-sample")
    labels = {**job["metadata"]["labels"], ORIGIN: "RayJob"}
    labels["ray.io/originated-from-cr-name"] = "rayjob-sample"
    raycluster = create(
        cluster,
        namespace,
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": {
                "name": "rayjob-sample-raycluster-x7k2p",
                "labels": labels,
                "ownerReferences": [integrations.controller_ref(job)],
            },
            "spec": spec["rayClusterSpec"],
        },
    )
    assert "suspend" not in raycluster["spec"]  # left to its RayJob: not suspended on its own
    pods = make_ray_pods(cluster, namespace, raycluster)
    create(
        cluster,
        namespace,
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": "rayjob-sample",
                "labels": {ORIGIN: "RayJob", "ray.io/originated-from-cr-name": "rayjob-sample"},
                "ownerReferences": [integrations.controller_ref(job)],
            },
            "spec": {"backoffLimit": 2, "template": spec["submitterPodTemplate"]},
        },
    )
    running = wait_running(cluster, namespace, len(pods) + 1)  # and the submitter's pod
    assert_on_assigned_hosts(cluster, workload, running)
    assert jobs.workload_of(cluster, namespace, raycluster["metadata"]["name"]) is None

    # Deleting the RayJob frees its quota: the RayCluster sample is admitted.
    cluster.kubectl("delete", "rayjob", "-n", namespace, "rayjob-sample")
    wait_for(
        lambda: jobs.workload_of(cluster, namespace, "rayjob-sample") is None,
        timeout=60,
        what="the RayJob's workload deleted",
    )
    wait_admitted(cluster, namespace, "raycluster-complete")


def test_kueue_raycluster_sample_runs_where_admitted(
    cluster: Cluster, namespace: str, ray_crds, user_queue: str
):
    created = create(cluster, namespace, yaml.safe_load(RAYCLUSTER))
    assert created["spec"]["suspend"] is True
    workload = wait_admitted(cluster, namespace, "raycluster-complete")
    assert workload["metadata"]["name"].startswith("raycluster-raycluster-complete-")
    assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == [
        ("head", 1),
        ("small-group", 1),
    ]

    def started():
        obj = get(cluster, "raycluster", namespace, "raycluster-complete")
        return obj if obj["spec"].get("suspend") is False else None

    raycluster = wait_for(started, timeout=30, what="the RayCluster started")
    assert_started(raycluster["spec"], cluster_templates(raycluster["spec"]))
    pods = make_ray_pods(cluster, namespace, raycluster)
    assert_on_assigned_hosts(cluster, workload, wait_running(cluster, namespace, len(pods)))


def test_a_raycluster_whose_workers_need_more_than_a_rack_waits_with_kueues_message(
    cluster: Cluster, namespace: str, ray_crds, user_queue: str
):
    """17 workers of 1 cpu in one rack: a rack is 2 hosts of 8 cpu, room for 16."""
    big = yaml.safe_load(RAYCLUSTER)
    group = big["spec"]["workerGroupSpecs"][0]
    group["replicas"], group["maxReplicas"] = 17, 17
    group["template"].setdefault("metadata", {})["annotations"] = {REQUIRED: RACK_LABEL}
    create(cluster, namespace, big)
    workload = jobs.wait_pending_message(cluster, namespace, "raycluster-complete", "pod(s)")
    message = jobs.condition(workload, "QuotaReserved")["message"]
    assert message.startswith("couldn't assign flavors to pod set "), message
    assert "small-group" in message, message
    assert 'topology "default" allows to fit only 16 out of 17 pod(s)' in message, message
    assert get(cluster, "raycluster", namespace, "raycluster-complete")["spec"]["suspend"] is True


# ---- preemption and hot swap -------------------------------------------------------------------

# RayJob and RayCluster stop through spec.suspend and share the reconciler and the ungater: the
# RayCluster stands for them (e2e/perkind.py).
PLAYED = {
    "raycluster": (
        RAYCLUSTER,
        perkind.Played(
            "raycluster",
            templates=lambda obj: list(cluster_templates(obj["spec"]).values()),
            suspended=lambda obj: obj["spec"].get("suspend") is True,
            run=make_ray_pods,
        ),
    ),
}


@pytest.mark.parametrize("kind", list(PLAYED))
def test_a_preempted_ray_object_is_suspended_with_its_templates_restored_and_requeued(
    cluster: Cluster,
    namespace: str,
    preempting_queue: str,  # noqa: F811 (the fixture)
    ray_crds,
    kind: str,
):
    manifest, played = PLAYED[kind]
    perkind.check_preempted_and_requeued(
        cluster, namespace, preempting_queue, played, yaml.safe_load(manifest)
    )


@pytest.mark.parametrize("kind", list(PLAYED))
def test_a_failed_node_under_a_ray_object_is_replaced_by_a_spare_in_its_rack(
    cluster: Cluster,
    namespace: str,
    hotswap_lq: str,  # noqa: F811 (the fixture)
    rack_nodes,  # noqa: F811 (the fixture)
    ray_crds,
    kind: str,
):
    [rack] = rack_nodes(racks=1, hosts=3).values()
    manifest, played = PLAYED[kind]
    perkind.check_failed_node_replaced(
        cluster, namespace, hotswap_lq, played, yaml.safe_load(manifest), rack
    )
