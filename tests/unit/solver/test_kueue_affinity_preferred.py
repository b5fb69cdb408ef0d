"""TASRespectNodeAffinityPreferred against Kueue's expectations (kueue_affinity_cases.py), and
its domain orders (Kueue's TestSortedDomains / TestSortedDomainsWithLeader affinity cases).

Preferred affinity orders domains only on the plain path: both `reference` settings run it
(the snapshot leaves the vectorized path for it), and must agree.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from tas.solver import (
    FlavorSpec,
    NodeSelectorTerm,
    PodSetRequest,
    PreferredSchedulingTerm,
    SolverOptions,
    TopologyRequest,
    TopologySnapshot,
)
from tas.solver.algorithm import find_best_fit_domain, sorted_domains, sorted_domains_with_leader
from tas.solver.filters import affinity_score
from tests.unit.solver import kueue_affinity_cases
from tests.unit.solver.kueue_affinity_cases import CASES, US_WEST
from tests.unit.solver.solver_test_helpers import HOST, KueueCase, node
from tests.unit.solver.test_kueue_find_topology_assignments import (
    assert_kueue_result,
    snapshot_for,
)
from tests.unit.solver.test_sorting import named

PATHS = [pytest.param(False, id="default"), pytest.param(True, id="plain")]


@pytest.mark.parametrize("reference", PATHS)
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_kueue_preferred_affinity_cases(case: KueueCase, reference: bool):
    assert_kueue_result(case, lambda: snapshot_for(case, reference=reference))


@pytest.mark.parametrize(
    "name",
    [
        "with preferred affinity",
        "affinity ordering with preferred inner topology level bubbles up to parent level to "
        "avoid splitting across parent domains",
    ],
)
def test_without_the_gate_preferred_affinity_changes_nothing(name: str):
    """Two of Kueue's cases whose answer the gate changes: without it the terms are read and
    ignored."""
    case = next(c for c in CASES if c.name == name)
    gate_off = {"TASRespectNodeAffinityPreferred": False}
    without_terms = [replace(ps.request, preferred_affinity=()) for ps in case.podsets]
    got = snapshot_for(case, gate_off).find_assignments([ps.request for ps in case.podsets])
    want = snapshot_for(case, gate_off).find_assignments(without_terms)
    assert got == want
    assert got != snapshot_for(case).find_assignments([ps.request for ps in case.podsets])


@pytest.mark.parametrize("feasibility", [False, True])
def test_only_where_leaves_are_nodes(feasibility: bool):
    """Kueue scores nodes, so a rack-lowest topology orders by affinity only with
    TASNodeFeasibilityForAllLevels, whose leaves are nodes."""
    rack = kueue_affinity_cases.RACK
    nodes = [
        node("big", {rack: "r1", "region": "us-east"}, {"cpu": "8", "pods": "10"}),
        node("small", {rack: "r2", "region": "us-west"}, {"cpu": "2", "pods": "10"}),
    ]
    options = SolverOptions(
        respect_node_affinity_preferred=True, node_feasibility_all_levels=feasibility
    )
    podset = PodSetRequest(
        "main", 1, {"cpu": 1000}, TopologyRequest(preferred=rack), preferred_affinity=US_WEST
    )
    result = TopologySnapshot((rack,), nodes, FlavorSpec(), options).find_assignments([podset])
    # BestFit alone takes the tighter rack, r2, too; so ask for more than r2 holds
    assert result.podsets[0].assignment.domains[0].values == ("r2",)
    big = PodSetRequest(
        "main", 3, {"cpu": 1000}, TopologyRequest(preferred=rack), preferred_affinity=US_WEST
    )
    result = TopologySnapshot((rack,), nodes, FlavorSpec(), options).find_assignments([big])
    domains = {d.values: d.count for d in result.podsets[0].assignment.domains}
    # preferred rack: the preferred r2 holds 2 of 3, so Kueue climbs to the top (spreads):
    # with affinity r2 first, without it the roomiest r1 alone
    assert domains == ({("r2",): 2, ("r1",): 1} if feasibility else {("r1",): 3})


# -- orders: Kueue's TestSortedDomains / TestSortedDomainsWithLeader affinity cases -------------


def _scored(*specs):
    """(id, value, slices, pods, leaders, affinity) -> domains of one level."""
    domains = named(*(spec[:5] for spec in specs))
    for domain, spec in zip(domains, specs, strict=True):
        domain.affinity_score = spec[5]
    return domains


TWO_SCORES = (("low-affinity", "a", 5, 10, 1, 10), ("high-affinity", "b", 5, 10, 1, 100))


@pytest.mark.parametrize(
    ("affinity", "want"),
    [
        pytest.param(True, ["high-affinity", "low-affinity"], id="affinityScore descending"),
        pytest.param(
            False, ["low-affinity", "high-affinity"], id="affinityScore ignored without the gate"
        ),
    ],
)
@pytest.mark.parametrize("with_leader", [False, True], ids=["sortedDomains", "withLeader"])
def test_affinity_orders_first(affinity: bool, want, with_leader: bool):
    domains = _scored(*TWO_SCORES)
    order = (sorted_domains_with_leader if with_leader else sorted_domains)(
        domains, False, affinity
    )
    assert [d.name for d in order] == want


def test_leader_capability_comes_before_affinity():
    domains = _scored(
        ("preferred-no-leader", "a", 0, 0, 0, 100), ("non-preferred-has-leader", "b", 5, 10, 1, 10)
    )
    order = sorted_domains_with_leader(domains, False, True)
    assert [d.name for d in order] == ["non-preferred-has-leader", "preferred-no-leader"]


def test_best_fit_never_leaves_the_leading_affinity_score():
    """Kueue's topAffinityTierDomains: a tighter fit of a lower score is not taken."""
    domains = _scored(("roomy-preferred", "a", 8, 8, 0, 10), ("tight-other", "b", 2, 2, 0, 0))
    assert find_best_fit_domain(domains, 2, 0, True, affinity=True).name == "roomy-preferred"
    assert find_best_fit_domain(domains, 2, 0, True).name == "tight-other"


def test_a_node_scores_the_weights_of_the_terms_it_matches():
    """A node matching several terms scores their weights' sum; a term of weight 0 or without
    expressions scores nothing (as Kubernetes drops them)."""
    terms = (
        *kueue_affinity_cases.prefer((10, "a", "1"), (100, "b", "2"), (0, "a", "1")),
        PreferredSchedulingTerm(50, NodeSelectorTerm()),
    )
    assert affinity_score({"a": "1", "b": "2"}, terms) == 110
    assert affinity_score({"a": "1"}, terms) == 10
    assert affinity_score({HOST: "x"}, terms) == 0
