"""The largest gang is what the solver admits: n pods of the shape fit as one pod set, n + 1
do not."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.solver import TopologySnapshot
from tas.solver.types import FlavorSpec, Node, PodSetRequest, Taint, TopologyRequest
from tas.view import gang, live
from tests.unit.admission.fixtures import BLOCK, HOST, RACK, make_state, node, two_racks

LEVELS = (BLOCK, RACK, HOST)


def fits(snapshot: TopologySnapshot, count: int, cpu: int, level: str, mode: str) -> bool:
    request = TopologyRequest(**{mode: level})
    podset = PodSetRequest("p", count, {"cpu": cpu}, topology=request)
    return snapshot.find_assignments([podset]).admitted


nodes = st.lists(
    st.tuples(
        st.integers(0, 1),  # block
        st.integers(0, 2),  # rack
        st.integers(0, 8000),  # cpu
        st.integers(0, 4000),  # used by pods outside TAS
        st.integers(1, 20),  # pods allocatable
        st.booleans(),  # tainted
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=80, deadline=None)
@given(
    nodes,
    st.sampled_from([250, 1000, 1500, 3000]),
    st.sampled_from(LEVELS),
    st.sampled_from(gang.MODES),
)
def test_the_largest_gang_is_what_the_solver_admits(specs, cpu, level, mode):
    snapshot = TopologySnapshot(
        LEVELS,
        [
            Node(
                f"h{i}",
                {BLOCK: f"b{b}", RACK: f"b{b}-r{r}", HOST: f"h{i}"},
                {"cpu": total, "pods": pods * 1000},
                usage={"cpu": used},
                taints=(Taint("gpu", "NoSchedule"),) if tainted else (),
            )
            for i, (b, r, total, used, pods, tainted) in enumerate(specs)
        ],
        FlavorSpec(),
    )
    largest = gang.largest_gang(snapshot, {"cpu": cpu}, level, mode=mode)
    assert largest == 0 or fits(snapshot, largest, cpu, level, mode)
    assert not fits(snapshot, largest + 1, cpu, level, mode)
    # feasibility is monotone in the count, which the binary search relies on
    assert all(fits(snapshot, n, cpu, level, mode) for n in range(1, largest))


@pytest.mark.parametrize(
    ("cpu", "level", "mode", "expected"),
    [
        ("1", HOST, "required", 4),
        ("1", RACK, "required", 8),
        ("1", BLOCK, "required", 16),
        ("3", RACK, "required", 2),  # one per host
        ("1", RACK, "preferred", 16),  # preferred spills over to the other rack
        ("5", HOST, "required", 0),
    ],
    ids=["host", "rack", "block", "one-per-host", "preferred-spills", "too-big"],
)
def test_largest_gangs_per_flavor_on_two_racks_of_two_4_cpu_hosts(cpu, level, mode, expected):
    state = make_state(two_racks())
    milli = int(cpu) * 1000
    assert gang.largest_gangs(state, {"cpu": milli}, level, mode) == {"tas": expected}


def test_a_flavor_whose_topology_lacks_the_level_is_left_out():
    state = make_state(two_racks())
    assert gang.largest_gangs(state, {"cpu": 1000}, "example.com/zone") == {}


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"level": "zone"}, "level"),
        ({"mode": "exact"}, "mode"),
        ({"per_pod": {"cpu": -1}}, "per_pod"),
    ],
    ids=["unknown-level", "unknown-mode", "negative-request"],
)
def test_bad_input_is_named(kwargs, field):
    snapshot = make_state(two_racks()).snapshot("tas")
    args = {"per_pod": {"cpu": 1000}, "level": RACK, "mode": "required", **kwargs}
    with pytest.raises(ValueError, match=f"^{field}:"):
        gang.largest_gang(snapshot, args["per_pod"], args["level"], mode=args["mode"])


def test_most_free_per_level_is_the_freest_domain_of_each_level():
    state = make_state([node("x1", "b1", "r1"), node("x2", "b1", "r2", cpu="8")])
    (flavor,) = live.build(state).flavors
    most = gang.most_free_per_level(flavor)
    assert most[BLOCK]["cpu"] == 12_000 and most[RACK]["cpu"] == 8_000
