"""TASRequiredWithPreferred (solver/required_preferred.py): a required level with a lower
preferred one takes the required domain whose placement spans the fewest lower-level domains;
off, Kueue's required-only BestFit."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.solver import PodSetRequest, SolverOptions, TopologyRequest, TopologySnapshot
from tests.unit.solver.beyond_helpers import (
    BLOCK,
    HOST,
    LEVELS,
    RACK,
    block_of,
    hosts,
    pods_per,
    pods_per_host,
    rack_of,
)

OURS = SolverOptions(required_with_preferred=True)
KUEUE = SolverOptions()


def train(count: int, preferred: str = RACK, cpu: int = 1) -> PodSetRequest:
    return PodSetRequest(
        name="main",
        count=count,
        requests={"cpu": cpu * 1000},
        topology=TopologyRequest(required=BLOCK, inner_preferred=preferred),
    )


# (racks with free cpus per host, pods, racks Kueue spans, racks ours spans, our block)
SCENARIOS = [
    pytest.param(
        {"b1-r1": [1, 1], "b1-r2": [1, 1], "b1-r3": [1, 1], "b2-r1": [1] * 4, "b2-r2": [1] * 4},
        4,
        2,
        1,
        "b2",
        id="kueue-bestfit-block-spreads-ours-takes-one-rack",
    ),
    pytest.param(
        {"a-r1": [2], "a-r2": [2], "a-r3": [2], "b-r1": [3], "b-r2": [3]},
        6,
        3,
        2,
        "b",
        id="nothing-fits-one-rack-fewest-racks-wins",
    ),
    pytest.param(
        {"b1-r1": [1] * 4, "b1-r2": [1], "b2-r1": [1] * 4, "b2-r2": [1] * 3},
        4,
        1,
        1,
        "b1",
        id="tie-on-racks-goes-to-the-block-with-least-room",
    ),
    pytest.param(
        {"b1-r1": [4], "b1-r2": [4], "b2-r1": [2, 2]},
        4,
        1,
        1,
        "b2",
        id="same-as-kueue-when-bestfit-already-is-tightest",
    ),
]


@pytest.mark.parametrize(("racks", "count", "kueue_racks", "our_racks", "our_block"), SCENARIOS)
def test_the_tightest_required_domain(racks, count, kueue_racks, our_racks, our_block):
    ours = TopologySnapshot(LEVELS, hosts(racks), options=OURS).find_assignments([train(count)])
    kueue = TopologySnapshot(LEVELS, hosts(racks), options=KUEUE).find_assignments([train(count)])
    assert ours.admitted and kueue.admitted
    assert len(pods_per(kueue, rack_of)) == kueue_racks
    assert len(pods_per(ours, rack_of)) == our_racks
    assert list(pods_per(ours, block_of)) == [our_block]


def test_a_preferred_hostname_packs_hosts_inside_the_block():
    racks = {"b1-r1": [1, 1, 1, 1], "b2-r1": [2, 2, 1]}
    request = train(4, preferred=HOST)
    ours = TopologySnapshot(LEVELS, hosts(racks), options=OURS).find_assignments([request])
    assert sorted(pods_per_host(ours).values()) == [2, 2]


def test_nothing_fits_gives_kueues_message():
    racks = {"b1-r1": [1, 1], "b2-r1": [1, 1, 1]}
    ours = TopologySnapshot(LEVELS, hosts(racks), options=OURS).find_assignments([train(4)])
    kueue = TopologySnapshot(LEVELS, hosts(racks), options=KUEUE).find_assignments([train(4)])
    assert not ours.admitted
    assert ours.failure == kueue.failure


def test_a_preferred_level_not_below_the_required_one_is_refused():
    racks = {"b1-r1": [1, 1]}
    placement = TopologySnapshot(LEVELS, hosts(racks), options=OURS).find_assignments(
        [train(2, preferred=BLOCK)]
    )
    assert placement.failure is not None and "must be below the required" in placement.failure


# --- properties ------------------------------------------------------------------------------

topologies = st.dictionaries(
    st.sampled_from([f"b{b}-r{r}" for b in range(3) for r in range(3)]),
    st.lists(st.integers(0, 3), min_size=1, max_size=3),
    min_size=1,
    max_size=9,
)


@settings(max_examples=150, deadline=None)
@given(topologies, st.integers(1, 10), st.integers(1, 2), st.sampled_from([RACK, HOST]))
def test_ours_is_never_looser_than_kueue_and_keeps_the_required_block(racks, count, cpu, level):
    nodes = hosts(racks)
    request = train(count, preferred=level, cpu=cpu)
    ours = TopologySnapshot(LEVELS, nodes, options=OURS).find_assignments([request])
    kueue = TopologySnapshot(LEVELS, nodes, options=KUEUE).find_assignments([request])
    assert ours.admitted == kueue.admitted
    if not ours.admitted:
        return
    assert sum(pods_per_host(ours).values()) == count
    assert len(pods_per(ours, block_of)) == 1  # the required level is honoured
    of = rack_of if level == RACK else (lambda host: host)
    assert len(pods_per(ours, of)) <= len(pods_per(kueue, of))
    free = {node.name: node.allocatable["cpu"] // 1000 for node in nodes}
    for host, pods in pods_per_host(ours).items():
        assert pods * cpu <= free[host]  # no node over-committed


@settings(max_examples=100, deadline=None)
@given(topologies, st.integers(1, 10), st.booleans())
def test_gate_off_ignores_the_lower_preferred_level(racks, count, with_preferred):
    nodes = hosts(racks)
    plain = replace(train(count), topology=TopologyRequest(required=BLOCK))
    request = train(count) if with_preferred else plain
    off = TopologySnapshot(LEVELS, nodes, options=KUEUE).find_assignments([request])
    assert off == TopologySnapshot(LEVELS, nodes, options=KUEUE).find_assignments([plain])
