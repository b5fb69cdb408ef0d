from tas.cache.projections import PodInfo
from tas.solver.types import DomainAssignment, TopologyAssignment
from tas.ungater.plan import plan as plan_with_rule
from tas.ungater.ranks import RankRule

H = "kubernetes.io/hostname"
JOB_INDEX = "batch.kubernetes.io/job-completion-index"


def plan(assignment, pods, expected=None, unhealthy=(), rule=None):
    """An Indexed Job's pod set: ranked by completion index."""
    count = sum(d.count for d in assignment.domains)
    return plan_with_rule(assignment, pods, expected, unhealthy, rule or RankRule(JOB_INDEX, count))


ASSIGNMENT = TopologyAssignment(
    levels=(H,), domains=(DomainAssignment(("x1",), 2), DomainAssignment(("x2",), 1))
)


def pod(name, *, index=None, gated=True, node=None, phase="Pending", uid=None):
    return PodInfo(
        namespace="ns",
        name=name,
        uid=uid or name,
        node_name=None,
        phase=phase,
        requests={},
        workload="wl",
        pod_set="main",
        gated=gated,
        node_selector={H: node} if node else {},
        deleting=False,
        index_labels={} if index is None else {JOB_INDEX: index},
    )


def hosts(result):
    return {u.pod.name: u.node_selector[H] for u in result}


def test_indexed_pods_land_by_rank_whatever_order_they_arrive_in():
    pods = [pod("p2", index=2), pod("p0", index=0), pod("p1", index=1)]
    assert hosts(plan(ASSIGNMENT, pods)) == {"p0": "x1", "p1": "x1", "p2": "x2"}


def test_ungated_pods_keep_their_slots_and_no_domain_is_overfilled():
    pods = [pod("a", gated=False, node="x1"), pod("b", gated=False, node="x1"), pod("c"), pod("d")]
    assert hosts(plan(ASSIGNMENT, pods)) == {"c": "x2"}  # d waits: all 3 slots are taken


def test_a_failed_pods_replacement_gets_its_slot():
    pods = [pod("old", index=2, gated=False, node="x2", phase="Failed"), pod("new", index=2)]
    assert hosts(plan(ASSIGNMENT, pods)) == {"new": "x2"}


def test_expectations_count_as_taken_before_the_watch_shows_them():
    pods = [pod("a", index=0), pod("b", index=1), pod("c", index=2)]
    first = plan(ASSIGNMENT, pods[:1])
    expected = {u.pod.uid: u.domain for u in first}
    # The watch still shows "a" gated; a second pass must not place it again nor overfill x1.
    second = plan(ASSIGNMENT, pods, expected)
    assert hosts(second) == {"b": "x1", "c": "x2"}


def test_pods_without_index_fill_domains_in_assignment_order():
    pods = [pod("b"), pod("a"), pod("c", index=5)]
    assert hosts(plan(ASSIGNMENT, pods)) == {"a": "x1", "b": "x1", "c": "x2"}


def test_nobody_is_sent_to_an_unhealthy_node_awaiting_replacement():
    pods = [pod("p0", index=0), pod("p2", index=2)]
    assert hosts(plan(ASSIGNMENT, pods, unhealthy={"x1"})) == {"p2": "x2"}


def test_pods_ungated_onto_a_domain_the_assignment_lost_are_stranded():
    """A replacement moved the domain away while the pod was on its way there: unbound, it
    would wait for good (or run outside the assignment if the node came back)."""
    from dataclasses import replace

    from tas.ungater.plan import stranded

    moved = pod("moved", gated=False, node="x9")  # x9 was replaced by x2
    # Bound while x9 flapped (the chaos run): not running yet, it would run outside.
    bound = replace(pod("bound", gated=False, node="x9"), node_name="x9")
    running = replace(pod("running", gated=False, node="x9", phase="Running"), node_name="x9")
    fine = pod("fine", gated=False, node="x1")
    waiting = pod("waiting")  # still gated
    on_its_way = pod("ours", gated=False, node="x9")
    result = stranded(
        ASSIGNMENT, [moved, bound, running, fine, waiting, on_its_way], {"ours": ("x9",)}
    )
    assert [p.name for p in result] == ["moved", "bound"]


def test_a_ranked_pod_whose_slot_is_taken_goes_to_the_next_free_domain():
    """An unindexed pod already holds x2, the slot of index 2: that pod still runs, in x1."""
    pods = [pod("a", gated=False, node="x2"), pod("p2", index=2)]
    assert hosts(plan(ASSIGNMENT, pods)) == {"p2": "x1"}


def test_a_rank_past_the_assignments_slots_is_placed_greedily():
    """The rule counts 4 pods but the assignment has 3 slots (it shrank): index 3 has no slot
    of its own and takes the first free one."""
    pods = [pod("p0", index=0), pod("p3", index=3)]
    result = plan_with_rule(ASSIGNMENT, pods, rule=RankRule(JOB_INDEX, 4))
    assert hosts(result) == {"p0": "x1", "p3": "x1"}
