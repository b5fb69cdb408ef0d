"""The cycle's steps over all pending workloads give way to the loop: a queue's order is sorted
in runs between which the loop runs, and comes out as one sort would give it; the heap is
settled (see tas.pacing) so that full collections do not walk the cached cluster."""

from __future__ import annotations

import asyncio
import gc
import random
import weakref

from hypothesis import given, settings
from hypothesis import strategies as st

from tas import pacing
from tas.admission.decide import pending_order, queue_order_key
from tas.cache import projections as proj
from tas.pacing import Pacer, sorted_paced
from tests.unit.admission.fixtures import workload


class CountingPacer(Pacer):
    def __init__(self):
        super().__init__(slice_seconds=0.0)  # yields at every chance
        self.chances = 0

    async def maybe_yield(self):
        self.chances += 1
        await super().maybe_yield()


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5), st.integers(0, 5)), max_size=300),
    st.integers(1, 64),
)
def test_a_paced_sort_gives_what_one_stable_sort_gives(keys, run):
    items = [(k, i) for i, k in enumerate(keys)]  # ties on k keep their order (stable)
    original, pacing.SORT_RUN = pacing.SORT_RUN, run
    try:
        got = asyncio.run(sorted_paced(items, lambda item: item[0], Pacer(slice_seconds=0.0)))
    finally:
        pacing.SORT_RUN = original
    assert got == sorted(items, key=lambda item: item[0])


def test_a_queue_of_many_workloads_is_put_in_queue_order_in_steps():
    rng = random.Random(3)
    workloads = [
        proj.workload_from_object(
            workload(
                f"w{i}",
                pods=1,
                priority=rng.randint(0, 3),
                created=f"2026-01-01T00:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z",
            )
        )
        for i in range(3 * pacing.SORT_RUN + 5)
    ]
    pacer = CountingPacer()
    ordered = asyncio.run(sorted_paced(workloads, queue_order_key, pacer))
    assert ordered == pending_order(workloads)
    assert pacer.chances >= 4  # the loop ran between the runs and during the merge


def test_settling_the_heap_frees_young_cycles_and_exempts_the_survivors():
    class Cyclic:
        pass

    garbage = Cyclic()
    garbage.me = garbage
    del garbage
    kept = [Cyclic() for _ in range(100)]
    frozen_before = gc.get_freeze_count()
    try:
        pacing.settle_heap()
        assert gc.get_freeze_count() >= frozen_before + len(kept)
        assert gc.collect() == 0  # the young cycle was freed before the freeze
    finally:
        gc.unfreeze()


class Node:
    pass


def settled_cycle() -> weakref.ref:
    """A reference cycle alive when the heap is settled, garbage right after."""
    node = Node()
    node.me = node
    pacing.settle_heap()
    return weakref.ref(node)


def test_a_cycle_that_becomes_garbage_once_settled_is_freed_when_memory_has_grown(monkeypatch):
    kept = []
    try:
        pacing.settle_heap(initial=True)
        monkeypatch.setattr(pacing, "FULL_COLLECTION_GROWTH", 10**9)
        cycle = settled_cycle()
        kept.extend(Node() for _ in range(1000))
        pacing.settle_heap()
        assert cycle() is not None  # settled: the young collections do not see it
        monkeypatch.setattr(pacing, "FULL_COLLECTION_GROWTH", 0)
        pacing.settle_heap()
        assert cycle() is None  # memory grew past the limit: a full collection freed it
    finally:
        gc.unfreeze()
