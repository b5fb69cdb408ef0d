"""Every generated input keeps the statement's bounds and guarantees, checked line by line here
independently of the checker's parser (which must read it too)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.contest import generator
from tas.contest.checker import check, parse_input
from tas.contest.generator import SHAPES, generate, main


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


@pytest.mark.parametrize("shape", ["mixed", "churn", "saturating"])
def test_the_vm_cap_is_kept(shape: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The real cap (200000) takes a long input to reach; a small one takes the same paths.
    monkeypatch.setattr(generator, "MAX_VMS", 300)
    for seed in range(5):
        summary = validate(generate(seed, shape))
        assert 250 <= summary.vms <= 300
