"""Rank order for every integration (Kueue's topology_ungater_test.go "ranks: ..." cases), and
its invariants as properties: a JobSet's slices land whole, no domain gets more than its count."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.cache.projections import PodInfo
from tas.solver.types import DomainAssignment, PodSetRequest, TopologyAssignment, TopologyRequest
from tas.ungater.plan import plan
from tas.ungater.ranks import RankRule, group_offsets, ranks, rule_for

BLOCK, RACK = "cloud.com/block", "cloud.com/rack"
JOB_INDEX = "batch.kubernetes.io/job-completion-index"
JOBSET_INDEX = "jobset.sigs.k8s.io/job-index"
WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"
GROUP_INDEX = "kueue.x-k8s.io/pod-group-pod-index"


def labelled(name: str, labels: dict[str, int], gated: bool = True, node_selector=None) -> PodInfo:
    return PodInfo(
        namespace="ns",
        name=name,
        uid=name,
        node_name=None,
        phase="Pending",
        requests={},
        workload="wl",
        pod_set="main",
        gated=gated,
        node_selector=dict(node_selector or {}),
        deleting=False,
        index_labels=dict(labels),
    )


def assignment(*domains: tuple[tuple[str, ...], int], levels=(BLOCK, RACK)) -> TopologyAssignment:
    return TopologyAssignment(
        levels=levels, domains=tuple(DomainAssignment(v, c) for v, c in domains)
    )


def placed(result) -> dict[str, tuple[str, ...]]:
    return {u.pod.name: u.domain for u in result}


def test_jobset_ranks_by_job_index_then_completion_index():
    """Kueue: "ranks: support rank-based ordering for JobSet - for all Pods"."""
    a = assignment((("b1", "r1"), 2), (("b1", "r2"), 1), (("b2", "r1"), 1))
    request = TopologyRequest(
        pod_index_label=JOB_INDEX, sub_group_index_label=JOBSET_INDEX, sub_group_count=2
    )
    pods = [
        labelled("p3", {JOB_INDEX: 1, JOBSET_INDEX: 1}),
        labelled("p0", {JOB_INDEX: 0, JOBSET_INDEX: 0}),
        labelled("p2", {JOB_INDEX: 0, JOBSET_INDEX: 1}),
        labelled("p1", {JOB_INDEX: 1, JOBSET_INDEX: 0}),
    ]
    assert placed(plan(a, pods, rule=rule_for(request, 4))) == {
        "p0": ("b1", "r1"),
        "p1": ("b1", "r1"),
        "p2": ("b1", "r2"),
        "p3": ("b2", "r1"),
    }


def test_jobset_some_pods_already_scheduled_keep_their_domain():
    """Kueue: "... for JobSet - some Pods already scheduled"."""
    a = assignment((("b1", "r1"), 2), (("b1", "r2"), 2))
    rule = rule_for(
        TopologyRequest(
            pod_index_label=JOB_INDEX, sub_group_index_label=JOBSET_INDEX, sub_group_count=2
        ),
        4,
    )
    pods = [
        labelled(
            "p0",
            {JOB_INDEX: 0, JOBSET_INDEX: 0},
            gated=False,
            node_selector={BLOCK: "b1", RACK: "r1"},
        ),
        labelled("p1", {JOB_INDEX: 1, JOBSET_INDEX: 0}),
        labelled("p2", {JOB_INDEX: 0, JOBSET_INDEX: 1}),
        labelled("p3", {JOB_INDEX: 1, JOBSET_INDEX: 1}),
    ]
    assert placed(plan(a, pods, rule=rule)) == {
        "p1": ("b1", "r1"),
        "p2": ("b1", "r2"),
        "p3": ("b1", "r2"),
    }


def test_leaderworkerset_workers_follow_their_leader_by_worker_index():
    """Kueue: "ranks: ungate pods according to their ranks for LeaderWorkerSet - for all Pods"."""
    workers = PodSetRequest(
        "workers", 4, {}, TopologyRequest(pod_index_label=WORKER_INDEX, group_name="g")
    )
    leader = PodSetRequest(
        "leader", 1, {}, TopologyRequest(pod_index_label=WORKER_INDEX, group_name="g")
    )
    offsets = group_offsets([workers, leader], {"workers": 4, "leader": 1})
    assert offsets == {"leader": (0, 1), "workers": (1, 5)}
    a = assignment((("b1", "r1"), 1), (("b1", "r2"), 1), (("b2", "r1"), 2))
    rule = rule_for(workers.topology, 4, *offsets["workers"])
    pods = [labelled(f"p{i}", {WORKER_INDEX: i}) for i in (2, 1, 3, 4)]
    assert placed(plan(a, pods, rule=rule)) == {
        "p1": ("b1", "r1"),
        "p2": ("b1", "r2"),
        "p3": ("b2", "r1"),
        "p4": ("b2", "r1"),
    }


def test_pod_group_members_rank_by_their_group_index():
    a = assignment((("b1", "r1"), 1), (("b2", "r1"), 2))
    rule = RankRule(GROUP_INDEX, 3)
    pods = [labelled(f"web-{i}", {GROUP_INDEX: i}) for i in (2, 0, 1)]
    assert placed(plan(a, pods, rule=rule)) == {
        "web-0": ("b1", "r1"),
        "web-1": ("b2", "r1"),
        "web-2": ("b2", "r1"),
    }


@pytest.mark.parametrize(
    ("indexes", "rule"),
    [
        ([0, 0], RankRule(JOB_INDEX, 2)),  # repeated ranks
        ([1, 2], RankRule(JOB_INDEX, 2)),  # beyond the pod set
        ([0, 1], RankRule(JOB_INDEX, 2, offset=1)),  # below zero
        ([0, None], RankRule(JOB_INDEX, 2)),  # one pod without an index
    ],
    ids=["repeated", "out-of-range", "below-zero", "missing"],
)
def test_pods_that_cannot_all_be_ranked_fall_back_to_name_order(indexes, rule):
    """Kueue: "ranks: gracefully handle situation with ranks going below 0 / repeated ranks"."""
    pods = [labelled(f"p{n}", {} if i is None else {JOB_INDEX: i}) for n, i in enumerate(indexes)]
    assert ranks(pods, rule) is None
    a = assignment((("b1", "r1"), 1), (("b1", "r2"), 1))
    assert placed(plan(a, pods, rule=rule)) == {"p0": ("b1", "r1"), "p1": ("b1", "r2")}


def test_a_jobset_pod_index_beyond_its_jobs_size_is_no_rank():
    rule = RankRule(JOB_INDEX, 4, sub_group_index_label=JOBSET_INDEX, sub_group_count=2)
    assert ranks([labelled("x", {JOB_INDEX: 2, JOBSET_INDEX: 0})], rule) is None


# ---- properties ----------------------------------------------------------------------------------


@st.composite
def sliced_jobset(draw):
    """A slice-level (rack) assignment made the way the solver makes it: every rack takes a
    whole number of slices, spread over its hosts in path order; a JobSet of `jobs` Jobs of
    `size` pods (slice size = the Job's size); some pods already ungated onto their slot, the
    rest arriving in any order."""
    size = draw(st.integers(1, 4))
    racks = draw(st.lists(st.integers(1, 3), min_size=1, max_size=4))  # slices per rack
    domains = []
    for r, slices in enumerate(racks):
        pods_left = slices * size
        hosts = draw(st.integers(1, 3))
        for h in range(hosts):
            count = pods_left if h == hosts - 1 else draw(st.integers(0, pods_left))
            if count:
                domains.append(((f"r{r}", f"h{h}"), count))
            pods_left -= count
    jobs = sum(racks)
    pods = []
    for job in range(jobs):
        for index in range(size):
            pods.append(labelled(f"j{job}-{index}", {JOB_INDEX: index, JOBSET_INDEX: job}))
    order = draw(st.permutations(pods))
    ungated = draw(st.sets(st.sampled_from([p.name for p in pods]), max_size=len(pods) // 2))
    return size, jobs, domains, list(order), ungated


@settings(max_examples=300, deadline=None)
@given(sliced_jobset())
def test_every_slice_lands_whole_in_one_rack_and_no_host_is_overfilled(case):
    size, jobs, domains, pods, ungated = case
    a = assignment(*domains, levels=(RACK, "kubernetes.io/hostname"))
    rule = RankRule(
        JOB_INDEX, jobs * size, sub_group_index_label=JOBSET_INDEX, sub_group_count=jobs
    )
    slots = [values for values, count in domains for _ in range(count)]
    # Pods already ungated sit on the slot of their rank (as an earlier pass put them).
    rank = {p.name: p.index_labels[JOBSET_INDEX] * size + p.index_labels[JOB_INDEX] for p in pods}
    state = []
    for p in pods:
        if p.name in ungated:
            rack, host = slots[rank[p.name]]
            state.append(
                labelled(
                    p.name,
                    p.index_labels,
                    gated=False,
                    node_selector={RACK: rack, "kubernetes.io/hostname": host},
                )
            )
        else:
            state.append(p)
    result = plan(a, state, rule=rule)
    where = {p.name: slots[rank[p.name]] for p in state if not p.gated}
    where.update({u.pod.name: u.domain for u in result})
    assert len(where) == len(pods)  # everyone placed
    per_host = Counter(where.values())
    assert all(per_host[values] <= count for values, count in domains)
    for job in range(jobs):
        racks = {where[f"j{job}-{i}"][0] for i in range(size)}
        assert len(racks) == 1, f"slice {job} split over {racks}"


@settings(max_examples=300, deadline=None)
@given(
    counts=st.lists(st.integers(1, 4), min_size=1, max_size=5),
    indexed=st.booleans(),
    extra=st.integers(0, 3),
    data=st.data(),
)
def test_no_domain_ever_gets_more_pods_than_assigned(counts, indexed, extra, data):
    """Whatever the pods (more than assigned, repeated or missing indexes, some ungated onto
    any domain), the plan never puts more pods into a domain than its count."""
    domains = [((f"r{i}",), c) for i, c in enumerate(counts)]
    a = assignment(*domains, levels=(RACK,))
    total = sum(counts)
    pods = []
    for n in range(total + extra):
        labels = {JOB_INDEX: data.draw(st.integers(0, total + 1))} if indexed else {}
        if data.draw(st.booleans()):
            rack = data.draw(st.sampled_from([v[0] for v, _ in domains]))
            pods.append(labelled(f"p{n}", labels, gated=False, node_selector={RACK: rack}))
        else:
            pods.append(labelled(f"p{n}", labels))
    result = plan(a, pods, rule=RankRule(JOB_INDEX, total))
    taken = Counter(p.node_selector.get(RACK) for p in pods if not p.gated)
    for u in result:
        taken[u.domain[0]] += 1
    free_before = Counter()
    for values, count in domains:
        free_before[values[0]] = count
    for rack, count in taken.items():
        already = sum(1 for p in pods if not p.gated and p.node_selector.get(RACK) == rack)
        assert count - already <= max(free_before[rack] - already, 0), rack


# ---- the rule's parts, one by one (mutation testing found them checked only end to end) ------


def test_rule_for_needs_a_request_with_an_index_label():
    assert rule_for(None, 4) is None
    assert rule_for(TopologyRequest(required=RACK), 4) is None
    rule = rule_for(TopologyRequest(pod_index_label=JOB_INDEX), 4, offset=1, max_index=5)
    assert rule == RankRule(JOB_INDEX, 4, offset=1, max_index=5)


def test_rule_for_keeps_the_sub_group_only_with_both_its_label_and_its_count():
    both = TopologyRequest(
        pod_index_label=JOB_INDEX, sub_group_index_label=JOBSET_INDEX, sub_group_count=2
    )
    assert rule_for(both, 6) == RankRule(JOB_INDEX, 6, 0, None, JOBSET_INDEX, 2)
    label_only = TopologyRequest(pod_index_label=JOB_INDEX, sub_group_index_label=JOBSET_INDEX)
    assert rule_for(label_only, 6) == RankRule(JOB_INDEX, 6)
    count_only = TopologyRequest(pod_index_label=JOB_INDEX, sub_group_count=2)
    assert rule_for(count_only, 6) == RankRule(JOB_INDEX, 6)


def _grouped(name: str, group: str | None) -> PodSetRequest:
    return PodSetRequest(name, 1, {}, TopologyRequest(group_name=group))


def test_group_offsets_put_the_smaller_pod_set_first_and_share_one_index_space():
    pod_sets = [_grouped("worker", "g"), _grouped("leader", "g"), _grouped("alone", None)]
    offsets = group_offsets(pod_sets, {"worker": 3, "leader": 1, "alone": 5})
    assert offsets == {"leader": (0, 1), "worker": (1, 4)}


def test_group_offsets_on_a_tie_put_the_first_pod_set_first():
    pod_sets = [_grouped("a", "g"), _grouped("b", "g")]
    assert group_offsets(pod_sets, {"a": 2, "b": 2}) == {"a": (0, 2), "b": (2, 4)}


def test_group_offsets_ignore_groups_that_are_not_pairs():
    pod_sets = [_grouped("a", "g"), _grouped("b", "g"), _grouped("c", "g"), _grouped("d", "h")]
    assert group_offsets(pod_sets, {"a": 1, "b": 1, "c": 1, "d": 1}) == {}


def test_rank_of_reads_the_index_less_the_offset_within_range():
    from tas.ungater.ranks import rank_of

    rule = RankRule(WORKER_INDEX, 3, offset=1, max_index=4)
    assert [rank_of(labelled(f"p{i}", {WORKER_INDEX: i}), rule) for i in range(6)] == [
        None,  # below the offset: the leader's index, not a worker's
        0,
        1,
        2,
        None,  # at max_index
        None,
    ]
    assert rank_of(labelled("none", {}), rule) is None
    plain = RankRule(JOB_INDEX, 2)  # max_index defaults to the count
    assert [rank_of(labelled(f"j{i}", {JOB_INDEX: i}), plain) for i in range(3)] == [0, 1, None]


def test_rank_of_a_jobset_pod_adds_its_jobs_offset_and_checks_both_ranges():
    from tas.ungater.ranks import rank_of

    rule = RankRule(JOB_INDEX, 6, sub_group_index_label=JOBSET_INDEX, sub_group_count=2)
    assert rank_of(labelled("a", {JOB_INDEX: 2, JOBSET_INDEX: 1}), rule) == 5
    assert rank_of(labelled("b", {JOB_INDEX: 0, JOBSET_INDEX: 0}), rule) == 0
    assert rank_of(labelled("c", {JOB_INDEX: 3, JOBSET_INDEX: 0}), rule) is None  # Job of 3
    assert rank_of(labelled("d", {JOB_INDEX: 0, JOBSET_INDEX: 2}), rule) is None  # 2 Jobs
    assert rank_of(labelled("e", {JOB_INDEX: 0}), rule) is None  # no Job index


def test_group_offsets_keep_each_pair_to_itself():
    pod_sets = [_grouped("l1", "g"), _grouped("w1", "g"), _grouped("l2", "h"), _grouped("w2", "h")]
    offsets = group_offsets(pod_sets, {"l1": 1, "w1": 2, "l2": 1, "w2": 4})
    assert offsets == {"l1": (0, 1), "w1": (1, 3), "l2": (0, 1), "w2": (1, 5)}


def test_group_offsets_count_a_pod_set_without_an_assigned_count_as_empty():
    pod_sets = [_grouped("worker", "g"), _grouped("leader", "g")]
    assert group_offsets(pod_sets, {"worker": 3}) == {"leader": (0, 0), "worker": (0, 3)}
    assert group_offsets(pod_sets, {"leader": 1}) == {"worker": (0, 0), "leader": (0, 1)}
