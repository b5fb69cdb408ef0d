"""Properties of the dominant resource share and of fair-sharing preemption (hypothesis)."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from tas.admission import fair_preemption
from tas.api.constants import ANY, NEVER, REASON_IN_COHORT_FAIR_SHARING
from tas.api.fairsharing import LESS_THAN_OR_EQUAL_TO_FINAL_SHARE
from tas.api.models.fairsharing import MAX_WEIGHTED_SHARE
from tas.cache import fairshare
from tas.cache import projections as proj
from tas.cache.state import charge_of
from tests.unit.fairshare.kueue_objects import NOW, admitted, cohort, cq, state_of, workload
from tests.unit.gates import gates

CPU = ("default", "cpu")
WEIGHTS = st.sampled_from([None, "0", "0.5", "1", "2", "3"])
queue_specs = st.lists(
    st.tuples(st.integers(0, 6), WEIGHTS, st.lists(st.integers(1, 4), max_size=4)),
    min_size=2,
    max_size=4,
)


def flat_state(specs, cohort_cpu: int = 0, strategies=None):
    queues = [
        cq(f"q{i}", "all", {"default": str(nominal)}, weight=weight, reclaim=ANY)
        for i, (nominal, weight, _) in enumerate(specs)
    ]
    workloads = [
        admitted(f"q{i}-w{j}", f"q{i}", str(size))
        for i, (_, _, sizes) in enumerate(specs)
        for j, size in enumerate(sizes)
    ]
    kwargs = {"strategies": strategies} if strategies else {}
    return state_of(queues, [cohort("all", cpu=str(cohort_cpu))], workloads, **kwargs)


@settings(max_examples=80, deadline=None)
@given(queue_specs, st.integers(0, 6))
def test_shares_are_consistent_over_the_tree(specs, cohort_cpu) -> None:
    state = flat_state(specs, cohort_cpu)
    tree = state.quota_tree()
    borrowing_children = []
    for name in state.cluster_queues:
        node = ("cq", name)
        drs = fairshare.share(tree, node)
        within = tree.usage(node, CPU) <= tree.quota(node, CPU).nominal
        # Within nominal quota: share 0 and not borrowing; beyond it: borrowing.
        assert drs.borrowing is not within
        if within:
            assert drs.precise() == 0 and drs.rounded() == 0
        # The weight only divides the unweighted ratio.
        weight = tree.fair_weight(node)
        if weight > 0:
            assert math.isclose(drs.precise(), drs.ratio / weight)
            assert drs.rounded() == math.ceil(drs.ratio / weight)
        elif drs.borrowing and drs.ratio > 0:  # weight 0 while borrowing: beyond every share
            assert drs.rounded() == MAX_WEIGHTED_SHARE and drs.precise() == math.inf
        borrowing_children.append(drs.borrowing)
    # A cohort borrows only when some child does (its usage is what they use beyond theirs).
    root = fairshare.share(tree, ("cohort", "all"))
    assert not root.borrowing  # the root has no parent to borrow from
    total = sum(tree.usage(("cq", n), CPU) for n in state.cluster_queues)
    assert tree.usage(("cohort", "all"), CPU) == total


@settings(max_examples=60, deadline=None)
@given(queue_specs, st.integers(1, 4))
def test_more_usage_never_lowers_a_share(specs, more) -> None:
    state = flat_state(specs)
    tree = state.quota_tree()
    for name in state.cluster_queues:
        before = fairshare.share(tree, ("cq", name))
        after = fairshare.share(tree, ("cq", name), {CPU: more * 1000})
        assert fairshare.compare(before, after) <= 0


@settings(max_examples=80, deadline=None)
@given(queue_specs, st.integers(0, 3), st.integers(1, 5))
def test_less_than_or_equal_to_final_share_never_raises_the_preemptor_above_a_victim(
    specs, preemptor_nominal, size
) -> None:
    """S2-a: each queue a workload is taken from (InCohortFairSharing) keeps, once its
    victims are gone, a share at least the preemptor's with the incoming workload admitted."""
    specs = [(preemptor_nominal, None, []), *specs]
    state = flat_state(specs, strategies=(LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,))
    preemptor_cq = state.cluster_queues["q0"]
    tree = state.quota_tree()
    incoming = proj.workload_from_object(workload("incoming", str(size), queue="lq-q0"))
    fq = preemptor_cq.resource_groups[0].flavors[0]
    with gates(FairSharingPreemptWithinNominal=False):
        found = fair_preemption.find(
            state, tree, incoming, preemptor_cq, fq, {CPU: size * 1000}, frozenset({CPU}), NOW
        )
    if isinstance(found, str):
        return
    assert preemptor_cq.within_cluster_queue == NEVER  # no victim of its own
    victims: dict[str, list] = {}
    for target in found.targets:
        assert target.reason == REASON_IN_COHORT_FAIR_SHARING
        charge = charge_of(target.workload)
        victims.setdefault(charge.cluster_queue, []).append(charge)
    preemptor_share = fairshare.share(tree, ("cq", "q0"), {CPU: size * 1000})
    for queue, charges in victims.items():
        for charge in charges:
            tree.shift(queue, CPU, -charge.pod_sets[0].count * charge.pod_sets[0].per_pod["cpu"])
        final = fairshare.share(tree, ("cq", queue))
        assert fairshare.compare(preemptor_share, final) <= 0, queue
    # and the preemptor fits once they are gone
    assert tree.available("q0", CPU) >= size * 1000
