"""TASProfileFragmentationAware and placement groups that grow: a group opening its affinity
domain takes the emptiest domain in the parent with the least room (room to grow), and pod
sets outside groups keep out of the affinity domains groups hold while anything else fits.
Off, both are Kueue's BestFit as before.

Expected placements are worked out by hand from the docstrings of groups.py and snapshot.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.solver import Node, PodSetRequest, SolverOptions, TopologyRequest, TopologySnapshot
from tas.solver.groups import GroupPlacementFailure, GroupRules, GroupState, Layout, place

HOST = "kubernetes.io/hostname"
LEVELS = ("block", "rack", HOST)
BLOCK, RACK = 0, 1
NAMES = [f"b{b}-r{r}-h{h}" for b in range(2) for r in range(2) for h in range(2)]


def hosts(used: list[int], cpu: int = 4) -> list[Node]:
    """Hosts b{0,1}-r{0,1}-h{0,1} in that order, `used[i]` of their `cpu` CPUs taken."""
    return [
        Node(
            name,
            {"block": name[:2], "rack": name[:5], HOST: name},
            {"cpu": cpu * 1000},
            {"cpu": u * 1000} if u else {},
        )
        for name, u in zip(NAMES, used, strict=True)
    ]


def snapshot(used: list[int], aware: bool) -> TopologySnapshot:
    options = SolverOptions(fragmentation_aware=aware)
    return TopologySnapshot(LEVELS, hosts(used), options=options)


def pods(count: int, **topology: str) -> PodSetRequest:
    return PodSetRequest("main", count, {"cpu": 1000}, TopologyRequest(**topology))


def racks_of(placement) -> set[str]:
    assert placement.admitted, placement.failure
    return {d.values[-1][:5] for p in placement.podsets for d in p.assignment.domains}


# Free CPUs per rack: b0-r0 6, b0-r1 8 (block b0: 14); b1-r0 5, b1-r1 3 (block b1: 8).
USED = [1, 1, 0, 0, 1, 2, 2, 3]


@pytest.mark.parametrize(
    ("aware", "count", "expected"),
    [
        # BestFit: the tightest rack anywhere that holds the pods
        pytest.param(False, 3, "b1-r1", id="off-tightest"),
        pytest.param(False, 6, "b0-r0", id="off-tightest-large"),
        # the profile: the block with the least room that fits, there the emptiest rack
        pytest.param(True, 3, "b1-r0", id="on-emptiest-in-fullest-block"),
        pytest.param(True, 6, "b0-r1", id="on-only-b0-fits"),
    ],
)
def test_a_group_opens_its_affinity_domain(aware, count, expected):
    snap = snapshot(USED, aware)
    placement, _ = snap.find_group_assignment(
        pods(count), GroupRules(affinity=RACK), GroupState(), {}
    )
    assert racks_of(placement) == {expected}


@pytest.mark.parametrize(
    ("aware", "count", "expected"),
    [
        # b1-r0 is another group's: kept while the pods fit elsewhere (b1-r1 first: b1 fuller)
        pytest.param(True, 3, {"b1-r1"}, id="kept-for-the-group"),
        # 8 pods in one rack: only b0-r1 holds them
        pytest.param(True, 8, {"b0-r1"}, id="only-one-fits"),
        pytest.param(False, 5, {"b1-r0"}, id="off-bestfit-takes-it"),
    ],
)
def test_pod_sets_outside_groups_keep_out_of_growing_domains(aware, count, expected):
    snap = snapshot(USED, aware)
    layout = snap.group_layout()
    reserved = layout.leaves_under(RACK, {("b1", "b1-r0")})
    placement = snap.find_assignments([pods(count, required="rack")], reserved=reserved)
    assert racks_of(placement) == expected


def test_growing_domains_are_used_when_nothing_else_holds_the_pod_set():
    snap = snapshot(USED, True)
    all_but_b1_r1 = ~snap.group_layout().leaves_under(RACK, {("b1", "b1-r1")})
    # 3 pods: b1-r1 (3 free) holds them, the reserved racks stay free
    placement = snap.find_assignments([pods(3, required="rack")], reserved=all_but_b1_r1)
    assert racks_of(placement) == {"b1-r1"}
    # 6 pods: only reserved racks hold them; the profile's choice among all (b0's tightest)
    placement = snap.find_assignments([pods(6, required="rack")], reserved=all_but_b1_r1)
    assert racks_of(placement) == {"b0-r0"}


# -- properties ------------------------------------------------------------------------------

used_cpus = st.lists(st.integers(0, 4), min_size=8, max_size=8)
reserved_racks = st.sets(st.sampled_from([("b0", "b0-r0"), ("b0", "b0-r1"), ("b1", "b1-r0")]))


@settings(max_examples=150, deadline=None)
@given(
    used_cpus, st.integers(1, 12), reserved_racks, st.booleans(), st.sampled_from(["rack", "block"])
)
def test_no_host_over_committed_and_the_required_level_honoured(used, count, kept, aware, level):
    snap = snapshot(used, aware)
    reserved = snap.group_layout().leaves_under(RACK, kept)
    placement = snap.find_assignments([pods(count, required=level)], reserved=reserved)
    if not placement.admitted:
        # it fails only when BestFit fails too: the reserved room is a first try, not a limit
        assert not snapshot(used, False).find_assignments([pods(count, required=level)]).admitted
        return
    [placed] = placement.podsets
    free = dict(zip(NAMES, (4 - u for u in used), strict=True))
    assert sum(d.count for d in placed.assignment.domains) == count
    for domain in placed.assignment.domains:
        assert domain.count <= free[domain.values[-1]]
    width = 2 if level == "block" else 5
    assert len({d.values[-1][:width] for d in placed.assignment.domains}) == 1


@settings(max_examples=150, deadline=None)
@given(used_cpus, st.integers(1, 12), reserved_racks, st.sampled_from([None, "rack", "block"]))
def test_with_the_profile_off_reserved_domains_change_nothing(used, count, kept, level):
    snap = snapshot(used, False)
    reserved = snap.group_layout().leaves_under(RACK, kept)
    podset = pods(count, **({"required": level} if level else {}))
    assert snap.find_assignments([podset], reserved=reserved) == snap.find_assignments([podset])
    layout = snap.group_layout()
    capacity = np.array([4 - u for u in used])
    rules = GroupRules(affinity=RACK)
    kwargs = dict(rules=rules, state=GroupState(), fragmentation_aware=False)
    assert _place_or_error(layout, capacity, count, reserved=reserved, **kwargs) == (
        _place_or_error(layout, capacity, count, **kwargs)
    )


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(0, 4), min_size=8, max_size=8),
    st.lists(st.integers(1, 6), min_size=1, max_size=4),
    st.sampled_from([BLOCK, RACK]),
)
def test_a_growing_group_stays_in_one_domain_within_capacity(caps, steps, affinity):
    layout = Layout(LEVELS, [(n[:2], n[:5], n) for n in NAMES])
    capacity = np.array(caps)
    state = GroupState()
    rules = GroupRules(affinity=affinity)
    for count in steps:
        try:
            planned = place(layout, capacity, count, rules, state, fragmentation_aware=True)
        except GroupPlacementFailure:
            continue
        assert sum(planned.pods.values()) == count
        for path, n in planned.pods.items():
            capacity[layout.leaf_of[path]] -= n
        assert (capacity >= 0).all()
        state.add(planned)
        assert len(state.domains_at(affinity)) == 1


def _place_or_error(layout, capacity, count, **kwargs):
    try:
        return place(layout, capacity, count, **kwargs).pods
    except GroupPlacementFailure as failure:
        return str(failure)
