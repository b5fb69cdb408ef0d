"""Room that preemptors wait for, held for the rest of one admission cycle.

A preemptor is not admitted until its victims' pods are gone, so its quota and nodes are not
charged meanwhile. Without a hold, a workload behind it in the same cycle could take what
the victims free, or the free nodes the preemptor's placement counts on, and the preemptor
would have to preempt again. As in Kueue's scheduler, later decisions of the cycle must fit
beside the held room: their quota on top of it, their pods on nodes outside it, and no two
preemptors with a victim in common. A waiting preemptor is decided again, and holds again, on
every cycle until it is admitted.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tas.cache.projections import Key
from tas.cache.state import Charge, ClusterState

if TYPE_CHECKING:
    from tas.admission.decide import Decision

HELD_MESSAGE = "Workload no longer fits after processing another workload"
OVERLAP_MESSAGE = "Workload has overlapping preemption targets with another workload"


@dataclass
class _Hold:
    quota: dict[tuple[str, str], dict[str, int]]  # beyond what its victims free
    domains: dict[str, set[tuple[str, ...]]]  # flavor -> lowest-level domains it will take
    victims: frozenset[Key]


class Holds:
    """One hold per waiting preemptor. A hold outlives its cycle until the preemptor is
    decided again (ClusterQueues are walked one after another, so a queue walked before the
    preemptor's still sees it), and ends when it is admitted, stops preempting, or is not
    decided in a whole cycle."""

    def __init__(self) -> None:
        self._holds: dict[Key, _Hold] = {}
        self._renewed: set[Key] = set()

    def __bool__(self) -> bool:
        return bool(self._holds)

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

    def add(self, state: ClusterState, key: Key, decision: Decision) -> None:
        assert decision.charge is not None and decision.preemption is not None
        hold = _Hold(defaultdict(dict), defaultdict(set), frozenset())
        _shift(hold.quota, decision.charge, 1)
        for target in decision.preemption.targets:
            victim = state.charges().get(target.workload.key)
            if victim is not None:
                _shift(hold.quota, victim, -1)
        for ps in decision.charge.pod_sets:
            if ps.assignment is not None:
                hold.domains[ps.flavor].update(d.values for d in ps.assignment.domains)
        hold.victims = frozenset(t.workload.key for t in decision.preemption.targets)
        self._holds[key] = hold
        self._renewed.add(key)

    def blocks(self, state: ClusterState, key: Key, decision: Decision) -> str | None:
        """Why this decision cannot stand beside the other preemptors' holds (Kueue's
        message), or None."""
        others = [hold for k, hold in self._holds.items() if k != key]
        if not others:
            return None
        if decision.preemption is not None:
            mine = {t.workload.key for t in decision.preemption.targets}
            if any(hold.victims & mine for hold in others):
                return OVERLAP_MESSAGE
        charge = decision.charge
        assert charge is not None
        for ps in charge.pod_sets:
            if ps.assignment is None:
                continue
            for hold in others:
                held = hold.domains.get(ps.flavor)
                if held and any(d.values in held for d in ps.assignment.domains):
                    return HELD_MESSAGE
        return self._quota_blocks(state, charge, decision, others)

    def _quota_blocks(self, state, charge: Charge, decision, others: list[_Hold]) -> str | None:
        """The charge's quota on top of the others' holds (the cohort tree included)."""
        tree = state.quota_tree()
        shifts = [(cq, fr, v) for hold in others for (cq, fr), v in _pairs(hold.quota)]
        if decision.preemption is not None:  # its own victims leave too
            mine: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
            for target in decision.preemption.targets:
                victim = state.charges().get(target.workload.key)
                if victim is not None:
                    _shift(mine, victim, -1)
            shifts += [(cq, fr, v) for (cq, fr), v in _pairs(mine)]
        for cq, fr, v in shifts:
            tree.shift(cq, fr, v)
        try:
            wanted: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
            _shift(wanted, charge, 1)
            for (cq, fr), value in _pairs(wanted):
                if value > 0 and value > tree.available(cq, fr) and _covered(state, cq, fr):
                    return HELD_MESSAGE
            return None
        finally:
            for cq, fr, v in shifts:
                tree.shift(cq, fr, -v)


def _pairs(quota: dict[tuple[str, str], dict[str, int]]):
    """((ClusterQueue, (flavor, resource)), value) for every entry."""
    for (cq, flavor), resources in quota.items():
        for resource, value in resources.items():
            yield (cq, (flavor, resource)), value


def _covered(state: ClusterState, cq: str, fr: tuple[str, str]) -> bool:
    info = state.cluster_queues.get(cq)
    return bool(info) and any(
        fr[1] in g.covered and any(f.flavor == fr[0] for f in g.flavors)
        for g in info.resource_groups
    )


def _shift(into: dict[tuple[str, str], dict[str, int]], charge: Charge, sign: int) -> None:
    for ps in charge.pod_sets:
        slot = into[(charge.cluster_queue, ps.flavor)]
        for resource, value in ps.per_pod.items():
            slot[resource] = slot.get(resource, 0) + sign * ps.count * value
