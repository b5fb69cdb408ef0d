"""Replays a solver's answers to a seed-001 input and scores them, checking every constraint.

Score: the VMs of every creation request fully placed before the first `-1` (the program gave
up there), or 0 when any answer breaks a rule, is malformed or missing.

How we read the statement where it leaves room:

* Placement constraints bind the group's *live* VMs. Affinity means that all VMs of the group
  alive at the same time share one rack / pod / network domain, across all its creation
  requests; once every VM of the group is deleted its next request may go anywhere.
  Anti-affinity ignores deleted VMs too, and a rack emptied of one partition's VMs may take
  another partition's.
* Partition sizes (of partitions 1..K_j, empty ones included) must differ by at most 1 after
  each creation request; deletions may unbalance them in between. A VM keeps its partition.
* Whole-pod allocation (types 2 and 9) is per creation request: the request's VMs fill every
  pod they touch, one VM on each of its servers, and those servers hold nothing else. While a
  whole-pod VM lives no other VM may share its server; once deleted, its server is free to
  anyone. Type 2's "affinity on pod level" and type 9's network-domain affinity bind the group
  as above.
* A 2-NUMA VM names two different NUMA nodes of its one server, in either order.
* `-1` may only be the first line of a creation request's answer (no partial placement) and
  must be the last line of the output. Blank lines are ignored.
* The worked example has P=2 and S=2, below the stated bounds, so the checker takes any
  positive sizes; keeping inputs within the bounds is the generator's business.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

Server = tuple[int, int, int, int]  # network domain, pod, rack, server: 1-based
# Levels of the topology, as the length of a server's address cut to that level.
DOMAIN, POD, RACK, SERVER = 1, 2, 3, 4
_LEVELS = ("network domain", "pod", "rack", "server")

# Which PG types (the statement's t_j) carry which constraint, at which level.
AFFINITY = {1: RACK, 2: POD, 3: DOMAIN, 7: RACK, 8: DOMAIN, 9: DOMAIN}
ANTI_AFFINITY = {4: SERVER, 5: RACK, 7: SERVER, 8: RACK}
PARTITIONED = 6  # rack anti-affinity with partitions
WHOLE_POD = frozenset({2, 9})


@dataclass(frozen=True)
class Pool:
    domains: int  # N
    pods: int  # P, per network domain
    racks: int  # R, per pod
    servers: int  # S, per rack
    numa: int  # K, per server
    cpu: int  # C, per NUMA node
    mem: int  # M, per NUMA node

    @property
    def pod_size(self) -> int:
        return self.racks * self.servers


@dataclass(frozen=True)
class VmType:
    numa: int
    cpu: int  # per NUMA node
    mem: int  # per NUMA node


@dataclass(frozen=True)
class CreateGroup:
    group: int
    type: int
    partitions: int


@dataclass(frozen=True)
class CreateVms:
    vm_type: int  # 1-based index into Problem.vm_types
    group: int
    vms: tuple[int, ...]


@dataclass(frozen=True)
class DeleteVms:
    vms: tuple[int, ...]


Request = CreateGroup | CreateVms | DeleteVms


@dataclass(frozen=True)
class Problem:
    pool: Pool
    vm_types: tuple[VmType, ...]
    requests: tuple[Request, ...]  # the termination request left out


@dataclass(frozen=True)
class CheckResult:
    ok: bool
    score: int  # VMs placed before the first `-1`; 0 on any error
    placed_requests: int  # creation requests fully and validly placed
    error: str | None = None
    gave_up_at: int | None = None  # request number (1-based, all kinds counted) of the `-1`
    total_vms: int = 0  # VMs of all creation requests: the most any program can score


class _Tokens:
    def __init__(self, text: str) -> None:
        self._items = text.split()
        self._pos = 0

    def next_int(self, what: str) -> int:
        if self._pos >= len(self._items):
            raise ValueError(f"input ends before {what}")
        token = self._items[self._pos]
        self._pos += 1
        try:
            return int(token)
        except ValueError:
            raise ValueError(f"{what}: {token!r} is not an integer") from None

    def done(self) -> bool:
        return self._pos >= len(self._items)


def _parse_vm_types(tokens: _Tokens, pool: Pool) -> list[VmType]:
    count = tokens.next_int("F")
    if count < 1:
        raise ValueError(f"F must be positive, got {count}")
    vm_types = []
    for f in range(1, count + 1):
        vm_type = VmType(*(tokens.next_int(f"VM type {f}") for _ in range(3)))
        if not 1 <= vm_type.numa <= min(2, pool.numa) or min(vm_type.cpu, vm_type.mem) < 1:
            raise ValueError(f"VM type {f} is malformed: {vm_type}")
        vm_types.append(vm_type)
    return vm_types


def parse_input(text: str) -> Problem:
    """Parses an input file; raises ValueError when it is not one the replay can follow."""
    tokens = _Tokens(text)
    sizes = [tokens.next_int(name) for name in ("N", "P", "R", "S", "K", "C", "M")]
    if min(sizes) < 1:
        raise ValueError(f"pool sizes and capacities must be positive, got {sizes}")
    pool = Pool(*sizes)
    vm_types = _parse_vm_types(tokens, pool)
    requests: list[Request] = []
    group_types: dict[int, int] = {}
    live: dict[int, int] = {}  # VM -> its group, to validate deletions
    next_vm = 1
    while True:
        number = len(requests) + 1
        kind = tokens.next_int(f"the type of request {number}")
        if kind == 4:
            break
        if kind == 1:
            group, gtype, partitions = (tokens.next_int(f"request {number}") for _ in range(3))
            if group != len(group_types) + 1:
                raise ValueError(f"request {number}: PG {group} should be {len(group_types) + 1}")
            if not 0 <= gtype <= 9:
                raise ValueError(f"request {number}: PG type {gtype} is not 0..9")
            fits = partitions >= 1 if gtype == PARTITIONED else partitions == 0
            if not fits:
                raise ValueError(f"request {number}: PG type {gtype} with {partitions} partitions")
            group_types[group] = gtype
            requests.append(CreateGroup(group, gtype, partitions))
        elif kind == 2:
            size, f, group = (tokens.next_int(f"request {number}") for _ in range(3))
            if size < 1 or not 1 <= f <= len(vm_types) or group not in group_types:
                raise ValueError(f"request {number}: bad creation header {size} {f} {group}")
            vms = tuple(tokens.next_int(f"the VMs of request {number}") for _ in range(size))
            if vms != tuple(range(next_vm, next_vm + size)):
                raise ValueError(f"request {number}: VMs should be {next_vm}..{next_vm + size - 1}")
            next_vm += size
            live.update(dict.fromkeys(vms, group))
            requests.append(CreateVms(f, group, vms))
        elif kind == 3:
            size = tokens.next_int(f"request {number}")
            vms = tuple(tokens.next_int(f"the VMs of request {number}") for _ in range(size))
            if size < 1 or len(set(vms)) != size or not all(v in live for v in vms):
                raise ValueError(f"request {number}: deletes VMs that are not live: {vms}")
            if len({live[v] for v in vms}) != 1:
                raise ValueError(f"request {number}: deletes VMs of more than one PG")
            for v in vms:
                del live[v]
            requests.append(DeleteVms(vms))
        else:
            raise ValueError(f"request {number}: unknown request type {kind}")
    if not tokens.done():
        raise ValueError("input goes on after the termination request")
    return Problem(pool, tuple(vm_types), tuple(requests))


class _Violation(Exception):
    pass


@dataclass(frozen=True)
class _Placed:
    group: int
    server: Server
    numas: tuple[int, ...]
    partition: int
    cpu: int
    mem: int


@dataclass
class _Group:
    type: int
    partitions: int
    # Live VMs counted per place, keyed by the server's address cut to a level (a place):
    # an affinity group has one key at its level, an anti-affinity group counts of 1.
    places: dict[int, Counter[tuple[int, ...]]] = field(
        default_factory=lambda: {level: Counter() for level in (DOMAIN, POD, RACK, SERVER)}
    )
    rack_partitions: dict[tuple[int, ...], Counter[int]] = field(default_factory=dict)
    partition_sizes: Counter[int] = field(default_factory=Counter)


def _name(place: tuple[int, ...]) -> str:
    return f"{_LEVELS[len(place) - 1]} {'.'.join(map(str, place))}"


class _Replay:
    def __init__(self, problem: Problem) -> None:
        self.pool = problem.pool
        self.vm_types = problem.vm_types
        self.groups: dict[int, _Group] = {}
        self.vms: dict[int, _Placed] = {}  # live, placed VMs
        self.on_server: dict[Server, set[int]] = {}
        self.whole_pod_vm: dict[Server, int] = {}  # the live whole-pod VM a server holds
        self.cpu_used: Counter[tuple[Server, int]] = Counter()  # per (server, NUMA node)
        self.mem_used: Counter[tuple[Server, int]] = Counter()

    def create_group(self, request: CreateGroup) -> None:
        self.groups[request.group] = _Group(request.type, request.partitions)

    def delete(self, request: DeleteVms) -> None:
        for v in request.vms:
            placed = self.vms.pop(v)
            server = placed.server
            group = self.groups[placed.group]
            self.on_server[server].discard(v)
            if self.whole_pod_vm.get(server) == v:
                del self.whole_pod_vm[server]
            for node in placed.numas:
                self.cpu_used[server, node] -= placed.cpu
                self.mem_used[server, node] -= placed.mem
            for level, counter in group.places.items():
                place = server[:level]
                counter[place] -= 1
                if counter[place] == 0:
                    del counter[place]  # an emptied place binds nothing any more
            if group.type == PARTITIONED:
                group.rack_partitions[server[:RACK]][placed.partition] -= 1
                group.partition_sizes[placed.partition] -= 1

    def create(self, number: int, request: CreateVms, lines: list[tuple[int, list[str]]]) -> None:
        vm_type = self.vm_types[request.vm_type - 1]
        group = self.groups[request.group]
        for v, (line_no, tokens) in zip(request.vms, lines, strict=True):
            try:
                server, numas, partition = self._parse(tokens, vm_type, group)
                self._check_group(request.group, group, server, partition)
                self._place(v, request.group, group, vm_type, server, numas, partition)
            except _Violation as e:
                raise _Violation(f"request {number}, VM {v} (output line {line_no}): {e}") from None
        self._check_request(number, request, group)

    def _parse(
        self, tokens: list[str], vm_type: VmType, group: _Group
    ) -> tuple[Server, tuple[int, ...], int]:
        want = 4 + vm_type.numa + 1
        if len(tokens) != want:
            raise _Violation(
                f"expected {want} integers (domain pod rack server, {vm_type.numa} NUMA"
                f" node(s), partition), got {len(tokens)}: a VM is on one server"
            )
        try:
            values = [int(t) for t in tokens]
        except ValueError:
            raise _Violation(f"not all integers: {' '.join(tokens)}") from None
        pool = self.pool
        server: Server = (values[0], values[1], values[2], values[3])
        for value, most, level in zip(
            server, (pool.domains, pool.pods, pool.racks, pool.servers), _LEVELS, strict=True
        ):
            if not 1 <= value <= most:
                raise _Violation(f"{level} index {value} out of range 1..{most}")
        numas = tuple(values[4:-1])
        for node in numas:
            if not 1 <= node <= pool.numa:
                raise _Violation(
                    f"NUMA node {node} out of range 1..{pool.numa}: a VM's NUMA nodes must"
                    " belong to its one server"
                )
        if len(set(numas)) != len(numas):
            raise _Violation(
                f"NUMA count: a {vm_type.numa}-NUMA VM needs {vm_type.numa} different NUMA"
                f" nodes of one server, got {' '.join(map(str, numas))}"
            )
        partition = values[-1]
        if group.type == PARTITIONED:
            if not 1 <= partition <= group.partitions:
                raise _Violation(f"partition number {partition} out of range 1..{group.partitions}")
        elif partition != 0:
            raise _Violation(
                f"partition number {partition}: must be 0, PG type {group.type} has no partitions"
            )
        return server, numas, partition

    def _check_group(self, gid: int, group: _Group, server: Server, partition: int) -> None:
        """The group's constraints against its live VMs, this request's earlier ones included."""
        level = AFFINITY.get(group.type)
        if level is not None:
            held, place = group.places[level], server[:level]
            if held and place not in held:
                (other,) = held
                raise _Violation(
                    f"{_LEVELS[level - 1].replace(' ', '-')} affinity broken: group {gid}'s"
                    f" live VMs are in {_name(other)}, this one in {_name(place)}"
                )
        level = ANTI_AFFINITY.get(group.type)
        if level is not None and group.places[level][server[:level]]:
            raise _Violation(
                f"{_LEVELS[level - 1]} anti-affinity broken: {_name(server[:level])} already"
                f" holds a VM of group {gid}"
            )
        if group.type == PARTITIONED:
            rack = server[:RACK]
            held_partitions = group.rack_partitions.get(rack, Counter())
            others = [p for p, n in held_partitions.items() if n and p != partition]
            if others:
                raise _Violation(
                    f"rack anti-affinity with partitions broken: {_name(rack)} already holds"
                    f" partition {others[0]} of group {gid}, this VM is in partition {partition}"
                )
        # Whole-pod VMs take their server whole: nothing may share it, whoever comes first.
        if self.on_server.get(server):
            u = self.whole_pod_vm.get(server)
            if u is None and group.type in WHOLE_POD:
                u = min(self.on_server[server])
            if u is not None:
                owner = self.vms[u].group
                raise _Violation(
                    f"whole-pod allocation broken: {_name(server)} already holds VM {u}"
                    f" of group {owner} (type {self.groups[owner].type})"
                )

    def _place(
        self,
        v: int,
        gid: int,
        group: _Group,
        vm_type: VmType,
        server: Server,
        numas: tuple[int, ...],
        partition: int,
    ) -> None:
        for node in numas:
            self.cpu_used[server, node] += vm_type.cpu
            self.mem_used[server, node] += vm_type.mem
            cpu, mem = self.cpu_used[server, node], self.mem_used[server, node]
            if cpu > self.pool.cpu or mem > self.pool.mem:
                raise _Violation(
                    f"NUMA node {node} of {_name(server)} over capacity: CPU {cpu}/{self.pool.cpu},"
                    f" memory {mem}/{self.pool.mem}"
                )
        self.vms[v] = _Placed(gid, server, numas, partition, vm_type.cpu, vm_type.mem)
        self.on_server.setdefault(server, set()).add(v)
        if group.type in WHOLE_POD:
            self.whole_pod_vm[server] = v
        for level, counter in group.places.items():
            counter[server[:level]] += 1
        if group.type == PARTITIONED:
            group.rack_partitions.setdefault(server[:RACK], Counter())[partition] += 1
            group.partition_sizes[partition] += 1

    def _check_request(self, number: int, request: CreateVms, group: _Group) -> None:
        """The rules that hold once the whole request is placed."""
        vms = request.vms
        where = f"request {number} (VMs {vms[0]}..{vms[-1]}, group {request.group})"
        if group.type == PARTITIONED:
            sizes = [group.partition_sizes[p] for p in range(1, group.partitions + 1)]
            if max(sizes) - min(sizes) > 1:
                raise _Violation(f"{where}: partitions unbalanced, live sizes {sizes}")
        if group.type in WHOLE_POD:
            # One VM per server is already certain (nothing shares a whole-pod VM's server).
            per_pod = Counter(self.vms[v].server[:POD] for v in vms)
            for pod, count in sorted(per_pod.items()):
                if count != self.pool.pod_size:
                    first = next(v for v in vms if self.vms[v].server[:POD] == pod)
                    raise _Violation(
                        f"{where}, VM {first}: whole-pod allocation broken: the request fills"
                        f" {count} of the {self.pool.pod_size} servers of {_name(pod)}"
                    )


def _output_lines(text: str) -> Iterator[tuple[int, list[str]]]:
    for number, line in enumerate(text.splitlines(), start=1):
        tokens = line.split()
        if tokens:
            yield number, tokens


def check(input_text: str, output_text: str) -> CheckResult:
    """Replays `output_text`, a program's answers, against `input_text`; see the module doc."""
    try:
        problem = parse_input(input_text)
    except ValueError as e:
        return CheckResult(ok=False, score=0, placed_requests=0, error=f"invalid input: {e}")
    total = sum(len(r.vms) for r in problem.requests if isinstance(r, CreateVms))
    replay = _Replay(problem)
    lines = list(_output_lines(output_text))
    pos = score = placed = 0

    def failed(message: str, gave_up_at: int | None = None) -> CheckResult:
        return CheckResult(False, 0, placed, message, gave_up_at, total)

    for number, request in enumerate(problem.requests, start=1):
        if isinstance(request, CreateGroup):
            replay.create_group(request)
        elif isinstance(request, DeleteVms):
            replay.delete(request)
        else:
            if pos < len(lines) and lines[pos][1] == ["-1"]:
                if pos + 1 < len(lines):
                    return failed(
                        f"output after -1 (line {lines[pos + 1][0]}): the program must stop"
                        f" after giving up on request {number}",
                        number,
                    )
                return CheckResult(True, score, placed, None, number, total)
            answer = lines[pos : pos + len(request.vms)]
            for line_no, tokens in answer:
                if tokens == ["-1"]:
                    return failed(
                        f"request {number}: partial placement before -1 (output line"
                        f" {line_no}): a request is placed whole or not at all"
                    )
            if len(answer) < len(request.vms):
                missing = request.vms[len(answer)]
                return failed(f"request {number}, VM {missing}: missing output, the output ends")
            try:
                replay.create(number, request, answer)
            except _Violation as e:
                return failed(str(e))
            pos += len(request.vms)
            score += len(request.vms)
            placed += 1
    if pos < len(lines):
        return failed(f"extra output from line {lines[pos][0]}, after the last request's answer")
    return CheckResult(True, score, placed, None, None, total)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tas.offline.contest.checker",
        description="Check a program's output for a seed-001 input; prints one JSON line.",
    )
    parser.add_argument("input", type=Path)
    parser.add_argument("output", type=Path)
    args = parser.parse_args(argv)
    result = check(args.input.read_text(), args.output.read_text())
    print(json.dumps(asdict(result)))
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
