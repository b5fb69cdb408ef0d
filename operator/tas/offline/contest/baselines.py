"""Plain greedy reference planners for `tas contest`, to measure our planner against.

- first fit: the first domain (in index order) that holds the request, then the first server
  that takes each VM;
- best fit: the domain with the least room that still holds the request, then for each VM
  the server with the least left;
- spread: best fit, except that a new network-domain group (types 3, 8, 9) opens the emptiest
  network domain that holds it, so that it has room to grow.
"""

from __future__ import annotations

import numpy as np

from tas.offline.contest import names
from tas.offline.contest.greedy import ND, GroupView, Rule
from tas.offline.contest.pool import VmType


class FirstFit(Rule):
    pass


class BestFit(Rule):
    def scope_order(self, group: GroupView, depth: int, rooms: np.ndarray, count: int) -> list[int]:
        fitting = np.flatnonzero(rooms >= count)
        return [int(d) for d in fitting[np.argsort(rooms[fitting], kind="stable")]]

    def pick(self, group: GroupView, candidates: np.ndarray, vm: VmType) -> int:
        return int(candidates[np.argmin(self.engine.pool.left[candidates])])


class Spread(BestFit):
    def scope_order(self, group: GroupView, depth: int, rooms: np.ndarray, count: int) -> list[int]:
        if depth != ND:
            return super().scope_order(group, depth, rooms, count)
        free = self.engine.domain_free(ND)
        fitting = np.flatnonzero(rooms >= count)
        return [int(d) for d in fitting[np.argsort(-free[fitting], kind="stable")]]


BASELINES: dict[str, type[Rule]] = dict(
    zip(names.BASELINES, (FirstFit, BestFit, Spread), strict=True)
)
