"""A workload's charge covers the pods below its owner by our own records (`link_owner`, from
the watches of a managed kind's children), however many levels down, to a bounded depth: a
TrainJob's pods are three links below it (TrainJob -> JobSet -> Job -> pod)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.cache.state import MAX_OWNER_DEPTH, ClusterState
from tests.unit.admission.fixtures import make_state, two_racks
from tests.unit.cache.test_accounting import admit, free_cpu, hosts_of, pod

TRAINJOB_OWNER = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "name": "tj",
    "uid": "tj-uid",
    "controller": True,
}


def trainjob_admitted(pods: int = 2):
    state = make_state(two_racks())
    info = admit(state, "a", pods, owners=[TRAINJOB_OWNER])
    return state, info


@pytest.mark.parametrize(
    ("links", "covered"),
    [
        ([("job-0", "js-uid"), ("js-uid", "tj-uid")], True),
        ([("job-0", "js-uid")], False),  # the JobSet's own controller is not known yet
        ([("job-0", "js-uid"), ("js-uid", "other-trainjob")], False),
        ([("job-0", "js-uid"), ("js-uid", "job-0")], False),  # a cycle: ends, covers nothing
    ],
    ids=["three-levels-down", "chain-incomplete", "chain-ends-elsewhere", "cycle"],
)
def test_a_pod_is_covered_only_when_its_chain_reaches_the_workloads_owner(links, covered):
    state, info = trainjob_admitted()
    for child, parent in links:
        state.link_owner(child, parent)
    for i, host in enumerate(hosts_of(info)):
        state.upsert_pod(pod(f"a-{i}", host, workload_name="a", owner="job-0"))
    charged = 16_000 - 2_000
    assert free_cpu(state) == (charged if covered else charged - 2_000)


def test_a_link_made_or_dropped_up_the_chain_recovers_or_uncovers_the_pods():
    state, info = trainjob_admitted()
    state.link_owner("job-0", "js-uid")
    for i, host in enumerate(hosts_of(info)):
        state.upsert_pod(pod(f"a-{i}", host, workload_name="a", owner="job-0"))
    assert free_cpu(state) == 12_000  # counted twice: the JobSet's owner is not known
    state.link_owner("js-uid", "tj-uid")  # the watch of the TrainJob's JobSets
    assert free_cpu(state) == 14_000
    state.link_owner("js-uid", None)  # the JobSet is gone
    assert free_cpu(state) == 12_000


def test_the_chain_stops_at_the_bound():
    state = ClusterState()
    uids = [f"u{i}" for i in range(MAX_OWNER_DEPTH + 3)]
    for child, parent in itertools.pairwise(uids):
        state.link_owner(child, parent)
    assert state.owner_chain(uids[0]) == uids[:MAX_OWNER_DEPTH]


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from("abcdef"), st.sampled_from("abcdef"), max_size=6))
def test_any_recorded_links_give_a_short_chain_without_repeats(links):
    """Links come from our watches, but nothing they record can make the walk loop."""
    state = ClusterState()
    for child, parent in links.items():
        state.link_owner(child, parent)
    for start in "abcdef":
        chain = state.owner_chain(start)
        assert chain[0] == start and len(chain) == len(set(chain)) <= MAX_OWNER_DEPTH
        for child, parent in itertools.pairwise(chain):
            assert links[child] == parent
