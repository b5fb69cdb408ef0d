"""Replacements read from successive views: a workload that stays admitted and moves hosts."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.view.model import ClusterView, WorkloadView
from tas.view.replacements import ReplacementLog


def view(*workloads: tuple[str, tuple[str, ...], bool]) -> ClusterView:
    return ClusterView(
        flavors=(),
        workloads=tuple(
            WorkloadView(key, "q", "cq", len(hosts), admitted, hosts=hosts)
            for key, hosts, admitted in workloads
        ),
    )


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (("ns/a", ("h1", "h2"), True), ("ns/a", ("h1", "h3"), True), [("ns/a", "h2", "h3")]),
        (
            ("ns/a", ("h1", "h2"), True),
            ("ns/a", ("h3", "h4"), True),
            [("ns/a", "h2", "h4"), ("ns/a", "h1", "h3")],
        ),
        (("ns/a", ("h1", "h2"), True), ("ns/a", ("h1",), True), []),  # shrank: not a swap
        (("ns/a", ("h1",), True), ("ns/a", ("h1", "h2"), True), []),  # grew
        (("ns/a", ("h1",), False), ("ns/a", ("h2",), True), []),  # newly admitted
        (("ns/a", ("h1",), True), ("ns/a", (), False), []),  # evicted
        (("ns/a", ("h1",), True), ("ns/b", ("h2",), True), []),  # another workload
    ],
    ids=["one-host", "two-hosts", "shrank", "grew", "admitted", "evicted", "other-workload"],
)
def test_a_replacement_is_a_move_while_admitted(before, after, expected):
    log = ReplacementLog()
    assert log.observe(view(before), 1.0) == ()
    got = log.observe(view(after), 2.0)
    assert [(r.workload, r.failed, r.replacement) for r in got] == expected
    assert all(r.at == 2.0 for r in got)


def test_the_most_recent_first_and_only_so_many_kept():
    log = ReplacementLog(kept=3)
    log.observe(view(("ns/a", ("h0",), True)), 0.0)
    for t in range(1, 6):
        got = log.observe(view(("ns/a", (f"h{t}",), True)), float(t))
    assert [(r.failed, r.replacement, r.at) for r in got] == [
        ("h4", "h5", 5.0),
        ("h3", "h4", 4.0),
        ("h2", "h3", 3.0),
    ]


hosts = st.frozensets(st.sampled_from([f"h{i}" for i in range(6)]), min_size=1, max_size=4)


@settings(max_examples=80, deadline=None)
@given(hosts, hosts)
def test_every_failed_host_is_one_the_workload_left_and_the_replacement_one_it_took(a, b):
    log = ReplacementLog()
    log.observe(view(("ns/a", tuple(sorted(a)), True)), 0.0)
    got = log.observe(view(("ns/a", tuple(sorted(b)), True)), 1.0)
    assert {r.failed for r in got} == (a - b if b - a else set())
    assert all(r.failed in a - b and r.replacement in b - a for r in got)
