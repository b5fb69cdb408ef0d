"""Balanced placement building blocks, ported from Kueue's tas_balanced_placement_test.go
(TestSelectOptimalDomainSetToFit, TestCompareDomainCapacityAndEntropy,
TestPlaceSlicesOnDomainsBalanced and their stable tie-break variants, at ff69552e)."""

from __future__ import annotations

import pytest

from tas.solver.balanced import (
    _capacity_and_entropy_key,
    place_slices_balanced,
    select_optimal_domain_set,
)
from tas.solver.tree import Domain


class NamedDomain(Domain):
    """A domain carrying Kueue's test id."""

    __slots__ = ("name",)


def make(
    name: str,
    values: tuple[str, ...],
    pods: int,
    slices: int | None = None,
    *,
    leaders: int = 0,
    pods_with_leader: int | None = None,
    slices_with_leader: int | None = None,
    children: tuple[int, ...] = (),
) -> NamedDomain:
    domain = NamedDomain(values, len(values) - 1)
    domain.name = name
    domain.pod_count = pods
    domain.slice_count = pods if slices is None else slices
    domain.leader_count = leaders
    domain.pod_count_with_leader = pods if pods_with_leader is None else pods_with_leader
    domain.slice_count_with_leader = (
        domain.slice_count if slices_with_leader is None else slices_with_leader
    )
    for child_pods in children:
        child = Domain((*values, f"c{len(domain.children)}"), len(values))
        child.pod_count = child_pods
        domain.children.append(child)
    return domain


def ranked(domains: list[NamedDomain]) -> list[NamedDomain]:
    """Give `order` its meaning: rank by level values."""
    for rank, domain in enumerate(sorted(domains, key=lambda d: d.values)):
        domain.order = rank
    return domains


def knapsack_domains() -> list[NamedDomain]:
    return ranked(
        [
            make("d1", ("d1",), 9, leaders=1, pods_with_leader=8, slices_with_leader=8),
            make("d2", ("d2",), 6),
            make("d3", ("d3",), 4, leaders=1, pods_with_leader=3, slices_with_leader=3),
            make("d4", ("d4",), 2),
        ]
    )


@pytest.mark.parametrize(
    ("workers", "leaders", "want"),
    [
        pytest.param(22, 0, set(), id="no fit"),
        pytest.param(5, 1, {"d1"}, id="simple fit one domain"),
        pytest.param(9, 1, {"d2", "d3"}, id="perfect fit with two domains"),
        pytest.param(10, 1, {"d1", "d4"}, id="perfect fit with two domains 2"),
        pytest.param(5, 0, {"d2"}, id="best fit, single domain"),
    ],
)
def test_select_optimal_domain_set(workers, leaders, want):
    chosen = select_optimal_domain_set(knapsack_domains(), workers, leaders, 1, True) or []
    assert {d.name for d in chosen} == want


def equal_hosts() -> list[NamedDomain]:
    return ranked(
        [
            make("leaf-a", ("block-b", "host-a"), 3),
            make("leaf-m", ("block-b", "host-m"), 3),
            make("leaf-z", ("block-a", "host-z"), 3),
            make("leaf-zz", ("block-a", "host-zz"), 3),
        ]
    )


@pytest.mark.parametrize("by_entropy", [False, True], ids=["balanced", "entropy-prioritized"])
def test_select_optimal_domain_set_breaks_ties_by_level_values(by_entropy):
    chosen = select_optimal_domain_set(equal_hosts(), 1, 0, 1, by_entropy)
    assert [d.name for d in chosen] == ["leaf-z"]


def test_capacity_and_entropy_order_ties_on_level_values():
    domains = [
        make(n, v, 0, leaders=1, slices_with_leader=5, children=(2, 2))
        for n, v in (
            ("leaf-a", ("block-b", "host-a")),
            ("leaf-m", ("block-b", "host-m")),
            ("leaf-z", ("block-a", "host-z")),
        )
    ]
    ordered = sorted(domains, key=_capacity_and_entropy_key)
    assert [d.name for d in ordered] == ["leaf-z", "leaf-a", "leaf-m"]


def test_capacity_overrides_entropy_and_entropy_overrides_level_values():
    domains = [
        make("lower-leader", ("a",), 0, leaders=0, slices_with_leader=100, children=(50, 50)),
        make("lower-capacity", ("b",), 0, leaders=1, slices_with_leader=4, children=(2, 2)),
        make("low-entropy", ("c",), 0, leaders=1, slices_with_leader=5, children=(4, 0)),
        make("high-entropy", ("d",), 0, leaders=1, slices_with_leader=5, children=(2, 2)),
    ]
    ordered = sorted(domains, key=_capacity_and_entropy_key)
    assert [d.name for d in ordered] == [
        "high-entropy",
        "low-entropy",
        "lower-capacity",
        "lower-leader",
    ]


def five_domains() -> list[NamedDomain]:
    return ranked(
        [
            make("d1", ("d1",), 18),
            make("d2", ("d2",), 18),
            make("d3", ("d3",), 18),
            make("d4", ("d4",), 10),
            make("d5", ("d5",), 2),
        ]
    )


@pytest.mark.parametrize(
    ("count", "domains", "slices", "threshold", "want"),
    [
        pytest.param(
            3, 3, 20, 10, {"d1": 10, "d2": 10}, id="simple balanced placement on two domains"
        ),
        pytest.param(
            3, 3, 40, 13, {"d1": 14, "d2": 13, "d3": 13}, id="simple placement on three domains"
        ),
        pytest.param(5, 5, 2, 2, {"d5": 2}, id="find smallest domain that fits"),
        pytest.param(5, 5, 25, 10, {"d1": 15, "d4": 10}, id="correctly select domains"),
    ],
)
def test_place_slices_balanced(count, domains, slices, threshold, want):
    placed = place_slices_balanced(five_domains()[:domains], slices, 0, 1, threshold)
    # every placed domain's counts all equal its slice count (slice size 1, no leader)
    got = {}
    for d in placed:
        assert d.pod_count == d.pod_count_with_leader == d.slice_count_with_leader
        assert d.leader_count == 0
        got[d.name] = d.slice_count
    assert got == want


def test_place_slices_balanced_breaks_ties_by_level_values():
    domains = ranked(
        [make("leaf-a", ("block-b", "host-a"), 3), make("leaf-z", ("block-a", "host-z"), 3)]
    )
    assert [d.name for d in place_slices_balanced(domains, 1, 0, 1, 1)] == ["leaf-z"]
