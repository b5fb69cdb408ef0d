"""TASProfileFragmentationAware inside the chosen domain (solver/profile.py): the domains under
it are taken fullest first, so whole racks and hosts stay whole for the gangs that need them;
off, Kueue's BestFit takes the emptiest first. And, whatever the cluster: nothing
over-committed, a required level honoured, admitted whenever BestFit admits."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.solver import (
    Node,
    PodSetRequest,
    SliceLayer,
    SolverOptions,
    TopologyRequest,
    TopologySnapshot,
)

LEVELS = ("block", "rack", "kubernetes.io/hostname")
HOST_CPU = 4000  # a host holds 4 pods of 1 cpu
KUEUE = SolverOptions()
OURS = SolverOptions(fragmentation_aware=True)


def cluster(used: dict[str, int], blocks: int = 1, racks: int = 4, hosts: int = 2) -> list[Node]:
    """Hosts b<b>-r<r>-h<h> of 4 cpu, `used` cpu on some of them."""
    out = []
    for b in range(blocks):
        for r in range(racks):
            for h in range(hosts):
                name = f"b{b}-r{r}-h{h}"
                labels = {"block": f"b{b}", "rack": f"b{b}-r{r}", "kubernetes.io/hostname": name}
                usage = {"cpu": used[name]} if name in used else {}
                out.append(Node(name, labels, {"cpu": HOST_CPU}, usage))
    return out


def request(count: int, level: str, slice_size: int = 0, preferred: bool = False):
    layers = (SliceLayer("rack", slice_size),) if slice_size else ()
    topology = (
        TopologyRequest(preferred=level, slice_layers=layers)
        if preferred
        else TopologyRequest(required=level, slice_layers=layers)
    )
    return PodSetRequest("main", count, {"cpu": 1000}, topology)


def place(snapshot: TopologySnapshot, podset: PodSetRequest) -> Counter:
    """Pods per host; the usage is added to the snapshot."""
    placed = snapshot.find_assignments([podset])
    assert placed.admitted, placed.failure
    assignment = placed.podsets[0].assignment
    snapshot.add_usage(assignment, podset.requests)
    return Counter({d.values[-1]: d.count for d in assignment.domains})


def racks(pods: Counter) -> Counter:
    out: Counter = Counter()
    for host, count in pods.items():
        out[host.rsplit("-", 1)[0]] += count
    return out


# Racks of 8 pods: r0 and r1 whole, r2 and r3 with 3 free each (a full host, a host with 3).
TWO_PARTLY_USED_RACKS = {"b0-r2-h0": 4000, "b0-r2-h1": 1000, "b0-r3-h0": 4000, "b0-r3-h1": 1000}


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        # Kueue: the emptiest rack first (8 of r0), then the tightest for the rest (2 of r2)
        pytest.param(KUEUE, {"b0-r0": 8, "b0-r2": 2}, id="kueue-emptiest-rack-first"),
        # ours: the partly used racks first (3 and 3), then 4 of a whole one
        pytest.param(OURS, {"b0-r2": 3, "b0-r3": 3, "b0-r0": 4}, id="ours-fullest-rack-first"),
    ],
)
def test_a_block_gang_takes_the_racks_in_the_profiles_order(options, expected):
    snapshot = TopologySnapshot(LEVELS, cluster(TWO_PARTLY_USED_RACKS), options=options)
    assert racks(place(snapshot, request(10, "block"))) == expected


@pytest.mark.parametrize(
    ("options", "admitted"),
    [pytest.param(KUEUE, False, id="kueue"), pytest.param(OURS, True, id="ours")],
)
def test_rack_sized_slices_still_fit_after_a_block_gang_only_with_the_gate(options, admitted):
    snapshot = TopologySnapshot(LEVELS, cluster(TWO_PARTLY_USED_RACKS), options=options)
    place(snapshot, request(10, "block"))
    # 12 pods are left either way; 3 slices of 4 in a rack each need r1 whole and 4 in r0
    after = snapshot.find_assignments([request(12, "block", slice_size=4)])
    assert after.admitted is admitted


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        # Kueue: the empty host first, then the tightest for the rest: both hosts broken
        pytest.param(KUEUE, {"b0-r0-h1": 4, "b0-r0-h0": 1}, id="kueue-emptiest-host-first"),
        # ours: the half-used host first (2), then 3 of the other
        pytest.param(OURS, {"b0-r0-h0": 2, "b0-r0-h1": 3}, id="ours-fullest-host-first"),
    ],
)
def test_a_rack_gang_takes_the_hosts_in_the_profiles_order(options, expected):
    # one rack: a host with 2 free, one with 4
    nodes = cluster({"b0-r0-h0": 2000}, racks=1)
    snapshot = TopologySnapshot(LEVELS, nodes, options=options)
    assert place(snapshot, request(5, "rack")) == expected


@pytest.mark.parametrize(
    ("level", "preferred"),
    [
        pytest.param("block", False, id="required-block"),
        pytest.param("rack", False, id="required-rack"),
        pytest.param("rack", True, id="preferred-rack"),
    ],
)
def test_a_request_no_domain_holds_is_left_to_bestfit(level, preferred):
    # 2 blocks of 2 racks: no rack holds 9, no block holds 17; Kueue's answer stands
    used = {"b0-r0-h0": 1000, "b1-r1-h1": 3000}
    count = 9 if level == "rack" else 17
    answers = []
    for options in (KUEUE, OURS):
        snapshot = TopologySnapshot(LEVELS, cluster(used, blocks=2, racks=2), options=options)
        placed = snapshot.find_assignments([request(count, level, preferred=preferred)])
        answers.append((placed.admitted, placed.podsets, placed.failure))
    assert answers[0] == answers[1]
    assert answers[0][0] is preferred


# ---------------------------------------------------------------------------------------------
# Properties, on random small clusters (2 blocks x 2 racks x 3 hosts) and requests.

HOSTS = [f"b{b}-r{r}-h{h}" for b in range(2) for r in range(2) for h in range(3)]


@st.composite
def cases(draw: st.DrawFn) -> tuple[dict[str, int], PodSetRequest]:
    used = {name: draw(st.integers(0, 4)) * 1000 for name in HOSTS}
    level = draw(st.sampled_from(["block", "rack", "kubernetes.io/hostname"]))
    slice_size = draw(st.sampled_from([0, 0, 2, 3])) if level == "block" else 0
    count = draw(st.integers(1, 16))
    if slice_size:
        count = max(1, count // slice_size) * slice_size
    return used, request(count, level, slice_size, preferred=draw(st.booleans()))


def path_of(host: str) -> tuple[str, str, str]:
    return host.split("-")[0], host.rsplit("-", 1)[0], host


@settings(max_examples=150, deadline=None)
@given(cases())
def test_placed_whenever_bestfit_places_within_free_capacity_and_the_level(case):
    used, podset = case
    nodes = cluster(used, blocks=2, racks=2, hosts=3)
    kueue = TopologySnapshot(LEVELS, nodes, options=KUEUE).find_assignments([podset])
    ours = TopologySnapshot(LEVELS, nodes, options=OURS).find_assignments([podset])
    if kueue.admitted:
        assert ours.admitted, ours.failure
    if not ours.admitted:
        return
    pods = Counter({d.values[-1]: d.count for d in ours.podsets[0].assignment.domains})
    assert sum(pods.values()) == podset.count
    for host, count in pods.items():  # nothing over-committed
        assert count * 1000 <= HOST_CPU - used[host]
    topology = podset.topology
    if topology.required:  # every pod in one domain of the required level
        depth = LEVELS.index(topology.required)
        domains = {path_of(h)[depth] for h in pods}
        assert len(domains) == 1
    if topology.slice_layers:  # every rack holds whole slices
        size = topology.slice_layers[0].size
        assert all(count % size == 0 for count in racks(pods).values())
