"""Replacements read from the Workloads' versions: one that keeps its quota and moves hosts."""

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.admission.decide import decide
from tas.cache import projections as proj
from tas.cache.state import ClusterState
from tas.view.replacements import ReplacementLog, admitted_hosts
from tas.workload import transitions
from tests.unit.admission.fixtures import make_state, node, workload

_versions = itertools.count(100)


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        ({"h1", "h2"}, {"h1", "h3"}, [("h2", "h3")]),
        ({"h1", "h2"}, {"h3", "h4"}, [("h2", "h4"), ("h1", "h3")]),
        ({"h1", "h2"}, {"h1"}, []),  # shrank: not a swap
        ({"h1"}, {"h1", "h2"}, []),  # grew
        ({"h1", "h2", "h3"}, {"h4"}, [("h3", "h4"), ("h2", "h4"), ("h1", "h4")]),
    ],
    ids=["one-host", "two-hosts", "shrank", "grew", "three-onto-one"],
)
def test_a_replacement_is_a_host_left_for_one_taken(before, after, expected):
    log = ReplacementLog()
    log.moved("ns/a", frozenset(before), frozenset(after), 2.0)
    assert [(r.failed, r.replacement) for r in log.recent] == expected
    assert all(r.workload == "ns/a" and r.at == 2.0 for r in log.recent)


def test_the_most_recent_first_and_only_so_many_kept():
    log = ReplacementLog(kept=3)
    for t in range(1, 6):
        log.moved("ns/a", frozenset({f"h{t - 1}"}), frozenset({f"h{t}"}), float(t))
    assert [(r.failed, r.replacement, r.at) for r in log.recent] == [
        ("h4", "h5", 5.0),
        ("h3", "h4", 4.0),
        ("h2", "h3", 3.0),
    ]


hosts = st.frozensets(st.sampled_from([f"h{i}" for i in range(6)]), min_size=1, max_size=4)


@settings(max_examples=80, deadline=None)
@given(hosts, hosts)
def test_every_failed_host_is_one_left_and_every_replacement_one_taken(a, b):
    log = ReplacementLog()
    log.moved("ns/a", a, b, 1.0)
    assert {r.failed for r in log.recent} == (a - b if b - a else set())
    assert all(r.failed in a - b and r.replacement in b - a for r in log.recent)


# ---- from the cache's versions of a Workload ---------------------------------------------------


def admit(state: ClusterState, obj: dict) -> proj.WorkloadInfo:
    info = proj.workload_from_object(obj)
    state.upsert_workload(info)
    decision = decide(state, info, state.cluster_queues["cq"])
    assert decision.admitted
    obj["status"] = transitions.admitted(info, decision.admission, decision.message)
    obj["metadata"]["resourceVersion"] = str(next(_versions))
    taken = proj.workload_from_object(obj)
    state.upsert_workload(taken)
    return taken


def rewritten(state: ClusterState, obj: dict, old: str, new: str) -> None:
    """A new version whose assignment names `new` where it named `old` (as hot swap writes)."""
    for psa in obj["status"]["admission"]["podSetAssignments"]:
        ta = psa["topologyAssignment"]
        for sl in ta.get("slices", []):
            sl["valuesPerLevel"] = [
                {**v, "universal": new} if v.get("universal") == old else v
                for v in sl.get("valuesPerLevel", [])
            ]
            for v in sl.get("valuesPerLevel", []):
                if "individual" in v:
                    v["individual"]["roots"] = [
                        new if r == old else r for r in v["individual"].get("roots", [])
                    ]
        for d in ta.get("domains", []):
            d["values"] = [new if x == old else x for x in d["values"]]
    obj["metadata"]["resourceVersion"] = str(next(_versions))
    state.upsert_workload(proj.workload_from_object(obj))


def test_the_cache_s_versions_feed_the_log_and_evictions_do_not():
    state = make_state([node(f"x{i}", "b1", "r1") for i in range(1, 4)])
    log = ReplacementLog(clock=lambda: 7.0)
    state.workload_listeners.append(log.workload_changed)
    obj = workload("a", pods=2, cpu="1")
    taken = admit(state, obj)
    (failed,) = sorted(admitted_hosts(taken))[:1]
    spare = next(f"x{i}" for i in range(1, 4) if f"x{i}" not in admitted_hosts(taken))
    assert log.recent == ()  # a first admission is no replacement
    rewritten(state, obj, failed, spare)
    assert [(r.workload, r.failed, r.replacement, r.at) for r in log.recent] == [
        ("ns/a", failed, spare, 7.0)
    ]
    obj["status"] = transitions.pending(state.workloads[("ns", "a")], "evicted")
    obj["metadata"]["resourceVersion"] = str(next(_versions))
    state.upsert_workload(proj.workload_from_object(obj))
    assert len(log.recent) == 1  # an eviction is no replacement
