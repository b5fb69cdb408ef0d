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
        cq = state.cluster_queues.get(charge.cluster_queue)
        if cq is None:
            return None
        wanted: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
        _shift(wanted, charge, 1)
        if decision.preemption is not None:
            for target in decision.preemption.targets:
                victim = state.charges().get(target.workload.key)
                if victim is not None:
                    _shift(wanted, victim, -1)
        for group in cq.resource_groups:
            for fq in group.flavors:
                slot = (cq.name, fq.flavor)
                if slot not in wanted:
                    continue
                used = state.quota_usage(cq.name, fq.flavor)
                for resource in group.covered:
                    want = wanted[slot].get(resource, 0)
                    if want <= 0:
                        continue
                    held = sum(h.quota.get(slot, {}).get(resource, 0) for h in others)
                    if used.get(resource, 0) + held + want > fq.nominal.get(resource, 0):
                        return HELD_MESSAGE
        return None


def _shift(into: dict[tuple[str, str], dict[str, int]], charge: Charge, sign: int) -> None:
    for ps in charge.pod_sets:
        slot = into[(charge.cluster_queue, ps.flavor)]
        for resource, value in ps.per_pod.items():
            slot[resource] = slot.get(resource, 0) + sign * ps.count * value
