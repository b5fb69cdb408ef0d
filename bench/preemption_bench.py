"""How long one preemption decision takes at cluster scale (issue 15).

    .venv/bin/python bench/preemption_bench.py              # 5,120 nodes, 160 candidates
    .venv/bin/python bench/preemption_bench.py --blocks 4 --quick --output /tmp/p.json

The cluster: `--blocks` blocks of 10 racks of 32 hosts (8 cpu each; 16 blocks = 5,120 nodes),
one ClusterQueue with `withinClusterQueue: LowerPriority`. Every rack is filled by one running
workload of 128 pods x 2 cpu (required rack), with priorities 0-9 in a shuffled order, so that
the lowest priorities are spread over every block. Then a preemptor (priority 100) asks for a
whole block (1,280 pods x 2 cpu, required block): Kueue's search removes candidates in its
order until one block is empty, then puts back every victim not needed. Reported:

- `decide_ms`: the whole decision for the preemptor (quota, the failed placement, the search
  with its simulated removals and fill-back), CPU time, median of --repeats;
- `placements`: how many placements the search ran (each one the solver on the whole flavor);
- `victims`: how many it evicts (the 10 workloads of one block at best), and `victim_blocks`
  the blocks they run in (one);
- `placement_ms`: one plain placement of the same request on the full cluster, for scale.
A full run writes bench/results/preemption.json, --quick only --output.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time
from pathlib import Path

from tas.admission.decide import decide
from tas.offline import reader
from tas.offline import scenario as tas_scenario

RESULTS = Path(__file__).parent / "results" / "preemption.json"
BLOCK = "cloud.provider.com/topology-block"
RACK = "cloud.provider.com/topology-rack"
HOST = "kubernetes.io/hostname"
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
RACKS, HOSTS = 10, 32


def document(blocks: int, seed: int) -> dict:
    nodes = [
        {
            "name": f"b{b}-r{r}-h{h}",
            "labels": {BLOCK: f"b{b}", RACK: f"b{b}-r{r}", HOST: f"b{b}-r{r}-h{h}"},
            "allocatable": {"cpu": "8", "memory": "64Gi"},
        }
        for b in range(blocks)
        for r in range(RACKS)
        for h in range(HOSTS)
    ]
    rng = random.Random(seed)
    priorities = [i % 10 for i in range(blocks * RACKS)]
    rng.shuffle(priorities)
    running = [
        {
            "name": f"run-{i}",
            "priority": p,
            "running": True,
            "podSets": [
                {
                    "name": "main",
                    "count": 128,
                    "requests": {"cpu": "2"},
                    "annotations": {REQUIRED: RACK},
                }
            ],
        }
        for i, p in enumerate(priorities)
    ]
    return {
        "topology": {"levels": [{"nodeLabel": BLOCK}, {"nodeLabel": RACK}, {"nodeLabel": HOST}]},
        "nodes": nodes,
        "clusterQueues": [
            {
                "name": "cq",
                "nominalQuota": {"cpu": str(8 * len(nodes)), "memory": "1Pi"},
                "preemption": {"withinClusterQueue": "LowerPriority"},
            }
        ],
        "workloads": running,
    }


def preemptor() -> reader.Workload:
    parsed = reader.parse_scenario(
        {
            "topology": {"levels": [{"nodeLabel": BLOCK}, {"nodeLabel": RACK}]},
            "nodes": [],
            "workloads": [
                {
                    "name": "pretrain",
                    "podSets": [
                        {
                            "name": "main",
                            "count": RACKS * 128,
                            "requests": {"cpu": "2"},
                            "annotations": {REQUIRED: BLOCK},
                        }
                    ],
                }
            ],
        }
    )
    return reader.Workload("pretrain", parsed.workloads[0].podsets, "cq", 100)


def run(blocks: int, repeats: int, seed: int) -> dict:
    scenario = reader.parse_scenario(document(blocks, seed))
    state = tas_scenario.cluster_state(scenario)
    cq = state.cluster_queues["cq"]
    for step, workload in enumerate(scenario.workloads):
        info = tas_scenario.workload_info(workload, "cq", step)
        state.upsert_workload(info)
        d = decide(state, info, cq)
        assert d.admitted, d.message
        state.upsert_workload(tas_scenario.admitted_info(info, d, step))
    incoming = tas_scenario.workload_info(preemptor(), "cq", len(scenario.workloads))
    state.upsert_workload(incoming)
    snapshot = state.snapshot(reader.SCENARIO_FLAVOR)
    place = snapshot.find_assignments
    calls = 0

    def counted(podsets):
        nonlocal calls
        calls += 1
        return place(podsets)

    times, plain, victims = [], [], None
    for _ in range(repeats):
        snapshot.find_assignments = counted
        calls = 0
        started = time.process_time()
        d = decide(state, incoming, cq)
        times.append(time.process_time() - started)
        snapshot.find_assignments = place
        assert d.preemption is not None, d.message
        victims = [t.workload.key for t in d.preemption.targets]
        started = time.process_time()
        place(incoming.pod_sets)
        plain.append(time.process_time() - started)
    return {
        "nodes": len(scenario.nodes),
        "candidates": len(scenario.workloads),
        "decide_ms": round(statistics.median(times) * 1000, 1),
        "decide_ms_runs": [round(t * 1000, 1) for t in times],
        "placements": calls,
        "victims": len(victims or ()),
        "victim_blocks": sorted(
            {
                d.values[0].split("-")[0]
                for key in victims or ()
                for ps in state.charges()[key].pod_sets
                for d in ps.assignment.domains
            }
        ),
        "placement_ms": round(statistics.median(plain) * 1000, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="do not write the results file")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    result = {
        "command": " ".join(["bench/preemption_bench.py", *sys.argv[1:]]),
        "python": platform.python_version(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **run(args.blocks, args.repeats, args.seed),
    }
    print(json.dumps(result, indent=2))
    targets = [args.output] if args.output else []
    if not args.quick:
        targets.append(RESULTS)
    for target in targets:
        target.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
