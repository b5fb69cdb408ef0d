"""The growth-aware planner of `tas contest` (the default): room kept for groups that grow.

Network-domain groups (types 3, 8, 9) get many creation requests over their life and must
stay in their network domain; on saturating inputs the first failure is most often such a
group's growth finding its domain full while other domains are half empty. So:

- each live network-domain group keeps room in its domain for its expected growth: its first
  request times the growth seen so far (`GrowthEstimate`), less what it already holds;
- a new network-domain group opens the emptiest network domain that holds its request (at the
  level it needs: free racks for type 8, empty pods for type 9);
- every other request is packed best fit, first where it takes no reserved room: outside the
  domains it would cut into, in the tightest domain and on the fullest servers there.

VMs are placed with `greedy.Greedy`, which keeps NUMA pairs on one server and puts a 1-NUMA VM
on the fuller node, so that whole nodes and whole servers stay for the VMs that need them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tas.offline.contest.baselines import BestFit
from tas.offline.contest.greedy import ND, GroupView
from tas.offline.contest.pool import VmType

GROWING = frozenset({3, 8, 9})  # network-domain affinity: a group asks again and again
PRIOR_GROWTH = 4.0  # a growing group's final size over its first request, before any is seen
PRIOR_WEIGHT = 2  # ... counted as this many groups


@dataclass
class GrowthEstimate:
    """How much growing groups grow: the mean of their peak over their first request."""

    first: dict[int, int] = field(default_factory=dict)  # group -> its first request's VMs
    ratios: dict[int, float] = field(default_factory=dict)  # group -> peak / first so far

    def placed(self, group: GroupView, count: int) -> None:
        if group.index not in self.first or len(group.vms) == count:  # (re)started
            self.first[group.index] = count
        self.ratios[group.index] = len(group.vms) / self.first[group.index]

    def factor(self) -> float:
        seen = [r for r in self.ratios.values() if r > 1]
        return (PRIOR_GROWTH * PRIOR_WEIGHT + sum(seen)) / (PRIOR_WEIGHT + len(seen))

    def expected(self, group: GroupView) -> float:
        """VMs the group is expected to add."""
        first = self.first.get(group.index, 0)
        return max(0.0, self.factor() * first - len(group.vms))


def units(vm: VmType, node: tuple[int, int]) -> float:
    """What a VM takes, in `Pool.free`'s units."""
    return vm.numa_count * (vm.cpu / node[0] + vm.memory / node[1])


class Growth(BestFit):
    def __init__(self) -> None:
        self.growth = GrowthEstimate()
        self.last_type: dict[int, VmType] = {}  # growing group -> the VM type it asked for

    def placed(self, group: GroupView, count: int) -> None:
        if group.kind in GROWING:
            self.growth.placed(group, count)

    def headroom(self) -> np.ndarray:
        """Per network domain: what is left once the growing groups' expected growth is kept."""
        return self.engine.domain_free(ND) - self.reserved()

    def reserved(self) -> np.ndarray:
        """Per network domain: the expected growth of the growing groups in it."""
        engine = self.engine
        room = np.zeros(engine.sizes[ND])
        for group in engine.groups.values():
            domain = group.domain() if group.kind in GROWING else None
            if domain is None:
                continue
            vm = self.last_type.get(group.index)
            if vm is not None:
                room[domain] += self.growth.expected(group) * units(vm, engine.pool.node)
        return room

    def scope_order(self, group: GroupView, depth: int, rooms: np.ndarray, count: int) -> list[int]:
        fitting = np.flatnonzero(rooms >= count)
        if group.kind in GROWING and depth == ND:
            # The emptiest (measured better than the most room after the reservations).
            free = self.engine.domain_free(ND)
            return [int(d) for d in fitting[np.argsort(-free[fitting], kind="stable")]]
        headroom = self.headroom()
        # Others: best fit, domains whose network domain has no room to spare last.
        engine = self.engine
        first_server = np.searchsorted(engine.codes[depth], fitting)
        spare = headroom[engine.codes[ND][first_server]] > 0
        order = np.lexsort((rooms[fitting], ~spare))
        return [int(d) for d in fitting[order]]

    def narrow(
        self, group: GroupView, vm: VmType, count: int, scope: np.ndarray
    ) -> list[np.ndarray]:
        if group.kind in GROWING:
            self.last_type[group.index] = vm
            return [scope]
        engine = self.engine
        need = count * units(vm, engine.pool.node)
        spare = (self.headroom() >= need)[engine.codes[ND]] & scope
        if spare.any() and (spare != scope).any():
            return [spare, scope]
        return [scope]
