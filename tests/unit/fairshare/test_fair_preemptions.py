"""Fair-sharing preemption against Kueue v0.17.0's TestFairPreemptions
(pkg/scheduler/preemption/preemption_fair_test.go): every case, with Kueue's name, queues,
cohorts, admitted workloads, incoming workload and expected victims with their reasons.

Kueue hands the preemptor an assignment in which cpu of the flavor needs preemption; here
`fair_preemption.find` gets the same request and short (flavor, cpu) pair. The flavors have no
topology, so the fit is quota alone, as in Kueue's test.
"""

from __future__ import annotations

import pytest

from tas.admission import fair_preemption
from tas.api.constants import (
    ANY,
    LOWER_PRIORITY,
    MAY_STOP_SEARCH,
    REASON_IN_CLUSTER_QUEUE,
    REASON_IN_COHORT_FAIR_SHARING,
    REASON_IN_COHORT_RECLAMATION,
)
from tas.api.fairsharing import LESS_THAN_INITIAL_SHARE, LESS_THAN_OR_EQUAL_TO_FINAL_SHARE
from tas.api.quantity import parse_milli
from tas.cache import projections as proj
from tests.unit.fairshare.kueue_objects import (
    BASE_CQS,
    NOW,
    admitted,
    cohort,
    cq,
    state_of,
    workload,
)

CQ_REASON, FS, RECLAIM = (
    REASON_IN_CLUSTER_QUEUE,
    REASON_IN_COHORT_FAIR_SHARING,
    REASON_IN_COHORT_RECLAMATION,
)


def units(queue: str, names: list[str], priority: int = 0) -> list[dict]:
    return [admitted(n, queue, "1", priority) for n in names]


def weighted_abc(weights: dict[str, str]) -> list[dict]:
    return [
        cq(n, "all", {"default": "3"}, within=LOWER_PRIORITY, reclaim=ANY, weight=weights.get(n))
        for n in ("a", "b", "c")
    ]


A3 = units("a", ["a1", "a2", "a3"])
B5 = units("b", ["b1", "b2", "b3", "b4", "b5"])

HIERARCHY_CQS = [
    cq("a", "LEFT", {"default": "1"}, reclaim=ANY, weight="2"),
    cq("b", "LEFT", {"default": "1"}),
    cq("c", "ROOT", {"default": "1"}),
    cq("d", "RIGHT", {"default": "1"}),
    cq("e", "RIGHT", {"default": "1"}, weight="0.99"),
]
HIERARCHY_COHORTS = [
    cohort("ROOT", cpu="5"),
    cohort("LEFT", "ROOT", "5", weight="2"),
    cohort("RIGHT", "ROOT", "5"),
]
DEEP_COHORTS = [
    cohort("ROOT"),
    cohort("A", "ROOT", weight="1.01"),
    cohort("AA", "A"),
    cohort("AAA", "AA"),
    cohort("B", "ROOT", weight="0.99"),
    cohort("BB", "B"),
    cohort("BBB", "BB"),
    cohort("C", "ROOT"),
    cohort("CC", "C"),
    cohort("CCC", "CC"),
    cohort("CCCC", "CCC", "1"),
]
TWO_FLAVORS = [
    cq("a", "all", {"premium": "3", "cheap": "0"}, reclaim=ANY),
    cq("b", "all", {"premium": "0", "cheap": "6"}),
]
for _obj in TWO_FLAVORS[:1]:
    _obj["spec"]["flavorFungibility"] = {
        "whenCanBorrow": MAY_STOP_SEARCH,
        "whenCanPreempt": MAY_STOP_SEARCH,
    }

# name: dict(queues, cohorts, admitted, incoming (name, cpu, priority), target, want, ...)
CASES = {
    "reclaim nominal from user using the most": dict(
        admitted=A3 + B5 + units("c", ["c1"]),
        incoming=("c_incoming", "1", 0),
        target="c",
        want={("b1", RECLAIM)},
    ),
    "can reclaim from queue using less, if taking the latest workload from user using the most "
    "isn't enough": dict(
        admitted=[
            admitted("a1", "a", "3"),
            admitted("a2", "a", "1"),
            admitted("b1", "b", "2"),
            admitted("b2", "b", "3"),
        ],
        incoming=("c_incoming", "3", 0),
        target="c",
        want={("a1", RECLAIM)},
    ),
    "reclaim borrowable quota from user using the most": dict(
        admitted=A3 + B5 + units("c", ["c1"]),
        incoming=("a_incoming", "1", 0),
        target="a",
        want={("b1", FS)},
    ),
    "preempt one from each CQ borrowing": dict(
        admitted=[
            admitted("a1", "a", "0.5"),
            admitted("a2", "a", "0.5"),
            admitted("a3", "a", "3"),
            admitted("b1", "b", "0.5"),
            admitted("b2", "b", "0.5"),
            admitted("b3", "b", "3"),
        ],
        incoming=("c_incoming", "2", 0),
        target="c",
        want={("a1", RECLAIM), ("b1", RECLAIM)},
    ),
    "can't preempt when everyone under nominal": dict(
        admitted=A3 + units("b", ["b1", "b2", "b3"]) + units("c", ["c1", "c2", "c3"]),
        incoming=("c_incoming", "1", 0),
        target="c",
        want=set(),
    ),
    "can't preempt when it would switch the imbalance": dict(
        admitted=A3 + B5,
        incoming=("a_incoming", "2", 0),
        target="a",
        want=set(),
    ),
    "can preempt lower priority workloads from same CQ": dict(
        admitted=units("a", ["a1_low", "a2_low"], -1) + units("a", ["a3", "a4"]) + B5,
        incoming=("a_incoming", "2", 0),
        target="a",
        want={("a1_low", CQ_REASON), ("a2_low", CQ_REASON)},
    ),
    "can preempt a combination of same CQ and highest user": dict(
        admitted=units("a", ["a_low"], -1)
        + units("a", ["a2", "a3"])
        + units("b", ["b1", "b2", "b3", "b4", "b5", "b6"]),
        incoming=("a_incoming", "2", 0),
        target="a",
        want={("a_low", CQ_REASON), ("b1", FS)},
    ),
    "preempt huge workload if there is no other option, as long as the target CQ gets a lower "
    "share": dict(
        admitted=[admitted("b1", "b", "9")],
        incoming=("a_incoming", "2", 0),
        target="a",
        want={("b1", RECLAIM)},
    ),
    "can't preempt huge workload if the incoming is also huge": dict(
        admitted=[admitted("a1", "a", "2"), admitted("b1", "b", "7")],
        incoming=("a_incoming", "5", 0),
        target="a",
        want=set(),
    ),
    "can't preempt 2 smaller workloads if the incoming is huge": dict(
        admitted=[admitted("b1", "b", "2"), admitted("b2", "b", "2"), admitted("b3", "b", "3")],
        incoming=("a_incoming", "6", 0),
        target="a",
        want=set(),
    ),
    "preempt from target and others even if over nominal": dict(
        admitted=[
            admitted("a1_low", "a", "2", -1),
            admitted("a2_low", "a", "1", -1),
            admitted("b1", "b", "3"),
            admitted("b2", "b", "3"),
        ],
        incoming=("a_incoming", "4", 0),
        target="a",
        want={("a1_low", CQ_REASON), ("b1", FS)},
    ),
    "prefer to preempt workloads that don't make the target CQ have the biggest share": dict(
        admitted=[
            admitted("b1", "b", "2"),
            admitted("b2", "b", "1"),
            admitted("b3", "b", "2"),
            admitted("c1", "c", "1"),
        ],
        incoming=("a_incoming", "3.5", 0),
        target="a",
        want={("b2", FS)},
    ),
    "preempt from different cluster queues if the end result has a smaller max share": dict(
        admitted=[
            admitted("b1", "b", "2"),
            admitted("b2", "b", "2.5"),
            admitted("c1", "c", "2"),
            admitted("c2", "c", "2.5"),
        ],
        incoming=("a_incoming", "3.5", 0),
        target="a",
        want={("b1", FS), ("c1", FS)},
    ),
    "scenario above does not flap": dict(
        admitted=[
            admitted("a1", "a", "3.5"),
            admitted("b2", "b", "2.5"),
            admitted("c2", "c", "2.5"),
        ],
        incoming=("b_incoming", "2", 0),
        target="b",
        want=set(),
    ),
    "cannot preempt if it would make the candidate CQ go under nominal after preempting one "
    "element": dict(
        admitted=[admitted("b1", "b", "3"), admitted("b2", "b", "3"), admitted("c1", "c", "3")],
        incoming=("a_incoming", "4", 0),
        target="a",
        want=set(),
    ),
    "workloads under priority threshold not capriciously preempted": dict(
        admitted=A3
        + units("b", ["b1", "b2", "b3"])
        + units("preemptible", ["preemptible1", "preemptible2", "preemptible3"], -3),
        incoming=("a_incoming", "2", 0),
        target="a",
        want=set(),
    ),
    "preempt lower priority first, even if big": dict(
        strategies=(LESS_THAN_INITIAL_SHARE,),
        admitted=[
            admitted("a1", "a", "3"),
            admitted("b_low", "b", "5", 0),
            admitted("b_high", "b", "1", 1),
        ],
        incoming=("a_incoming", "1", 0),
        target="a",
        want={("b_low", FS)},
    ),
    "preempt workload that doesn't transfer the imbalance, even if high priority": dict(
        strategies=(LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,),
        admitted=[
            admitted("a1", "a", "3"),
            admitted("b_low", "b", "5", 0),
            admitted("b_high", "b", "1", 1),
        ],
        incoming=("a_incoming", "1", 0),
        target="a",
        want={("b_high", FS)},
    ),
    "CQ with higher weight can preempt more": dict(
        queues=weighted_abc({"a": "2"}),
        admitted=A3 + units("b", ["b1", "b2", "b3", "b4", "b5", "b6"]),
        incoming=("a_incoming", "2", 0),
        target="a",
        want={("b1", FS), ("b2", FS)},
    ),
    "can preempt anything borrowing from CQ with 0 weight": dict(
        queues=weighted_abc({"b": "0"}),
        admitted=A3 + units("b", ["b1", "b2", "b3", "b4", "b5", "b6"]),
        incoming=("a_incoming", "3", 0),
        target="a",
        want={("b1", FS), ("b2", FS), ("b3", FS)},
    ),
    "can't preempt nominal from CQ with 0 weight": dict(
        queues=weighted_abc({"b": "0"})[:2],
        admitted=A3 + units("b", ["b1", "b2", "b3"]),
        incoming=("a_incoming", "1", 0),
        target="a",
        want=set(),
    ),
    "can't preempt nominal from Cohort with 0 weight": dict(
        queues=[
            cq("left-cq", "root", {"default": "0"}, reclaim=ANY),
            cq("right-cq", "right-cohort", {"default": "0"}, reclaim=ANY, weight="0"),
        ],
        cohorts=[cohort("right-cohort", "root", "1", weight="0")],
        admitted=units("right-cq", ["right-1"]),
        incoming=("left-1", "1", 0),
        target="left-cq",
        want=set(),
    ),
    "can preempt within cluster queue when no cohort": dict(
        queues=[cq("a", None, {"default": "1"}, within=LOWER_PRIORITY)],
        admitted=units("a", ["a1"]),
        incoming=("a_incoming", "1", 1000),
        target="a",
        want={("a1", CQ_REASON)},
    ),
    "hierarchical preemption": dict(
        queues=HIERARCHY_CQS,
        cohorts=HIERARCHY_COHORTS,
        admitted=[
            admitted(f"{q}{p}", q, "1", p) for q in ("b", "c", "d", "e") for p in range(1, 6)
        ],
        incoming=("unit", "5", 0),
        target="a",
        want={("b1", FS), ("b2", FS), ("c1", FS), ("c2", FS), ("e1", FS)},
    ),
    "borrowing cq in non-borrowing cohort is protected": dict(
        queues=[
            cq("a", "ROOT", {"default": "5"}, within=LOWER_PRIORITY, reclaim=ANY, weight="10"),
            cq("b", "RIGHT", weight="0.1"),
        ],
        cohorts=[cohort("ROOT"), cohort("RIGHT", "ROOT", "1", weight="0.1")],
        admitted=units("a", ["a1", "a2", "a3"], -1) + units("b", ["b1"], -1),
        incoming=("unit", "5", 0),
        target="a",
        want={("a1", CQ_REASON), ("a2", CQ_REASON), ("a3", CQ_REASON)},
    ),
    "forced to preempt within clusterqueue because borrowing workload too important": dict(
        queues=[
            cq(
                "a",
                "ROOT",
                {"default": "5"},
                within=LOWER_PRIORITY,
                reclaim=LOWER_PRIORITY,
                weight="10",
            ),
            cq("b", "RIGHT", weight="0.1"),
        ],
        cohorts=[cohort("ROOT"), cohort("RIGHT", "ROOT", "3", weight="0.1")],
        admitted=[*units("a", ["a1", "a2", "a3"], -1), admitted("b1", "b", "4", 100)],
        incoming=("unit", "4", 0),
        target="a",
        want={("a1", CQ_REASON), ("a2", CQ_REASON), ("a3", CQ_REASON)},
    ),
    "deep preemption": dict(
        queues=[
            cq("a", "AAA", {"default": "0"}, reclaim=ANY),
            cq("b", "BBB", {"default": "0"}),
        ],
        cohorts=DEEP_COHORTS,
        admitted=units("b", ["b1"]),
        incoming=("a1", "1", 0),
        target="a",
        want={("b1", FS)},
    ),
    "cq with zero weight can reclaim nominal quota": dict(
        queues=[
            cq("a", "ROOT", {"default": "1"}, reclaim=ANY, weight="0.0"),
            cq("b", "ROOT", {"default": "0"}, weight="1.0"),
        ],
        admitted=units("b", ["b1"]),
        incoming=("a1", "1", 0),
        target="a",
        want={("b1", RECLAIM)},
    ),
    "cohort with zero weight can reclaim nominal quota": dict(
        queues=[
            cq("a", "A", {"default": "0"}, reclaim=ANY, weight="0.0"),
            cq("b", "ROOT", {"default": "0"}, weight="1.0"),
        ],
        cohorts=[cohort("A", "ROOT", "1", weight="0.0")],
        admitted=units("b", ["b1"]),
        incoming=("a1", "1", 0),
        target="a",
        want={("b1", FS)},
    ),
    "nominal first: workload fitting within nominal can preempt despite high aggregate DRS": dict(
        queues=TWO_FLAVORS,
        flavors=("premium", "cheap"),
        flavor="premium",
        admitted=[
            admitted("a_prem1", "a", flavor="premium"),
            admitted("a_prem2", "a", flavor="premium"),
        ]
        + [admitted(f"a_cheap{i}", "a", flavor="cheap") for i in range(1, 6)]
        + [admitted("b_prem1", "b", flavor="premium")],
        incoming=("a_incoming", "1", 0),
        target="a",
        want={("b_prem1", RECLAIM)},
    ),
}


def preempt(case: dict):
    flavor = case.get("flavor", "default")
    kwargs = {"strategies": case["strategies"]} if "strategies" in case else {}
    state = state_of(
        case.get("queues", BASE_CQS),
        case.get("cohorts", []),
        case["admitted"],
        flavors=case.get("flavors", ("default",)),
        **kwargs,
    )
    name, cpu, priority = case["incoming"]
    target = case["target"]
    preemptor = proj.workload_from_object(workload(name, cpu, priority, queue=f"lq-{target}"))
    info = state.cluster_queues[target]
    fq = next(f for g in info.resource_groups for f in g.flavors if f.flavor == flavor)
    fr = (flavor, "cpu")
    tree = state.quota_tree()
    return state, fair_preemption.find(
        state, tree, preemptor, info, fq, {fr: parse_milli(cpu)}, frozenset({fr}), NOW
    )


@pytest.mark.parametrize("name", list(CASES))
def test_fair_preemptions(name: str) -> None:
    case = CASES[name]
    _state, result = preempt(case)
    got = (
        set() if isinstance(result, str) else {(t.workload.name, t.reason) for t in result.targets}
    )
    assert got == case["want"]


@pytest.mark.parametrize("name", list(CASES))
def test_the_simulation_is_undone(name: str) -> None:
    """Kueue's test checks the snapshot is left as it was."""
    case = CASES[name]
    state = state_of(case.get("queues", BASE_CQS), case.get("cohorts", []), case["admitted"])
    tree = state.quota_tree()
    frs = [(f, "cpu") for f in ("default", "premium", "cheap")]
    before = {(q, fr): tree.usage(("cq", q), fr) for q in state.cluster_queues for fr in frs}
    state, _ = preempt(case)
    tree = state.quota_tree()
    after = {(q, fr): tree.usage(("cq", q), fr) for q in state.cluster_queues for fr in frs}
    assert after == before
