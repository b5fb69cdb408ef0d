"""Kueue's TestFindTopologyAssignments cases run against TopologySnapshot.find_assignments.

Expectations come from Kueue's Go test table (see kueue_tas_cases.py); a case passes only when
our assignment (levels, domains, order, counts) or failure message is exactly Kueue's.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tas import features
from tas.solver import (
    DomainAssignment,
    FlavorSpec,
    TopologyAssignment,
    TopologySnapshot,
)
from tests.unit.solver.kueue_tas_cases import CASES
from tests.unit.solver.solver_test_helpers import KueueCase, kueue_requests, with_non_tas_usage

# Kueue's defaults at the ported commit: TASProfileMixed on, TASBalancedPlacement off.
KUEUE_DEFAULT_GATES = {"TASProfileMixed": True, "TASBalancedPlacement": False}

# Deliberate differences: case name -> text we append to Kueue's message.
# An unknown level also lists the topology's valid levels, so the user can fix the annotation.
OUR_MESSAGE_SUFFIX = {
    "cannot request not existing slice topology": (
        " (the topology's levels are: cloud.com/topology-block, cloud.com/topology-rack,"
        " kubernetes.io/hostname)"
    ),
}


def snapshot_for(
    case: KueueCase, gates: dict[str, bool] | None = None, *, reference: bool = False
) -> TopologySnapshot:
    """The case's cluster, with Kueue's defaults, the case's gates and then `gates` (as the
    operator turns gates into solver options); `reference`: the plain path only."""
    values = {**KUEUE_DEFAULT_GATES, **case.gates, **(gates or {})}
    snapshot = TopologySnapshot(
        case.levels,
        with_non_tas_usage(case.nodes, case.pods),
        FlavorSpec(node_labels=case.node_labels, topology_name="default"),
        features.from_mapping(values).solver_options(),
        reference=reference,
    )
    for usage in case.prior_usage:
        # an admitted workload's pods on one leaf (Kueue's priorOwnUsage / sibling usage)
        levels = ("kubernetes.io/hostname",) if len(usage.values) == 1 else case.levels
        snapshot.add_usage(
            TopologyAssignment(levels, (DomainAssignment(usage.values, usage.count),)),
            kueue_requests(usage.requests),
        )
    return snapshot


def case_id(case: KueueCase) -> str:
    if case.name in OUR_MESSAGE_SUFFIX:
        return f"{case.name} [differs: message also lists the valid levels]"
    return case.name


@pytest.mark.parametrize("case", CASES, ids=[case_id(case) for case in CASES])
def test_find_topology_assignments(case: KueueCase) -> None:
    assert_kueue_result(case, lambda: snapshot_for(case), OUR_MESSAGE_SUFFIX.get(case.name, ""))


def assert_kueue_result(
    case: KueueCase, make_snapshot: Callable[[], TopologySnapshot], suffix: str = ""
) -> None:
    """The case's expectations: each pod set's assignment, or the first failing one's
    message (with `suffix` appended: a deliberate difference)."""
    result = make_snapshot().find_assignments([ps.request for ps in case.podsets])

    want_reason = next((ps.reason for ps in case.podsets if ps.reason), None)
    if want_reason is not None:
        assert result.failure == want_reason + suffix
        # A failure places nothing, but Kueue's table also expects the assignments of the pod
        # sets before the failing one: those, placed alone, must be exactly Kueue's.
        first_failing = next(i for i, ps in enumerate(case.podsets) if ps.reason)
        earlier = case.podsets[:first_failing]
        if earlier:
            placed = make_snapshot().find_assignments([ps.request for ps in earlier])
            assert placed.failure is None
            got = {placement.name: placement.assignment for placement in placed.podsets}
            assert got == {ps.request.name: ps.want for ps in earlier}
        return
    assert result.failure is None
    got = {placement.name: placement.assignment for placement in result.podsets}
    want = {ps.request.name: ps.want for ps in case.podsets}
    assert got == want
