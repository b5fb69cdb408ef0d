"""`tas solve` on the scenarios of TASRequiredWithPreferred and TASMultiRolePodSetGroups (their
featureGates on), and the same documents without the gates: Kueue's placement, Kueue's refusal."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import yaml

from tests.unit.offline.test_solve import run, solved

SCENARIOS = Path(__file__).parents[3] / "examples" / "scenarios"
REQUIRED_WITH_PREFERRED = SCENARIOS / "required-with-preferred.yaml"
MULTI_ROLE = SCENARIOS / "multi-role-group.yaml"


def pods_per(podset: dict, depth: int) -> Counter:
    """Pods per domain: depth 1 the block, 2 the rack (hosts are named block-rack-host)."""
    counts: Counter = Counter()
    for domain in podset["topologyAssignment"]["domains"]:
        counts["-".join(domain["values"][-1].split("-")[:depth])] += domain["count"]
    return counts


def without_gates(path: Path) -> dict:
    document = yaml.safe_load(path.read_text())
    del document["featureGates"]
    return document


def test_ours_takes_one_rack_where_kueue_spreads_over_two(tmp_path):
    [ours] = solved(tmp_path, REQUIRED_WITH_PREFERRED.read_text())
    [kueue] = solved(tmp_path, without_gates(REQUIRED_WITH_PREFERRED))
    ours_racks = pods_per(ours["podSets"][0], 2)
    kueue_racks = pods_per(kueue["podSets"][0], 2)
    assert len(kueue_racks) > len(ours_racks) == 1
    assert sum(ours_racks.values()) == sum(kueue_racks.values()) == 4


def test_the_three_roles_share_a_block(tmp_path):
    [rl] = solved(tmp_path, MULTI_ROLE.read_text())
    assert rl["admitted"], rl
    trainer, rollout, reward = rl["podSets"]
    blocks = pods_per(trainer, 1) + pods_per(rollout, 1) + pods_per(reward, 1)
    assert list(blocks) == ["b2"] and sum(blocks.values()) == 8
    assert all(count % 2 == 0 for count in pods_per(trainer, 2).values())


def test_without_the_gate_a_group_of_three_is_refused(tmp_path):
    result = run(tmp_path, without_gates(MULTI_ROLE))
    assert result.returncode != 0
    assert "kueue.x-k8s.io/podset-group-name" in result.stderr
