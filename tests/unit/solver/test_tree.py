"""Domain.clone_subtree: balanced placement prunes copies, so a copy must be the same tree
(values, levels, leaf indices, parent links) with count state of its own."""

from __future__ import annotations

import numpy as np
import pytest

from tas.solver.tree import Domain, DomainTree


def small_tree() -> Domain:
    block = Domain(("b1",), 0)
    for r, hosts in enumerate((2, 1)):
        rack = Domain(("b1", f"r{r}"), 1)
        rack.parent = block
        block.children.append(rack)
        for h in range(hosts):
            host = Domain(("b1", f"r{r}", f"h{h}"), 2)
            host.parent, host.leaf_index, host.order = rack, 2 * r + h, h
            host.pod_count = host.slice_count = 3
            rack.children.append(host)
    return block


def walk(domain: Domain):
    yield domain
    for child in domain.children:
        yield from walk(child)


def test_a_clone_is_the_same_tree_with_parents_inside_the_clone():
    original = small_tree()
    clone = original.clone_subtree()
    pairs = list(zip(walk(original), walk(clone), strict=True))
    assert clone.parent is None
    for old, new in pairs:
        assert new is not old
        assert (new.values, new.level, new.leaf_index, new.order) == (
            old.values,
            old.level,
            old.leaf_index,
            old.order,
        )
        assert (new.pod_count, new.slice_count) == (old.pod_count, old.slice_count)
        for child in new.children:
            assert child.parent is new


def test_a_clone_under_a_parent_hangs_from_it_and_prunes_alone():
    original = small_tree()
    rack = original.children[0]
    clone = rack.clone_subtree(original)
    assert clone.parent is original
    clone.children[0].clear_counts()
    assert rack.children[0].pod_count == 3  # the original keeps its counts


def test_the_shared_zero_counts_cannot_be_written():
    """Every placement shares DomainTree.zeros; a write through one would corrupt the next."""
    tree = DomainTree(2, [("b1", "h1"), ("b1", "h2"), ("b2", "h3")])
    assert [len(z) for z in tree.zeros] == [2, 3]
    for zeros in tree.zeros:
        assert not np.any(zeros)
        with pytest.raises(ValueError):
            zeros[0] = 1
