import copy

from tas.cache import projections as proj
from tas.integrations.job import controller as lifecycle
from tas.integrations.job.controller import build_workload, pod_count
from tas.solver.types import Node
from tests.unit.integrations import builders
from tests.unit.integrations.builders import FLAVORS

GATE = "kueue.x-k8s.io/topology"


def job(**spec):
    return {
        "metadata": {
            "name": "j",
            "namespace": "ns",
            "uid": "u1",
            "resourceVersion": "7",
            "labels": {"kueue.x-k8s.io/queue-name": "q"},
        },
        "spec": {
            "parallelism": 4,
            "suspend": True,
            "template": {
                "metadata": {"annotations": {"kueue.x-k8s.io/podset-required-topology": "rack"}},
                "spec": {"nodeSelector": {"user": "choice"}, "containers": [{"name": "c"}]},
            },
            **spec,
        },
    }


def admitted(job_obj, flavor="tas"):
    """The Job's Workload admitted with its 4 pods on host x1."""
    return builders.admitted(build_workload(job_obj), {"main": [("x1", 4)]}, flavor=flavor)


def test_start_gates_labels_and_pins_the_flavor_then_unsuspends():
    j = job()
    patch = lifecycle.start_patch(j, admitted(j), FLAVORS)
    assert patch["spec"]["suspend"] is False
    assert patch["metadata"]["resourceVersion"] == "7"  # guarded against a concurrent change
    template = patch["spec"]["template"]
    assert template["metadata"]["labels"] == {"kueue.x-k8s.io/podset": "main"}
    assert template["metadata"]["annotations"]["kueue.x-k8s.io/workload"].startswith("job-j-")
    assert template["spec"]["schedulingGates"] == [{"name": GATE}]
    assert template["spec"]["nodeSelector"] == {"user": "choice", "pool": "tas"}
    assert template["spec"]["tolerations"] == [
        {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]


def test_a_second_start_on_another_flavor_drops_the_first_flavors_labels():
    j = job()
    j["spec"]["template"]["spec"]["nodeSelector"] = {
        "user": "choice",
        "pool": "tas",
    }  # left by the first start
    j["spec"]["template"]["spec"]["schedulingGates"] = [{"name": GATE}, {"name": "other/gate"}]
    patch = lifecycle.start_patch(j, admitted(j, flavor="other"), FLAVORS)
    spec = patch["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {"user": "choice", "pool": "other"}
    assert spec["tolerations"] is None
    assert spec["schedulingGates"] == [
        {"name": "other/gate"},
        {"name": GATE},
    ]  # ours once, others kept


def test_stop_only_suspends_and_the_start_time_is_then_cleared():
    j = job(suspend=False)
    assert lifecycle.stop_patch(j) == {
        "metadata": {"resourceVersion": "7"},
        "spec": {"suspend": True},
    }
    j["spec"]["suspend"] = True
    j["status"] = {"startTime": "2026-01-01T00:00:00Z"}
    assert lifecycle.needs_start_time_reset(j)
    j["status"] = {}
    assert not lifecycle.needs_start_time_reset(j)


def test_finished_reads_the_job_conditions():
    assert lifecycle.finished(job()) is None
    done = job()
    done["status"] = {"conditions": [{"type": "Complete", "status": "True"}]}
    assert lifecycle.finished(done).succeeded
    failed = job()
    failed["status"] = {
        "conditions": [{"type": "Failed", "status": "True", "message": "BackoffLimitExceeded"}]
    }
    assert lifecycle.finished(failed) == lifecycle.Finished(False, "BackoffLimitExceeded")


def test_a_resized_suspended_job_needs_a_new_workload_and_count_follows_completions():
    j = job()
    wl = proj.workload_from_object(build_workload(j))
    assert not lifecycle.needs_new_workload(j, wl)
    j["spec"]["parallelism"] = 6
    assert lifecycle.needs_new_workload(j, wl)
    assert pod_count(job(completions=2)) == 2


# --- an evicted workload's quota is released when its pods stop holding capacity ---------------


def pod(name="p", node="n1", phase="Running", deleting=False):
    return proj.PodInfo(
        namespace="ns",
        name=name,
        uid=name,
        node_name=node,
        phase=phase,
        requests={"cpu": 1000},
        workload="w",
        pod_set="main",
        gated=False,
        node_selector={},
        deleting=deleting,
    )


def nodes(**ready):
    return {
        name: Node(name=name, labels={}, allocatable={"cpu": 4000}, ready=is_ready)
        for name, is_ready in ready.items()
    }


def test_a_pod_terminating_on_a_live_node_still_holds_the_quota():
    # Kueue lets go at Job.status.active == 0; the node is not free until the pod is gone.
    assert lifecycle.pods_hold_capacity([pod(deleting=True)], nodes(n1=True))


def test_running_and_starting_pods_hold_it_and_finished_or_gone_ones_do_not():
    live = nodes(n1=True)
    assert lifecycle.pods_hold_capacity([pod()], live)
    assert lifecycle.pods_hold_capacity([pod(node=None, phase="Pending")], live)
    assert not lifecycle.pods_hold_capacity([pod(phase="Succeeded"), pod(phase="Failed")], live)
    assert not lifecycle.pods_hold_capacity([], live)


def test_a_pod_terminating_on_a_dead_or_deleted_node_is_let_go():
    # it may stay terminating for good, and that node admits nothing meanwhile
    assert not lifecycle.pods_hold_capacity([pod(deleting=True)], nodes(n1=False))
    assert not lifecycle.pods_hold_capacity([pod(deleting=True)], nodes(n2=True))
    assert not lifecycle.pods_hold_capacity([pod(node=None, deleting=True)], nodes(n1=True))
    assert lifecycle.pods_hold_capacity(
        [pod("a", deleting=True), pod("b", node="n2", deleting=True)], nodes(n1=False, n2=True)
    )


# --- a stopped Job's template is restored; edits to a suspended Job re-create its Workload ------


def merge(target, patch):
    """RFC 7386 JSON merge patch, as the API server applies it."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


def pending(job_obj):
    return proj.workload_from_object(build_workload(job_obj))


def started_then_stopped(job_obj, *, implied=False):
    """The Job as it is after an admission, an eviction, and the startTime reset."""
    if implied:
        job_obj["spec"]["template"]["metadata"]["annotations"] = {}
    workload = admitted(job_obj)
    running = merge(job_obj, lifecycle.start_patch(job_obj, workload, FLAVORS))
    return merge(running, lifecycle.stop_patch(running)), pending(job_obj)


def test_a_stopped_job_gets_back_the_template_the_user_wrote():
    for implied in (False, True):
        original = job()
        stopped, workload = started_then_stopped(original, implied=implied)
        assert stopped["spec"]["template"] != original["spec"]["template"]  # ours were added
        restore = lifecycle.restore_patch(stopped, workload)
        assert restore["metadata"] == {"resourceVersion": "7"}
        restored = merge(stopped, restore)
        template = restored["spec"]["template"]
        assert template["spec"]["nodeSelector"] == {"user": "choice"}
        assert "tolerations" not in template["spec"]
        assert "schedulingGates" not in template["spec"]
        assert not template["metadata"].get("labels")
        assert (
            template["metadata"].get("annotations", {})
            == (original["spec"]["template"]["metadata"]["annotations"])
        )
        assert lifecycle.restore_patch(restored, workload) is None  # nothing left to undo
        assert not lifecycle.needs_new_workload(restored, workload)


def test_the_template_is_left_alone_while_the_job_runs_or_keeps_its_start_time():
    stopped, workload = started_then_stopped(job())
    assert lifecycle.restore_patch({**stopped, "status": {"startTime": "t"}}, workload) is None
    running = merge(stopped, {"spec": {"suspend": False}})
    assert lifecycle.restore_patch(running, workload) is None


def test_our_own_additions_are_not_taken_for_an_edit():
    stopped, workload = started_then_stopped(job())
    assert not lifecycle.needs_new_workload(stopped, workload)  # restored first, then compared


def test_edits_to_a_suspended_jobs_template_need_a_new_workload():
    """Kueue re-creates the Workload of a suspended Job whose pod template changed."""
    edits = [
        ("resources", {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}),
        ("node selector", {"nodeSelector": {"user": "other"}}),
        ("tolerations", {"tolerations": [{"key": "k", "operator": "Exists"}]}),
    ]
    for what, spec_edit in edits:
        original = job()
        workload = pending(original)
        edited = merge(original, {"spec": {"template": {"spec": spec_edit}}})
        assert lifecycle.needs_new_workload(edited, workload), what
    original = job()
    annotations = {"kueue.x-k8s.io/podset-preferred-topology": "rack"}
    edited = copy.deepcopy(original)
    edited["spec"]["template"]["metadata"]["annotations"] = annotations
    assert lifecycle.needs_new_workload(edited, pending(original)), "topology annotation"
    same_cpu = merge(
        original,
        {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "new"}]}}}},
    )
    assert not lifecycle.needs_new_workload(same_cpu, pending(original))  # nothing we read
    admitted_workload = admitted(original)
    assert not lifecycle.needs_new_workload(edited, admitted_workload)  # holds quota: kept


def test_a_user_edit_after_the_restore_is_kept_and_re_creates_the_workload():
    stopped, workload = started_then_stopped(job())
    restored = merge(stopped, lifecycle.restore_patch(stopped, workload))
    edited = merge(restored, {"spec": {"template": {"spec": {"nodeSelector": {"user": "b"}}}}})
    assert lifecycle.restore_patch(edited, workload) is None
    assert lifecycle.needs_new_workload(edited, workload)
