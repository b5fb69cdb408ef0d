"""The pool of `tas contest`: servers of two NUMA nodes each, their CPU and memory left, and
the VM types, checked as the protocol gives them."""

from __future__ import annotations

from collections.abc import Container, Sequence
from dataclasses import dataclass

import numpy as np

from tas.offline.contest.generator import MAX_SERVERS
from tas.solver.groups import Layout

LEVELS = ("network-domain", "pod", "rack", "server")


# CPU and memory amounts: far above the statement's (at most 500), and small enough that no sum
# over the pool leaves 64 bits.
MAX_AMOUNT = 2**31 - 1


class ProtocolError(ValueError):
    """The input does not follow the statement."""


GROUP_TYPES = range(10)  # the statement's placement group types t_j
PARTITIONED = 6  # rack anti-affinity with partitions
MAX_PARTITIONS = 7


def check_group(known: Container[int], index: int, kind: int, partitions: int) -> int:
    """A group creation, checked; its partition count (0 unless partitioned)."""
    if index in known:
        raise ProtocolError(f"placement group {index} created twice")
    if kind not in GROUP_TYPES:
        raise ProtocolError(f"group {index}: unknown type {kind}")
    if kind != PARTITIONED:
        return 0
    if not 1 <= partitions <= MAX_PARTITIONS:
        raise ProtocolError(
            f"group {index}: type {PARTITIONED} needs 1-{MAX_PARTITIONS} partitions"
        )
    return partitions


def check_creation(
    known: Container[int], types: Sequence[VmType], type_index: int, group: int
) -> VmType:
    """A VM creation request, checked; its VM type."""
    if group not in known:
        raise ProtocolError(f"VM creation in unknown group {group}")
    if not 1 <= type_index <= len(types):
        raise ProtocolError(f"unknown VM type {type_index}")
    return types[type_index - 1]


def unknown_vm(vm_id: int) -> ProtocolError:
    return ProtocolError(f"deletion of unknown VM {vm_id}")


def in_range(what: str, value: int, low: int, high: int) -> int:
    if not low <= value <= high:
        raise ProtocolError(f"{what} must be {low} to {high}, got {value}")
    return value


@dataclass(frozen=True)
class VmType:
    numa_count: int
    cpu: int
    memory: int


@dataclass(frozen=True)
class Vm:
    server: int
    numa: tuple[int, ...]  # 0-based NUMA nodes
    type: VmType
    group: int
    partition: int


def vm_type(index: int, numa_count: int, cpu: int, memory: int) -> VmType:
    """VM type `index` (1-based) as its line gives it, checked."""
    in_range(f"VM type {index}: NUMA count", numa_count, 1, 2)
    in_range(f"VM type {index}: CPU", cpu, 1, MAX_AMOUNT)
    in_range(f"VM type {index}: memory", memory, 1, MAX_AMOUNT)
    return VmType(numa_count, cpu, memory)


class Pool:
    def __init__(self, n: int, p: int, r: int, s: int, numa: int, cpu: int, memory: int) -> None:
        if numa != 2:
            raise ProtocolError(f"K must be 2, got {numa}")
        for name, value in zip("NPRS", (n, p, r, s), strict=True):
            in_range(name, value, 1, MAX_SERVERS)
        if n * p * r * s > MAX_SERVERS:  # checked before a server is made
            raise ProtocolError(
                f"N*P*R*S must be at most {MAX_SERVERS} servers, got {n * p * r * s}"
            )
        in_range("C", cpu, 1, MAX_AMOUNT)
        in_range("M", memory, 1, MAX_AMOUNT)
        self.shape = (n, p, r, s)
        self.node = (cpu, memory)  # one NUMA node's capacity
        self.index: list[tuple[int, int, int, int]] = [
            (a, b, c, d) for a in range(n) for b in range(p) for c in range(r) for d in range(s)
        ]
        paths = [
            (f"n{a}", f"n{a}p{b}", f"n{a}p{b}r{c}", f"n{a}p{b}r{c}s{d}")
            for a, b, c, d in self.index
        ]
        self.layout = Layout(LEVELS, paths)
        self.cpu = np.full((len(paths), 2), cpu, dtype=np.int64)
        self.memory = np.full((len(paths), 2), memory, dtype=np.int64)
        self.vms_on = np.zeros(len(paths), dtype=np.int64)
        # What is left on each server: CPU and memory as shares of a node's, summed over both
        # nodes, times C*M to stay in integers (4*C*M empty, 0 full); take and release keep it.
        self.left = np.full(len(paths), 4 * cpu * memory, dtype=np.int64)

    def per_node(self, vm: VmType) -> np.ndarray:
        """VMs of the type that fit on each NUMA node, one row per server."""
        return np.minimum(self.cpu // vm.cpu, self.memory // vm.memory)

    def capacity(self, vm: VmType) -> np.ndarray:
        fits = self.per_node(vm)
        return fits.min(axis=1) if vm.numa_count == 2 else fits.sum(axis=1)

    def fits_on(self, server: int, vm: VmType) -> int:
        """`capacity(vm)` of one server."""
        fits = np.minimum(self.cpu[server] // vm.cpu, self.memory[server] // vm.memory)
        return int(fits.min() if vm.numa_count == 2 else fits.sum())

    def units(self, vm: VmType) -> int:
        """What a VM takes of `left`."""
        return vm.numa_count * (vm.cpu * self.node[1] + vm.memory * self.node[0])

    def take(self, server: int, vm: VmType) -> tuple[int, ...]:
        if vm.numa_count == 2:
            nodes: tuple[int, ...] = (0, 1)
        else:
            fits = np.minimum(self.cpu[server] // vm.cpu, self.memory[server] // vm.memory)
            candidates = [k for k in (0, 1) if fits[k] > 0]
            # the node with less room left: the other keeps space for larger VMs
            nodes = (min(candidates, key=lambda k: (int(self.cpu[server, k]), k)),)
        for k in nodes:
            self.cpu[server, k] -= vm.cpu
            self.memory[server, k] -= vm.memory
        self.vms_on[server] += 1
        self.left[server] -= self.units(vm)
        return nodes

    def release(self, vm: Vm) -> None:
        for k in vm.numa:
            self.cpu[vm.server, k] += vm.type.cpu
            self.memory[vm.server, k] += vm.type.memory
        self.vms_on[vm.server] -= 1
        self.left[vm.server] += self.units(vm.type)
