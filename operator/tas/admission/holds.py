"""Room that waiting preemptors hold against the decisions behind them.

A preemptor is not admitted until its victims' pods are gone, so its quota and nodes are not
charged meanwhile. Without a hold, a workload decided after it could take what the victims
free, or the free nodes the preemptor's placement counts on, and the preemptor would have to
preempt again. As in Kueue's scheduler, later decisions must fit beside the held room: their
quota on top of it (the cohort tree included), their pods on nodes outside it, and no two
preemptors with a victim in common. A waiting preemptor is decided again, and holds again, on
every cycle until it is admitted.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tas.cache.projections import Key
from tas.cache.state import Charge, ClusterState

if TYPE_CHECKING:
    from tas.admission.decide import Decision

HELD_MESSAGE = "Workload no longer fits after processing another workload"
OVERLAP_MESSAGE = "Workload has overlapping preemption targets with another workload"


@dataclass(frozen=True)
class _Hold:
    charge: Charge  # what the preemptor will take
    victims: frozenset[Key]
    domains: dict[str, frozenset[tuple[str, ...]]]  # flavor -> lowest-level domains it takes


class Holds:
    """One hold per waiting preemptor. A hold outlives its cycle until the preemptor is
    decided again (queues walked before the preemptor's still see it), and ends when it is
    admitted, stops preempting, or is not decided in a whole cycle."""

    def __init__(self) -> None:
        self._holds: dict[Key, _Hold] = {}
        self._renewed: set[Key] = set()

    def begin_cycle(self) -> None:
        self._renewed.clear()

    def end_cycle(self) -> bool:
        """Drop the holds not renewed in this cycle; True when some were dropped (the
        workloads they blocked may fit now)."""
        stale = [key for key in self._holds if key not in self._renewed]
        for key in stale:
            del self._holds[key]
        return bool(stale)

    def release(self, key: Key) -> bool:
        return self._holds.pop(key, None) is not None

    def add(self, key: Key, decision: Decision) -> None:
        assert decision.charge is not None and decision.preemption is not None
        domains: dict[str, set[tuple[str, ...]]] = defaultdict(set)
        for ps in decision.charge.pod_sets:
            if ps.assignment is not None:
                domains[ps.flavor].update(d.values for d in ps.assignment.domains)
        self._holds[key] = _Hold(
            decision.charge,
            frozenset(t.workload.key for t in decision.preemption.targets),
            {flavor: frozenset(values) for flavor, values in domains.items()},
        )
        self._renewed.add(key)

    def blocks(self, state: ClusterState, key: Key, decision: Decision) -> str | None:
        """Why this decision cannot stand beside the other preemptors' holds (Kueue's
        message), or None."""
        others = [hold for k, hold in self._holds.items() if k != key]
        if not others:
            return None
        charge = decision.charge
        assert charge is not None
        mine = (
            {t.workload.key for t in decision.preemption.targets}
            if decision.preemption is not None
            else set()
        )
        if any(hold.victims & mine for hold in others):
            return OVERLAP_MESSAGE
        for ps in charge.pod_sets:
            if ps.assignment is None:
                continue
            for hold in others:
                held = hold.domains.get(ps.flavor)
                if held and any(d.values in held for d in ps.assignment.domains):
                    return HELD_MESSAGE
        return HELD_MESSAGE if _over_quota(state, charge, others, mine) else None


def _over_quota(
    state: ClusterState, charge: Charge, others: list[_Hold], victims: set[Key]
) -> bool:
    """The charge does not fit the quota left beside the holds: each hold adds its
    preemptor's charge and takes away those of its victims that still hold quota (one that
    has left is already out of the usage), and the decision's own victims leave too."""
    leaving = set(victims)
    shifts = []
    for hold in others:
        shifts += list(_amounts(hold.charge, 1))
        leaving |= hold.victims
    charges = state.charges()
    for victim in leaving:
        if victim in charges:
            shifts += list(_amounts(charges[victim], -1))
    tree = state.quota_tree()
    for cq, fr, value in shifts:
        tree.shift(cq, fr, value)
    try:
        wanted: dict[tuple[str, tuple[str, str]], int] = defaultdict(int)
        for cq, fr, value in _amounts(charge, 1):
            wanted[(cq, fr)] += value
        return any(
            value > 0 and _covered(state, cq, fr) and value > tree.available(cq, fr)
            for (cq, fr), value in wanted.items()
        )
    finally:
        for cq, fr, value in shifts:
            tree.shift(cq, fr, -value)


def _amounts(charge: Charge, sign: int) -> Iterator[tuple[str, tuple[str, str], int]]:
    """(ClusterQueue, (flavor, resource), amount) of a charge."""
    for ps in charge.pod_sets:
        for resource, value in ps.per_pod.items():
            yield charge.cluster_queue, (ps.flavor, resource), sign * ps.count * value


def _covered(state: ClusterState, cq: str, fr: tuple[str, str]) -> bool:
    info = state.cluster_queues.get(cq)
    return info is not None and any(
        fr[1] in g.covered and any(f.flavor == fr[0] for f in g.flavors)
        for g in info.resource_groups
    )
