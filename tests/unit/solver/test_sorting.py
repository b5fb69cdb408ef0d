"""Domain orders, ported from Kueue's TestSortedDomains and TestSortedDomainsWithLeader
(pkg/cache/scheduler/tas_flavor_snapshot_test.go at ff69552e; the preferred-affinity cases are
in test_kueue_affinity_preferred.py)."""

from __future__ import annotations

import pytest

from tas.solver.algorithm import sorted_domains, sorted_domains_with_leader
from tas.solver.tree import Domain


class NamedDomain(Domain):
    """A domain carrying Kueue's test id, to compare orders by name."""

    __slots__ = ("name",)


def named(*specs: tuple) -> list[NamedDomain]:
    """(id, value, slices, pods[, leaders]) -> domains of one level, `order` ranked by value."""
    result = []
    for name, value, slices, pods, *leaders in specs:
        domain = NamedDomain((value,), 0)
        domain.name = name
        domain.slice_count = domain.slice_count_with_leader = slices
        domain.pod_count = domain.pod_count_with_leader = pods
        domain.leader_count = leaders[0] if leaders else 0
        result.append(domain)
    for rank, domain in enumerate(sorted(result, key=lambda d: d.values)):
        domain.order = rank
    return result


THREE_BY_SLICES = (("a", "a", 3, 1), ("b", "b", 1, 1), ("c", "c", 2, 1))
THREE_BY_PODS = (("large", "a", 5, 100), ("small", "b", 5, 10), ("medium", "c", 5, 50))
THREE_EQUAL = (("c", "c", 5, 10), ("a", "a", 5, 10), ("b", "b", 5, 10))


@pytest.mark.parametrize(
    ("specs", "least_free", "want"),
    [
        pytest.param(THREE_BY_SLICES, False, ["a", "c", "b"], id="BestFit: sliceCount descending"),
        pytest.param(
            THREE_BY_SLICES, True, ["b", "c", "a"], id="LeastFreeCapacity: sliceCount ascending"
        ),
        pytest.param(
            THREE_BY_PODS,
            False,
            ["small", "medium", "large"],
            id="BestFit: podCount ascending as tiebreaker",
        ),
        pytest.param(
            THREE_BY_PODS,
            True,
            ["small", "medium", "large"],
            id="LeastFreeCapacity: podCount ascending as tiebreaker",
        ),
        pytest.param(
            THREE_EQUAL, False, ["a", "b", "c"], id="levelValues ascending as final tiebreaker"
        ),
    ],
)
def test_sorted_domains(specs, least_free, want):
    assert [d.name for d in sorted_domains(named(*specs), least_free)] == want
    # the with-leader counts play no part: ordered the other way round, the order stays
    decoys = reversed_counts(named(*specs), "slice_count_with_leader", "pod_count_with_leader")
    assert [d.name for d in sorted_domains(decoys, least_free)] == want


def reversed_counts(domains: list[NamedDomain], *fields: str) -> list[NamedDomain]:
    """Set `fields` to counts that sort opposite to the ones the order should use, so that
    reading the wrong field shows (Kueue's table fills both fields with the same values)."""
    for domain in domains:
        for field in fields:
            plain = field.replace("_with_leader", "")
            source = plain if field != plain else f"{field}_with_leader"
            setattr(domain, field, 1000 - getattr(domain, source))
    return domains


def with_leader(specs: tuple) -> tuple:
    return tuple((*spec, 1) for spec in specs)


@pytest.mark.parametrize(
    ("specs", "least_free", "want"),
    [
        pytest.param(
            (("no-leader", "a", 10, 10, 0), ("has-leader", "b", 1, 1, 1)),
            False,
            ["has-leader", "no-leader"],
            id="leaderCount descending: domains that can host leader come first",
        ),
        pytest.param(
            with_leader(THREE_BY_SLICES),
            False,
            ["a", "c", "b"],
            id="BestFit: sliceCountWithLeader descending",
        ),
        pytest.param(
            with_leader(THREE_BY_SLICES),
            True,
            ["b", "c", "a"],
            id="LeastFreeCapacity: sliceCountWithLeader ascending",
        ),
        pytest.param(
            with_leader(THREE_BY_PODS),
            False,
            ["small", "medium", "large"],
            id="BestFit: podCountWithLeader ascending as tiebreaker",
        ),
        pytest.param(
            with_leader(THREE_BY_PODS),
            True,
            ["small", "medium", "large"],
            id="LeastFreeCapacity: podCountWithLeader ascending as tiebreaker",
        ),
        pytest.param(
            with_leader(THREE_EQUAL),
            False,
            ["a", "b", "c"],
            id="levelValues ascending as final tiebreaker",
        ),
    ],
)
def test_sorted_domains_with_leader(specs, least_free, want):
    assert [d.name for d in sorted_domains_with_leader(named(*specs), least_free)] == want
    # the plain counts play no part: ordered the other way round, the order stays
    decoys = reversed_counts(named(*specs), "slice_count", "pod_count")
    assert [d.name for d in sorted_domains_with_leader(decoys, least_free)] == want
