"""Realistic `tas simulate` traces, the same for the same arguments.

    python -m tas.offline.simulate.generate --shape training --seed 1 --nodes 5120 > training.json
    python -m tas.offline.simulate.generate --shape mixed --nodes 640 --load 1.5 > saturating.json
    python -m tas.offline.simulate.generate --shape groups --nodes 256 --workloads 400 > groups.json
    python -m tas.offline.simulate.generate --shape growing --seed 1 --load 1.3 > growing.json
    python -m tas.offline.simulate.generate --shape training --load 1.5 --movable > movable.json

The cluster is a compact `pool` of GPU hosts (96 cpu, 512Gi, 8 GPUs, 110 pods) on blocks,
racks and hosts as bench/scenarios.py lays them out. Shapes:

- training: gangs of 4 to 256 hosts' worth of pods (8 or 4 GPUs each) that must share a rack
  (up to a rack's hosts) or a block (larger ones, half of them in rack-sized slices); hours
  long (log-normal, median 4 h, 30 min to 48 h).
- inference: scale-out replicas, 1 to 32 small pods (1 or 2 GPUs, or CPU only) preferring one
  rack; minutes long (exponential, mean 30 min, at least 1 min), arriving on a daily cycle.
- mixed: both, a sixth of the workloads training.
- groups: placement groups (the trace turns the gate TASPlacementGroups on) among plain
  workloads: of every 12 workloads, 2 training gangs and 4 inference replicas as above, 3
  scale-out steps of inference services with rack affinity (1 to 8 pods of 1 or 2 GPUs, hours
  long: log-normal, median 2 h; about 10 steps a service), 1 HA replica with rack
  anti-affinity (one 2-GPU pod, median 8 h; about 4 a group) and 2 rack gangs (4 to 16 hosts)
  of a tenant that owns whole blocks (exclusive; give it a pool of several blocks). The first
  member of a group in the trace gives its constraints, the others its name.
- growing: mixed gangs and placement groups that grow, saturating: of every 12 workloads, 3
  training gangs and 3 inference replicas as above, 3 scale-out steps of inference services
  with rack affinity and 3 steps of training jobs with block affinity (`job-N`: 1 to 16 hosts
  of 8-GPU pods per step, hours long; about 8 steps a job). A group's steps arrive after its
  start, within a quarter of the span, so it grows while it runs.

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
DEFAULT_WORKLOADS = {
    "training": 300,
    "inference": 800,
    "mixed": 600,
    "groups": 500,
    "growing": 600,
}
# the groups shape: each kind's weight, and the members per group (about)
GROUPS_KINDS = {"training": 2, "inference": 4, "service": 3, "replica": 1, "tenant": 2}
GROWING_KINDS = {"training": 3, "inference": 3, "service": 3, "job": 3}
MEMBERS_PER_SERVICE = 10
STEPS_PER_JOB = 8
GROWTH_WINDOW = 0.25  # a growing group's steps arrive within this share of the span
REPLICAS_PER_GROUP = 4
# --movable: the rack-sized training gangs may be moved (gate TASDefragmentation)
MOVABLE = {"tas-operator.io/movable": "true"}
GROUP_SPECS = {  # by the group name's prefix
    "svc": {"affinityTopology": RACK},
    "ha": {"antiAffinityTopology": RACK},
    "tenant": {"exclusiveTopology": BLOCK},
    "job": {"affinityTopology": BLOCK},
}


def _workload(
    rng: random.Random, kind: str, hosts: int, racks: int, groups: tuple[int, int, int]
) -> tuple[dict[str, Any], float]:
    """One workload of a kind and its host-seconds; `groups`: how many services, replica groups
    and growing jobs its members spread over."""
    services, ha_groups, jobs = groups
    if kind == "training":
        return _training(rng, hosts, racks * hosts)
    if kind == "inference":
        return _inference(rng)
    if kind == "service":
        return _service(rng, services)
    if kind == "replica":
        return _replica(rng, ha_groups)
    if kind == "job":
        return _job_step(rng, jobs)
    return _tenant(rng, hosts)


def trace(
    shape: str,
    seed: int,
    nodes: int,
    workloads: int | None = None,
    load: float = 0.8,
    movable: bool = False,
) -> dict[str, Any]:
    rng = random.Random(seed)
    blocks, racks, hosts = LAYOUTS[nodes]
    count = DEFAULT_WORKLOADS[shape] if workloads is None else workloads
    kinds = [_kind(rng, shape) for _ in range(count)]
    services = max(1, kinds.count("service") // MEMBERS_PER_SERVICE)
    ha_groups = max(1, kinds.count("replica") // REPLICAS_PER_GROUP)
    jobs = max(1, kinds.count("job") // STEPS_PER_JOB)
    made = [_workload(rng, kind, hosts, racks, (services, ha_groups, jobs)) for kind in kinds]
    work = sum(host_seconds for _, host_seconds in made)
    span = work / (load * nodes)  # arrivals over this span offer `load` times the capacity
    starts: dict[str, float] = {}  # growing: a group's start
    arrivals = [
        _arrival(rng, kind, workload.get("group") if shape == "growing" else None, span, starts)
        for kind, (workload, _) in zip(kinds, made, strict=True)
    ]
    order = sorted(range(count), key=lambda i: arrivals[i])
    entries = []
    named: set[str] = set()  # groups whose constraints an earlier member gave
    for i in order:
        workload, _ = made[i]
        group = workload.get("group")
        if group is not None and group not in named:
            named.add(group)
            workload = workload | {"group": {"name": group, **GROUP_SPECS[group.split("-")[0]]}}
        if movable and kinds[i] == "training" and not _block_sized(workload):
            workload = {**workload, "annotations": dict(MOVABLE)}
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
            **({"movable": True} if movable else {}),
        },
        **(
            {"featureGates": {"TASPlacementGroups": True}} if shape in ("groups", "growing") else {}
        ),
        "topology": {"levels": [{"nodeLabel": level} for level in (BLOCK, RACK, HOST)]},
        "pool": {
            "blocks": blocks,
            "racksPerBlock": racks,
            "hostsPerRack": hosts,
            "allocatable": HOST_ALLOCATABLE,
        },
        "workloads": entries,
    }


def _block_sized(workload: dict[str, Any]) -> bool:
    annotations = workload["podSets"][0].get("annotations", {})
    return annotations.get(f"{PREFIX}podset-required-topology") == BLOCK


def _kind(rng: random.Random, shape: str) -> str:
    if shape == "mixed":
        return "training" if rng.random() < MIXED_TRAINING_SHARE else "inference"
    if shape in ("groups", "growing"):
        kinds = GROUPS_KINDS if shape == "groups" else GROWING_KINDS
        return rng.choices(list(kinds), weights=list(kinds.values()))[0]
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


def _service(rng: random.Random, services: int):
    """One scale-out step of an inference service: its pods join the service's rack."""
    requests, share = rng.choice(INFERENCE_PODS[:2])
    count = rng.choice([1, 2, 4, 8])
    duration = min(max(rng.lognormvariate(math.log(2 * HOUR), 0.8), HOUR / 6), 12 * HOUR)
    podset = {"name": "replicas", "count": count, "requests": requests}
    workload = {"duration": round(duration), "group": f"svc-{rng.randrange(services)}"}
    return workload | {"podSets": [podset]}, count * share * duration


def _replica(rng: random.Random, groups: int):
    """One HA replica: a pod on a rack none of its group's other replicas is on."""
    requests, share = INFERENCE_PODS[1]
    duration = min(max(rng.lognormvariate(math.log(8 * HOUR), 0.8), HOUR), 48 * HOUR)
    podset = {"name": "replica", "count": 1, "requests": requests}
    workload = {"duration": round(duration), "group": f"ha-{rng.randrange(groups)}"}
    return workload | {"podSets": [podset]}, share * duration


def _tenant(rng: random.Random, hosts_per_rack: int):
    """A gang of the tenant that owns whole blocks: 4 to 16 hosts in one rack."""
    requests, share = TRAINING_PODS[0]
    count = min(rng.choice([4, 8, 16]), hosts_per_rack)
    duration = min(max(rng.lognormvariate(math.log(4 * HOUR), 0.8), HOUR / 2), 48 * HOUR)
    podset = {
        "name": "workers",
        "count": count,
        "requests": requests,
        "annotations": {f"{PREFIX}podset-required-topology": RACK},
    }
    workload = {"duration": round(duration), "group": "tenant"}
    return workload | {"podSets": [podset]}, count * share * duration


def _arrival(
    rng: random.Random, kind: str, group: str | None, span: float, starts: dict[str, float]
) -> float:
    """A workload's arrival; a growing group's steps follow its start (drawn at its first)."""
    if group is not None:
        if group not in starts:
            starts[group] = rng.uniform(0, span * (1 - GROWTH_WINDOW))
        return starts[group] + rng.uniform(0, span * GROWTH_WINDOW)
    return rng.uniform(0, span) if kind in ("training", "tenant") else _daily(rng, span)


def _job_step(rng: random.Random, jobs: int):
    """One step of a training job that grows within its block: 1 to 16 hosts of 8-GPU pods."""
    requests, share = TRAINING_PODS[0]
    count = rng.choice([1, 2, 4, 4, 8, 8, 16])
    duration = min(max(rng.lognormvariate(math.log(4 * HOUR), 0.8), HOUR / 2), 48 * HOUR)
    podset = {"name": "workers", "count": count, "requests": requests}
    workload = {"duration": round(duration), "group": f"job-{rng.randrange(jobs)}"}
    return workload | {"podSets": [podset]}, count * share * duration


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
    parser.add_argument("--workloads", type=int, help="default: by shape")
    parser.add_argument("--load", type=float, default=0.8, help="offered work over capacity")
    parser.add_argument(
        "--movable", action="store_true", help="annotate rack-sized training gangs movable"
    )
    args = parser.parse_args(argv)
    if args.load <= 0 or (args.workloads is not None and args.workloads < 1):
        parser.error("--load must be above 0 and --workloads at least 1")
    document = trace(args.shape, args.seed, args.nodes, args.workloads, args.load, args.movable)
    sys.stdout.write(dumps(document))
    return 0


if __name__ == "__main__":
    sys.exit(main())
