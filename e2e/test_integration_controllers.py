"""JobSet and LeaderWorkerSet end to end with their real controllers (built from the Go module
proxy at the versions Kueue v0.15.0 uses), out of cluster on the local control plane.

`make e2e-integrations` builds them (cold: about 20 min for both) and runs these; `make test`
does not. Kueue's documented examples are applied unchanged, with our queue names.
"""

from __future__ import annotations

import json
import time
from collections import Counter

import pytest
import yaml

from e2e import integrations, jobs, kueue_examples, test_hotswap, topology
from e2e.harness import Cluster, wait_for
from e2e.topology import HOSTNAME_LABEL, RACK_LABEL

pytestmark = pytest.mark.integrations

NOT_READY = test_hotswap.NOT_READY
rack_nodes = test_hotswap.rack_nodes  # the fixture: nodes of a block of their own

COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
JOB_INDEX = "jobset.sigs.k8s.io/job-index"
WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"


def controller(cluster: Cluster, name: str):
    if not integrations.built(cluster, name):
        pytest.fail(f"the {name} controller is not built: run `make e2e-integrations`")
    return integrations.Controller(cluster, name).start()


@pytest.fixture(scope="module")
def jobset_controller(cluster: Cluster, operator):
    started = controller(cluster, "jobset")
    wait_for(
        lambda: "jobsets: CRD jobsets.jobset.x-k8s.io established" in operator.log(),
        timeout=60,
        what="the operator to handle JobSets",
    )
    yield started
    started.stop()


@pytest.fixture(scope="module")
def lws_controller(cluster: Cluster, operator):
    started = controller(cluster, "lws")
    crd = "leaderworkersets.leaderworkerset.x-k8s.io"
    wait_for(
        lambda: f"leaderworkersets: CRD {crd} established" in operator.log(),
        timeout=60,
        what="the operator to handle LeaderWorkerSets",
    )
    yield started
    started.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for fixture in ("jobset_controller", "lws_controller"):
            ctl = item.funcargs.get(fixture)
            if ctl is not None:
                report.sections.append((f"{fixture} log", ctl.log()[-4000:]))


def create(cluster: Cluster, namespace: str, text: str) -> None:
    cluster.kubectl("create", "-n", namespace, "-f", "-", input=text)


def wait_admitted(cluster: Cluster, namespace: str, owner: str, timeout: float = 120) -> dict:
    return jobs.wait_admitted(cluster, namespace, owner, timeout=timeout)


def jobset_pods(
    cluster: Cluster, namespace: str, name: str, count: int, timeout: float = 120
) -> list[dict]:
    def running():
        found = cluster.get_json(
            "pods", "-n", namespace, "-l", f"jobset.sigs.k8s.io/jobset-name={name}"
        )["items"]
        live = [
            p
            for p in found
            if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
        ]
        return live if len(live) == count else None

    return wait_for(running, timeout=timeout, what=f"{count} pods of JobSet {name} Running")


def slots(assignment: dict) -> list[str]:
    """Host of each rank: the assignment's domains expanded in order."""
    return [
        d["values"][0]
        for d in assignment["topologyAssignment"]["domains"]
        for _ in range(d["count"])
    ]


def assert_jobset_placement(cluster: Cluster, workload: dict, pods: list[dict]) -> dict[int, str]:
    """Every pod on its rank's host (rank = Job index x Job size + completion index), pinned by the
    ungater, ungated; returns rank -> host."""
    [assignment] = workload["status"]["admission"]["podSetAssignments"]
    by_rank = slots(assignment)
    size = len(by_rank) // int(workload["spec"]["podSets"][0]["topologyRequest"]["subGroupCount"])
    placed = {}
    for p in pods:
        labels = p["metadata"]["labels"]
        rank = int(labels[JOB_INDEX]) * size + int(labels[COMPLETION_INDEX])
        placed[rank] = p["spec"]["nodeName"]
        assert p["spec"]["nodeSelector"][HOSTNAME_LABEL] == p["spec"]["nodeName"]
        assert not p["spec"].get("schedulingGates")
    assert placed == dict(enumerate(by_rank)), "rank order broken"
    return placed


def racks(cluster: Cluster, hosts) -> list[str]:
    labels = jobs.node_labels(cluster)
    return [labels[h][RACK_LABEL] for h in hosts]


# ---- Kueue's JobSet examples -------------------------------------------------------------------


def test_kueue_jobset_required_example_lands_in_one_rack_in_rank_order(
    cluster, namespace, user_queue, jobset_controller
):
    create(cluster, namespace, kueue_examples.JOBSET_REQUIRED)
    wl = wait_admitted(cluster, namespace, "jobset-tas-required")
    [ps] = wl["status"]["admission"]["podSetAssignments"]
    assert (ps["name"], ps["count"]) == ("workers", 4)
    assert ps["topologyAssignment"]["levels"] == [HOSTNAME_LABEL]
    placed = assert_jobset_placement(
        cluster, wl, jobset_pods(cluster, namespace, "jobset-tas-required", 4)
    )
    assert len(set(racks(cluster, placed.values()))) == 1


@pytest.mark.parametrize(
    ("example", "name", "one_block"),
    [
        (kueue_examples.JOBSET_SLICED, "jobset-tas-sliced", False),
        (kueue_examples.JOBSET_COMBINED, "jobset-tas-combined", True),
    ],
    ids=["sliced", "combined"],
)
def test_kueue_jobset_slice_examples_keep_each_slice_whole(
    cluster, namespace, user_queue, jobset_controller, example, name, one_block
):
    create(cluster, namespace, example)
    wl = wait_admitted(cluster, namespace, name)
    placed = assert_jobset_placement(cluster, wl, jobset_pods(cluster, namespace, name, 8))
    rack_of = racks(cluster, [placed[r] for r in range(8)])
    for first in (0, 4):  # slices of 4 pods: ranks 0-3 and 4-7
        assert len(set(rack_of[first : first + 4])) == 1, f"slice at rank {first} split: {rack_of}"
    if one_block:
        labels = jobs.node_labels(cluster)
        assert len({labels[h][topology.BLOCK_LABEL] for h in placed.values()}) == 1


def test_a_jobsets_jobs_are_slices_placed_whole_in_job_index_order(
    cluster, namespace, user_queue, jobset_controller
):
    """Two Jobs of four 3-cpu pods, a slice each: one rack (16 cpu) holds one Job, so the two
    Jobs land in two racks; Job i takes ranks [4i, 4i + 4)."""
    js = yaml.safe_load(kueue_examples.JOBSET_SLICED)
    js["metadata"]["name"] = "two-slices"
    rj = js["spec"]["replicatedJobs"][0]
    rj["replicas"] = 2
    rj["template"]["spec"].update(parallelism=4, completions=4)
    rj["template"]["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = (
        "3"
    )
    create(cluster, namespace, json.dumps(js))
    wl = wait_admitted(cluster, namespace, "two-slices")
    assert wl["spec"]["podSets"][0]["count"] == 8
    pods = jobset_pods(cluster, namespace, "two-slices", 8)
    assert_jobset_placement(cluster, wl, pods)
    rack_of_job: dict[str, set[str]] = {}
    for p in pods:
        rack_of_job.setdefault(p["metadata"]["labels"][JOB_INDEX], set()).update(
            racks(cluster, [p["spec"]["nodeName"]])
        )
    assert all(len(r) == 1 for r in rack_of_job.values()), rack_of_job
    assert rack_of_job["0"] != rack_of_job["1"]


def test_a_jobset_that_does_not_fit_waits_with_kueues_message(
    cluster, namespace, user_queue, jobset_controller
):
    js = yaml.safe_load(kueue_examples.JOBSET_REQUIRED)
    js["metadata"]["name"] = "too-big"
    spec = js["spec"]["replicatedJobs"][0]["template"]["spec"]
    spec.update(parallelism=20, completions=20)  # a rack has 16 cpu
    create(cluster, namespace, json.dumps(js))
    wl = jobs.wait_pending_message(cluster, namespace, "too-big", "allows to fit only", timeout=120)
    message = jobs.condition(wl, "QuotaReserved")["message"]
    assert message.startswith(
        'couldn\'t assign flavors to pod set workers: topology "default" allows to fit only'
    )
    assert "out of 20 pod(s)" in message
    assert cluster.get_json("jobset", "-n", namespace, "too-big")["spec"]["suspend"] is True
    assert not cluster.get_json("jobs", "-n", namespace)["items"] or all(
        j["spec"].get("suspend") for j in cluster.get_json("jobs", "-n", namespace)["items"]
    )


def cq_admitted(cluster: Cluster) -> int:
    return (
        cluster.get_json("clusterqueue", "tas-cluster-queue")
        .get("status", {})
        .get("admittedWorkloads", 0)
    )


def test_deleting_a_jobset_releases_its_quota(cluster, namespace, user_queue, jobset_controller):
    js = yaml.safe_load(kueue_examples.JOBSET_REQUIRED)
    js["metadata"]["name"] = "short-lived"
    create(cluster, namespace, json.dumps(js))
    wl = wait_admitted(cluster, namespace, "short-lived")
    jobset_pods(cluster, namespace, "short-lived", 4)
    before = cq_admitted(cluster)
    cluster.kubectl("delete", "jobset", "-n", namespace, "short-lived")
    wait_for(
        lambda: jobs.workload_of(cluster, namespace, "short-lived") is None,
        timeout=90,
        what="its workload deleted",
    )
    wait_for(
        lambda: cq_admitted(cluster) < before, timeout=60, what="the ClusterQueue's usage released"
    )
    del wl


# ---- hot swap ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hotswap_queue(cluster: Cluster, operator) -> str:
    return test_hotswap.install_hotswap_queue(cluster)


def test_a_failed_node_under_a_jobset_slice_is_replaced_within_the_slices_rack(
    cluster, namespace, hotswap_queue, rack_nodes, jobset_controller
):
    racks_made = rack_nodes(racks=2, hosts=3)
    cluster.apply(jobs.local_queue("q", hotswap_queue), namespace)
    js = yaml.safe_load(kueue_examples.JOBSET_COMBINED)
    js["metadata"]["name"] = "train"
    js["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "q"
    rj = js["spec"]["replicatedJobs"][0]
    rj["template"]["spec"].update(
        parallelism=4, completions=4, backoffLimit=10
    )  # a lost pod is retried
    template = rj["template"]["spec"]["template"]
    template["metadata"]["annotations"] = {
        "kueue.x-k8s.io/podset-required-topology": RACK_LABEL,
        "kueue.x-k8s.io/podset-slice-required-topology": RACK_LABEL,
        "kueue.x-k8s.io/podset-slice-size": "4",
    }
    template["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "2"}
    create(cluster, namespace, json.dumps(js))
    wl = wait_admitted(cluster, namespace, "train")
    before = Counter(p["spec"]["nodeName"] for p in jobset_pods(cluster, namespace, "train", 4))
    assert len(before) == 2  # BestFit packs two 4-cpu hosts, leaving the rack's third spare
    (rack,) = {r for r, hosts in racks_made.items() if set(before) <= set(hosts)}
    failed = sorted(before)[0]
    spare = next(h for h in racks_made[rack] if h not in before)
    t0 = time.monotonic()
    cluster.kubectl("label", "node", failed, f"{NOT_READY}=true")

    def replaced():
        counts = jobs.assignment_counts(jobs.workload_of(cluster, namespace, "train"))
        return counts if failed not in counts else None

    counts = wait_for(replaced, timeout=180, what="the assignment to drop the failed node")
    assert counts[spare] == 2 and sum(counts.values()) == 4
    assert set(counts) <= set(racks_made[rack])  # the slice's rack

    def placed_again():
        pods = jobset_pods(cluster, namespace, "train", 4, timeout=5)
        return Counter(p["spec"]["nodeName"] for p in pods) == counts

    wait_for(placed_again, timeout=180, what="the replacement pods Running on the spare")
    wl = jobs.workload_of(cluster, namespace, "train")
    assert (jobs.condition(wl, "Evicted") or {}).get("status") != "True"
    print(f"\nJobSet hot swap: node failure -> replacement Running in {time.monotonic() - t0:.1f}s")


# ---- LeaderWorkerSet ---------------------------------------------------------------------------

GPU_QUEUE = "tas-gpu-user-queue"


@pytest.fixture(scope="module")
def gpu_nodes(cluster: Cluster, topology_nodes) -> None:
    """Kueue's LeaderWorkerSet example asks for nvidia.com/gpu: 4 per topology node."""
    for node in topology_nodes:
        cluster.kubectl(
            "patch", "node", node, "--subresource=status", "--type=merge",
            "-p", json.dumps({"status": {"allocatable": {"nvidia.com/gpu": "4"}, "capacity": {"nvidia.com/gpu": "4"}}}),
        )  # fmt: skip


@pytest.fixture
def gpu_queue(cluster: Cluster, namespace: str, gpu_nodes, operator) -> str:
    """Kueue's sample-gpu-queues.yaml ClusterQueue on the example's flavor, named apart."""
    cq = f"gpu-{namespace}"
    cluster.apply(jobs.cluster_queue(cq, {"cpu": 100, "memory": "100Gi", "nvidia.com/gpu": 16}))
    cluster.apply(jobs.local_queue(GPU_QUEUE, cq), namespace)
    yield GPU_QUEUE
    cluster.kubectl("delete", "clusterqueue", cq, "--wait=false", check=False)


def lws_workloads(cluster: Cluster, namespace: str) -> dict[str, dict]:
    return {
        w["metadata"]["name"]: w
        for w in cluster.get_json(jobs.WORKLOADS_V1BETA1, "-n", namespace)["items"]
        if any(o["kind"] == "LeaderWorkerSet" for o in w["metadata"].get("ownerReferences", []))
    }


def admitted_groups(cluster: Cluster, namespace: str, count: int) -> dict[str, dict]:
    def done():
        found = lws_workloads(cluster, namespace)
        ok = len(found) == count and all(
            (jobs.condition(w, "Admitted") or {}).get("status") == "True" for w in found.values()
        )
        return found if ok else None

    return wait_for(done, timeout=180, what=f"{count} LeaderWorkerSet groups admitted")


def group_pods(cluster: Cluster, namespace: str, workload: str, count: int) -> list[dict]:
    def running():
        found = cluster.get_json(
            "pods", "-n", namespace, "-l", f"kueue.x-k8s.io/pod-group-name={workload}"
        )["items"]
        live = [
            p
            for p in found
            if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
        ]
        return live if len(live) == count else None

    return wait_for(running, timeout=180, what=f"{count} pods of {workload} Running")


def test_kueue_leaderworkerset_example_places_each_group_in_one_rack(
    cluster, namespace, gpu_queue, lws_controller
):
    cluster.apply(kueue_examples.leaderworkerset(gpu_queue), namespace)
    groups = admitted_groups(cluster, namespace, 2)
    for name, wl in groups.items():
        assignments = {ps["name"]: ps for ps in wl["status"]["admission"]["podSetAssignments"]}
        assert (assignments["leader"]["count"], assignments["worker"]["count"]) == (1, 2)
        pods = group_pods(cluster, namespace, name, 3)
        hosts = {p["metadata"]["labels"][WORKER_INDEX]: p["spec"]["nodeName"] for p in pods}
        assert len(set(racks(cluster, hosts.values()))) == 1  # leader with its workers
        # Workers by worker index in the worker pod set's slot order, after the leader (index 0).
        worker_slots = slots(assignments["worker"])
        assert [hosts[str(i)] for i in (1, 2)] == worker_slots
        assert hosts["0"] == slots(assignments["leader"])[0]
        for p in pods:
            assert p["spec"]["nodeSelector"][HOSTNAME_LABEL] == p["spec"]["nodeName"]
            assert not p["spec"].get("schedulingGates")


def test_scaling_a_leaderworkerset_adds_and_removes_group_workloads(
    cluster, namespace, gpu_queue, lws_controller
):
    cluster.apply(kueue_examples.leaderworkerset(gpu_queue), namespace)
    two = admitted_groups(cluster, namespace, 2)
    jobs.scale(cluster, "lws", namespace, "nginx-leaderworkerset", 3)
    three = admitted_groups(cluster, namespace, 3)
    assert set(two) < set(three)
    (added,) = set(three) - set(two)
    group_pods(cluster, namespace, added, 3)
    jobs.scale(cluster, "lws", namespace, "nginx-leaderworkerset", 1)
    one = admitted_groups(cluster, namespace, 1)
    assert set(one) < set(two)
    # The LeaderWorkerSet's deletion takes its group Workloads with it.
    cluster.kubectl("delete", "lws", "-n", namespace, "nginx-leaderworkerset")
    wait_for(
        lambda: not lws_workloads(cluster, namespace),
        timeout=120,
        what="the group workloads deleted",
    )
