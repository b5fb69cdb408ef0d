"""A greedy VM placer for `tas contest`, VM by VM, with the choices left to a `Rule`.

The engine keeps every group's constraints (affinity, anti-affinity, partitions, whole pods)
and the pool's NUMA arithmetic (`adapter.Pool`); a rule says in which order to try the
domains a group may open and which server takes the next VM. The plain first-fit and best-fit
baselines (`baselines.py`) and the growth-aware planner (`planner.py`) are rules.

A request is tried in one scope at a time (the group's affinity domain, or each domain of
its affinity level in the rule's order; the pool without affinity) and placed whole or not at
all: a failed try gives back what it took.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from tas.offline.contest.pool import (
    Pool,
    Vm,
    VmType,
    check_creation,
    check_group,
    unknown_vm,
)

ND, POD, RACK, SERVER = range(4)
AFFINITY = {1: RACK, 2: POD, 3: ND, 7: RACK, 8: ND, 9: ND}
ANTI_AFFINITY = {4: SERVER, 5: RACK, 7: SERVER, 8: RACK}
WHOLE_POD = frozenset({2, 9})


@dataclass
class GroupView:
    """A group's type and its live VMs, as the engine and the rules read them."""

    index: int
    kind: int
    partitions: int
    vms: set[int] = field(default_factory=set)
    per_domain: list[Counter[int]] = field(default_factory=lambda: [Counter() for _ in range(4)])
    partition_of_rack: dict[int, int] = field(default_factory=dict)
    partition_sizes: Counter[int] = field(default_factory=Counter)
    requests: int = 0  # creation requests placed
    peak: int = 0  # most live VMs so far

    @property
    def affinity(self) -> int | None:
        return AFFINITY.get(self.kind)

    def domain(self) -> int | None:
        """The affinity domain its live VMs hold, if any."""
        if self.affinity is None or not self.vms:
            return None
        return next(iter(self.per_domain[self.affinity]))


class Rule:
    """Choices for the engine; this one takes everything in index order (first fit)."""

    def bind(self, engine: Greedy) -> None:
        self.engine = engine

    def scope_order(self, group: GroupView, depth: int, rooms: np.ndarray, count: int) -> list[int]:
        """The domains of level `depth` to try for a group opening one; `rooms[d]`: how many
        of the request's VMs domain d takes (those below `count` are left out)."""
        return [int(d) for d in np.flatnonzero(rooms >= count)]

    def pick(self, group: GroupView, candidates: np.ndarray, vm: VmType) -> int:
        """The server for the next VM, among the indexes in `candidates` (not empty)."""
        return int(candidates[0])

    def narrow(
        self, group: GroupView, vm: VmType, count: int, scope: np.ndarray
    ) -> list[np.ndarray]:
        """Masks of servers to try a scope with, in order (the last should be `scope`)."""
        return [scope]

    def placed(self, group: GroupView, count: int) -> None:
        """A creation request of the group was placed."""

    def changed(self, group: GroupView) -> None:
        """VMs of the group were deleted."""


class Greedy:
    """The state of one run; the adapter's protocol loop drives it."""

    def __init__(self, pool: Pool, types: list[VmType], rule: Rule) -> None:
        self.pool = pool
        self.types = types
        n, p, r, s = pool.shape
        self.pod_size = r * s
        servers = np.arange(n * p * r * s)
        # codes[level][server]: the server's domain at that level
        self.codes = [servers // (p * r * s), servers // (r * s), servers // s, servers]
        self.sizes = [n, n * p, n * p * r, n * p * r * s]
        self.groups: dict[int, GroupView] = {}
        self.vms: dict[int, Vm] = {}
        self.whole = np.zeros(len(servers), dtype=bool)  # holds a live whole-pod VM
        self.requests = 0  # creation requests seen (rules may cache what one request reads)
        self.rule = rule
        rule.bind(self)

    def create_group(self, index: int, kind: int, partitions: int) -> None:
        partitions = check_group(self.groups, index, kind, partitions)
        self.groups[index] = GroupView(index, kind, partitions)

    def create_vms(self, type_index: int, group_index: int, ids: list[int]) -> list[str] | None:
        """Output lines for the VMs, or None when they cannot all be placed."""
        vm = check_creation(self.groups, self.types, type_index, group_index)
        group = self.groups[group_index]
        self.requests += 1
        for scope in self._scopes(group, vm, len(ids)):
            for servers in self.rule.narrow(group, vm, len(ids), scope):
                lines = self._try(group, vm, ids, servers)
                if lines is not None:
                    group.requests += 1
                    group.peak = max(group.peak, len(group.vms))
                    self.rule.placed(group, len(ids))
                    return lines
        return None

    def delete_vms(self, ids: list[int]) -> None:
        groups = set()
        for vm_id in ids:
            vm = self.vms.pop(vm_id, None)
            if vm is None:
                raise unknown_vm(vm_id)
            self._forget(vm_id, vm)
            groups.add(vm.group)
        for index in groups:
            self.rule.changed(self.groups[index])

    def capacity(self, vm: VmType) -> np.ndarray:
        """VMs of the type each server takes now; none beside a whole-pod VM."""
        cap = self.pool.capacity(vm)
        cap[self.whole] = 0
        return cap

    def room(self, group: GroupView, cap: np.ndarray, depth: int) -> np.ndarray:
        """How many VMs of the request each domain of level `depth` takes, the group's
        anti-affinity and whole pods counted."""
        if group.kind in WHOLE_POD:
            return self._empty_pods(depth) * self.pod_size
        anti = ANTI_AFFINITY.get(group.kind)
        if anti is None:
            return np.bincount(self.codes[depth], weights=cap, minlength=self.sizes[depth])
        takers = np.bincount(self.codes[anti], weights=cap, minlength=self.sizes[anti]) > 0
        takers[list(group.per_domain[anti])] = False
        parent = self.codes[depth][np.searchsorted(self.codes[anti], np.arange(self.sizes[anti]))]
        return np.bincount(parent, weights=takers, minlength=self.sizes[depth])

    def domain_free(self, depth: int) -> np.ndarray:
        """What is left in each domain of the level (`Pool.free` summed)."""
        return np.bincount(self.codes[depth], weights=self.pool.left, minlength=self.sizes[depth])

    def _empty_pods(self, depth: int) -> np.ndarray:
        busy = np.bincount(self.codes[POD], weights=self.pool.vms_on, minlength=self.sizes[POD])
        first = np.arange(0, len(self.codes[POD]), self.pod_size)
        empty = (busy == 0).astype(np.int64)
        return np.bincount(self.codes[depth][first], weights=empty, minlength=self.sizes[depth])

    def _scopes(self, group: GroupView, vm: VmType, count: int) -> list[np.ndarray]:
        """Masks of servers to try the request in, in order."""
        depth = group.affinity
        if depth is None:
            return [np.ones(len(self.codes[SERVER]), dtype=bool)]
        held = group.domain()
        if held is not None:
            return [self.codes[depth] == held]
        rooms = self.room(group, self.capacity(vm), depth)
        order = self.rule.scope_order(group, depth, rooms, count)
        return [self.codes[depth] == d for d in order]

    def _try(
        self, group: GroupView, vm: VmType, ids: list[int], scope: np.ndarray
    ) -> list[str] | None:
        if group.kind in WHOLE_POD:
            servers = self._whole_pods(group, scope, len(ids))
            if servers is None:
                return None
            return [
                self._take(group, vm_id, vm, int(s), 0)
                for vm_id, s in zip(ids, servers, strict=True)
            ]
        lines: list[str] = []
        cap = np.where(scope, self.capacity(vm), 0)
        anti = ANTI_AFFINITY.get(group.kind)
        if anti is not None:  # one VM per domain of the level: none where the group is
            cap[np.isin(self.codes[anti], list(group.per_domain[anti]))] = 0
        one_at_a_time = anti is not None or group.partitions > 0
        todo = list(reversed(ids))
        while todo:
            partition = self._smallest_partition(group)
            allowed = cap > 0
            if partition:
                others = [r for r, k in group.partition_of_rack.items() if k != partition]
                allowed &= ~np.isin(self.codes[RACK], others)
            candidates = np.flatnonzero(allowed)
            if not len(candidates):
                for done in ids[: len(lines)]:
                    self._forget(done, self.vms.pop(done))
                return None
            server = self.rule.pick(group, candidates, vm)
            # Best fit would pick the same server again while it takes more: fill it at once.
            for _ in range(1 if one_at_a_time else min(len(todo), int(cap[server]))):
                lines.append(self._take(group, todo.pop(), vm, server, partition))
            cap[server] = self.pool.fits_on(server, vm)
            if anti is not None:
                span = len(self.codes[SERVER]) // self.sizes[anti]
                start = server // span * span
                cap[start : start + span] = 0
        return lines

    def _smallest_partition(self, group: GroupView) -> int:
        if not group.partitions:
            return 0
        sizes = group.partition_sizes
        return min(range(1, group.partitions + 1), key=lambda k: (sizes[k], k))

    def _whole_pods(self, group: GroupView, scope: np.ndarray, count: int) -> np.ndarray | None:
        """The servers of enough empty pods in the scope, in the rule's order of pods."""
        pods = count // self.pod_size
        empty = self._empty_pods(POD) > 0
        empty[np.unique(self.codes[POD][~scope])] = False
        choice = np.flatnonzero(empty)
        if len(choice) < pods or count % self.pod_size:
            return None
        return np.flatnonzero(np.isin(self.codes[POD], choice[:pods]))

    def _take(self, group: GroupView, vm_id: int, vm: VmType, server: int, partition: int) -> str:
        nodes = self.pool.take(server, vm)
        self.vms[vm_id] = Vm(server, nodes, vm, group.index, partition)
        group.vms.add(vm_id)
        for depth in range(4):
            group.per_domain[depth][int(self.codes[depth][server])] += 1
        if partition:
            group.partition_of_rack[int(self.codes[RACK][server])] = partition
            group.partition_sizes[partition] += 1
        if group.kind in WHOLE_POD:
            self.whole[server] = True
        a, b, c, d = self.pool.index[server]
        numa = " ".join(str(k + 1) for k in nodes)
        return f"{a + 1} {b + 1} {c + 1} {d + 1} {numa} {partition}"

    def _forget(self, vm_id: int, vm: Vm) -> None:
        self.pool.release(vm)
        group = self.groups[vm.group]
        group.vms.discard(vm_id)
        for depth in range(4):
            counter = group.per_domain[depth]
            code = int(self.codes[depth][vm.server])
            counter[code] -= 1
            if counter[code] <= 0:
                del counter[code]
        if vm.partition:
            group.partition_sizes[vm.partition] -= 1
            rack = int(self.codes[RACK][vm.server])
            if rack not in group.per_domain[RACK]:
                group.partition_of_rack.pop(rack, None)
        self.whole[vm.server] = False
