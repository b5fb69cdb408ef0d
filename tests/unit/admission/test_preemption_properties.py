"""Invariants of preemption and borrowing over generated clusters (hypothesis):

- the victims make room: once they are gone, the preemptor is admitted;
- under LowerPriority no victim has the preemptor's priority or more;
- a ClusterQueue never uses more than its nominal quota plus its borrowingLimit, a cohort's
  queues never use more than the cohort holds, and what a queue keeps from lending
  (lendingLimit) is never used by the others.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tas.admission.decide import decide
from tas.cache import projections as proj
from tas.workload import transitions
from tests.unit.admission.fixtures import HOST, RACK, make_state, node, workload

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def preempting_queue(cpu: str, policy: str = "LowerPriority") -> dict:
    return {
        "metadata": {"name": "cq"},
        "spec": {
            "namespaceSelector": {},
            "preemption": {"withinClusterQueue": policy},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [
                        {
                            "name": "tas",
                            "resources": [
                                {"name": "cpu", "nominalQuota": cpu},
                                {"name": "memory", "nominalQuota": "1Ti"},
                            ],
                        }
                    ],
                }
            ],
        },
    }


LEVELS = st.sampled_from([None, {"required": RACK}, {"preferred": RACK}, {"required": HOST}])
RUNNING = st.lists(st.tuples(st.integers(1, 6), st.integers(0, 3), LEVELS), min_size=1, max_size=8)


@SETTINGS
@given(
    racks=st.integers(1, 3),
    hosts=st.integers(1, 3),
    quota=st.integers(4, 24),
    running=RUNNING,
    incoming=st.tuples(st.integers(1, 8), st.integers(1, 5), LEVELS),
)
def test_victims_make_room_and_have_lower_priority(racks, hosts, quota, running, incoming):
    nodes = [
        node(f"r{r}h{h}", "b1", f"r{r}", cpu="4")
        for r in range(1, racks + 1)
        for h in range(1, hosts + 1)
    ]
    state = make_state(nodes, preempting_queue(str(quota)))
    cq = state.cluster_queues["cq"]
    for i, (pods, priority, request) in enumerate(running):
        obj = workload(f"w{i}", pods=pods, priority=priority, annotations_request=request)
        wl = proj.workload_from_object(obj)
        state.upsert_workload(wl)
        d = decide(state, wl, cq)
        if d.admitted:
            admit(state, obj, wl, d)
    pods, priority, request = incoming
    preemptor = proj.workload_from_object(
        workload("in", pods=pods, priority=priority, annotations_request=request)
    )
    snapshot = state.snapshot("tas")
    snapshot.build()  # the capacity arrays exist before the decision, to compare after it
    before = snapshot._free.copy()
    d = decide(state, preemptor, cq)
    # The search's simulation is undone, whatever it found.
    assert (snapshot._free == before).all()
    assert not any(state.quota_tree()._shifts.values())
    if d.preemption is None:
        return
    assert not d.admitted and d.preemption.targets
    for target in d.preemption.targets:
        assert target.workload.priority < preemptor.priority
        assert target.workload.key in state.charges()
    for target in d.preemption.targets:
        state.delete_workload(*target.workload.key)
    after = decide(state, preemptor, cq)
    assert after.admitted, after.message


def admit(state, obj: dict, wl, decision) -> None:
    """The workload as the watch shows it once its admission is written."""
    obj["status"] = transitions.admitted(wl, decision.admission, decision.message)
    obj["metadata"]["resourceVersion"] = str(int(obj["metadata"]["resourceVersion"]) + 1)
    state.upsert_workload(proj.workload_from_object(obj))
    assert state.charges()[wl.key] == decision.charge


def cohort_queue(name: str, nominal: int, borrowing: int | None, lending: int | None) -> dict:
    cpu: dict = {"name": "cpu", "nominalQuota": str(nominal)}
    if borrowing is not None:
        cpu["borrowingLimit"] = str(borrowing)
    if lending is not None:
        cpu["lendingLimit"] = str(lending)
    return {
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "cohort": "team",
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [{"name": "tas", "resources": [cpu]}],
                }
            ],
        },
    }


QUEUES = st.lists(
    st.tuples(
        st.integers(0, 12),
        st.one_of(st.none(), st.integers(0, 8)),
        st.one_of(st.none(), st.integers(0, 12)),
    ),
    min_size=2,
    max_size=3,
)


@SETTINGS
@given(
    queues=QUEUES, arrivals=st.lists(st.tuples(st.integers(0, 2), st.integers(1, 6)), max_size=12)
)
def test_borrowing_stays_within_limits(queues, arrivals):
    # Enough nodes that only quota decides.
    state = make_state([node(f"h{i}", "b1", "r1", cpu="100") for i in range(2)])
    limits = {}
    for i, (nominal, borrowing, lending) in enumerate(queues):
        lending = None if lending is None else min(lending, nominal)
        name = f"cq{i}"
        state.upsert_cluster_queue(
            proj.cluster_queue_from_object(cohort_queue(name, nominal, borrowing, lending))
        )
        state.upsert_local_queue("ns", name, name)
        limits[name] = (nominal * 1000, None if borrowing is None else borrowing * 1000, lending)
    for n, (queue, pods) in enumerate(arrivals):
        name = f"cq{queue % len(queues)}"
        obj = workload(f"a{n}", pods=pods)
        obj["spec"]["queueName"] = name
        wl = proj.workload_from_object(obj)
        d = decide(state, wl, state.cluster_queues[name])
        if not d.admitted:
            continue
        admit(state, obj, wl, d)
        total_used = 0
        for cq_name, (nominal, borrowing, _) in limits.items():
            used = state.quota_usage(cq_name, "tas").get("cpu", 0)
            total_used += used
            if borrowing is not None:
                assert used <= nominal + borrowing, (cq_name, used, nominal, borrowing)
        assert total_used <= sum(nominal for nominal, _, _ in limits.values())
        # What a queue keeps (nominal minus its lendingLimit) is its own: beyond it, the
        # queues share only what each lends.
        kept = {
            q: 0 if lend is None else nominal - lend * 1000
            for q, (nominal, _, lend) in limits.items()
        }
        from_pool = sum(max(0, state.quota_usage(q, "tas").get("cpu", 0) - kept[q]) for q in limits)
        assert from_pool <= sum(nominal - kept[q] for q, (nominal, _, _) in limits.items())
