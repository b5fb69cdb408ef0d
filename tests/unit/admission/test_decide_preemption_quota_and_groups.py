"""decide() and borrows_first() at their edges: when preemption is (not) worth trying, how the
queue heads' borrowing estimate reads a ClusterQueue, placement groups' own and others'
domains, and the time that orders victims never admitted by a written time.

Each test pins a rule that a plausible one-line change would break (mutation testing found
them unchecked)."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime, timedelta

import pytest

from tas.admission.decide import borrows_first, decide
from tas.api.constants import (
    PLACEMENT_GROUP_AFFINITY,
    PLACEMENT_GROUP_EXCLUSIVE,
)
from tas.cache import projections as proj
from tas.cache.state import ClusterState
from tas.solver.types import SolverOptions
from tas.workload import transitions
from tests.unit.admission.fixtures import (
    BLOCK,
    HOST,
    RACK,
    allowing_exclusive_groups,
    cluster_queue,
    make_state,
    two_racks,
    workload,
)
from tests.unit.admission.test_decide_cohorts import flavor_of, incoming, plain_state, queue
from tests.unit.admission.test_decide_groups import admit as admit_member
from tests.unit.admission.test_decide_groups import hosts, member, pool, rack_of
from tests.unit.admission.test_decide_rules import cq as rules_cq
from tests.unit.admission.test_decide_rules import plain_flavor

LOWER = {"withinClusterQueue": "LowerPriority"}


def written(
    state: ClusterState,
    name: str,
    cq: str,
    pods: int,
    *,
    priority: int = 0,
    cpu: str = "1",
    reserved_at: str | None = "2020-01-01T00:00:00Z",
    **request,
) -> None:
    """Admitted, as the watch shows it after the write (only such workloads are candidates
    for preemption). `reserved_at`: QuotaReserved's lastTransitionTime, None: not written."""
    obj = workload(name, pods=pods, cpu=cpu, priority=priority, **request)
    obj["spec"]["queueName"] = cq
    info = proj.workload_from_object(obj)
    d = decide(state, info, state.cluster_queues[cq])
    assert d.admitted, d.message
    status = transitions.admitted(info, d.admission, d.message)
    for c in status["conditions"]:
        if c["type"] == "QuotaReserved":
            c.pop("lastTransitionTime", None)
            if reserved_at is not None:
                c["lastTransitionTime"] = reserved_at
    obj["status"] = status
    obj["metadata"]["resourceVersion"] = "2"
    state.upsert_workload(proj.workload_from_object(obj))


def targets(decision) -> list[str]:
    return [t.workload.name for t in decision.preemption.targets]


# -- resource groups --------------------------------------------------------------------------


def test_a_request_no_resource_group_covers_is_refused_not_raised():
    state = plain_state(queue("cq", {"fa": "4"}, cohort="co"), flavors=("fa",))
    obj = workload("w", pods=1)
    obj["spec"]["queueName"] = "cq"
    obj["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"] = {
        "example.com/gpu": "1"
    }
    info = proj.workload_from_object(obj)
    d = decide(state, info, state.cluster_queues["cq"])
    assert d.admitted is False and d.invalid is False
    assert d.message == "resource(s) example.com/gpu not covered by ClusterQueue cq"
    assert borrows_first(state, info, state.cluster_queues["cq"]) is False


def test_a_group_covering_exactly_the_requested_resources_admits():
    state = plain_state(queue("cq", {"fa": "4"}), flavors=("fa",))
    d = decide(state, incoming("w", "cq", 2), state.cluster_queues["cq"])
    assert d.admitted is True and flavor_of(d) == "fa"
    assert d.group is None  # not a placement group's member: no group to write


# -- borrows_first: Kueue orders the heads within nominal quota first -------------------------


def cohort_pair(**spec_a) -> ClusterState:
    return plain_state(
        queue("a", {"fa": "2", "fb": "8"}, cohort="co", **spec_a),
        queue("b", {"fa": "8", "fb": "0"}, cohort="co"),
    )


def test_borrows_first_is_whether_the_first_flavor_takes_more_than_nominal_quota():
    state = cohort_pair()
    a = state.cluster_queues["a"]
    assert borrows_first(state, incoming("small", "a", 2), a) is False  # exactly nominal
    assert borrows_first(state, incoming("big", "a", 3), a) is True  # fb would not borrow
    written(state, "used", "a", 1)
    assert borrows_first(state, incoming("now-big", "a", 2), a) is True  # with what it uses


def test_a_queue_without_cohort_never_borrows():
    state = plain_state(queue("solo", {"fa": "2"}), flavors=("fa",))
    assert borrows_first(state, incoming("big", "solo", 3), state.cluster_queues["solo"]) is False


def test_a_workload_whose_spec_cannot_be_read_is_not_ordered_as_borrowing():
    state = cohort_pair()
    obj = workload("w", pods=5)
    obj["spec"]["queueName"] = "a"
    obj["spec"]["podSets"].append(dict(obj["spec"]["podSets"][0], name="bad", count="many"))
    info = proj.workload_from_object(obj)
    assert info.spec_error and info.pod_sets  # the readable pod set alone would borrow
    assert borrows_first(state, info, state.cluster_queues["a"]) is False


# -- when preemption is tried -----------------------------------------------------------------


def test_a_queue_whose_preemption_policies_are_never_does_not_try_preemption():
    """Kueue's defaults (withinClusterQueue and reclaimWithinCohort Never): no search, and
    the message says only why the flavor does not fit."""
    for spec in ({"cohort": "co"}, {"preemption": {"reclaimWithinCohort": "Any"}}):
        state = plain_state(queue("cq", {"fa": "4"}, **spec), flavors=("fa",))
        written(state, "low", "cq", 4)
        d = decide(state, incoming("w", "cq", 2, priority=5), state.cluster_queues["cq"])
        assert d.admitted is False and d.preemption is None, spec
        assert d.message == (
            "couldn't assign flavors to pod set main: "
            "insufficient unused quota for cpu in flavor fa, 2 more needed"
        )


def test_a_request_beyond_all_the_queue_could_ever_have_does_not_preempt():
    state = plain_state(queue("cq", {"fa": "4"}, preemption=LOWER), flavors=("fa",))
    written(state, "low", "cq", 2)
    d = decide(state, incoming("w", "cq", 6, priority=5), state.cluster_queues["cq"])
    assert d.admitted is False and d.preemption is None
    assert d.message == (
        "couldn't assign flavors to pod set main: "
        "insufficient unused quota for cpu in flavor fa, 4 more needed"
    )


def test_a_request_beyond_nominal_quota_does_not_preempt_without_borrow_within_cohort():
    """Kueue's fitsResourceQuota: beyond nominal quota, with no subtree below the root to
    reclaim in and borrowWithinCohort Never, the flavor does not fit at all (NoFit)."""
    state = plain_state(
        queue("a", {"fa": "4"}, cohort="co", preemption={"reclaimWithinCohort": "Any", **LOWER}),
        queue("b", {"fa": "4"}, cohort="co"),
        flavors=("fa",),
    )
    written(state, "lender", "b", 4)
    d = decide(state, incoming("w", "a", 6, priority=5), state.cluster_queues["a"])
    assert d.admitted is False and d.preemption is None
    assert d.message == (
        "couldn't assign flavors to pod set main: "
        "insufficient unused quota for cpu in flavor fa, 2 more needed"
    )


def test_a_covered_resource_without_quota_in_the_flavor_has_a_nominal_quota_of_zero():
    """Borrowing one millicore it has no nominal quota for is beyond nominal: no preemption."""
    a = queue("a", {"fa": "0"}, cohort="co", preemption={"reclaimWithinCohort": "Any"})
    a["spec"]["resourceGroups"][0]["flavors"][0]["resources"] = []  # no cpu quota at all
    state = plain_state(a, queue("b", {"fa": "1m"}, cohort="co"), flavors=("fa",))
    written(state, "lender", "b", 1, cpu="1m")
    d = decide(state, incoming("w", "a", 1, priority=5, cpu="1m"), state.cluster_queues["a"])
    assert d.admitted is False and d.preemption is None
    assert d.message == (
        "couldn't assign flavors to pod set main: "
        "insufficient unused quota for cpu in flavor fa, 1m more needed"
    )


def test_why_preemption_failed_is_told_per_flavor():
    state = plain_state(queue("cq", {"fa": "4", "fb": "4"}, preemption=LOWER))
    written(state, "hi-a", "cq", 4, priority=10)
    written(state, "hi-b", "cq", 4, priority=10)
    d = decide(state, incoming("w", "cq", 2, priority=5), state.cluster_queues["cq"])
    assert d.admitted is False and d.preemption is None
    none = "no workload in ClusterQueue cq or its cohort that its preemption policies let it "
    assert d.message == (
        "couldn't assign flavors to pod set main: "
        "insufficient unused quota for cpu in flavor fa, 2 more needed; "
        "insufficient unused quota for cpu in flavor fb, 2 more needed. "
        f"No preemption: {none}preempt uses flavor fa; {none}preempt uses flavor fb"
    )


def test_a_topology_that_cannot_hold_the_workload_preempts_for_room():
    """Without placement groups, a workload the topology cannot hold evicts lower priorities
    whose pods free the room (Kueue: every resource of the flavor needs preemption)."""
    q = cluster_queue()
    q["spec"]["preemption"] = LOWER
    state = make_state(two_racks(), q)
    state.upsert_local_queue("ns", "cq", "cq")
    written(state, "low", "cq", 8)
    d = decide(state, incoming("w", "cq", 12, priority=5), state.cluster_queues["cq"])
    assert d.admitted is False and d.invalid is False
    assert targets(d) == ["low"]
    assert d.charge is not None and d.charge.pod_sets[0].count == 12


# -- the time that orders victims -------------------------------------------------------------


def two_victims(untimed_last: bool = True) -> ClusterState:
    state = plain_state(queue("cq", {"fa": "8"}, preemption=LOWER), flavors=("fa",))
    written(state, "timed", "cq", 4, reserved_at="2020-01-01T00:00:00Z")
    written(state, "untimed", "cq", 4, reserved_at=None)
    return state


def test_a_victim_without_a_written_reservation_time_counts_as_admitted_now():
    """Kueue takes the current time for it: the most recently admitted goes first."""
    state = two_victims()
    d = decide(state, incoming("w", "cq", 4, priority=5), state.cluster_queues["cq"])
    assert targets(d) == ["untimed"]


def test_the_given_now_orders_victims_without_a_written_reservation_time():
    state = two_victims()
    w = incoming("w", "cq", 4, priority=5)
    d = decide(state, w, state.cluster_queues["cq"], now=datetime(2019, 6, 1))
    assert targets(d) == ["timed"]  # reserved 2020-01-01: later than the untimed one's now
    d = decide(state, w, state.cluster_queues["cq"], now=datetime(2020, 6, 1))
    assert targets(d) == ["untimed"]


@pytest.fixture
def local_time_twelve_hours_behind_utc():
    before = os.environ.get("TZ")
    os.environ["TZ"] = "UTC+12"  # POSIX: local time is UTC minus 12 hours
    time.tzset()
    yield
    if before is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = before
    time.tzset()


def test_the_default_now_is_utc_whatever_the_local_time_zone(local_time_twelve_hours_behind_utc):
    """Written times are UTC; an hour ago in UTC is earlier than now in UTC, not later than
    the local clock."""
    state = plain_state(queue("cq", {"fa": "8"}, preemption=LOWER), flavors=("fa",))
    an_hour_ago = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    written(state, "timed", "cq", 4, reserved_at=an_hour_ago)
    written(state, "untimed", "cq", 4, reserved_at=None)
    d = decide(state, incoming("w", "cq", 4, priority=5), state.cluster_queues["cq"])
    assert targets(d) == ["untimed"]


# -- topology requests ------------------------------------------------------------------------


def test_a_topology_request_the_flavor_cannot_have_is_invalid_and_not_admitted():
    state = make_state(two_racks())
    info = proj.workload_from_object(
        workload("a", pods=1, annotations_request={"required": "example.com/no-such-level"})
    )
    d = decide(state, info, state.cluster_queues["cq"])
    assert d.admitted is False and d.invalid is True
    assert d.admission is None and d.charge is None


def test_a_plain_flavor_admission_has_no_group_to_write():
    state = make_state(two_racks(), rules_cq(("plain", {"cpu": "100", "memory": "1Ti"})))
    plain_flavor(state)
    d = decide(state, proj.workload_from_object(workload("a", pods=2)), state.cluster_queues["cq"])
    assert d.admitted is True and d.group is None


# -- placement groups -------------------------------------------------------------------------


def groups_on(nodes=None, q=None, **options) -> ClusterState:
    state = make_state(nodes or pool(), allowing_exclusive_groups(q or cluster_queue()))
    state.options = SolverOptions(placement_groups=True, **options)
    return state


def test_a_member_that_does_not_fit_its_group_in_one_flavor_tries_the_next():
    state = groups_on(
        q=rules_cq(
            ("one-host", {"cpu": "100", "memory": "1Ti"}), ("tas", {"cpu": "100", "memory": "1Ti"})
        )
    )
    state.upsert_flavor(
        proj.flavor_from_object(
            {
                "metadata": {"name": "one-host"},
                "spec": {"nodeLabels": {HOST: "b1-r1-h1"}, "topologyName": "default"},
            }
        )
    )
    d = admit_member(state, member("a", 6, "g", **{PLACEMENT_GROUP_AFFINITY: RACK}))
    assert flavor_of(d) == "tas"
    assert len({rack_of(h) for h in hosts(d)}) == 1
    assert d.group is not None and d.group.flavor == "tas" and d.group.key == ("ns", "g")


def test_members_of_an_exclusive_group_share_the_domain_it_owns():
    state = groups_on()
    annotations = {PLACEMENT_GROUP_EXCLUSIVE: BLOCK, PLACEMENT_GROUP_AFFINITY: BLOCK}
    first = admit_member(state, member("a", 1, "tenant", **annotations))
    second = admit_member(state, member("b", 4, "tenant", **annotations))
    blocks = {h.split("-")[0] for h in hosts(first) + hosts(second)}
    assert len(blocks) == 1


def test_a_workload_kept_out_of_exclusive_domains_never_preempts_for_them():
    """Preemption simulates plain placements: it would evict for room the exclusive domain
    keeps the workload from using."""
    q = cluster_queue()
    q["spec"]["preemption"] = LOWER
    state = groups_on(q=q)
    state.upsert_local_queue("ns", "cq", "cq")
    admit_member(state, member("t", 1, "tenant", **{PLACEMENT_GROUP_EXCLUSIVE: BLOCK}))
    written(state, "low", "cq", 4, cpu="4")  # every host of the other block
    w = incoming("w", "cq", 4, priority=5, annotations_request={"required": BLOCK})
    d = decide(state, w, state.cluster_queues["cq"])
    assert d.admitted is False and d.preemption is None, d.message
    assert d.message == (
        "couldn't assign flavors to pod set main: "
        'topology "default" doesn\'t allow to fit any of 4 pod(s). Total nodes: 8; '
        'excluded: exclusive placement group: 4, resource "cpu": 4'
    )


def test_a_member_annotated_unlike_its_group_is_told_every_field_that_differs():
    state = groups_on()
    state.upsert_placement_group(
        proj.placement_group_from_object(
            {"metadata": {"name": "g", "namespace": "ns"}, "spec": {"affinityTopology": RACK}}
        )
    )
    annotations = {PLACEMENT_GROUP_AFFINITY: BLOCK, PLACEMENT_GROUP_EXCLUSIVE: HOST}
    d = decide(state, member("x", 1, "g", **annotations), state.cluster_queues["cq"])
    assert d.invalid is True and d.admitted is False
    assert d.message == (
        "the pod template's placement-group annotations differ from PlacementGroup g in "
        "spec.affinityTopology, spec.exclusiveTopology"
    )


def test_the_fragmentation_aware_profile_keeps_other_groups_affinity_domains_to_grow_in():
    """A new group's first member opens its rack in the fullest block, but not in the rack
    another group's affinity holds (which may grow) while another rack has room."""
    state = groups_on(fragmentation_aware=True)
    first = admit_member(state, member("a", 1, "g1", **{PLACEMENT_GROUP_AFFINITY: RACK}))
    (held,) = {rack_of(h) for h in hosts(first)}
    d = admit_member(state, member("b", 3, "g2", **{PLACEMENT_GROUP_AFFINITY: RACK}))
    (rack,) = {rack_of(h) for h in hosts(d)}
    assert rack != held
    assert rack.split("-")[0] == held.split("-")[0]  # the block with the least room


def test_a_refused_members_annotations_hold_nothing_back_from_its_own_group():
    """Only other groups' affinity domains are kept for them to grow in: a pending member whose
    annotations differ (refused) changes nothing for the member after it."""

    def next_member_hosts(with_refused: bool) -> list[str]:
        state = groups_on(fragmentation_aware=True)
        admit_member(state, member("b", 1, "g", **{PLACEMENT_GROUP_AFFINITY: RACK}))
        if with_refused:
            refused = member("a", 1, "g", **{PLACEMENT_GROUP_AFFINITY: HOST})
            state.upsert_workload(refused)
            assert decide(state, refused, state.cluster_queues["cq"]).invalid
        return hosts(admit_member(state, member("c", 1, "g", **{PLACEMENT_GROUP_AFFINITY: RACK})))

    assert next_member_hosts(with_refused=True) == next_member_hosts(with_refused=False)
