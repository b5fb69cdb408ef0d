"""`tas contest`: the VM placement-group protocol on stdin/stdout, placed by our placement-group planner.

The pool maps onto a four-level topology (network domain, pod, rack, server); a server's two
NUMA nodes are the level below, handled here: a VM of NUMA count 2 takes its share on both
nodes of one server, a VM of count 1 on one node (the fuller one that still fits, so that the
other stays whole). The planner sees per server how many VMs of the request's type fit.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO

import numpy as np

from tas import features
from tas.offline.contest.baselines import BASELINES
from tas.offline.contest.generator import MAX_BATCH
from tas.offline.contest.greedy import Greedy
from tas.offline.contest.names import DEFAULT_PLANNER, GROWTH, PLANNERS
from tas.offline.contest.planner import Growth
from tas.offline.contest.pool import (
    Pool,
    ProtocolError,
    Vm,
    VmType,
    check_creation,
    check_group,
    in_range,
    unknown_vm,
    vm_type,
)
from tas.solver.groups import (
    GroupPlacementFailure,
    GroupRules,
    GroupState,
    excluded_leaves,
    place,
)

ND, POD, RACK, SERVER = range(4)

MAX_DIGITS = 19  # the longest integer the protocol carries (64 bits)


@dataclass
class Group:
    rules: GroupRules
    state: GroupState = field(default_factory=GroupState)


# Seed 001's group types as our constraints.
RULES_BY_TYPE = {
    0: GroupRules(),
    1: GroupRules(affinity=RACK),
    2: GroupRules(affinity=POD, exclusive=POD, whole=True),
    3: GroupRules(affinity=ND),
    4: GroupRules(anti_affinity=SERVER),
    5: GroupRules(anti_affinity=RACK),
    7: GroupRules(affinity=RACK, anti_affinity=SERVER),
    8: GroupRules(affinity=ND, anti_affinity=RACK),
    9: GroupRules(affinity=ND, exclusive=POD, whole=True),
}


class Contest:
    """The state of one run: pool, VM types, groups and the VMs alive."""

    def __init__(self, pool: Pool, types: list[VmType], fragmentation_aware: bool = False) -> None:
        self.fragmentation_aware = fragmentation_aware
        self.pool = pool
        self.types = types
        self.groups: dict[int, Group] = {}
        self.vms: dict[int, Vm] = {}

    def create_group(self, index: int, kind: int, partitions: int) -> None:
        if check_group(self.groups, index, kind, partitions):
            rules = GroupRules(partitions=partitions, partition_level=RACK)
        else:
            rules = RULES_BY_TYPE[kind]
        self.groups[index] = Group(rules)

    def create_vms(self, type_index: int, group_index: int, ids: list[int]) -> list[str] | None:
        """Output lines for the VMs, or None when they cannot all be placed."""
        vm_type = check_creation(self.groups, self.types, type_index, group_index)
        group = self.groups[group_index]
        pool = self.pool
        try:
            placement = place(
                pool.layout,
                pool.capacity(vm_type),
                len(ids),
                group.rules,
                group.state,
                occupied=pool.vms_on > 0,
                foreign=self._foreign(group_index),
                fragmentation_aware=self.fragmentation_aware,
                reserved=self._reserved(group_index) if self.fragmentation_aware else None,
            )
        except GroupPlacementFailure:
            return None
        group.state.add(placement)
        lines = []
        slots = [
            (pool.layout.leaf_of[path], count, placement.partition_of_leaf.get(path, 0))
            for path, count in sorted(placement.pods.items())
        ]
        queue = iter([(server, partition) for server, n, partition in slots for _ in range(n)])
        for vm_id in ids:
            server, partition = next(queue)
            nodes = pool.take(server, vm_type)
            self.vms[vm_id] = Vm(server, nodes, vm_type, group_index, partition)
            a, b, c, d = pool.index[server]
            numa = " ".join(str(k + 1) for k in nodes)
            lines.append(f"{a + 1} {b + 1} {c + 1} {d + 1} {numa} {partition}")
        return lines

    def delete_vms(self, ids: list[int]) -> None:
        by_group: dict[int, dict[tuple[str, ...], int]] = {}
        for vm_id in ids:
            vm = self.vms.pop(vm_id, None)
            if vm is None:
                raise unknown_vm(vm_id)
            self.pool.release(vm)
            path = self.pool.layout.leaf_paths[vm.server]
            pods = by_group.setdefault(vm.group, {})
            pods[path] = pods.get(path, 0) + 1
        for index, pods in by_group.items():
            group = self.groups[index]
            group.state.remove(pods, group.rules.partition_level)

    def _reserved(self, me: int) -> np.ndarray:
        """The affinity domains of other groups that get more than one creation request (types
        3, 8, 9: network domain): room they will want to grow in."""
        held: dict[int, set[tuple[str, ...]]] = {}
        for index, group in self.groups.items():
            depth = group.rules.affinity
            if index == me or depth is None or depth != ND or group.state.empty:
                continue
            held.setdefault(depth, set()).update(group.state.domains_at(depth))
        return excluded_leaves(self.pool.layout, held)

    def _foreign(self, me: int) -> np.ndarray:
        owned: dict[int, set[tuple[str, ...]]] = {}
        for index, group in self.groups.items():
            if index != me and group.rules.exclusive is not None:
                depth = group.rules.exclusive
                owned.setdefault(depth, set()).update(group.state.domains_at(depth))
        return excluded_leaves(self.pool.layout, owned)


def _tokens(stream: IO[str]) -> Iterator[int]:
    """Integers one line at a time: never reads past the current request (the judge is
    interactive)."""
    for line in stream:
        for token in line.split():
            if len(token.lstrip("+-")) > MAX_DIGITS:
                raise ProtocolError(f"integer out of range: {token[:20]}... ({len(token)} digits)")
            try:
                yield int(token)
            except ValueError:
                raise ProtocolError(f"not an integer: {token[:40]!r}") from None


def make_planner(
    name: str, pool: Pool, types: list[VmType], fragmentation_aware: bool = False
) -> Contest | Greedy:
    if name == "groups":
        return Contest(pool, types, fragmentation_aware)
    if name == GROWTH:
        return Greedy(pool, types, Growth())
    if name in BASELINES:
        return Greedy(pool, types, BASELINES[name]())
    raise ValueError(f"unknown planner {name!r}; one of {', '.join(PLANNERS)}")


def run(
    stdin: IO[str],
    stdout: IO[str],
    fragmentation_aware: bool = False,
    planner: str = DEFAULT_PLANNER,
) -> int:
    """Serve one run; returns the number of VMs placed."""
    tokens = _tokens(stdin)

    def take(count: int) -> list[int]:
        try:
            return [next(tokens) for _ in range(count)]
        except StopIteration:
            raise ProtocolError("input ended in the middle of a request") from None

    n, p, r, s, k = take(5)
    cpu, memory = take(2)
    (type_count,) = take(1)
    types = [vm_type(index, *take(3)) for index in range(1, type_count + 1)]
    contest = make_planner(planner, Pool(n, p, r, s, k, cpu, memory), types, fragmentation_aware)
    placed = 0
    while True:
        try:
            (kind,) = take(1)
        except ProtocolError:
            return placed  # no termination request: stop at the end of input
        if kind == 1:
            index, group_type, partitions = take(3)
            contest.create_group(index, group_type, partitions)
        elif kind == 2:
            count, type_index, group_index = take(3)
            ids = take(in_range("VM creation: count", count, 1, MAX_BATCH))
            lines = contest.create_vms(type_index, group_index, ids)
            if lines is None:
                stdout.write("-1\n")
                stdout.flush()
                return placed
            stdout.write("\n".join(lines) + "\n")
            stdout.flush()
            placed += count
        elif kind == 3:
            (count,) = take(1)
            contest.delete_vms(take(in_range("VM deletion: count", count, 1, len(contest.vms))))
        elif kind == 4:
            return placed
        else:
            raise ProtocolError(f"unknown request type {kind}")


def main(
    stdin: IO[str] = sys.stdin,
    stdout: IO[str] = sys.stdout,
    stderr: IO[str] = sys.stderr,
    gates: str | None = None,
    planner: str = DEFAULT_PLANNER,
) -> int:
    """`gates`: `A=true,...` as `tas operator --feature-gates`; TASProfileFragmentationAware
    is the one that changes placement here (of the "groups" planner)."""
    try:
        enabled = features.from_env_and_flag(gates)
        fragmentation_aware = enabled.solver_options().fragmentation_aware
    except features.FeatureGateError as error:
        print(f"tas contest: --feature-gates: {error}", file=stderr)
        return 2
    try:
        with features.activated(enabled):
            run(stdin, stdout, fragmentation_aware, planner)
    except ProtocolError as error:
        print(f"tas contest: {error}", file=stderr)
        return 2
    return 0
