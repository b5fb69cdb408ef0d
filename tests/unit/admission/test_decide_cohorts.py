"""decide() with several flavors, cohorts and preemption: Kueue's flavor fungibility, the
flavor's topology support checked before its quota, and cohort cycles."""

from __future__ import annotations

from tas.admission.decide import decide
from tas.api import conversion
from tas.api.conversion import V1BETA1, V1BETA2
from tas.cache import projections as proj
from tas.cache.state import ClusterState
from tas.workload import transitions
from tests.unit.admission.fixtures import RACK, make_state, two_racks, workload


def queue(name: str, flavors: dict[str, str], **spec) -> dict:
    """A ClusterQueue over cpu with one nominal quota per flavor, in order."""
    return {
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [
                        {"name": f, "resources": [{"name": "cpu", "nominalQuota": q}]}
                        for f, q in flavors.items()
                    ],
                }
            ],
            **spec,
        },
    }


def plain_state(*queues: dict, flavors=("fa", "fb")) -> ClusterState:
    """Flavors without a topology (quota only); every queue has a LocalQueue of its name. The
    queues are written in v1beta1 and read, as the operator reads them, in v1beta2."""
    state = ClusterState()
    for f in flavors:
        state.upsert_flavor(proj.FlavorInfo(f, {}, (), None))
    state.upsert_namespace("ns", {})
    for q in queues:
        stored = conversion.convert({"apiVersion": V1BETA1, "kind": "ClusterQueue", **q}, V1BETA2)
        state.upsert_cluster_queue(proj.cluster_queue_from_object(stored))
        state.upsert_local_queue("ns", q["metadata"]["name"], q["metadata"]["name"])
    return state


def admit(state: ClusterState, name: str, cq: str, pods: int, priority: int = 0) -> None:
    obj = workload(name, pods=pods, priority=priority)
    obj["spec"]["queueName"] = cq
    wl = proj.workload_from_object(obj)
    d = decide(state, wl, state.cluster_queues[cq])
    assert d.admitted, d.message
    obj["status"] = transitions.admitted(wl, d.admission, d.message)
    obj["metadata"]["resourceVersion"] = "2"
    state.upsert_workload(proj.workload_from_object(obj))


def incoming(name: str, cq: str, pods: int, priority: int = 0, **request) -> object:
    obj = workload(name, pods=pods, priority=priority, **request)
    obj["spec"]["queueName"] = cq
    return proj.workload_from_object(obj)


def flavor_of(decision) -> str:
    return decision.charge.pod_sets[0].flavor


def test_may_stop_search_moves_on_when_the_flavor_has_no_victims():
    for fungibility in ({"whenCanPreempt": "MayStopSearch"}, {"whenCanPreempt": "Preempt"}, {}):
        spec = {
            "preemption": {"withinClusterQueue": "LowerPriority"},
            "flavorFungibility": fungibility,
        }
        state = plain_state(queue("cq", {"fa": "4", "fb": "4"}, **spec))
        admit(state, "big", "cq", 4, priority=10)  # fills fa with a higher priority
        d = decide(state, incoming("w", "cq", 2, priority=1), state.cluster_queues["cq"])
        assert d.admitted and flavor_of(d) == "fb", (fungibility, d.message)


def test_may_stop_search_preempts_in_the_first_flavor_with_victims():
    spec = {
        "preemption": {"withinClusterQueue": "LowerPriority"},
        "flavorFungibility": {"whenCanPreempt": "MayStopSearch"},
    }
    state = plain_state(queue("cq", {"fa": "4", "fb": "4"}, **spec))
    admit(state, "low", "cq", 4, priority=0)  # fa
    d = decide(state, incoming("w", "cq", 2, priority=5), state.cluster_queues["cq"])
    assert not d.admitted and [t.workload.name for t in d.preemption.targets] == ["low"]
    # TryNextFlavor (the default) takes the free flavor instead.
    spec["flavorFungibility"] = {"whenCanPreempt": "TryNextFlavor"}
    state = plain_state(queue("cq", {"fa": "4", "fb": "4"}, **spec))
    admit(state, "low", "cq", 4, priority=0)
    d = decide(state, incoming("w", "cq", 2, priority=5), state.cluster_queues["cq"])
    assert d.admitted and flavor_of(d) == "fb"


def test_try_next_flavor_before_borrowing():
    def state_for(fungibility: dict) -> ClusterState:
        return plain_state(
            queue("a", {"fa": "2", "fb": "4"}, cohort="co", flavorFungibility=fungibility),
            queue("b", {"fa": "8", "fb": "0"}, cohort="co"),
        )

    # fa fits only by borrowing from b; fb fits within a's own quota.
    state = state_for({})
    d = decide(state, incoming("w", "a", 3), state.cluster_queues["a"])
    assert d.admitted and flavor_of(d) == "fa"  # MayStopSearch: borrowing is good enough
    state = state_for({"whenCanBorrow": "TryNextFlavor"})
    d = decide(state, incoming("w", "a", 3), state.cluster_queues["a"])
    assert d.admitted and flavor_of(d) == "fb"
    # When no later flavor fits without borrowing, the borrowing fit is kept.
    d = decide(state, incoming("w", "a", 6), state.cluster_queues["a"])
    assert d.admitted and flavor_of(d) == "fa"


def test_a_flavor_without_topology_is_never_preempted_into_for_a_topology_request():
    state = make_state(two_racks())
    state.upsert_flavor(proj.FlavorInfo("plain", {}, (), None))
    q = queue(
        "cq",
        {"plain": "4"},
        preemption={"withinClusterQueue": "LowerPriority"},
    )
    state.upsert_cluster_queue(proj.cluster_queue_from_object(q))
    state.upsert_local_queue("ns", "cq", "cq")
    admit(state, "low", "cq", 4)
    d = decide(
        state,
        incoming("w", "cq", 2, priority=5, annotations_request={"required": RACK}),
        state.cluster_queues["cq"],
    )
    assert not d.admitted and d.preemption is None
    assert "flavor plain does not support TopologyAwareScheduling" in d.message


def test_a_cohort_cycle_makes_its_queues_inactive():
    state = plain_state(queue("a", {"fa": "4"}, cohort="x"), flavors=("fa",))
    assert state.cluster_queue_problem(state.cluster_queues["a"]) is None
    for name, parent in (("x", "y"), ("y", "x")):
        state.upsert_cohort(
            proj.cohort_from_object({"metadata": {"name": name}, "spec": {"parentName": parent}})
        )
    reason, message = state.cluster_queue_problem(state.cluster_queues["a"])
    assert reason == "CohortHasCycle" and "'x'" in message
    state.delete_cohort("y")
    assert state.cluster_queue_problem(state.cluster_queues["a"]) is None
