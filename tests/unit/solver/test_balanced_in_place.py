"""Balanced placement prunes the tree in place where Kueue prunes deep copies; both must choose
the same placement. Random topologies, fixed seed, compared against the deep-copy path."""

from __future__ import annotations

import random

import pytest

from tas.solver import (
    Node,
    PodSetRequest,
    SliceLayer,
    SolverOptions,
    TopologyRequest,
    TopologySnapshot,
    balanced,
)
from tests.unit.solver.solver_test_helpers import BLOCK, HOST, RACK, THREE_LEVELS

BALANCED = SolverOptions(balanced_placement=True)


def random_nodes(rng: random.Random) -> list[Node]:
    nodes = []
    for b in range(rng.randint(1, 3)):
        for r in range(rng.randint(1, 3)):
            for h in range(rng.randint(1, 4)):
                name = f"b{b}-r{r}-h{h}"
                labels = {BLOCK: f"b{b}", RACK: f"r{r}", HOST: name}
                nodes.append(Node(name, labels, {"cpu": rng.randint(0, 12) * 1000}))
    return nodes


def random_podsets(rng: random.Random) -> list[PodSetRequest]:
    level = rng.choice([BLOCK, RACK, HOST])
    layers = ()
    if level != HOST and rng.random() < 0.4:
        layers = (SliceLayer(HOST, rng.choice([2, 3])),)
    workers = PodSetRequest(
        "workers",
        rng.randint(1, 30),
        {"cpu": 1000},
        TopologyRequest(preferred=level, slice_layers=layers, group_name="g"),
    )
    if rng.random() < 0.5:
        return [workers]
    leader = PodSetRequest(
        "leader", 1, {"cpu": 2000}, TopologyRequest(preferred=level, group_name="g")
    )
    return [leader, workers]


@pytest.mark.parametrize("seed", range(300))
def test_in_place_pruning_matches_deep_copies(seed, monkeypatch):
    rng = random.Random(seed)
    nodes = random_nodes(rng)
    podsets = random_podsets(rng)
    in_place = TopologySnapshot(THREE_LEVELS, nodes, options=BALANCED).find_assignments(podsets)
    monkeypatch.setattr(balanced, "ALWAYS_DEEP_COPY", True)
    deep = TopologySnapshot(THREE_LEVELS, nodes, options=BALANCED).find_assignments(podsets)
    assert in_place == deep
