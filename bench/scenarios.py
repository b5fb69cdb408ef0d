"""Random `tas solve` scenarios (SCENARIO.md) that use every feature, for benchmarks.

    .venv/bin/python bench/scenarios.py --nodes 20480 --workloads 200 > /tmp/s20480.yaml
    .venv/bin/python bench/scenarios.py --nodes 640 --cold --json > /tmp/s640.json

Nodes: blocks / racks / hosts as in bench/README.md, 96 cpu, 512Gi, 8 GPUs, 110 pods each; about
30% carry usage from pods outside topology-aware admission, 3% a NoSchedule taint, 1% are not
ready, and half are in pool "a", half in pool "b". Workloads: required (block, rack, host),
preferred (block, rack), unconstrained, implied, single- and two-layer slices, leader + workers
groups, node selectors and tolerations; 1-256 pods. `warm` draws every pod's requests from four
shapes; `cold` gives every workload a shape of its own. The GPUs asked for exceed the cluster's,
so later workloads are mostly rejected. `busy` starts with every node holding 6-8 GPUs' worth of
other pods, so most workloads are rejected from the start.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from typing import Any

BLOCK = "cloud.provider.com/topology-block"
RACK = "cloud.provider.com/topology-rack"
HOST = "kubernetes.io/hostname"
PREFIX = "kueue.x-k8s.io/"
# nodes -> (blocks, racks per block, hosts per rack); 640 is Kueue's TAS performance topology
SHAPES = {
    64: (1, 4, 16),
    256: (2, 8, 16),
    640: (1, 10, 64),
    5120: (8, 16, 40),
    20480: (16, 32, 40),
}
WARM_SHAPES = (
    {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"},
    {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "2"},
    {"cpu": "2", "memory": "8Gi"},
    {"cpu": "12", "memory": "64Gi", "nvidia.com/gpu": "4"},
)


def scenario(
    nodes: int, workloads: int, cold: bool, seed: int = 1, busy: bool = False
) -> dict[str, Any]:
    rng = random.Random(seed)
    blocks, racks, hosts = SHAPES[nodes]
    return {
        "topology": {"levels": [{"nodeLabel": level} for level in (BLOCK, RACK, HOST)]},
        "nodes": [
            _node(rng, f"b{b}-r{r}-h{h}", f"b{b}", f"r{r}", busy)
            for b in range(blocks)
            for r in range(racks)
            for h in range(hosts)
        ],
        "workloads": [_workload(rng, index, nodes, cold) for index in range(workloads)],
        "featureGates": {"TASMultiLayerTopology": True},  # two-layer slices; off by default
    }


def _node(rng: random.Random, name: str, block: str, rack: str, busy: bool) -> dict[str, Any]:
    node: dict[str, Any] = {
        "name": name,
        "labels": {BLOCK: block, RACK: rack, HOST: name, "pool": rng.choice("ab")},
        "allocatable": {"cpu": "96", "memory": "512Gi", "nvidia.com/gpu": "8", "pods": 110},
    }
    if busy:
        gpus = rng.randint(6, 8)  # most GPUs taken: most workloads do not fit
        node["usage"] = {"cpu": str(4 * gpus), "nvidia.com/gpu": str(gpus), "pods": gpus}
    elif rng.random() < 0.3:
        gpus = rng.randint(1, 6)
        node["usage"] = {"cpu": str(4 * gpus), "nvidia.com/gpu": str(gpus), "pods": gpus}
    if rng.random() < 0.03:
        node["taints"] = [{"key": "maintenance", "effect": "NoSchedule"}]
    if rng.random() < 0.01:
        node["ready"] = False
    return node


def _requests(rng: random.Random, index: int, cold: bool) -> dict[str, str]:
    shape = dict(rng.choice(WARM_SHAPES))
    if cold:
        # a cpu request no other workload has: every placement meets a new pod shape
        shape["cpu"] = f"{2000 + index}m"
    return shape


def _topology(rng: random.Random, count: int) -> dict[str, str]:
    kind = rng.choice(
        ["required", "required", "preferred", "unconstrained", "implied", "slices", "layers"]
    )
    if kind == "required":
        return {PREFIX + "podset-required-topology": rng.choice([BLOCK, RACK, RACK, HOST])}
    if kind == "preferred":
        return {PREFIX + "podset-preferred-topology": rng.choice([BLOCK, RACK])}
    if kind == "unconstrained":
        return {PREFIX + "podset-unconstrained-topology": "true"}
    if kind == "implied" or count % 4:
        return {}
    if kind == "slices":
        return {
            PREFIX + "podset-required-topology": BLOCK,
            PREFIX + "podset-slice-required-topology": rng.choice([RACK, HOST]),
            PREFIX + "podset-slice-size": "4",
        }
    layers = [{"topology": RACK, "size": 4}, {"topology": HOST, "size": 2}]
    return {
        PREFIX + "podset-preferred-topology": BLOCK,
        PREFIX + "podset-slice-required-topology-constraints": json.dumps(layers),
    }


def _workload(rng: random.Random, index: int, nodes: int, cold: bool) -> dict[str, Any]:
    largest = 256 if nodes >= 640 else 32
    count = rng.choice([1, 2, 4, 8, 16, 32, 64, 128, largest])
    podset: dict[str, Any] = {
        "name": "main",
        "count": count,
        "requests": _requests(rng, index, cold),
        "annotations": _topology(rng, count),
    }
    if rng.random() < 0.2:
        podset["nodeSelector"] = {"pool": rng.choice("ab")}
    if rng.random() < 0.2:
        podset["tolerations"] = [{"key": "maintenance", "operator": "Exists"}]
    podsets = [podset]
    if rng.random() < 0.1:
        # leader + workers sharing one rack
        group = {PREFIX + "podset-required-topology": RACK, PREFIX + "podset-group-name": "g"}
        podset["annotations"] = group
        leader = {"name": "leader", "count": 1, "requests": {"cpu": "1"}, "annotations": group}
        podsets = [leader, podset]
    return {"name": f"w{index}", "podSets": podsets}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, choices=sorted(SHAPES), default=640)
    parser.add_argument("--workloads", type=int, default=200)
    parser.add_argument("--cold", action="store_true", help="a new pod shape per workload")
    parser.add_argument("--busy", action="store_true", help="every node mostly taken")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="JSON instead of YAML")
    args = parser.parse_args(argv)
    document = scenario(args.nodes, args.workloads, args.cold, args.seed, args.busy)
    if args.json:
        json.dump(document, sys.stdout)
    else:
        import yaml

        yaml.safe_dump(document, sys.stdout, sort_keys=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
