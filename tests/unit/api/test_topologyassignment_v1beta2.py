"""Kueue v1beta2's compact topologyAssignment: encoded slice for slice as Kueue's V1Beta2From
(pkg/util/tas/tas_assignment.go), every valid form decoded, and bad input refused naming the
field. The scenarios are Kueue's own (tas_assignment_test.go, tas_assignment_fuzz_test.go)."""

from __future__ import annotations

import copy
import json
import random
import string
import time
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tas.api.topologyassignment import (
    TopologyAssignmentError,
    from_api,
    from_v1beta2,
    hostname_prefix_runs,
    to_api,
    to_v1beta2,
    v1beta1_to_v1beta2,
    v1beta2_to_v1beta1,
)
from tas.solver.types import DomainAssignment, TopologyAssignment

HOST = "kubernetes.io/hostname"
BLOCK = "cloud.provider.com/topology-block"
RACK = "cloud.provider.com/topology-rack"
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --- building the JSON shapes ------------------------------------------------------------------


def v1(levels: list[str], *domains: tuple[list[str], int]) -> dict:
    return {"levels": levels, "domains": [{"values": v, "count": c} for v, c in domains]}


def hosts(*named: tuple[str, int]) -> dict:
    return v1([HOST], *[([name], count) for name, count in named])


def v2(levels: list[str], *slices: dict) -> dict:
    return {"levels": levels, "slices": list(slices)}


def piece(count: int, values: list[dict], pods: int | list[int]) -> dict:
    """One slice; `pods` an int is universal, a list individual."""
    key = "individual" if isinstance(pods, list) else "universal"
    return {"domainCount": count, "valuesPerLevel": values, "podCounts": {key: pods}}


def uni(value: str) -> dict:
    return {"universal": value}


def ind(*roots: str, prefix: str | None = None, suffix: str | None = None) -> dict:
    individual: dict = {}
    if prefix is not None:
        individual["prefix"] = prefix
    if suffix is not None:
        individual["suffix"] = suffix
    return {"individual": {**individual, "roots": list(roots)}}


# --- Kueue's table: both ways (bothWaysTestCases) ----------------------------------------------

BOTH_WAYS = {
    "empty": (v1(["a", "b"]), v2(["a", "b"])),
    "one domain": (
        v1(["a", "b"], (["a1", "b1"], 1)),
        v2(["a", "b"], piece(1, [uni("a1"), uni("b1")], 1)),
    ),
    "multiple domains, same counts, no common prefix": (
        v1(["a", "b"], (["a1", "b1"], 1), (["a2", "b2"], 1)),
        v2(["a", "b"], piece(2, [ind("1", "2", prefix="a"), ind("1", "2", prefix="b")], 1)),
    ),
    "multiple domains, different counts, common prefix and suffix": (
        v1(["a", "b"], (["p.a1.s", "p.b1.s"], 1), (["p.a2.s", "p.b2.s"], 2)),
        v2(
            ["a", "b"],
            piece(
                2,
                [
                    ind("1", "2", prefix="p.a", suffix=".s"),
                    ind("1", "2", prefix="p.b", suffix=".s"),
                ],
                [1, 2],
            ),
        ),
    ),
    "multiple domains, universal value": (
        v1(["a", "b"], (["a1", "x"], 1), (["a1", "y"], 2)),
        v2(["a", "b"], piece(2, [uni("a1"), ind("x", "y")], [1, 2])),
    ),
    "multiple domains, same counts, shrinking prefix": (
        v1(["a"], (["a123"], 1), (["a12"], 1), (["a1"], 1), (["a13"], 1)),
        v2(["a"], piece(4, [ind("23", "2", "", "3", prefix="a1")], 1)),
    ),
    "multiple domains, same counts, shrinking suffix": (
        v1(["a"], (["123b"], 1), (["23b"], 1), (["3b"], 1), (["13b"], 1)),
        v2(["a"], piece(4, [ind("12", "2", "", "1", suffix="3b")], 1)),
    ),
    # prefix "abaca" and suffix "acada" overlap: Kueue shrinks the prefix
    "multiple domains, same counts, max prefix & suffix overlap partially": (
        v1(["a"], (["abacacada"], 1), (["abacada"], 1)),
        v2(["a"], piece(2, [ind("ac", "", prefix="ab", suffix="acada")], 1)),
    ),
    "multiple domains, same counts, max prefix & suffix overlap fully, shrinking strings": (
        v1(["a"], (["ababa"], 1), (["aba"], 1)),
        v2(["a"], piece(2, [ind("ab", "", suffix="aba")], 1)),
    ),
    "multiple domains, same counts, max prefix & suffix overlap fully, growing strings": (
        v1(["a"], (["aba"], 1), (["ababa"], 1)),
        v2(["a"], piece(2, [ind("", "ab", suffix="aba")], 1)),
    ),
}

# --- Kueue's table: decoded only (oneWayTestCases, twoDomains) ---------------------------------

ONE_WAY = {
    "multiple slices, no prefixes/suffixes or universal values": (
        v1(["a", "b"], (["a", "b"], 1), (["c", "d"], 2), (["e", "f"], 3)),
        v2(
            ["a", "b"],
            piece(1, [ind("a"), ind("b")], [1]),
            piece(2, [ind("c", "e"), ind("d", "f")], [2, 3]),
        ),
    ),
    "multiple slices, prefixes, suffixes & universal values": (
        v1(
            ["a", "b"],
            (["a1", "b1-s"], 2),
            (["a1", "b2-s"], 3),
            (["a2", "x-t"], 5),
            (["a3", "y-t"], 5),
            (["a4", "z-t"], 5),
            (["a10", "b10"], 10),
            (["a10", "b10"], 10),
        ),
        v2(
            ["a", "b"],
            piece(2, [uni("a1"), ind("1", "2", prefix="b", suffix="-s")], [2, 3]),
            piece(3, [ind("2", "3", "4", prefix="a"), ind("x", "y", "z", suffix="-t")], 5),
            piece(2, [uni("a10"), uni("b10")], 10),
        ),
    ),
    "two domains, all universal": (
        v1(["a"], (["a1"], 1), (["a1"], 1)),
        v2(["a"], piece(2, [uni("a1")], 1)),
    ),
    "empty prefix and suffix read as none": (
        v1(["a"], (["x"], 1), (["y"], 1)),
        v2(["a"], piece(2, [ind("x", "y", prefix="", suffix="")], 1)),
    ),
    "null universal beside individual is unset": (
        v1(["a"], (["n-1"], 1), (["n-2"], 4)),
        v2(
            ["a"],
            {
                "domainCount": 2,
                "valuesPerLevel": [{"universal": None, "individual": {"roots": ["n-1", "n-2"]}}],
                "podCounts": {"universal": None, "individual": [1, 4]},
            },
        ),
    ),
}


@pytest.mark.parametrize("by_hostname_prefix", [True, False], ids=["gate on", "gate off"])
@pytest.mark.parametrize(("beta1", "beta2"), BOTH_WAYS.values(), ids=BOTH_WAYS.keys())
def test_kueue_encodes_these_slices(beta1: dict, beta2: dict, by_hostname_prefix: bool) -> None:
    assert v1beta1_to_v1beta2(beta1, by_hostname_prefix=by_hostname_prefix) == beta2
    solver = from_api(beta1)
    assert solver is not None
    assert to_v1beta2(solver, by_hostname_prefix=by_hostname_prefix) == beta2


@pytest.mark.parametrize(
    ("beta1", "beta2"), [*BOTH_WAYS.values(), *ONE_WAY.values()], ids=[*BOTH_WAYS, *ONE_WAY]
)
def test_kueue_decodes_these_slices(beta1: dict, beta2: dict) -> None:
    assert v1beta2_to_v1beta1(beta2) == beta1
    decoded = from_v1beta2(beta2)
    assert decoded is not None
    assert decoded.levels == tuple(beta1["levels"])
    assert [(d.values, d.count) for d in decoded.domains] == [
        (tuple(d["values"]), d["count"]) for d in beta1["domains"]
    ]


def test_none_decodes_to_none() -> None:
    assert from_v1beta2(None) is None


# --- Kueue's hostname-prefix runs (TestCompactTopologyAssignmentEncodingWithHostnamePrefixRuns)

PREFIX_RUNS = {
    "GKE node pools": (
        hosts(
            ("gke-c-pool-a-hash1-aa", 3),
            ("gke-c-pool-a-hash1-bb", 3),
            ("gke-c-pool-b-hash2-cc", 4),
            ("gke-c-pool-b-hash2-dd", 5),
        ),
        v2(
            [HOST],
            piece(2, [ind("aa", "bb", prefix="gke-c-pool-a-hash1-")], 3),
            piece(2, [ind("cc", "dd", prefix="gke-c-pool-b-hash2-")], [4, 5]),
        ),
    ),
    "AWS EKS private DNS names": (
        hosts(
            ("ip-10-24-34-0.us-west-2.compute.internal", 2),
            ("ip-10-24-34-1.us-west-2.compute.internal", 2),
            ("ip-10-24-35-0.us-west-2.compute.internal", 3),
            ("ip-10-24-35-1.us-west-2.compute.internal", 4),
        ),
        v2(
            [HOST],
            piece(
                2, [ind("0", "1", prefix="ip-10-24-34-", suffix=".us-west-2.compute.internal")], 2
            ),
            piece(
                2,
                [ind("0", "1", prefix="ip-10-24-35-", suffix=".us-west-2.compute.internal")],
                [3, 4],
            ),
        ),
    ),
    "Azure AKS VMSS node pools": (
        hosts(
            ("aks-nodepool1-12345678-vmss000000", 1),
            ("aks-nodepool1-12345678-vmss000001", 1),
            ("aks-nodepool2-87654321-vmss000000", 2),
            ("aks-nodepool2-87654321-vmss000001", 3),
        ),
        v2(
            [HOST],
            piece(2, [ind("0", "1", prefix="aks-nodepool1-12345678-vmss00000")], 1),
            piece(2, [ind("0", "1", prefix="aks-nodepool2-87654321-vmss00000")], [2, 3]),
        ),
    ),
    "on-premises UUID node names": (
        hosts(
            ("550e8400-e29b-41d4-a716-446655440000", 1),
            ("6ba7b810-9dad-11d1-80b4-00c04fd430c8", 2),
            ("f47ac10b-58cc-4372-a567-0e02b2c3d479", 3),
        ),
        v2(
            [HOST],
            piece(
                3,
                [
                    ind(
                        "550e8400-e29b-41d4-a716-446655440000",
                        "6ba7b810-9dad-11d1-80b4-00c04fd430c8",
                        "f47ac10b-58cc-4372-a567-0e02b2c3d479",
                    )
                ],
                [1, 2, 3],
            ),
        ),
    ),
    # TestCompactDomainRuns: keys [a, a, b, a] make three runs, never reordered
    "consecutive runs": (
        hosts(("prefix-a-0", 1), ("prefix-a-1", 1), ("prefix-b-2", 1), ("prefix-a-3", 1)),
        v2(
            [HOST],
            piece(2, [ind("0", "1", prefix="prefix-a-")], 1),
            piece(1, [uni("prefix-b-2")], 1),
            piece(1, [uni("prefix-a-3")], 1),
        ),
    ),
    # a "-" as the last character ends no prefix: "x-y-" does not share "x-y-" with "x-y-1"
    "trailing dash": (
        hosts(("x-y-", 1), ("x-y-1", 1), ("x-z", 1)),
        v2([HOST], piece(3, [ind("y-", "y-1", "z", prefix="x-")], 1)),
    ),
}


@pytest.mark.parametrize(("beta1", "beta2"), PREFIX_RUNS.values(), ids=PREFIX_RUNS.keys())
def test_hostname_prefix_runs_as_kueue(beta1: dict, beta2: dict) -> None:
    assert hostname_prefix_runs(beta1) == beta2
    assert v1beta2_to_v1beta1(v1beta1_to_v1beta2(beta1)) == beta1


@pytest.mark.parametrize(
    "beta1",
    [
        v1(["cloud.example.com/rack"], (["rack-a"], 1), (["rack-b"], 2)),  # no hostname level
        v1([RACK], *[([f"rack-{r}-{i}"], 1) for r in "ab" for i in range(2)]),
        hosts(("node-a", 1), ("host-b", 1)),  # no prefix two hostnames share
        hosts(("nodea", 1), ("hostb", 1)),  # no "-" at all
    ],
    ids=["without hostname level", "rack prefixes", "no reusable prefix", "no delimiter"],
)
def test_without_a_shared_hostname_prefix_one_slice(beta1: dict) -> None:
    encoded = hostname_prefix_runs(beta1)
    assert len(encoded["slices"]) == 1
    assert v1beta2_to_v1beta1(encoded) == beta1


def test_preserves_domain_order() -> None:
    beta1 = hosts(
        ("gke-c-pool-a-hash1-aa", 1),
        ("gke-c-pool-b-hash2-cc", 2),
        ("gke-c-pool-a-hash1-bb", 3),
        ("gke-c-pool-b-hash2-dd", 4),
    )
    encoded = hostname_prefix_runs(beta1)
    assert len(encoded["slices"]) == 4
    assert v1beta2_to_v1beta1(encoded) == beta1


def pool_hosts(count: int) -> dict:
    """Kueue's hostnamePrefixAssignment: the first half in pool a, the rest in pool b."""
    half = count // 2
    names = [
        f"pool-a-node-{i:05d}" if i < half else f"pool-b-node-{i - half:05d}" for i in range(count)
    ]
    return hosts(*[(name, 1) for name in names])


DIGITS = list("0123456789")
GATE_AND_FALLBACK = {
    "enabled keeps one-slice hostname-prefix encoding": (
        True,
        1,
        v2([HOST], piece(1, [uni("pool-b-node-00000")], 1)),
    ),
    "enabled uses smaller single-slice encoding": (
        True,
        4,
        v2(
            [HOST],
            piece(
                4,
                [
                    ind(
                        "a-node-00000",
                        "a-node-00001",
                        "b-node-00000",
                        "b-node-00001",
                        prefix="pool-",
                    )
                ],
                1,
            ),
        ),
    ),
    "enabled uses smaller hostname-prefix encoding": (
        True,
        20,
        v2(
            [HOST],
            piece(10, [ind(*DIGITS, prefix="pool-a-node-0000")], 1),
            piece(10, [ind(*DIGITS, prefix="pool-b-node-0000")], 1),
        ),
    ),
    "disabled uses single-slice encoding": (
        False,
        20,
        v2(
            [HOST],
            piece(
                20,
                [ind(*[f"{pool}-node-0000{d}" for pool in "ab" for d in DIGITS], prefix="pool-")],
                1,
            ),
        ),
    ),
}


@pytest.mark.parametrize(
    ("gate", "count", "beta2"), GATE_AND_FALLBACK.values(), ids=GATE_AND_FALLBACK.keys()
)
def test_gate_and_smaller_encoding(gate: bool, count: int, beta2: dict) -> None:
    beta1 = pool_hosts(count)
    assert v1beta1_to_v1beta2(beta1, by_hostname_prefix=gate) == beta2
    assert v1beta2_to_v1beta1(beta2) == beta1


def test_equal_json_sizes_keep_the_hostname_prefix_runs() -> None:
    # both encodings marshal to 336 bytes: Kueue takes the single slice only when shorter
    names = [f"node-a-{i}" for i in range(3)] + [f"pool-22-{i}" for i in range(11)]
    beta1 = hosts(*[(name, 2 if i == 0 else 1) for i, name in enumerate(names)])
    assert v1beta1_to_v1beta2(beta1) == v2(
        [HOST],
        piece(3, [ind("0", "1", "2", prefix="node-a-")], [2, 1, 1]),
        piece(11, [ind(*[str(i) for i in range(11)], prefix="pool-22-")], 1),
    )


def test_sizes_count_go_escaping_html_characters() -> None:
    # Go writes <, > and & as \u003c...: 235 bytes each way, so the runs stay (counted as
    # Python writes them, the single slice would be 25 bytes shorter)
    beta1 = hosts(*[("p<-<", 2)] * 2, *[("q&-b", 1)] * 4)
    assert v1beta1_to_v1beta2(beta1) == v2(
        [HOST], piece(2, [uni("p<-<")], 2), piece(4, [uni("q&-b")], 1)
    )


def alternating(count: int, first: str, second: str) -> dict:
    return hosts(*[(f"{(first, second)[i % 2]}-{i:04d}", 1) for i in range(count)])


def test_backs_off_to_a_shorter_prefix_to_fit_the_slice_limit() -> None:
    # 1001 alternating runs of a-x-/a-y- would need 1001 slices: all share "a-" instead
    beta1 = alternating(1001, "a-x", "a-y")
    encoded = hostname_prefix_runs(beta1)
    assert len(encoded["slices"]) == 1
    assert encoded["slices"][0]["valuesPerLevel"][0]["individual"]["prefix"] == "a-"
    assert v1beta2_to_v1beta1(encoded) == beta1


@pytest.mark.parametrize(("pools", "slices"), [(1000, 1000), (1001, 1)])
def test_a_thousand_runs_is_the_limit(pools: int, slices: int) -> None:
    beta1 = hosts(*[(f"pool{p:04d}-n-{k}", 1) for p in range(pools) for k in range(2)])
    assert len(hostname_prefix_runs(beta1)["slices"]) == slices


def test_one_run_when_no_prefix_depth_fits_the_slice_limit() -> None:
    beta1 = alternating(1001, "a-x", "b-y")
    encoded = hostname_prefix_runs(beta1)
    assert len(encoded["slices"]) == 1
    assert v1beta2_to_v1beta1(encoded) == beta1


def test_runs_are_chunked_at_the_slice_domain_limit() -> None:
    # TestTopologyAssignmentCompactionRoundTripAcrossLimits: alternating pools back off to
    # "pool-", one run of 120k domains, cut at 100k
    beta1 = hosts(*[(f"pool-{i % 2}-node-{i:06d}", 1) for i in range(120_000)])
    encoded = v1beta1_to_v1beta2(beta1)
    assert [s["domainCount"] for s in encoded["slices"]] == [100_000, 20_000]
    assert v1beta2_to_v1beta1(encoded) == beta1


def test_large_assignment_with_many_pools() -> None:
    # TestV1Beta2FromInternal_largeHostnameAssignmentWithManyPools: 2000 pools of 100 nodes
    # need 2000 slices at the longest prefix; backing off they make one run, in two chunks
    names = [f"gke-cluster-pool-{p:04d}-{p:08x}-{n:04x}" for p in range(2_000) for n in range(100)]
    encoded = v1beta1_to_v1beta2(hosts(*[(name, 1) for name in names]))
    assert [s["domainCount"] for s in encoded["slices"]] == [100_000, 100_000]


def test_without_the_gate_past_one_slice_is_refused() -> None:
    beta1 = hosts(*[(f"n{i}", 1) for i in range(100_001)])
    with pytest.raises(TopologyAssignmentError) as refused:
        v1beta1_to_v1beta2(beta1, by_hostname_prefix=False)
    assert refused.value.field == "domains"
    assert len(v1beta1_to_v1beta2(beta1)["slices"]) == 2


# --- properties --------------------------------------------------------------------------------

TOKENS = ["gke", "c", "pool", "a", "b", "node", "ip", "10", "24", "aks", "vmss"]
hostnames = st.builds(
    lambda parts, n: "-".join([*parts, str(n)]),
    st.lists(st.sampled_from(TOKENS), max_size=4),
    st.integers(0, 40),
)
odd_values = st.text(alphabet="ab-.", max_size=8)  # empty, trailing "-", overlaps like "aba"
values = st.one_of(hostnames, odd_values)
upper_values = st.one_of(st.sampled_from(["block-1", "block-2", "rack-1", "rack-10"]), values)
LEVEL_SETS = [(HOST,), (BLOCK, RACK), (BLOCK, HOST), (RACK,), (BLOCK, RACK, HOST)]


@st.composite
def assignments(draw: st.DrawFn, max_domains: int = 30) -> TopologyAssignment:
    levels = draw(st.sampled_from(LEVEL_SETS))
    row = st.tuples(*[upper_values] * (len(levels) - 1), values)
    rows = draw(st.lists(row, max_size=max_domains))
    if draw(st.booleans()):
        rows.sort()  # the solver's order
    if draw(st.booleans()):
        counts = [draw(st.integers(1, 4))] * len(rows)
    else:
        counts = draw(st.lists(st.integers(1, 2**31 - 1), min_size=len(rows), max_size=len(rows)))
    domains = tuple(DomainAssignment(r, c) for r, c in zip(rows, counts, strict=True))
    return TopologyAssignment(levels=levels, domains=domains)


@st.composite
def pooled_hosts(draw: st.DrawFn) -> TopologyAssignment:
    """Hostnames in a few pools, mostly sorted: runs, so several slices, and the size choice."""
    pools = draw(
        st.lists(
            st.sampled_from(["gke-c-p1-h1", "gke-c-p2-h2", "ip-10-1", "aks"]),
            min_size=1,
            max_size=3,
        )
    )
    names = draw(st.lists(st.tuples(st.sampled_from(pools), st.integers(0, 300)), max_size=80))
    rows = sorted((f"{pool}-{n}",) for pool, n in names)
    counts = draw(st.lists(st.integers(1, 3), min_size=len(rows), max_size=len(rows)))
    domains = tuple(DomainAssignment(r, c) for r, c in zip(rows, counts, strict=True))
    return TopologyAssignment(levels=(HOST,), domains=domains)


@FAST
@given(st.one_of(assignments(), pooled_hosts()), st.booleans())
def test_decode_inverts_encode(assignment: TopologyAssignment, gate: bool) -> None:
    encoded = to_v1beta2(assignment, by_hostname_prefix=gate)
    assert from_v1beta2(json.loads(json.dumps(encoded))) == assignment


@FAST
@given(st.one_of(assignments(), pooled_hosts()), st.booleans())
def test_v1beta1_round_trips_through_v1beta2(assignment: TopologyAssignment, gate: bool) -> None:
    beta1 = to_api(assignment)
    assert v1beta2_to_v1beta1(v1beta1_to_v1beta2(beta1, by_hostname_prefix=gate)) == beta1


def assert_within_schema(encoded: dict, levels: int, domains: int) -> None:
    """The v1beta2 schema's limits, checked here without the decoder."""
    assert 1 <= len(encoded["levels"]) == levels <= 16
    assert len(encoded["slices"]) <= 1000
    assert sum(s["domainCount"] for s in encoded["slices"]) == domains
    for s in encoded["slices"]:
        count = s["domainCount"]
        assert 1 <= count <= 100_000
        assert len(s["valuesPerLevel"]) == levels
        for entry in s["valuesPerLevel"]:
            assert len(entry) == 1
            if "universal" in entry:
                assert len(entry["universal"]) <= 63
                continue
            individual = entry["individual"]
            assert set(individual) <= {"prefix", "suffix", "roots"}
            for part in ("prefix", "suffix"):
                assert 1 <= len(individual.get(part, "x")) <= 63  # set only when non-empty
            assert len(individual["roots"]) == count
            assert all(len(root) <= 63 for root in individual["roots"])
        pods = s["podCounts"]
        assert len(pods) == 1
        if "universal" in pods:
            assert 1 <= pods["universal"] <= 2**31 - 1
        else:
            assert len(pods["individual"]) == count
            assert all(1 <= n <= 2**31 - 1 for n in pods["individual"])


@FAST
@given(st.one_of(assignments(), pooled_hosts()), st.booleans())
def test_every_encoding_is_within_the_schema(assignment: TopologyAssignment, gate: bool) -> None:
    encoded = to_v1beta2(assignment, by_hostname_prefix=gate)
    assert_within_schema(encoded, len(assignment.levels), len(assignment.domains))


def test_the_limits_hold_past_a_thousand_runs() -> None:
    encoded = v1beta1_to_v1beta2(alternating(1001, "a-x", "a-y"))
    assert_within_schema(encoded, 1, 1001)


@st.composite
def any_valid_form(draw: st.DrawFn) -> tuple[dict, dict]:
    """A v1beta1 assignment and one of the many v1beta2 forms of it: cut into slices anywhere,
    each level of each slice universal (when it can be) or split at any prefix and suffix."""
    assignment = draw(assignments(max_domains=20).filter(lambda a: a.domains))
    beta1 = to_api(assignment)
    rows = [(d["values"], d["count"]) for d in beta1["domains"]]
    cuts = sorted(draw(st.sets(st.integers(1, len(rows) - 1), max_size=5))) if len(rows) > 1 else []
    slices = []
    for start, end in zip([0, *cuts], [*cuts, len(rows)], strict=True):
        part = rows[start:end]
        columns = [[v[i] for v, _ in part] for i in range(len(assignment.levels))]
        counts = [c for _, c in part]
        pods = counts[0] if len(set(counts)) == 1 and draw(st.booleans()) else counts
        slices.append(piece(len(part), [draw(level_form(column)) for column in columns], pods))
    return beta1, v2(list(assignment.levels), *slices)


@st.composite
def level_form(draw: st.DrawFn, column: list[str]) -> dict:
    if len(set(column)) == 1 and draw(st.booleans()):
        return uni(column[0])
    shortest = min(map(len, column))
    common = 0
    while common < shortest and len({v[common] for v in column}) == 1:
        common += 1
    head = draw(st.integers(0, common))
    tail_max = 0
    while tail_max < shortest - head and len({v[len(v) - 1 - tail_max] for v in column}) == 1:
        tail_max += 1
    tail = draw(st.integers(0, tail_max))
    roots = [v[head : len(v) - tail] for v in column]
    prefix = draw(st.sampled_from([column[0][:head]] if head else [None, ""]))
    suffix = draw(st.sampled_from([column[0][len(column[0]) - tail :]] if tail else [None, ""]))
    return ind(*roots, prefix=prefix, suffix=suffix)


@FAST
@given(any_valid_form())
def test_every_valid_form_decodes(case: tuple[dict, dict]) -> None:
    beta1, beta2 = case
    assert v1beta2_to_v1beta1(beta2) == beta1


# --- refused, naming the field -----------------------------------------------------------------


def valid() -> dict:
    return v2(
        [BLOCK, HOST],
        piece(1, [uni("b1"), uni("n-0")], 1),
        piece(2, [uni("b1"), ind("1", "2", prefix="n-")], [1, 2]),
        piece(4, [uni("b2"), ind("a", "b", "c", "d", prefix="n-", suffix="-x")], 3),
    )


def roots_of(ta: dict, i: int) -> list:
    return ta["slices"][i]["valuesPerLevel"][1]["individual"]["roots"]


def level_of(ta: dict, i: int) -> dict:
    return ta["slices"][i]["valuesPerLevel"][1]


BROKEN = {
    "too few roots": (
        lambda ta: roots_of(ta, 2).pop(),
        "slices[2].valuesPerLevel[1].individual.roots",
        "3 roots for domainCount 4",
    ),
    "too many pod counts": (
        lambda ta: ta["slices"][1]["podCounts"]["individual"].append(1),
        "slices[1].podCounts.individual",
        "3 pod counts for domainCount 2",
    ),
    "both universal and individual": (
        lambda ta: level_of(ta, 1).update(universal="n-1"),
        "slices[1].valuesPerLevel[1]",
        "exactly one of universal, individual must be set (both are)",
    ),
    "neither universal nor individual": (
        lambda ta: level_of(ta, 1).pop("individual"),
        "slices[1].valuesPerLevel[1]",
        "(neither is)",
    ),
    "both null": (
        lambda ta: ta["slices"][0]["valuesPerLevel"].__setitem__(
            0, {"universal": None, "individual": None}
        ),
        "slices[0].valuesPerLevel[0]",
        "(neither is)",
    ),
    "pod counts both": (
        lambda ta: ta["slices"][2]["podCounts"].update(individual=[3, 3, 3, 3]),
        "slices[2].podCounts",
        "(both are)",
    ),
    "pod counts neither": (
        lambda ta: ta["slices"][2]["podCounts"].clear(),
        "slices[2].podCounts",
        "(neither is)",
    ),
    "negative pod count": (
        lambda ta: ta["slices"][2]["podCounts"].update(universal=-1),
        "slices[2].podCounts.universal",
        "must be 1 to 2147483647, not -1",
    ),
    "zero pod count": (
        lambda ta: ta["slices"][1]["podCounts"]["individual"].__setitem__(1, 0),
        "slices[1].podCounts.individual[1]",
        "not 0",
    ),
    "pod count past int32": (
        lambda ta: ta["slices"][2]["podCounts"].update(universal=2**31),
        "slices[2].podCounts.universal",
        "not 2147483648",
    ),
    "pod count of 5000 digits": (
        lambda ta: ta["slices"][2]["podCounts"].update(universal=10**5000),
        "slices[2].podCounts.universal",
        "out of range",
    ),
    "zero domainCount": (
        lambda ta: ta["slices"][0].update(domainCount=0),
        "slices[0].domainCount",
        "not 0",
    ),
    "domainCount a string": (
        lambda ta: ta["slices"][0].update(domainCount="1"),
        "slices[0].domainCount",
        "must be an integer, not string",
    ),
    "domainCount a boolean": (
        lambda ta: ta["slices"][0].update(domainCount=True),
        "slices[0].domainCount",
        "must be an integer, not boolean",
    ),
    "more levels than values": (
        lambda ta: ta["levels"].append("x"),
        "slices[0].valuesPerLevel",
        "2 entries for 3 levels",
    ),
    "fewer levels than values": (
        lambda ta: ta["levels"].pop(0),
        "slices[0].valuesPerLevel",
        "2 entries for 1 levels",
    ),
    "no levels": (lambda ta: ta["levels"].clear(), "levels", "at least one level is required"),
    "17 levels": (
        lambda ta: ta["levels"].extend(["x"] * 15),
        "levels",
        "17 items; at most 16",
    ),
    "levels missing": (lambda ta: ta.pop("levels"), "levels", "required"),
    "a level not a string": (
        lambda ta: ta["levels"].__setitem__(1, 7),
        "levels[1]",
        "must be a string, not integer",
    ),
    "slices missing": (lambda ta: ta.pop("slices"), "slices", "required"),
    "slices an object": (
        lambda ta: ta.update(slices={}),
        "slices",
        "must be an array, not object",
    ),
    "a slice a string": (
        lambda ta: ta["slices"].__setitem__(1, "x"),
        "slices[1]",
        "must be an object, not string",
    ),
    "universal not a string": (
        lambda ta: ta["slices"][0]["valuesPerLevel"][0].update(universal=1),
        "slices[0].valuesPerLevel[0].universal",
        "must be a string, not integer",
    ),
    "a root too long": (
        lambda ta: roots_of(ta, 2).__setitem__(0, "r" * 64),
        "slices[2].valuesPerLevel[1].individual.roots[0]",
        "64 characters; at most 63",
    ),
    "a root not a string": (
        lambda ta: roots_of(ta, 2).__setitem__(3, None),
        "slices[2].valuesPerLevel[1].individual.roots[3]",
        "must be a string, not null",
    ),
    "prefix too long": (
        lambda ta: level_of(ta, 2)["individual"].update(prefix="p" * 64),
        "slices[2].valuesPerLevel[1].individual.prefix",
        "64 characters; at most 63",
    ),
    "roots missing": (
        lambda ta: level_of(ta, 1)["individual"].pop("roots"),
        "slices[1].valuesPerLevel[1].individual.roots",
        "required",
    ),
    "individual an array": (
        lambda ta: level_of(ta, 1).update(individual=["1", "2"]),
        "slices[1].valuesPerLevel[1].individual",
        "must be an object, not array",
    ),
    "1001 slices": (
        lambda ta: ta["slices"].extend([ta["slices"][0]] * 998),
        "slices",
        "1001 items; at most 1000",
    ),
}


@pytest.mark.parametrize(("breaks", "field", "problem"), BROKEN.values(), ids=BROKEN.keys())
def test_malformed_v1beta2_is_refused_naming_the_field(breaks, field: str, problem: str) -> None:
    ta = valid()
    breaks(ta)
    with pytest.raises(TopologyAssignmentError) as refused:
        v1beta2_to_v1beta1(ta)
    assert refused.value.field == field
    assert problem in refused.value.problem
    assert str(refused.value).startswith(f"{field}: ")


def test_the_unbroken_object_decodes() -> None:
    assert len(v1beta2_to_v1beta1(valid())["domains"]) == 7


@pytest.mark.parametrize(
    ("api", "field", "problem"),
    [
        ([], "topologyAssignment", "must be an object, not array"),
        ({}, "levels", "required"),
    ],
    ids=["not an object", "empty object"],
)
def test_not_an_assignment_is_refused(api: object, field: str, problem: str) -> None:
    with pytest.raises(TopologyAssignmentError) as refused:
        from_v1beta2(api)
    assert (refused.value.field, refused.value.problem) == (field, problem)


def test_a_list_past_100k_is_refused() -> None:
    ta = v2([HOST], piece(100_001, [ind(*["r"] * 100_001)], 1))
    with pytest.raises(TopologyAssignmentError) as refused:
        v1beta2_to_v1beta1(ta)
    assert refused.value.field == "slices[0].valuesPerLevel[0].individual.roots"
    assert refused.value.problem == "100001 items; at most 100000"


def test_repeated_domains_up_to_the_bound_decode() -> None:
    within = v2([HOST], piece(60_000, [uni("n")], 1), piece(40_000, [uni("m")], 2))
    assert len(v1beta2_to_v1beta1(within)["domains"]) == 100_000
    past = v2([HOST], piece(60_000, [uni("n")], 1), piece(40_001, [uni("m")], 2))
    with pytest.raises(TopologyAssignmentError, match="100001 domains"):
        v1beta2_to_v1beta1(past)


def test_repeated_domains_are_bounded_before_anything_is_expanded() -> None:
    # 1000 slices of 100k copies of one domain: 100M tuples from a 100 kB object
    hostile = v2([HOST], *[piece(100_000, [uni("n")], 1) for _ in range(1000)])
    tracemalloc.start()
    try:
        with pytest.raises(TopologyAssignmentError) as refused:
            from_v1beta2(hostile)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert refused.value.field == "slices"
    assert "100000000 domains in slices with only universal values" in refused.value.problem
    assert peak < 1_000_000, peak


def test_a_universal_slice_of_int32_max_domains_is_refused() -> None:
    with pytest.raises(TopologyAssignmentError, match="2147483647 domains"):
        from_v1beta2(v2([HOST], piece(2**31 - 1, [uni("n")], 1)))


BROKEN_V1BETA1 = {
    "fewer values than levels": (
        v1([BLOCK, HOST], (["b", "n-1"], 1), (["n-2"], 1)),
        "domains[1].values",
        "1 values for 2 levels",
    ),
    "zero count": (v1([HOST], (["n-1"], 0)), "domains[0].count", "not 0"),
    "value not a string": (
        v1([HOST], (["n-1"], 1), (["n-2"], 1), ([3], 1)),
        "domains[2].values[0]",
        "must be a string, not integer",
    ),
    "domains missing": ({"levels": [HOST]}, "domains", "required"),
    "a domain a string": ({"levels": [HOST], "domains": ["n-1"]}, "domains[0]", "not string"),
}


@pytest.mark.parametrize(
    ("beta1", "field", "problem"), BROKEN_V1BETA1.values(), ids=BROKEN_V1BETA1.keys()
)
def test_malformed_v1beta1_is_refused_naming_the_field(
    beta1: dict, field: str, problem: str
) -> None:
    with pytest.raises(TopologyAssignmentError) as refused:
        v1beta1_to_v1beta2(beta1)
    assert refused.value.field == field
    assert problem in refused.value.problem


def test_a_solver_domain_with_no_pods_is_refused() -> None:
    assignment = TopologyAssignment((HOST,), (DomainAssignment(("n-1",), 0),))
    with pytest.raises(TopologyAssignmentError, match=r"domains\[0\]\.count"):
        to_v1beta2(assignment)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 2**32) | st.text(max_size=70),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)
FIELDS = [
    "levels",
    "slices",
    "domainCount",
    "valuesPerLevel",
    "podCounts",
    "universal",
    "individual",
    "prefix",
    "suffix",
    "roots",
]


@st.composite
def hostile_objects(draw: st.DrawFn) -> dict:
    """A valid object with one field anywhere replaced by any JSON value."""
    ta = valid()
    node = ta
    for _ in range(draw(st.integers(0, 5))):
        children = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
        children = [(k, v) for k, v in children if isinstance(v, dict | list) and v]
        if not children:
            break
        _, node = draw(st.sampled_from(children))
    if isinstance(node, dict):
        node[draw(st.sampled_from(FIELDS))] = draw(json_values)
    elif node:
        node[draw(st.integers(0, len(node) - 1))] = draw(json_values)
    return ta


@settings(max_examples=300, deadline=None)
@given(hostile_objects())
def test_hostile_objects_decode_or_are_refused(ta: dict) -> None:
    try:
        v1beta2_to_v1beta1(ta)
    except TopologyAssignmentError as refused:
        assert len(str(refused)) < 200


# --- size and speed at scale -------------------------------------------------------------------


def gke_hostnames(count: int, seed: int = 0) -> list[str]:
    """GKE's scheme gke-<cluster>-<pool>-<instance group hash>-<4 random>: 1000 nodes a pool,
    spread over three zones (one instance group each), as the solver orders them."""
    rnd = random.Random(seed)
    alphabet = string.ascii_lowercase + string.digits
    names: set[str] = set()
    while len(names) < count:
        pool, zone = rnd.randrange(max(1, count // 1000)), rnd.randrange(3)
        group = f"{(pool * 3 + zone) * 2654435761 % 2**32:08x}"
        names.add(f"gke-ml-prod-a3-pool-{pool}-{group}-{''.join(rnd.choices(alphabet, k=4))}")
    return sorted(names)


def json_size(obj: object) -> int:
    return len(json.dumps(obj, separators=(",", ":")))


@pytest.mark.parametrize("count", [20_000, 60_000])
def test_many_hostnames_encode_compactly(count: int, capsys: pytest.CaptureFixture) -> None:
    names = gke_hostnames(count)
    assignment = TopologyAssignment(
        (HOST,), tuple(DomainAssignment((n,), 1 + (i % 7 == 0)) for i, n in enumerate(names))
    )
    started = time.perf_counter()
    encoded = to_v1beta2(assignment)
    encoding = time.perf_counter() - started
    started = time.perf_counter()
    decoded = from_v1beta2(encoded)
    decoding = time.perf_counter() - started
    assert decoded == assignment
    assert_within_schema(encoded, 1, count)
    old, new = json_size(to_api(assignment)), json_size(encoded)
    assert new * 4 < old  # the point of v1beta2
    assert new < 1_500_000  # Kueue's test budget for one assignment (etcd's object limit)
    with capsys.disabled():
        print(
            f"\n{count} GKE hostnames: v1beta1 {old:,} B, v1beta2 {new:,} B in "
            f"{len(encoded['slices'])} slices; encode {encoding * 1000:.0f} ms, "
            f"decode {decoding * 1000:.0f} ms"
        )


def test_decoding_leaves_the_object_untouched() -> None:
    ta = valid()
    before = copy.deepcopy(ta)
    v1beta2_to_v1beta1(ta)
    assert ta == before
