"""TASMultiRolePodSetGroups (solver/role_groups.py): a pod-set group of any number of roles is
one gang in one domain of its level, each role's slices honoured; off, Kueue's leader and
workers only (a group of three is refused)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.solver import (
    PodSetRequest,
    SliceLayer,
    SolverOptions,
    TopologyRequest,
    TopologySnapshot,
)
from tests.unit.solver.beyond_helpers import (
    BLOCK,
    LEVELS,
    RACK,
    block_of,
    hosts,
    pods_per,
    pods_per_host,
    rack_of,
)

OURS = SolverOptions(multi_role_groups=True)
KUEUE = SolverOptions()


def role(name: str, count: int, *, slices: int = 0, cpu: int = 1, required: bool = True):
    return PodSetRequest(
        name=name,
        count=count,
        requests={"cpu": cpu * 1000},
        topology=TopologyRequest(
            required=BLOCK if required else None,
            preferred=None if required else BLOCK,
            group_name="rl",
            slice_layers=(SliceLayer(RACK, slices),) if slices else (),
        ),
    )


def rl_job(required: bool = True) -> list[PodSetRequest]:
    """A trainer in rack slices of 2, rollout workers and a reward model (a JobSet's three
    replicatedJobs)."""
    return [
        role("trainer", 4, slices=2, required=required),
        role("rollout", 3, required=required),
        role("reward", 1, cpu=2, required=required),
    ]


def test_the_three_roles_share_one_block_each_role_its_slices():
    # b1 has room for the trainer alone; b2 for all three, the trainer in whole racks
    racks = {"b1-r1": [1] * 4, "b2-r1": [1, 1], "b2-r2": [1, 1], "b2-r3": [1, 1, 1, 2]}
    placement = TopologySnapshot(LEVELS, hosts(racks), options=OURS).find_assignments(rl_job())
    assert placement.admitted, placement.failure
    assert list(pods_per(placement, block_of)) == ["b2"]
    assert [p.count for p in placement.podsets] == [4, 3, 1]
    trainer_racks = pods_per(placement, rack_of, "trainer")
    assert all(count % 2 == 0 for count in trainer_racks.values())


@pytest.mark.parametrize(
    ("racks", "admitted", "blocks"),
    [
        pytest.param(
            {"b1-r1": [1] * 4, "b2-r1": [1] * 3, "b2-r2": [2]}, False, 0, id="no-block-holds-all"
        ),
        pytest.param(
            {"b1-r1": [1] * 9, "b1-r2": [2], "b2-r1": [1] * 20, "b2-r2": [2, 2]},
            True,
            1,
            id="least-room-block-first",
        ),
    ],
)
def test_required_group(racks, admitted, blocks):
    placement = TopologySnapshot(LEVELS, hosts(racks), options=OURS).find_assignments(rl_job())
    assert placement.admitted == admitted
    if admitted:
        assert len(pods_per(placement, block_of)) == blocks
        # the block with least room that holds all three: b1 (11 + 2 < 20 + 4)
        assert list(pods_per(placement, block_of)) == ["b1"]
    else:
        assert placement.failure is not None
        assert "pod set group rl" in placement.failure and BLOCK in placement.failure


def test_a_preferred_group_climbs_then_places_role_by_role():
    racks = {"b1-r1": [1] * 4, "b2-r1": [1] * 3, "b2-r2": [2]}
    placement = TopologySnapshot(LEVELS, hosts(racks), options=OURS).find_assignments(
        rl_job(required=False)
    )
    assert placement.admitted, placement.failure
    assert sum(pods_per_host(placement).values()) == 8
    assert len(pods_per(placement, block_of)) == 2


def test_gate_off_a_group_of_three_is_refused():
    racks = {"b1-r1": [1] * 10}
    placement = TopologySnapshot(LEVELS, hosts(racks), options=KUEUE).find_assignments(rl_job())
    assert placement.failure is not None and "has 3 pod sets" in placement.failure


def test_a_pair_without_a_leader_is_a_gang_with_the_gate():
    racks = {"b1-r1": [1] * 3, "b2-r1": [1] * 6}
    pair = [role("prefill", 3), role("decode", 3)]
    placement = TopologySnapshot(LEVELS, hosts(racks), options=OURS).find_assignments(pair)
    assert placement.admitted and list(pods_per(placement, block_of)) == ["b2"]


# --- properties ------------------------------------------------------------------------------

topologies = st.dictionaries(
    st.sampled_from([f"b{b}-r{r}" for b in range(3) for r in range(3)]),
    st.lists(st.integers(0, 3), min_size=1, max_size=4),
    min_size=1,
    max_size=9,
)
roles = st.lists(
    st.tuples(st.integers(1, 4), st.sampled_from([0, 1, 2]), st.integers(1, 2)),
    min_size=2,
    max_size=4,
)


def group_of(spec, required: bool) -> list[PodSetRequest]:
    out = []
    for index, (slices, size, cpu) in enumerate(spec):
        count = slices * (size or 1)
        out.append(role(f"role{index}", count, slices=size, cpu=cpu, required=required))
    return out


@settings(max_examples=150, deadline=None)
@given(topologies, roles, st.booleans())
def test_a_gang_is_in_one_domain_with_its_slices_and_commits_no_node_twice(racks, spec, required):
    nodes = hosts(racks)
    group = group_of(spec, required)
    placement = TopologySnapshot(LEVELS, nodes, options=OURS).find_assignments(group)
    if not placement.admitted:
        return
    if required:
        assert len(pods_per(placement, block_of)) == 1  # the group's level is honoured
    cpus: Counter = Counter()
    for podset, placed in zip(group, placement.podsets, strict=True):
        assert sum(d.count for d in placed.assignment.domains) == podset.count
        size = podset.topology.slice_layers[0].size if podset.topology.slice_layers else 1
        for count in pods_per(placement, rack_of, podset.name).values():
            assert count % size == 0  # every slice in one rack
        for host, count in pods_per_host(placement, podset.name).items():
            cpus[host] += count * podset.requests["cpu"]
    free = {node.name: node.allocatable["cpu"] for node in nodes}
    assert all(used <= free[host] for host, used in cpus.items())


@settings(max_examples=100, deadline=None)
@given(topologies, st.integers(1, 6), st.integers(1, 3), st.booleans())
def test_the_gates_change_nothing_kueue_accepts(racks, workers, singles, grouped):
    """Kueue's inputs (a leader and workers, plain pod sets) place identically with both of
    our gates on."""
    nodes = hosts(racks)
    podsets = [role(f"single{i}", i, required=True) for i in range(1, singles + 1)]
    podsets = [
        PodSetRequest(p.name, p.count, p.requests, TopologyRequest(required=BLOCK)) for p in podsets
    ]
    if grouped:
        podsets += [role("leader", 1), role("workers", workers)]
    both = SolverOptions(multi_role_groups=True, required_with_preferred=True)
    on = TopologySnapshot(LEVELS, nodes, options=both).find_assignments(podsets)
    off = TopologySnapshot(LEVELS, nodes, options=KUEUE).find_assignments(podsets)
    assert on == off
