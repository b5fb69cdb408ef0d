"""The admission decision with TASProfileFragmentationAware and placement groups that grow:
a workload outside any group keeps out of the affinity domains groups hold while another
domain has room; off, BestFit takes the tightest as Kueue does."""

from __future__ import annotations

import pytest

from tas.admission.decide import decide
from tas.api.constants import PLACEMENT_GROUP_AFFINITY
from tas.cache import projections as proj
from tests.unit.admission.fixtures import RACK, workload
from tests.unit.admission.test_decide_groups import admit, hosts, member, rack_of
from tests.unit.admission.test_decide_preemption_quota_and_groups import groups_on


def plain(name: str, pods: int):
    return proj.workload_from_object(
        workload(name, pods=pods, annotations_request={"required": RACK})
    )


@pytest.mark.parametrize(
    ("aware", "pods", "in_group_rack"),
    [
        # the group's rack has 7 cpu free, every other 8: BestFit takes the group's
        pytest.param(False, 4, True, id="off-tightest-is-the-groups-rack"),
        pytest.param(True, 4, False, id="on-kept-for-the-group"),
        # 8 pods: only the other racks hold them, whatever the gate
        pytest.param(True, 8, False, id="on-too-large-for-the-groups-rack"),
    ],
)
def test_a_workload_outside_groups_and_a_groups_affinity_rack(aware, pods, in_group_rack):
    state = groups_on(fragmentation_aware=aware)
    first = admit(state, member("g1-a", 1, "g1", **{PLACEMENT_GROUP_AFFINITY: RACK}))
    (held,) = {rack_of(h) for h in hosts(first)}
    decision = admit(state, plain("w", pods))
    assert ({rack_of(h) for h in hosts(decision)} == {held}) is in_group_rack


def test_the_groups_rack_is_taken_when_no_other_rack_holds_the_workload():
    state = groups_on(fragmentation_aware=True)
    first = admit(state, member("g1-a", 1, "g1", **{PLACEMENT_GROUP_AFFINITY: RACK}))
    (held,) = {rack_of(h) for h in hosts(first)}
    for name in ("x", "y", "z"):  # fill the three other racks
        admit(state, plain(name, 8))
    decision = decide(state, plain("w", 7), state.cluster_queues["cq"])
    assert decision.admitted, decision.message
    assert {rack_of(h) for h in hosts(decision)} == {held}
