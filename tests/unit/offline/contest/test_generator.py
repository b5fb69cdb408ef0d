"""Every generated input keeps the statement's bounds and guarantees, checked line by line here
independently of the checker's parser (which must read it too)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.offline.contest import generator
from tas.offline.contest.checker import (
    CreateGroup,
    CreateVms,
    DeleteVms,
    VmType,
    check,
    parse_input,
)
from tas.offline.contest.generator import SHAPES, generate, main


@dataclass
class Summary:
    servers: int
    pod_size: int
    group_types: Counter[int]
    requests: int  # the termination included
    creations: int
    deletions: int
    vms: int
    asked: float  # every created VM's share of the pool (the larger of CPU and memory)
    first_creation: int | None  # request number


@dataclass
class _Group:
    type: int
    creations: int = 0
    live: int = 0
    deleted: int = 0  # type 6: since its last creation request


def validate(text: str) -> Summary:
    """Asserts every bound and guarantee of the statement (and the generator's own, stronger
    guarantee for partitions: a creation request covers the deletions since the last one)."""
    assert text.endswith("\n")
    lines = iter(text.splitlines())

    def ints(count: int | None = None) -> list[int]:
        values = [int(x) for x in next(lines).split()]
        assert count is None or len(values) == count, values
        return values

    n, p, r, s, k = ints(5)
    assert 1 <= n <= 8 and 4 <= p <= 32 and 1 <= r <= 8 and 4 <= s <= 16 and k == 2
    servers = n * p * r * s
    assert servers <= 5000
    cpu, mem = ints(2)
    assert 1 <= cpu <= 200 and 1 <= mem <= 500
    (f_count,) = ints(1)
    assert 1 <= f_count <= 20
    types = [tuple(ints(3)) for _ in range(f_count)]
    for numa, c, m in types:
        assert numa in (1, 2) and 1 <= c <= 100 and 1 <= m <= 100
    whole = {f for f, t in enumerate(types, start=1) if t == (2, cpu, mem)}

    groups: dict[int, _Group] = {}
    owner: dict[int, int] = {}
    next_vm = 1
    requests = creations = deletions = 0
    asked = 0.0
    first_creation = None
    while True:
        (kind,) = ints(1)
        requests += 1
        if kind == 4:
            break
        if kind == 1:
            j, t, parts = ints(3)
            assert j == len(groups) + 1 and 0 <= t <= 9
            assert 1 <= parts <= 7 if t == 6 else parts == 0
            groups[j] = _Group(t)
        elif kind == 2:
            size, f, j = ints(3)
            assert 1 <= size <= 500 and 1 <= f <= f_count and j in groups
            assert ints(size) == list(range(next_vm, next_vm + size))
            group = groups[j]
            if group.type in (1, 2, 7):
                assert group.creations == 0, "rack or pod affinity: one creation request"
            if group.type == 2:
                assert f in whole and size == r * s
            if group.type == 9:
                assert f in whole and size % (r * s) == 0
            if group.type == 6:
                assert size >= group.deleted
            group.creations += 1
            group.live += size
            group.deleted = 0
            owner.update(dict.fromkeys(range(next_vm, next_vm + size), j))
            next_vm += size
            creations += 1
            numa, c, m = types[f - 1]
            asked += size * numa * max(c / cpu, m / mem) / (2 * servers)
            first_creation = first_creation or requests
        elif kind == 3:
            size, *vms = ints()
            assert size == len(vms) >= 1 and len(set(vms)) == size
            assert all(v in owner for v in vms), "deletes only live VMs"
            (j,) = {owner.pop(v) for v in vms}  # all from one PG
            group = groups[j]
            group.live -= size
            group.deleted = group.deleted + size if group.live else 0
            deletions += 1
        else:
            pytest.fail(f"request type {kind}")
    assert next(lines, None) is None, "nothing after the termination request"
    assert requests <= 20000 and next_vm - 1 <= 200000
    for group in groups.values():
        assert group.creations == 1 if group.type in (1, 2, 7) else group.creations >= 1
    return Summary(
        servers,
        r * s,
        Counter(g.type for g in groups.values()),
        requests,
        creations,
        deletions,
        next_vm - 1,
        asked,
        first_creation,
    )


def _assert_readable(text: str, summary: Summary) -> None:
    """The checker parses it, and a program that gives up at once is scored 0 without error."""
    problem = parse_input(text)
    assert len(problem.requests) == summary.requests - 1
    output = "-1\n" if summary.first_creation else ""
    result = check(text, output)
    assert result.ok and result.score == 0, result
    assert result.gave_up_at == summary.first_creation
    assert result.total_vms == summary.vms


@pytest.mark.parametrize("shape", [s for s in SHAPES if s != "large"])
@pytest.mark.parametrize("seed", range(4))
def test_every_shape_keeps_the_bounds_and_guarantees(shape: str, seed: int) -> None:
    text = generate(seed, shape)
    summary = validate(text)
    _assert_readable(text, summary)
    assert summary.creations >= 1


def test_large_is_near_every_limit() -> None:
    text = generate(0, "large")
    summary = validate(text)
    _assert_readable(text, summary)
    assert summary.requests == 20000
    assert summary.servers >= 1000
    assert summary.vms >= 50000


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("requests", [None, 20, 31])
def test_mixed_has_every_pg_type(seed: int, requests: int | None) -> None:
    # 20 requests are just enough: a PG request and a creation request for each type.
    summary = validate(generate(seed, "mixed", requests=requests))
    assert set(summary.group_types) == set(range(10))


@pytest.mark.parametrize("seed", range(4))
def test_shapes_do_what_they_say(seed: int) -> None:
    small = validate(generate(seed, "small"))
    assert small.servers <= 32 and small.requests <= 41
    saturating = validate(generate(seed, "saturating"))
    assert saturating.asked >= 2.9  # three times the pool, give or take rounding
    assert saturating.deletions * 5 < saturating.creations
    churn = validate(generate(seed, "churn"))
    assert churn.deletions >= churn.creations
    mixed = validate(generate(seed, "mixed"))
    assert mixed.deletions >= mixed.creations // 2


def test_deterministic_per_seed() -> None:
    for shape in SHAPES:
        assert generate(5, shape, requests=300) == generate(5, shape, requests=300)
    assert generate(1) != generate(2)


def test_requests_sets_the_length() -> None:
    summary = validate(generate(3, "mixed", requests=50))
    assert summary.requests == 51  # the termination request comes on top
    summary = validate(generate(3, "mixed", requests=1))  # no room for a PG and its VMs
    assert summary.requests == 1 and summary.creations == 0


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="shape"):
        generate(0, "huge")
    with pytest.raises(ValueError, match="requests"):
        generate(0, requests=20000)
    with pytest.raises(ValueError, match="requests"):
        generate(0, requests=0)


def test_main_prints_the_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--seed", "3", "--shape", "small"]) == 0
    assert capsys.readouterr().out == generate(3, "small")


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    shape=st.sampled_from([s for s in SHAPES if s != "large"]),
    requests=st.integers(1, 400),
)
def test_any_seed_and_length_is_valid(seed: int, shape: str, requests: int) -> None:
    text = generate(seed, shape, requests=requests)
    summary = validate(text)
    assert summary.requests <= requests + 1
    _assert_readable(text, summary)
    assert infeasible_requests(text) == []


@pytest.mark.parametrize("shape", ["mixed", "churn", "saturating"])
def test_the_vm_cap_is_kept(shape: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The real cap (200000) takes a long input to reach; a small one takes the same paths.
    monkeypatch.setattr(generator, "MAX_VMS", 300)
    for seed in range(5):
        text = generate(seed, shape)
        summary = validate(text)
        assert 250 <= summary.vms <= 300
        assert infeasible_requests(text) == []


# Feasibility: every creation request fits an EMPTY pool together with its group's live VMs,
# under the group's constraints, so that a program fails only once the pool fills up or
# fragments. Shown here by building such a placement (a witness), from the statement alone.


def _first_fit(vms: list[VmType], capacity: tuple[int, int], limit: int | None) -> int | None:
    """Servers that first-fit fills with the VMs, taken type by type on empty servers (NUMA
    nodes of `capacity` each: a 2-NUMA VM on both nodes of one server, a 1-NUMA VM on one);
    None when more than `limit` servers would be needed."""
    cpu, mem = capacity
    servers: list[list[int]] = []  # per server: CPU and memory left on node 1, then node 2
    for vm_type, count in sorted(Counter(vms).items(), key=lambda kv: _type_key(kv[0])):
        assert vm_type.cpu <= cpu and vm_type.mem <= mem, "each VM fits an empty server"
        i = 0
        while count:
            if i == len(servers):
                if limit is not None and i == limit:
                    return None
                servers.append([cpu, mem, cpu, mem])
            left = servers[i]
            nodes = [
                min(left[2 * k] // vm_type.cpu, left[2 * k + 1] // vm_type.mem) for k in (0, 1)
            ]
            fits = min(nodes) if vm_type.numa == 2 else sum(nodes)
            # One by one, the first fit: both nodes, or node 1 until full, then node 2.
            take = min(fits, count)
            per_node = [take, take] if vm_type.numa == 2 else [min(take, nodes[0])]
            if vm_type.numa == 1:
                per_node.append(take - per_node[0])
            for k, n in enumerate(per_node):
                left[2 * k] -= n * vm_type.cpu
                left[2 * k + 1] -= n * vm_type.mem
            count -= take
            i += 1
    return len(servers)


def _type_key(vm_type: VmType) -> tuple[int, int, int]:
    return vm_type.numa, vm_type.cpu, vm_type.mem


def infeasible_requests(text: str) -> list[str]:
    """Creation requests that no placement on an empty pool could satisfy, given the group's
    live VMs; the witness for the others is built on the way."""
    problem = parse_input(text)
    pool, types = problem.pool, problem.vm_types
    n, p, r, s = pool.domains, pool.pods, pool.racks, pool.servers
    racks_in_pool = n * p * r
    capacity = (pool.cpu, pool.mem)
    kinds: dict[int, tuple[int, int]] = {}  # group -> its type and partitions
    live: dict[int, dict[int, tuple[VmType, int]]] = {}  # group -> live VM -> type, request
    owner: dict[int, int] = {}  # live VM -> its group
    pods_of_request: dict[int, int] = {}  # whole-pod creation request -> its pods
    problems: list[str] = []
    for number, request in enumerate(problem.requests, start=1):
        if isinstance(request, CreateGroup):
            kinds[request.group] = (request.type, request.partitions)
            live[request.group] = {}
            continue
        if isinstance(request, DeleteVms):
            for v in request.vms:
                del live[owner.pop(v)][v]
            continue
        assert isinstance(request, CreateVms)
        gtype, partitions = kinds[request.group]
        new_type = types[request.vm_type - 1]
        group = live[request.group]
        everything = [t for t, _ in group.values()] + [new_type] * len(request.vms)
        total = len(everything)
        if gtype in (0, 1, 3):  # (no) affinity: first-fit in one rack / network domain / pool
            servers = {0: n * p * r * s, 1: s, 3: p * r * s}[gtype]
            ok = _first_fit(everything, capacity, servers) is not None
        elif gtype in (4, 5, 7, 8):  # anti-affinity: one server / rack each, in the scope
            ok = total <= {4: n * p * r * s, 5: racks_in_pool, 7: s, 8: p * r}[gtype]
        elif gtype == 6:
            # Deal the VMs (sorted by type) round robin into the partitions: sizes differ by
            # at most 1; each partition first-fit on racks of its own.
            ok = partitions <= racks_in_pool
            dealt = sorted(everything, key=_type_key)
            racks = 0
            for k in range(partitions):
                used = _first_fit(dealt[k::partitions], capacity, None) or 0
                racks += -(-used // s)
            ok = ok and racks <= racks_in_pool
        else:  # whole pods: a pod for type 2, pods of one network domain for type 9
            assert len(request.vms) % (r * s) == 0 and new_type == VmType(2, pool.cpu, pool.mem)
            # Each earlier request's live VMs are in some of its pods: at most one each.
            alive = Counter(req for _, req in group.values())
            held = sum(min(pods_of_request[req], count) for req, count in alive.items())
            pods_of_request[number] = len(request.vms) // (r * s)
            ok = held + pods_of_request[number] <= (1 if gtype == 2 else p)
        if not ok:
            problems.append(
                f"request {number}: {len(request.vms)} VMs of type {request.vm_type} in group"
                f" {request.group} (type {gtype}, {len(group)} live) fit no empty pool"
            )
        group.update(dict.fromkeys(request.vms, (new_type, number)))
        owner.update(dict.fromkeys(request.vms, request.group))
    return problems


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("seed", range(6))
def test_every_request_fits_an_empty_pool(shape: str, seed: int) -> None:
    assert infeasible_requests(generate(seed, shape)) == []


def test_the_witness_finds_impossible_requests() -> None:
    # A network-domain-affinity group asking for more whole-server VMs than a domain holds,
    # and a rack-anti-affinity group in a network domain of 4 racks asked for a fifth VM.
    head = "1 4 1 4 2\n10 10\n2\n2 10 10\n1 5 5\n"
    text = head + "1\n1 3 0\n2\n17 1 1\n" + " ".join(map(str, range(1, 18))) + "\n4\n"
    assert len(infeasible_requests(text)) == 1
    text = head + "1\n1 8 0\n2\n4 2 1\n1 2 3 4\n2\n1 2 1\n5\n4\n"
    (problem,) = infeasible_requests(text)
    assert problem.startswith("request 3:")
    # Whole servers fill an empty pod's servers exactly; 1-NUMA halves take a node each.
    assert _first_fit([VmType(2, 10, 10)] * 16, (10, 10), 16) == 16
    assert _first_fit([VmType(1, 5, 5)] * 8, (10, 10), None) == 2
    assert _first_fit([VmType(1, 5, 5)] * 9, (10, 10), 2) is None


@pytest.mark.parametrize("seed", range(6))
def test_saturating_runs_the_pool_out_of_room(seed: int) -> None:
    """Well before its last creation request (with at most 60% of its VMs asked for), the live
    VMs of a saturating input want more CPU or memory than the whole pool has: no program can
    place them all, so a run ends on a full pool, not at the end of the input."""
    problem = parse_input(generate(seed, "saturating"))
    pool = problem.pool
    servers = pool.domains * pool.pods * pool.racks * pool.servers
    total = sum(len(r.vms) for r in problem.requests if isinstance(r, CreateVms))
    cpu = mem = asked = 0
    alive: dict[int, VmType] = {}
    for request in problem.requests:
        if isinstance(request, CreateVms):
            vm_type = problem.vm_types[request.vm_type - 1]
            alive.update(dict.fromkeys(request.vms, vm_type))
            cpu += len(request.vms) * vm_type.numa * vm_type.cpu
            mem += len(request.vms) * vm_type.numa * vm_type.mem
            asked += len(request.vms)
            if cpu > 2 * servers * pool.cpu or mem > 2 * servers * pool.mem:
                break
        elif isinstance(request, DeleteVms):
            for v in request.vms:
                gone = alive.pop(v)
                cpu -= gone.numa * gone.cpu
                mem -= gone.numa * gone.mem
    else:
        pytest.fail("the live VMs never outgrow the pool")
    assert asked <= 0.6 * total, (asked, total)


@pytest.mark.parametrize("seed", range(4))
def test_growing_has_network_domain_groups_that_grow(seed: int) -> None:
    text = generate(seed, "growing")
    summary = validate(text)
    assert summary.asked >= 1.9  # twice the pool, give or take rounding
    problem = parse_input(text)
    kinds = {r.group: r.type for r in problem.requests if isinstance(r, CreateGroup)}
    asks = Counter(r.group for r in problem.requests if isinstance(r, CreateVms))
    growth = [n - 1 for g, n in asks.items() if kinds[g] in generator.GROWING_TYPES]
    assert max(growth) >= 3 and sum(growth) >= 8, asks  # asked again and again
    assert {kinds[g] for g in asks} >= {3, 5, 6}  # beside rack anti-affinity and partitions
