from tas.cache.projections import PodInfo
from tas.hotswap.health import Health, node_health
from tas.solver.types import Node, Taint, Toleration


def node(ready=True, taints=()):
    return Node(name="x1", labels={}, allocatable={}, ready=ready, taints=tuple(taints))


def pod(phase="Running", deleting=False):
    return PodInfo("ns", "p", "uid", "x1", phase, {}, "wl", "main", False, {}, deleting)


def test_a_deleted_node_fails_at_once():
    assert node_health(None, [pod()], ()) is Health.FAILED


def test_not_ready_waits_for_the_pods_to_stop_then_fails():
    assert node_health(node(ready=False), [pod()], ()) is Health.WAIT
    assert node_health(node(ready=False), [pod(deleting=True)], ()) is Health.FAILED
    assert node_health(node(ready=False), [pod(phase="Failed")], ()) is Health.FAILED
    assert node_health(node(ready=False), [], ()) is Health.FAILED


def test_without_pod_termination_rule_not_ready_fails_at_once():
    assert node_health(node(ready=False), [pod()], (), on_pod_termination=False) is Health.FAILED


def test_untolerated_no_execute_taint_counts_as_failure_once_pods_stop():
    tainted = node(taints=[Taint("maintenance", "NoExecute")])
    assert node_health(tainted, [pod()], ()) is Health.WAIT
    assert node_health(tainted, [], ()) is Health.FAILED
    assert node_health(tainted, [], (), on_taints=False) is Health.HEALTHY


def test_tolerated_taints_are_harmless_and_prefer_no_schedule_is_ignored():
    tainted = node(taints=[Taint("maintenance", "NoExecute"), Taint("soft", "PreferNoSchedule")])
    forever = (Toleration(key="maintenance", operator="Exists"),)
    assert node_health(tainted, [], forever) is Health.HEALTHY


def test_a_taint_tolerated_for_a_while_waits_for_eviction():
    tainted = node(taints=[Taint("maintenance", "NoExecute")])
    briefly = (
        Toleration(key="maintenance", operator="Exists", effect="NoExecute", toleration_seconds=30),
    )
    assert node_health(tainted, [pod()], briefly) is Health.WAIT
    assert node_health(tainted, [], briefly) is Health.FAILED


def test_a_harmless_taint_listed_first_does_not_hide_a_harmful_one_after_it():
    tainted = node(taints=[Taint("soft", "PreferNoSchedule"), Taint("maintenance", "NoExecute")])
    assert node_health(tainted, [], ()) is Health.FAILED
    assert node_health(tainted, [pod()], ()) is Health.WAIT
