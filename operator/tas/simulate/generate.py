"""Realistic `tas simulate` traces, the same for the same arguments.

    python -m tas.simulate.generate --shape training --seed 1 --nodes 5120 > training.json
    python -m tas.simulate.generate --shape mixed --nodes 640 --load 1.5 > saturating.json

The cluster is a compact `pool` of GPU hosts (96 cpu, 512Gi, 8 GPUs, 110 pods) on blocks,
racks and hosts as bench/scenarios.py lays them out. Shapes:

- training: gangs of 4 to 256 hosts' worth of pods (8 or 4 GPUs each) that must share a rack
  (up to a rack's hosts) or a block (larger ones, half of them in rack-sized slices); hours
  long (log-normal, median 4 h, 30 min to 48 h).
- inference: scale-out replicas, 1 to 32 small pods (1 or 2 GPUs, or CPU only) preferring one
  rack; minutes long (exponential, mean 30 min, at least 1 min), arriving on a daily cycle.
- mixed: both, a sixth of the workloads training.

`--load` is the work offered over capacity: the sum over workloads of host-seconds (pods times
the share of a host each takes, by its largest resource, times duration) over the hosts times
the span in which they arrive. Above 1 the trace saturates the cluster: arrivals outrun it.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from typing import Any

BLOCK = "cloud.provider.com/topology-block"
RACK = "cloud.provider.com/topology-rack"
HOST = "kubernetes.io/hostname"
PREFIX = "kueue.x-k8s.io/"
GPU = "nvidia.com/gpu"
# nodes -> (blocks, racks per block, hosts per rack), as bench/scenarios.py
LAYOUTS = {
    64: (1, 4, 16),
    256: (2, 8, 16),
    640: (1, 10, 64),
    5120: (8, 16, 40),
    20480: (16, 32, 40),
}
HOST_ALLOCATABLE = {"cpu": "96", "memory": "512Gi", GPU: "8", "pods": 110}
# per pod requests, and the share of a host one pod takes (by its largest resource)
TRAINING_PODS = (
    ({"cpu": "88", "memory": "480Gi", GPU: "8"}, 1.0),
    ({"cpu": "44", "memory": "240Gi", GPU: "4"}, 0.5),
)
INFERENCE_PODS = (
    ({"cpu": "8", "memory": "48Gi", GPU: "1"}, 1 / 8),
    ({"cpu": "16", "memory": "96Gi", GPU: "2"}, 1 / 4),
    ({"cpu": "4", "memory": "16Gi"}, 1 / 24),
)
HOUR = 3600.0
DAY = 24 * HOUR
MIXED_TRAINING_SHARE = 1 / 6
DEFAULT_WORKLOADS = {"training": 300, "inference": 800, "mixed": 600}


def trace(
    shape: str, seed: int, nodes: int, workloads: int | None = None, load: float = 0.8
) -> dict[str, Any]:
    rng = random.Random(seed)
    blocks, racks, hosts = LAYOUTS[nodes]
    count = DEFAULT_WORKLOADS[shape] if workloads is None else workloads
    kinds = [_kind(rng, shape) for _ in range(count)]
    made = [
        _training(rng, hosts, racks * hosts) if kind == "training" else _inference(rng)
        for kind in kinds
    ]
    work = sum(host_seconds for _, host_seconds in made)
    span = work / (load * nodes)  # arrivals over this span offer `load` times the capacity
    arrivals = [
        _daily(rng, span) if kind == "inference" else rng.uniform(0, span) for kind in kinds
    ]
    order = sorted(range(count), key=lambda i: arrivals[i])
    entries = []
    for i in order:
        workload, _ = made[i]
        entries.append(
            {"name": f"{kinds[i][:5]}-{i}", "arrival": round(arrivals[i], 1), **workload}
        )
    return {
        # how it was made (`tas simulate` reads no such key)
        "generator": {
            "shape": shape,
            "seed": seed,
            "nodes": nodes,
            "workloads": count,
            "load": load,
        },
        "topology": {"levels": [{"nodeLabel": level} for level in (BLOCK, RACK, HOST)]},
        "pool": {
            "blocks": blocks,
            "racksPerBlock": racks,
            "hostsPerRack": hosts,
            "allocatable": HOST_ALLOCATABLE,
        },
        "workloads": entries,
    }


def _kind(rng: random.Random, shape: str) -> str:
    if shape == "mixed":
        return "training" if rng.random() < MIXED_TRAINING_SHARE else "inference"
    return shape


def _training(rng: random.Random, hosts_per_rack: int, hosts_per_block: int):
    requests, share = rng.choice(TRAINING_PODS)
    hosts = rng.choices([4, 8, 16, 32, 64, 128, 256], weights=[20, 25, 20, 15, 10, 6, 4])[0]
    hosts = min(hosts, hosts_per_block)
    count = round(hosts / share)
    if hosts <= hosts_per_rack:
        kind = "required" if rng.random() < 0.8 else "preferred"
        annotations = {f"{PREFIX}podset-{kind}-topology": RACK}
    else:
        annotations = {f"{PREFIX}podset-required-topology": BLOCK}
        slice_hosts = min(16, hosts_per_rack)
        if rng.random() < 0.5 and hosts % slice_hosts == 0:
            annotations[f"{PREFIX}podset-slice-required-topology"] = RACK
            annotations[f"{PREFIX}podset-slice-size"] = str(round(slice_hosts / share))
    duration = min(max(rng.lognormvariate(math.log(4 * HOUR), 0.8), HOUR / 2), 48 * HOUR)
    podset = {"name": "workers", "count": count, "requests": requests, "annotations": annotations}
    return {"duration": round(duration), "podSets": [podset]}, count * share * duration


def _inference(rng: random.Random):
    requests, share = rng.choices(INFERENCE_PODS, weights=[5, 3, 2])[0]
    count = rng.choice([1, 2, 2, 4, 4, 8, 8, 16, 32])
    duration = max(rng.expovariate(1 / (HOUR / 2)), 60.0)
    podset = {
        "name": "replicas",
        "count": count,
        "requests": requests,
        "annotations": {f"{PREFIX}podset-preferred-topology": RACK},
    }
    return {"duration": round(duration), "podSets": [podset]}, count * share * duration


def _daily(rng: random.Random, span: float) -> float:
    """An arrival time in [0, span] on a daily cycle: busiest at 06:00, quietest at 18:00
    (rejection sampling of 1 + 0.6 sin(2 pi t / day))."""
    while True:
        at = rng.uniform(0, span)
        if rng.uniform(0, 1.6) <= 1 + 0.6 * math.sin(2 * math.pi * at / DAY):
            return at


def dumps(document: dict[str, Any]) -> str:
    """JSON (a YAML document too), a workload per line: small enough to commit, easy to read."""
    lines = [f" {json.dumps(k)}: {json.dumps(v)}" for k, v in document.items() if k != "workloads"]
    workloads = ",\n".join(f"  {json.dumps(w)}" for w in document["workloads"])
    lines.append(f' "workloads": [\n{workloads}\n ]')
    return "{\n" + ",\n".join(lines) + "\n}\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=sorted(DEFAULT_WORKLOADS), default="mixed")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--nodes", type=int, choices=sorted(LAYOUTS), default=5120)
    parser.add_argument("--workloads", type=int, help="default: 300, 800 or 600 by shape")
    parser.add_argument("--load", type=float, default=0.8, help="offered work over capacity")
    args = parser.parse_args(argv)
    if args.load <= 0 or (args.workloads is not None and args.workloads < 1):
        parser.error("--load must be above 0 and --workloads at least 1")
    sys.stdout.write(dumps(trace(args.shape, args.seed, args.nodes, args.workloads, args.load)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
