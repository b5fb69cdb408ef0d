"""A trace viewed at a time shows exactly the workloads running then, and the waiting ones with
the message their last try failed with."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.offline.simulate.trace import parse_trace
from tas.view.trace import view_at
from tests.unit.offline.simulate.traces import RACK, job, running_over_time, simulate, two_racks


def pods_drawn(view) -> dict[str, int]:
    out: dict[str, int] = {}
    for flavor in view.flavors:
        for block in flavor.domains:
            for rack in block.domains:
                for host in rack.hosts:
                    for use in host.uses:
                        if use.workload:
                            out[use.workload] = out.get(use.workload, 0) + use.pods
    return out


jobs = st.lists(
    st.tuples(
        st.integers(0, 6),  # arrival
        st.integers(1, 10),  # pods of 1 cpu
        st.none() | st.integers(1, 5),  # duration
        st.booleans(),  # required in one rack
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=25, deadline=None)
@given(jobs)
def test_a_trace_at_a_time_shows_exactly_the_workloads_running_then(specs):
    document = two_racks(
        [
            job(f"w{i}", arrival, pods, "1", duration, RACK if rack else None)
            for i, (arrival, pods, duration, rack) in enumerate(specs)
        ]
    )
    trace = parse_trace(document)
    sizes = {f"scenario/w{i}": spec[1] for i, spec in enumerate(specs)}
    for now, running in running_over_time(document):
        view = view_at(trace, now)
        admitted = {w.key for w in view.workloads if w.admitted}
        assert admitted == {f"scenario/{name}" for name in running}
        assert pods_drawn(view) == {key: sizes[key] for key in admitted}
        arrived = {f"scenario/w{i}" for i, spec in enumerate(specs) if spec[0] <= now}
        waiting = {w.key for w in view.workloads if not w.admitted}
        assert waiting <= arrived - admitted


def test_a_waiting_workload_says_what_the_simulation_said():
    document = two_racks(
        [job("fits", 0, 8, "1", duration=10), job("too-big", 1, 12, "1", level=RACK)]
    )
    report = simulate(document)
    view = view_at(parse_trace(document), 2)
    (waiting,) = [w for w in view.workloads if not w.admitted]
    assert waiting.key == "scenario/too-big"
    assert waiting.reason == report["firstFailure"]["message"]
    assert waiting.needs == "12 pods of cpu=1, required in one rack"
    assert [w.key for w in view.workloads if w.admitted] == ["scenario/fits"]
    assert view.at == 2.0


def test_before_the_first_arrival_nothing_runs_or_waits():
    document = two_racks([job("later", 3, 2, "1", duration=1)])
    view = view_at(parse_trace(document), 1)
    assert view.workloads == ()
    assert all(not h.uses for b in view.flavors[0].domains for r in b.domains for h in r.hosts)


@pytest.mark.parametrize(
    "at",
    [-1, 4.5, float("nan"), float("inf"), "3", True],
    ids=["negative", "beyond-end", "nan", "inf", "text", "bool"],
)
def test_a_bad_time_is_named(at):
    document = two_racks([job("a", 0, 2, "1", duration=4)])  # ends at 4
    with pytest.raises(ValueError, match=r"^at: "):
        view_at(parse_trace(document), at)
