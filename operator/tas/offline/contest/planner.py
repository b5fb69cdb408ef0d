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

import numpy as np

from tas.offline.contest.baselines import BestFit
from tas.offline.contest.greedy import ND, GroupView
from tas.offline.contest.pool import VmType

GROWING = frozenset({3, 8, 9})  # network-domain affinity: a group asks again and again
PRIOR_GROWTH = 4.0  # a growing group's final size over its first request, before any is seen
PRIOR_WEIGHT = 2  # ... counted as this many groups


class Growth(BestFit):
    """Arrays indexed by group (growing groups only; the others stay 0): its network domain
    (-1: none), its first request's VMs, its live VMs, what one of its VMs takes
    (`Pool.units`) and its live VMs over its first request when it last grew."""

    def __init__(self) -> None:
        self.domain = np.full(64, -1, dtype=np.int64)
        self.first = np.zeros(64)
        self.live = np.zeros(64)
        self.units = np.zeros(64)
        self.ratio = np.zeros(64)
        self._headroom: tuple[int, np.ndarray] = (-1, np.zeros(0))

    def _grow_to(self, index: int) -> None:
        size = len(self.domain)
        if index < size:
            return
        more = max(size, index + 1 - size)
        self.domain = np.concatenate([self.domain, np.full(more, -1, dtype=np.int64)])
        for name in ("first", "live", "units", "ratio"):
            setattr(self, name, np.concatenate([getattr(self, name), np.zeros(more)]))

    def placed(self, group: GroupView, count: int) -> None:
        if group.kind not in GROWING:
            return
        i = group.index
        if len(group.vms) == count:  # its first request, or the first since it emptied
            self.first[i] = count
        self.ratio[i] = len(group.vms) / self.first[i]
        self.changed(group)

    def changed(self, group: GroupView) -> None:
        if group.kind in GROWING:
            domain = group.domain()
            self.domain[group.index] = -1 if domain is None else domain
            self.live[group.index] = len(group.vms)

    def factor(self) -> float:
        """How many times its first request a growing group ends up: the mean seen so far."""
        seen = self.ratio[self.ratio > 1]
        return float((PRIOR_GROWTH * PRIOR_WEIGHT + seen.sum()) / (PRIOR_WEIGHT + len(seen)))

    def headroom(self) -> np.ndarray:
        """Per network domain: what is left once the growing groups' expected growth is kept
        (computed once per request)."""
        if self._headroom[0] != self.engine.requests:
            self._headroom = (self.engine.requests, self.engine.domain_free(ND) - self.reserved())
        return self._headroom[1]

    def reserved(self) -> np.ndarray:
        """Per network domain: the expected growth of the growing groups in it."""
        held = self.domain >= 0
        growth = np.maximum(0.0, self.factor() * self.first - self.live) * self.units
        return np.bincount(self.domain[held], weights=growth[held], minlength=self.engine.sizes[ND])

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
            self._grow_to(group.index)
            self.units[group.index] = self.engine.pool.units(vm)
            return [scope]
        engine = self.engine
        need = count * engine.pool.units(vm)
        spare = (self.headroom() >= need)[engine.codes[ND]] & scope
        if spare.any() and (spare != scope).any():
            return [spare, scope]
        return [scope]
