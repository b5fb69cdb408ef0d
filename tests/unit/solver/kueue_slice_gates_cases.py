"""Placements under Kueue v0.20's TASGroupedPodSetSlicing and TASPartialSlices gates.

Grouped slicing: the three scheduler cases Kueue's PR "TAS: Enable PodSet slicing alongside
PodSet grouping" added to pkg/cache/scheduler/tas_cache_test.go (names and expectations are
Kueue's; the replacement case is in test_kueue_slice_gates.py). Placement itself needed no
change for them: the gate only lets such groups through validation.

Partial slices: Kueue's PR "TAS: place a partial PodSet slice" (pkg/cache/scheduler/
tas_partial_slices.go). Its own test table was not in the stored copies we could read, so these
expectations are traced by hand through that file and tas_flavor_snapshot.go: the user story of
the PR (a 16-pod LeaderWorkerSet, 15 workers and a leader, in 4 racks of 4: three whole rack
slices and one rack holding the leader and 3 workers), the three cases of the older, closed
PR "Allow partial final slice" (their topologies; the expectations are the merged algorithm's,
which differ from that PR's), and cases for each rule of the algorithm (their names and
notes say which rule).
"""

from __future__ import annotations

from tas.solver import Node, PodSetRequest, SliceLayer, TopologyAssignment, TopologyRequest
from tests.unit.solver.solver_test_helpers import (
    BLOCK,
    HOST,
    ONE_LEVEL,
    RACK,
    THREE_LEVELS,
    ExpectedPodSet,
    KueueCase,
    assignment,
    kueue_requests,
    node,
)

PARTIAL = {"TASPartialSlices": True}
GROUPED = {"TASGroupedPodSetSlicing": True}


def host(block: str, rack: str, name: str, cpu: str) -> Node:
    return node(
        f"{block}-{rack}-{name}", {BLOCK: block, RACK: rack, HOST: name}, {"cpu": cpu, "pods": "10"}
    )


def hosts(*pairs: tuple[str, int]) -> TopologyAssignment:
    return assignment(ONE_LEVEL, [((name,), count) for name, count in pairs])


def sliced(count: int, level: str, size: int, cpu: int = 1000, **topology) -> PodSetRequest:
    request = TopologyRequest(slice_layers=(SliceLayer(level, size),), **topology)
    return PodSetRequest("main", count, kueue_requests({"cpu": cpu}), request)


def grouped(name: str, count: int, cpu: int, **topology) -> PodSetRequest:
    request = TopologyRequest(required=BLOCK, group_name="sameGroup", **topology)
    return PodSetRequest(name, count, kueue_requests({"cpu": cpu}), request)


FIVE_HOSTS_TWO_RACKS = tuple(
    host("b1", rack, name, "1")
    for rack, name in (("r1", "x1"), ("r1", "x2"), ("r2", "x3"), ("r2", "x4"), ("r2", "x5"))
)

GROUPED_CASES = [
    KueueCase(
        "grouped with leader and sliced workers; hostname level slicing with lower leader requirement",
        levels=THREE_LEVELS,
        nodes=(host("b1", "r1", "x1", "5"), host("b1", "r1", "x2", "5")),
        gates=GROUPED,
        podsets=(
            ExpectedPodSet(grouped("leader", 1, 1000), want=hosts(("x1", 1))),
            ExpectedPodSet(
                grouped("workers", 4, 2000, slice_layers=(SliceLayer(HOST, 2),)),
                want=hosts(("x1", 2), ("x2", 2)),
            ),
        ),
    ),
    KueueCase(
        "grouped with leader and sliced workers; multi-layer slicing constraints on workers",
        levels=THREE_LEVELS,
        nodes=tuple(
            host("b1", rack, name, "5")
            for rack, name in (("r1", "x1"), ("r1", "x2"), ("r2", "x3"), ("r2", "x4"))
        ),
        gates=GROUPED,
        podsets=(
            ExpectedPodSet(grouped("leader", 1, 1000), want=hosts(("x1", 1))),
            ExpectedPodSet(
                grouped(
                    "workers", 8, 2000, slice_layers=(SliceLayer(RACK, 4), SliceLayer(HOST, 2))
                ),
                want=hosts(("x1", 2), ("x2", 2), ("x3", 2), ("x4", 2)),
            ),
        ),
    ),
]

LWS_RACKS = tuple(host("b1", f"r{r}", f"r{r}-h{h}", "1") for r in range(1, 5) for h in range(1, 5))

PARTIAL_CASES = [
    KueueCase(
        "user story: a 16-pod LeaderWorkerSet fills 4 racks of 4, the leader beside the partial slice",
        levels=THREE_LEVELS,
        nodes=LWS_RACKS,
        gates={**PARTIAL, **GROUPED},
        podsets=(
            ExpectedPodSet(grouped("leader", 1, 1000), want=hosts(("r1-h1", 1))),
            ExpectedPodSet(
                grouped("workers", 15, 1000, slice_layers=(SliceLayer(RACK, 4),)),
                # the partial slice's rack comes last: the ungater hands out ranks in order
                want=hosts(
                    *((f"r{r}-h{h}", 1) for r in (2, 3, 4) for h in range(1, 5)),
                    ("r1-h2", 1),
                    ("r1-h3", 1),
                    ("r1-h4", 1),
                ),
            ),
        ),
    ),
    KueueCase(
        "block required for podset; rack required for slices; partial final slice; last slice is not full but full slices would fit",
        levels=THREE_LEVELS,
        nodes=FIVE_HOSTS_TWO_RACKS,
        gates=PARTIAL,
        note="closed PR's topology; merged algorithm: r2 holds the whole slice and the tail",
        podsets=(
            ExpectedPodSet(
                sliced(3, RACK, 2, required=BLOCK), want=hosts(("x3", 1), ("x4", 1), ("x5", 1))
            ),
        ),
    ),
    KueueCase(
        "block required for podset; rack required for slices; partial final slice; last slice is not full but full slices would not fit",
        levels=THREE_LEVELS,
        nodes=FIVE_HOSTS_TWO_RACKS,
        gates=PARTIAL,
        note="closed PR's topology; merged algorithm: r1 one slice, r2 one slice and the tail",
        podsets=(
            ExpectedPodSet(
                sliced(5, RACK, 2, required=BLOCK),
                want=hosts(("x1", 1), ("x2", 1), ("x3", 1), ("x4", 1), ("x5", 1)),
            ),
        ),
    ),
    KueueCase(
        "block required for podset; rack required for slices; partial slice; all slices fit in one domain;",
        levels=THREE_LEVELS,
        nodes=(host("b1", "r1", "x1", "6"),),
        gates=PARTIAL,
        podsets=(ExpectedPodSet(sliced(5, RACK, 2, required=BLOCK), want=hosts(("x1", 5))),),
    ),
    KueueCase(
        "rack required; host slices; best fit ranks racks by whole slices left beside the tail",
        levels=(RACK, HOST),
        nodes=tuple(
            node(name, {RACK: rack, HOST: name}, {"cpu": cpu})
            for rack, name, cpu in (("r1", "x1", "6"), ("r2", "x2", "4"), ("r3", "x3", "5"))
        ),
        gates=PARTIAL,
        note="r2 has the 2 whole slices but not the tail beside them; r1 and r3 hold both, "
        "r3 with fewer whole slices to spare",
        podsets=(ExpectedPodSet(sliced(5, HOST, 2, required=RACK), want=hosts(("x3", 5))),),
    ),
    KueueCase(
        "rack preferred; rack slices; the tail opens one more rack and is published last",
        levels=(RACK, HOST),
        nodes=(
            node("x1", {RACK: "r1", HOST: "x1"}, {"cpu": "3"}),
            node("x2", {RACK: "r2", HOST: "x2"}, {"cpu": "4"}),
        ),
        gates=PARTIAL,
        note="no rack holds the whole slice and the tail: r2 takes the slice, r1 the tail",
        podsets=(
            ExpectedPodSet(sliced(6, RACK, 4, preferred=RACK), want=hosts(("x2", 4), ("x1", 2))),
        ),
    ),
    KueueCase(
        "slice-only; LeastFreeCapacity takes the smallest block holding a slice and the tail",
        levels=(BLOCK, HOST),
        nodes=(
            node("x1", {BLOCK: "b1", HOST: "x1"}, {"cpu": "3"}),
            node("x2", {BLOCK: "b2", HOST: "x2"}, {"cpu": "8"}),
        ),
        gates=PARTIAL,
        podsets=(ExpectedPodSet(sliced(3, HOST, 2), want=hosts(("x1", 3))),),
    ),
    KueueCase(
        "block required; host slices; the tail counts as a slice in the failure",
        levels=THREE_LEVELS,
        nodes=(host("b1", "r1", "x1", "2"), host("b1", "r1", "x2", "2")),
        gates=PARTIAL,
        note="4 pods of room are 2 slices of 2, with no room for the fifth pod",
        podsets=(
            ExpectedPodSet(
                sliced(5, HOST, 2, required=BLOCK),
                reason='topology "default" allows to fit only 2 out of 3 slice(s)',
            ),
        ),
    ),
]
