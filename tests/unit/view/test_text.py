"""`tas top`'s frame (view/text.py) on hand-made views: the numbers it prints are the model's
sums, and whatever the cluster's names hold is printed as it is."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.view import amounts, text, words
from tas.view import model as m

BLOCK = "cloud.provider.com/topology-block"
RACK = "cloud.provider.com/topology-rack"
HOST = "kubernetes.io/hostname"
CORE, GI = 1000, 2**30 * 1000  # milli-units
MARKS = (m.CORDONED, m.NOT_READY, m.TAINTED)
ROW = re.compile(
    r"^(?P<indent> *)(?P<level>block|rack) (?P<value>\S+) +(?P<hosts>\d+) +(?P<rest>.*)$"
)
METER = re.compile(rf"[█▒░]{{{text.BAR_WIDTH}}} (\S+)/(\S+)")
UNITS = {"": 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def milli(printed: str) -> int:
    number, unit = re.fullmatch(r"(-?[0-9.]+)([KMGT]i)?", printed).groups()  # type: ignore[union-attr]
    return round(float(number) * UNITS[unit or ""] * 1000)


def summed(resources: list[m.Resources]) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in resources:
        for name, value in item.items():
            out[name] = out.get(name, 0) + value
    return out


def taken(hosts: list[m.HostView]) -> dict[str, int]:
    """What the hosts' uses request; pods from each use's count."""
    uses = [use for host in hosts for use in host.uses]
    return summed([use.requests for use in uses]) | {"pods": sum(u.pods for u in uses) * 1000}


def host(
    name: str, cpu: int, memory: int, uses: list[tuple[int, int, int]], marks=()
) -> m.HostView:
    allocatable = {"cpu": cpu * CORE, "memory": memory * GI, "pods": 110 * 1000}
    views = tuple(
        m.Use(f"ns/w{i}" if i else None, {"cpu": c * CORE, "memory": g * GI}, pods)
        for i, (c, g, pods) in enumerate(uses)
    )
    used = taken([m.HostView(name, allocatable, views, {})])
    free = {r: v - used.get(r, 0) for r, v in allocatable.items()}
    return m.HostView(name, allocatable, views, free, tuple(marks))


def domain(level: str, value: str, hosts=(), domains=()) -> m.DomainView:
    under = list(hosts) + [h for d in domains for h in text.hosts_of(d)]
    allocatable = summed([h.allocatable for h in under])
    free = summed([h.free for h in under])
    return m.DomainView(level, value, free, allocatable, tuple(domains), tuple(hosts))


def flavor(blocks: list[m.DomainView]) -> m.FlavorView:
    return m.FlavorView("gpu", "default", (BLOCK, RACK, HOST), tuple(blocks))


def view(flavors=(), workloads=(), **extra) -> m.ClusterView:
    return m.ClusterView(tuple(flavors), tuple(workloads), **extra)


uses = st.lists(st.tuples(st.integers(0, 8), st.integers(0, 16), st.integers(0, 4)), max_size=3)
hosts = st.tuples(
    st.integers(1, 64),
    st.integers(1, 16),
    uses,
    st.lists(st.sampled_from(MARKS), max_size=2, unique=True),
)
layouts = st.lists(
    st.lists(st.lists(hosts, min_size=1, max_size=3), min_size=1, max_size=3),
    min_size=1,
    max_size=2,
)


def build(layout) -> m.FlavorView:
    blocks, number = [], 0
    for b, racks in enumerate(layout):
        rack_views = []
        for r, rack_hosts in enumerate(racks):
            members = []
            for cpu, memory, used, marks in rack_hosts:
                number += 1
                members.append(host(f"x{number}", cpu, memory, used, marks))
            rack_views.append(domain(RACK, f"b{b}-r{r}", hosts=members))
        blocks.append(domain(BLOCK, f"b{b}", domains=rack_views))
    return flavor(blocks)


@settings(max_examples=60, deadline=None)
@given(layouts)
def test_every_block_and_rack_row_prints_the_models_sums(layout) -> None:
    built = build(layout)
    rows = [ROW.match(line) for line in text.to_text(view([built]), width=250).splitlines()]
    rows = [row for row in rows if row]
    domains = list(text.walk(built.domains))
    assert len(rows) == len(domains)
    resources = text.resource_order(built)
    assert resources == ["cpu", "memory", "pods"]
    for row, (depth, shown) in zip(rows, domains, strict=True):
        under = list(text.hosts_of(shown))
        assert (row["level"], row["value"]) == (words.short_level(shown.level), shown.value)
        assert len(row["indent"]) == 2 * depth
        assert int(row["hosts"]) == len(under)
        meters = METER.findall(row["rest"])
        used = taken(under)
        for resource, (printed_used, printed_total) in zip(resources, meters, strict=True):
            assert milli(printed_used) == used.get(resource, 0), resource
            assert milli(printed_total) == shown.allocatable[resource], resource
        marks = row["rest"].split()[-3:]
        for mark, printed in zip(MARKS, marks, strict=True):
            expected = sum(1 for h in under if mark in h.marks)
            assert printed == (str(expected) if expected else "-"), mark


@pytest.mark.parametrize(
    ("used", "idle", "total", "bar"),
    [
        (0, 0, 10, "░" * 10),
        (10, 0, 10, "█" * 10),
        (5, 0, 10, "█" * 5 + "░" * 5),
        (1, 0, 1000, "█" + "░" * 9),  # any use shows
        (5, 5, 10, "█" * 5 + "▒" * 5),
        (8, 8, 10, "█" * 8 + "▒" * 2),  # the idle share never pushes the bar past its width
        (12, 0, 10, "█" * 10),  # over-committed
        (3, 0, 0, " " * 10),  # nothing to fill
    ],
    ids=["empty", "full", "half", "a-sliver", "half-idle", "idle-capped", "over", "no-total"],
)
def test_the_bar(used: int, idle: int, total: int, bar: str) -> None:
    assert (
        text.meter("cpu", used * CORE, idle * CORE, total * CORE).plain == f"{bar} {used}/{total}"
    )


def test_a_host_not_offered_shows_its_free_room_as_idle() -> None:
    cordoned = host("x1", 8, 4, [(2, 1, 1)], marks=[m.CORDONED])
    assert text.unavailable([cordoned, host("x2", 8, 4, [])]) == {
        "cpu": 6 * CORE,
        "memory": 3 * GI,
        "pods": 109 * 1000,
    }


def pending(i: int) -> m.WorkloadView:
    return m.WorkloadView(
        f"team/job-{i}",
        "lq",
        "cq",
        4 * i,
        False,
        reason=f"couldn't assign flavors to pod set main: topology allows to fit only {i} out of {4 * i} pod(s)",
        needs=f"{4 * i} pods of cpu=1, required in one rack",
    )


def test_the_first_pending_workloads_in_queue_order_with_reason_and_needs() -> None:
    admitted = m.WorkloadView("team/train", "lq", "cq", 12, True, hosts=("x1", "x2", "x3"))
    waiting = [pending(i) for i in range(1, text.TOP_PENDING + 4)]
    out = text.to_text(view(workloads=[admitted, *waiting]), width=400)
    lines = out.splitlines()
    assert f"1 admitted, {len(waiting)} pending" in lines[0]
    row = next(line for line in lines if line.startswith("team/train"))
    assert row.split()[1:] == ["cq", "12", "3"]
    assert f"pending workloads: {len(waiting)}, the first {text.TOP_PENDING}" in out
    shown = [line for line in lines if line.startswith("team/job-")]
    assert [line.split()[0] for line in shown] == [w.key for w in waiting[: text.TOP_PENDING]]
    for line, workload in zip(shown, waiting, strict=False):
        assert workload.reason in line and workload.needs in line
        assert line.split()[2] == str(workload.pods)


def test_names_are_printed_as_they_are_not_as_markup() -> None:
    odd = m.WorkloadView("ns/[bold]x[/]", "lq", "[red]cq", 1, False, reason="[link=x]why[/link]")
    out = text.to_text(view(workloads=[odd]), width=200)
    assert "ns/[bold]x[/]" in out and "[red]cq" in out and "[link=x]why[/link]" in out


def test_control_characters_never_reach_the_terminal() -> None:
    odd = m.WorkloadView("ns/\x1b[2Jx", "lq", "cq\r", 1, False, reason="a\x07b\nc")
    out = text.to_text(view(workloads=[odd], extras={"\x1b]0;title\x07": "v"}), width=200)
    assert "ns/?[2Jx" in out and "a?b?c" in out and "?]0;title?" in out
    assert not any(c in out for c in "\x1b\x07\r")


def test_placement_groups_and_replacements_are_listed() -> None:
    group = m.PlacementGroupView("ns/serving", RACK, (f"{RACK}=r1", f"{RACK}=r2"))
    swaps = tuple(
        m.ReplacementView(f"ns/w{i}", f"x{i}", f"y{i}", 1_700_000_000 - i) for i in range(8)
    )
    out = text.to_text(
        view(placement_groups=(group,), replacements=swaps, at=1_700_000_090.0), width=200
    )
    assert re.search(r"ns/serving +rack +.*=r1, .*=r2", out)
    assert re.search(r"1\.5 min ago +ns/w0 +x0 +y0", out)
    assert "ns/w4" in out and "ns/w5" not in out  # the latest RECENT_REPLACEMENTS
    assert "2023-11-14 22:14:50 UTC" in out.splitlines()[0]


@pytest.mark.parametrize(
    ("at", "shown"),
    [
        (0.0, "t = 0 s"),
        (5400.0, "t = 1.5 h"),
        (math.inf, "t = inf s"),
        (math.nan, "t = nan s"),
        (1e300, "t = 1e+300 s"),
    ],
)
def test_the_clock_of_a_trace_or_a_cluster(at: float, shown: str) -> None:
    assert text.clock(at) == shown


def test_absurd_numbers_are_drawn_not_raised() -> None:
    huge = 16**4000
    odd = m.HostView(
        "x", {"cpu": huge, "gpu": -5}, (m.Use(None, {"cpu": huge}, huge),), {"cpu": -huge}
    )
    block = m.DomainView(BLOCK, "b", {}, {"cpu": huge, "gpu": -5}, hosts=(odd,))
    out = text.to_text(
        view([flavor([block])], [m.WorkloadView("w", "q", "c", huge, True)]), width=200
    )
    assert "huge/huge" in out


@pytest.mark.parametrize(
    ("resource", "value", "shown"),
    [
        ("cpu", 1500, "1.5"),
        ("cpu", 250, "0.25"),
        ("cpu", 128_000, "128"),
        ("cpu", 12_345_678, "12345.7"),
        ("memory", 24 * GI, "24Gi"),
        ("memory", 1536 * 2**20 * 1000, "1.5Gi"),
        ("memory", 512 * 2**20 * 1000, "512Mi"),
        ("memory", 100 * 1000, "100"),
        ("nvidia.com/gpu", 8000, "8"),
        ("cpu", 0, "0"),
    ],
)
def test_amounts_as_people_read_them(resource: str, value: int, shown: str) -> None:
    assert amounts.amount(resource, value) == shown


def test_a_lowest_level_above_the_hosts_counts_its_own_uses() -> None:
    """Block > rack with no hostname level: the admitted workloads use racks, and the hosts
    show only what runs outside topology-aware admission."""
    outside = host("x1", 8, 4, [(1, 0, 1)])  # a use of no workload: 1 cpu
    charged = m.Use("ns/train", {"cpu": 6 * CORE}, 6)
    plain = domain(RACK, "r1", hosts=[outside, host("x2", 8, 4, [])])
    rack = m.DomainView(
        RACK, "r1", plain.free, plain.allocatable, hosts=plain.hosts, uses=(charged,)
    )
    block = domain(BLOCK, "b1", domains=[rack])
    flavor_view = m.FlavorView("f", "t", (BLOCK, RACK), (block,))
    rows = [
        r for r in map(ROW.match, text.to_text(view([flavor_view]), width=250).splitlines()) if r
    ]
    for row in rows:
        (cpu_used, cpu_total), *_ = METER.findall(row["rest"])
        assert (milli(cpu_used), milli(cpu_total)) == (7 * CORE, 16 * CORE)


def test_a_flavor_whose_only_level_is_the_hostname_has_one_row_for_all_hosts() -> None:
    hosts = [host("x1", 8, 4, [(3, 1, 2)]), host("x2", 4, 4, [(1, 1, 1)], marks=[m.NOT_READY])]
    flavor_view = m.FlavorView("f", "t", (HOST,), (), hosts=tuple(hosts))
    out = text.to_text(view([flavor_view]), width=250)
    row = next(line for line in out.splitlines() if line.startswith(text.ALL_HOSTS))
    assert row.split()[2] == "2"  # hosts
    assert [pair for pair in METER.findall(row)] == [("4", "12"), ("2Gi", "8Gi"), ("3", "220")]
    assert row.split()[-3:] == ["-", "1", "-"]
