"""ClusterState.retry_marker: what a ClusterQueue's waiting workloads wait for. It changes on
quota released anywhere in the queue's cohort tree (Kueue requeues the whole tree from its
root), and on the capacity of the nodes its flavors select, before or after a change of their
labels; it stays on changes in another tree or on another flavor's nodes."""

from __future__ import annotations

import pytest

from tas.cache import projections as proj
from tests.unit.admission.test_requeue_inadmissible import (
    admit_directly,
    finish,
    pool_node,
    two_cohorts,
)


def marker(state, cq: str = "cqa"):
    return state.retry_marker(state.cluster_queues[cq])


def relabelled(state, pool_from: str, pool_to: str) -> None:
    name = sorted(n for n, node in state.nodes.items() if node.labels["pool"] == pool_from)[0]
    obj = pool_node(pool_to)
    obj["metadata"]["name"] = name
    obj["metadata"]["labels"]["kubernetes.io/hostname"] = name
    state.upsert_node(proj.node_from_object(obj))


def hierarchical():
    """Cohorts ca and cb are both children of "root": one tree."""
    state = two_cohorts()
    for name in ("ca", "cb"):
        cohort = {"metadata": {"name": name}, "spec": {"parentName": "root"}}
        state.upsert_cohort(proj.cohort_from_object(cohort))
    return state


def test_quota_released_in_a_sibling_cohort_of_the_same_tree_changes_it():
    state = hierarchical()
    other = admit_directly(state, "other", "lqb", 1)
    assert other is not None
    before = marker(state)
    finish(state, other)
    assert marker(state) != before


def test_quota_released_in_another_tree_leaves_it():
    state = two_cohorts()
    other = admit_directly(state, "other", "lqb", 1)
    assert other is not None
    before = marker(state)
    finish(state, other)
    assert marker(state) == before


@pytest.mark.parametrize(
    ("pool_from", "pool_to", "changes"),
    [
        ("b", "a", True),  # a node comes into its flavor
        ("a", "b", True),  # a node leaves its flavor
        ("b", "c", False),  # another flavor's node goes to none
    ],
    ids=["into its flavor", "out of its flavor", "between others"],
)
def test_a_node_relabelled_changes_it_when_its_flavor_gains_or_loses_the_node(
    pool_from, pool_to, changes
):
    state = two_cohorts()
    before = marker(state)
    relabelled(state, pool_from, pool_to)
    assert (marker(state) != before) is changes


def test_a_node_deleted_from_its_flavor_changes_it_and_from_another_does_not():
    state = two_cohorts()
    before = marker(state)
    state.delete_node(sorted(n for n in state.nodes if n.startswith("b-"))[0])
    assert marker(state) == before
    state.delete_node(sorted(n for n in state.nodes if n.startswith("a-"))[0])
    assert marker(state) != before


def test_a_heartbeat_changes_nothing():
    state = two_cohorts()
    before = marker(state)
    name = sorted(state.nodes)[0]
    state.upsert_node(state.nodes[name])
    assert marker(state) == before
