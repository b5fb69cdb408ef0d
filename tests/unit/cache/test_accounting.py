"""Every pod bound to a node counts on that node, unless our own records say a charge covers it.

A charge covers a pod when the pod's controlling owner is the workload's owner (the Job) and
the charge's topology assignment has a free slot for the pod's pod set in its node's domain.
Nothing a user can write on a pod (the workload annotation, the pod-set label) hides it.
"""

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from tas.admission.decide import decide
from tas.cache import projections as proj
from tas.cache.state import ClusterState
from tas.solver.types import PODS
from tas.workload import transitions
from tests.unit.admission.fixtures import cluster_queue, make_state, node, two_racks, workload

JOB_UID = "job-uid"
_versions = itertools.count(100)


def admit(
    state: ClusterState, name: str, pods: int, owner: str = JOB_UID, owners: list | None = None
) -> proj.WorkloadInfo:
    """Decide, then watch the admitted version come back, as the loop and the watch do."""
    obj = workload(name, pods=pods)
    obj["metadata"]["ownerReferences"] = owners or [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": owner, "controller": True}
    ]
    info = proj.workload_from_object(obj)
    state.upsert_workload(info)
    decision = decide(state, info, state.cluster_queues["cq"])
    assert decision.admitted, decision.message
    obj["status"] = transitions.admitted(info, decision.admission, decision.message)
    obj["metadata"]["resourceVersion"] = str(next(_versions))
    state.upsert_workload(proj.workload_from_object(obj))
    return state.workloads[info.key]


def hosts_of(info: proj.WorkloadInfo) -> list[str]:
    """The assignment's hosts, one entry per pod."""
    out = []
    for a in info.admissions:
        for d in a.assignment.domains:
            out += [d.values[-1]] * d.count
    return out


def pod(name: str, node_name: str | None, *, cpu: str = "1", workload_name=None, owner=JOB_UID):
    meta = {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": {}}
    if workload_name:
        meta["annotations"] = {"kueue.x-k8s.io/workload": workload_name}
        meta["labels"] = {"kueue.x-k8s.io/podset": "main"}
    if owner:
        meta["ownerReferences"] = [{"kind": "Job", "name": "j", "uid": owner, "controller": True}]
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return proj.pod_from_object({"metadata": meta, "spec": spec, "status": {"phase": "Running"}})


def free_cpu(state: ClusterState) -> int:
    """Milli-cpu left for a new TAS workload: allocatable less pods counted less charges."""
    total = sum(n.allocatable["cpu"] for n in state.nodes.values())
    counted = sum(u.get("cpu", 0) for u in state._non_tas_usage.values())
    charged = sum(
        ps.count * ps.per_pod.get("cpu", 0) for c in state.charges().values() for ps in c.pod_sets
    )
    return total - counted - charged


def test_a_jobs_own_pods_on_their_assigned_hosts_are_charged_once():
    state = make_state(two_racks())  # 4 nodes x 4 cpu
    info = admit(state, "a", pods=4)
    for i, host in enumerate(hosts_of(info)):
        state.upsert_pod(pod(f"a-{i}", host, workload_name="a"))
    assert free_cpu(state) == 12_000


def test_a_pod_claiming_a_workload_it_does_not_belong_to_still_counts():
    """The annotation is the user's to write: it hides nothing."""
    state = make_state(two_racks())
    info = admit(state, "a", pods=2)
    host = hosts_of(info)[0]
    state.upsert_pod(pod("mine", host, cpu="3", workload_name="a", owner="someone-else"))
    state.upsert_pod(pod("no-owner", host, cpu="1", workload_name="a", owner=None))
    assert free_cpu(state) == 16_000 - 2_000 - 4_000


def test_pods_beyond_the_assigned_count_count():
    state = make_state(two_racks())
    info = admit(state, "a", pods=2)
    host = hosts_of(info)[0]
    for i in range(4):  # the Job made two more pods than were admitted onto this host
        state.upsert_pod(pod(f"a-{i}", host, workload_name="a"))
    on_host = hosts_of(info).count(host)
    assert free_cpu(state) == 16_000 - 2_000 - (4 - on_host) * 1_000


def test_pods_of_a_workload_admitted_without_topology_count():
    """A flavor with no topology: the charge names no domain, so its pods count where they run."""
    state = make_state(two_racks(), cq=cluster_queue(flavor="plain"))
    state.upsert_flavor(proj.flavor_from_object({"metadata": {"name": "plain"}, "spec": {}}))
    info = admit(state, "a", pods=2)
    assert info.admissions[0].assignment is None
    state.upsert_pod(pod("a-0", "x1", cpu="4", workload_name="a"))
    assert state._non_tas_usage["x1"]["cpu"] == 4_000


def test_a_pod_listed_before_its_node_is_covered_once_the_node_arrives():
    nodes = two_racks()
    state = make_state(nodes)
    info = admit(state, "a", pods=4)
    host = hosts_of(info)[0]
    state.delete_node(host)
    state.upsert_pod(pod("a-0", host, workload_name="a"))
    state.upsert_node(
        proj.node_from_object(next(n for n in nodes if n["metadata"]["name"] == host))
    )
    assert not state._non_tas_usage.get(host, {}).get("cpu")


def test_a_released_workloads_pods_count_until_they_are_gone():
    state = make_state(two_racks())
    info = admit(state, "a", pods=1)
    host = hosts_of(info)[0]
    state.upsert_pod(pod("a-0", host, workload_name="a"))
    state.delete_workload("ns", "a")  # quota released while the pod still terminates
    assert state._non_tas_usage[host]["cpu"] == 1_000
    state.delete_pod("ns", "a-0")
    assert not state._non_tas_usage[host].get("cpu")


def test_pods_are_counted_once_in_the_pods_resource():
    """A node with room for 4 pods takes two 2-pod workloads (the `pods` resource once each)."""
    small = node("x1", "b1", "r1", cpu="100")
    small["status"]["allocatable"]["pods"] = "4"
    state = make_state([small])
    admit(state, "a", pods=2)
    admit(state, "b", pods=2)
    snapshot_usage = state.snapshot("tas")._tas_usage
    assert sum(u.get(PODS, 0) for u in snapshot_usage.values()) == 4_000


# ---- property: incremental accounting equals accounting from scratch ---------------------------

events = st.lists(
    st.tuples(
        st.sampled_from(["add", "delete"]),
        st.integers(0, 7),  # pod number
        st.sampled_from(["x1", "x2", "x3", "x4", None]),
        st.sampled_from([JOB_UID, "other", None]),
        st.booleans(),  # claims the workload
    ),
    max_size=40,
)


def non_tas(state: ClusterState) -> dict[str, int]:
    return {n: u.get("cpu", 0) for n, u in state._non_tas_usage.items() if u.get("cpu")}


@settings(max_examples=150, deadline=None)
@given(events, st.booleans())
def test_incremental_accounting_matches_a_fresh_count(steps, release):
    state = make_state(two_racks())
    info = admit(state, "a", pods=3)
    for op, i, host, owner, claims in steps:
        if op == "add":
            state.upsert_pod(pod(f"p{i}", host, workload_name="a" if claims else None, owner=owner))
        else:
            state.delete_pod("ns", f"p{i}")
    if release:
        state.delete_workload("ns", "a")
    fresh = make_state(two_racks())
    if not release:
        fresh_info = admit(fresh, "a", pods=3)
        assert hosts_of(fresh_info) == hosts_of(info)
    for p in state.pods.values():
        fresh.upsert_pod(p)
    # Covered pods are chosen per slot, so which pod is counted may differ; per node it may
    # not, because a host-level slot is on one node.
    assert non_tas(state) == non_tas(fresh)
    # Every holding pod is counted or covered, never both, never neither.
    holding = [p for p in state.pods.values() if p.holds_node]
    counted = sum(state._non_tas_usage.get(n, {}).get(PODS, 0) for n in state.nodes) // 1000
    covered = sum(len(c.covered) for c in state._coverage.values())
    assert counted + covered == len(holding)
    assert covered <= 3


def test_nothing_is_kept_for_deleted_workloads_and_pods():
    """Long-running operators see millions of objects come and go: per-object bookkeeping
    must go with them."""
    state = make_state(two_racks())

    def sizes():
        return (
            len(state.pods),
            len(state.workloads),
            len(state._pods_by_workload),
            len(state._pod_usage),
            len(state._coverage),
            len(state._before_node),
            len(state._charges),
            len(state._assumed),
            len(state.workload_by_owner),
            sum(len(v) for v in state._by_node.values()),
        )

    baseline = sizes()
    for round_ in range(50):
        info = admit(state, f"w{round_}", pods=2, owner=f"job-{round_}")
        for i, host in enumerate(hosts_of(info)):
            state.upsert_pod(
                pod(f"w{round_}-{i}", host, workload_name=info.name, owner=f"job-{round_}")
            )
        state.upsert_pod(
            pod(f"stray{round_}", "gone-node", workload_name=info.name, owner=f"job-{round_}")
        )
        for i in range(2):
            state.delete_pod("ns", f"w{round_}-{i}")
        state.delete_pod("ns", f"stray{round_}")
        state.delete_workload("ns", info.name)
    assert sizes() == baseline


# ---- pod sets without requests (BestEffort) ---------------------------------------------------


def test_a_best_effort_pod_set_keeps_its_flavor_and_charge_across_a_restart():
    """No covered request, so Kueue would record no flavor; the charge must survive a re-read."""
    small = node("x1", "b1", "r1", cpu="100")
    small["status"]["allocatable"]["pods"] = "3"
    state = make_state([small])
    obj = workload("be", pods=2, cpu="0")
    obj["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"] = {}
    info = proj.workload_from_object(obj)
    assert info.pod_sets[0].requests == {}
    state.upsert_workload(info)
    decision = decide(state, info, state.cluster_queues["cq"])
    assert decision.admitted, decision.message
    assert decision.admission["podSetAssignments"][0]["flavors"] == {PODS: "tas"}
    obj["status"] = transitions.admitted(info, decision.admission, decision.message)
    obj["metadata"]["resourceVersion"] = "2"

    restarted = make_state([small])  # a new process lists the admitted Workload
    restarted.upsert_workload(proj.workload_from_object(obj))
    (charge,) = restarted.charges().values()
    assert [ps.flavor for ps in charge.pod_sets] == ["tas"]
    usage = restarted.snapshot("tas")._tas_usage
    assert sum(u.get(PODS, 0) for u in usage.values()) == 2_000
    third = proj.workload_from_object(workload("more", pods=2, cpu="1"))
    restarted.upsert_workload(third)
    assert not decide(restarted, third, restarted.cluster_queues["cq"]).admitted  # 3 pods max


def test_a_pod_set_without_a_recorded_flavor_takes_its_siblings():
    """Workloads admitted by Kueue record no flavor for a BestEffort pod set."""
    obj = workload("k", pods=1)
    obj["status"] = {
        "conditions": [{"type": "QuotaReserved", "status": "True"}],
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [
                {"name": "launcher", "flavors": {}, "count": 1},
                {"name": "main", "flavors": {"cpu": "tas"}, "count": 1},
            ],
        },
    }
    info = proj.workload_from_object(obj)
    assert [a.flavor for a in info.admissions] == ["tas", "tas"]


def test_pods_is_listed_in_the_admission_when_the_cluster_queue_covers_it():
    cq = cluster_queue()
    cq["spec"]["resourceGroups"][0]["coveredResources"].append(PODS)
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"].append(
        {"name": PODS, "nominalQuota": "100"}
    )
    state = make_state(two_racks(), cq=cq)
    info = proj.workload_from_object(workload("a", pods=3))
    state.upsert_workload(info)
    psa = decide(state, info, state.cluster_queues["cq"]).admission["podSetAssignments"][0]
    assert psa["flavors"] == {"cpu": "tas", PODS: "tas"}
    assert psa["resourceUsage"] == {"cpu": "3", PODS: "3"}


# ---- the other integrations keep the rule: covered only when the pod is the workload's -----------


JOBSET_OWNER = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2",
    "kind": "JobSet",
    "name": "js",
    "uid": "js-uid",
    "controller": True,
}


def test_a_jobsets_pods_are_covered_through_its_jobs_as_our_watch_records_them():
    state = make_state(two_racks())
    info = admit(state, "a", 4, owners=[JOBSET_OWNER])
    hosts = hosts_of(info)
    for i, host in enumerate(hosts):  # pods of the JobSet's Job "child-0"
        state.upsert_pod(pod(f"a-{i}", host, workload_name="a", owner="child-0"))
    assert free_cpu(state) == 16_000 - 4_000 - 4_000  # not known yet: counted twice
    state.link_owner("child-0", "js-uid")  # the watch of the JobSet's Jobs
    assert free_cpu(state) == 12_000
    state.link_owner("child-0", None)  # the Job is gone
    assert free_cpu(state) == 8_000


def test_a_job_of_another_jobset_covers_nothing():
    state = make_state(two_racks())
    info = admit(state, "a", 2, owners=[JOBSET_OWNER])
    state.link_owner("child-x", "other-jobset")
    state.upsert_pod(
        pod("intruder", hosts_of(info)[0], cpu="3", workload_name="a", owner="child-x")
    )
    assert free_cpu(state) == 16_000 - 2_000 - 3_000


def test_a_pod_owned_workload_covers_the_pod_itself_and_a_groups_members():
    state = make_state(two_racks())
    members = [
        {"apiVersion": "v1", "kind": "Pod", "name": f"m{i}", "uid": f"uid-m{i}"} for i in range(2)
    ]
    info = admit(state, "grp", 2, owners=members)
    hosts = hosts_of(info)
    for i in range(2):  # a plain pod has no controller: it is covered as an owner itself
        state.upsert_pod(pod(f"m{i}", hosts[i], workload_name="grp", owner=None))
    assert free_cpu(state) == 14_000
    state.upsert_pod(pod("not-a-member", hosts[0], cpu="2", workload_name="grp", owner=None))
    assert free_cpu(state) == 12_000
