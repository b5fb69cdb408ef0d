"""Solver benchmark: placement latency per pod set, snapshot build time, growth with N, a long
admission sequence with departures, random scenarios through `tas solve --stats` (warm and cold
pod shapes, rejection-heavy) against Kueue's own times, and scenario parsing. See
bench/README.md.

    .venv/bin/python bench/solver_bench.py            # 640 / 5,120 / 20,480 nodes, 10,000 workloads
    .venv/bin/python bench/solver_bench.py --quick    # 64 / 256 nodes, 500 workloads (smoke check)

Prints markdown tables; a full run writes bench/results/solver.json (or --output), --quick
writes only to --output.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import math
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import scenarios  # bench/scenarios.py
from tas.solver import (
    HOSTNAME_LEVEL,
    DomainAssignment,
    Node,
    PodSetRequest,
    SliceLayer,
    TopologyAssignment,
    TopologyRequest,
    TopologySnapshot,
)

BLOCK = "cloud.provider.com/topology-block"
RACK = "cloud.provider.com/topology-rack"
LEVELS = (BLOCK, RACK, HOSTNAME_LEVEL)
GI = 2**30

# Every node: a 96-core, 512 GiB, 8-GPU host; 110 pods. Every pod: 4 cpu, 16 GiB, 1 GPU, so the
# GPUs bound a host at 8 pods.
NODE_ALLOCATABLE = {
    "cpu": 96_000,
    "memory": 512 * GI * 1000,
    "pods": 110_000,
    "nvidia.com/gpu": 8_000,
}
POD_REQUESTS = {"cpu": 4_000, "memory": 16 * GI * 1000, "nvidia.com/gpu": 1_000}


@dataclass(frozen=True)
class Size:
    blocks: int
    racks_per_block: int
    hosts_per_rack: int
    repetitions: int  # timed placements per pod-set kind

    @property
    def nodes(self) -> int:
        return self.blocks * self.racks_per_block * self.hosts_per_rack

    @property
    def shape(self) -> str:
        return f"{self.blocks}x{self.racks_per_block}x{self.hosts_per_rack}"


# 640 is the topology of Kueue's own TAS scheduler performance test (1 block x 10 racks x 64).
FULL_SIZES = (Size(1, 10, 64, 200), Size(8, 16, 40, 100), Size(16, 32, 40, 50))
QUICK_SIZES = (Size(1, 4, 16, 30), Size(2, 8, 16, 30))
FULL_SEQUENCE = (Size(8, 16, 40, 0), 10_000)
QUICK_SEQUENCE = (Size(2, 8, 16, 0), 500)

# Kueue's Go TAS code (HEAD of Aug 2026), placement loop only, ms per workload, on the same kind
# of random scenarios (issue 13). A rejected workload cost Kueue 0.25-0.36 ms at 640 nodes.
KUEUE_MS = {
    (640, "warm"): 0.39,
    (5120, "warm"): 3.04,
    (20480, "warm"): 14.9,
    (640, "cold"): 0.36,
    (5120, "cold"): 3.38,
    (20480, "cold"): 13.9,
}
KUEUE_REJECTED_640_MS = 0.25
FULL_SCENARIOS = ((640, 5120, 20480), 200, 5)  # sizes, workloads per scenario, runs of each
QUICK_SCENARIOS = ((64, 256), 100, 1)
PARSE_NODES = {False: 20480, True: 256}  # by --quick


@dataclass(frozen=True)
class Kind:
    name: str
    count: int
    topology: TopologyRequest


KINDS = (
    Kind("required rack, 32 pods", 32, TopologyRequest(required=RACK)),
    Kind("preferred block, 256 pods", 256, TopologyRequest(preferred=BLOCK)),
    Kind("unconstrained, 64 pods", 64, TopologyRequest(unconstrained=True)),
    Kind(
        "host slices of 4 x16 in a block",
        64,
        TopologyRequest(required=BLOCK, slice_layers=(SliceLayer(HOSTNAME_LEVEL, 4),)),
    ),
)


def build_nodes(size: Size, rng: random.Random) -> list[Node]:
    """The topology, with ~30% of hosts partly taken by pods outside topology-aware admission."""
    nodes = []
    for b in range(size.blocks):
        for r in range(size.racks_per_block):
            for h in range(size.hosts_per_rack):
                name = f"b{b}-r{r}-h{h}"
                usage = {}
                if rng.random() < 0.3:
                    gpus = rng.randint(1, 6)
                    usage = {
                        "cpu": gpus * 4_000,
                        "nvidia.com/gpu": gpus * 1_000,
                        "pods": gpus * 1_000,
                    }
                nodes.append(
                    Node(
                        name=name,
                        labels={BLOCK: f"b{b}", RACK: f"r{r}", HOSTNAME_LEVEL: name},
                        allocatable=NODE_ALLOCATABLE,
                        usage=usage,
                    )
                )
    return nodes


def percentile(samples: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile: with few samples p99 is (close to) the maximum."""
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def timed(action: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter_ns()
    result = action()
    return (time.perf_counter_ns() - start) / 1e6, result


def measure_build(nodes: list[Node]) -> dict[str, float]:
    """Construction, then the first placement (which builds the domain tree lazily)."""
    constructs, firsts = [], []
    probe = PodSetRequest("probe", 1, POD_REQUESTS)
    for _ in range(3):
        construct_ms, snapshot = timed(lambda: TopologySnapshot(LEVELS, nodes))
        first_ms, _ = timed(lambda s=snapshot: s.find_assignments([probe]))
        constructs.append(construct_ms)
        firsts.append(first_ms)
    construct, first = statistics.median(constructs), statistics.median(firsts)
    return {"construct_ms": construct, "first_placement_ms": first, "build_ms": construct + first}


# Cold placements need pod shapes never seen before, across every kind and size.
_fresh_cpu = itertools.count(POD_REQUESTS["cpu"] + 1)


def measure_kind(
    snapshot: TopologySnapshot, nodes: list[Node], kind: Kind, size: Size, rng: random.Random
) -> dict:
    """Warm: the same pod shape each time, while single pods land on random hosts in between (an
    admission loop's steady state). Cold: a new pod shape each time, so no per-shape cache helps."""
    hosts = [node.name for node in nodes]
    warm, cold, admitted = [], [], 0
    gc.collect()  # start each series from the same heap state
    for _ in range(size.repetitions):
        one_pod = TopologyAssignment(
            (HOSTNAME_LEVEL,), (DomainAssignment((rng.choice(hosts),), 1),)
        )
        snapshot.add_usage(one_pod, {"cpu": 1})
        podset = PodSetRequest(kind.name, kind.count, POD_REQUESTS, kind.topology)
        elapsed, placement = timed(lambda p=podset: snapshot.find_assignments([p]))
        warm.append(elapsed)
        admitted += placement.admitted
        fresh_shape = {**POD_REQUESTS, "cpu": next(_fresh_cpu)}
        podset = PodSetRequest(kind.name, kind.count, fresh_shape, kind.topology)
        elapsed, _ = timed(lambda p=podset: snapshot.find_assignments([p]))
        cold.append(elapsed)
    return {
        "nodes": size.nodes,
        "shape": size.shape,
        "pod_set": kind.name,
        "repetitions": size.repetitions,
        "admitted": admitted,
        "warm_p50_ms": statistics.median(warm),
        "warm_p99_ms": percentile(warm, 0.99),
        "cold_p50_ms": statistics.median(cold),
        "cold_p99_ms": percentile(cold, 0.99),
    }


def growth(placements: list[dict], sizes: Sequence[Size]) -> list[dict]:
    """p50 ratio between consecutive sizes, next to what N log N growth would give."""
    rows = []
    for small, large in itertools.pairwise(sizes):
        n1, n2 = small.nodes, large.nodes
        expected = (n2 * math.log(n2)) / (n1 * math.log(n1))
        for kind in KINDS:
            [a] = [p for p in placements if p["nodes"] == n1 and p["pod_set"] == kind.name]
            [b] = [p for p in placements if p["nodes"] == n2 and p["pod_set"] == kind.name]
            rows.append(
                {
                    "pod_set": kind.name,
                    "from_nodes": n1,
                    "to_nodes": n2,
                    "node_ratio": n2 / n1,
                    "n_log_n_ratio": expected,
                    "warm_p50_ratio": b["warm_p50_ms"] / a["warm_p50_ms"],
                    "cold_p50_ratio": b["cold_p50_ms"] / a["cold_p50_ms"],
                }
            )
    return rows


def run_sequence(size: Size, workloads: int, seed: int) -> dict:
    """Workloads of the four kinds arrive one by one; each admitted one leaves after 100-800
    arrivals (add_usage with sign=-1). That asks for more GPUs than the cluster has on average,
    so the cluster runs full and fragmented, and some workloads do not fit."""
    rng = random.Random(seed)
    nodes = build_nodes(size, rng)
    snapshot = TopologySnapshot(LEVELS, nodes)
    running: list[tuple[int, list[TopologyAssignment]]] = []  # (departure step, assignments)
    finds, usages, departures = [], [], []
    admitted = 0
    start = time.perf_counter()
    for step in range(workloads):
        still_running = []
        for leaves_at, assignments in running:
            if leaves_at > step:
                still_running.append((leaves_at, assignments))
                continue
            elapsed, _ = timed(
                lambda a=assignments: [snapshot.add_usage(x, POD_REQUESTS, sign=-1) for x in a]
            )
            departures.append(elapsed)
        running = still_running
        kind = rng.choice(KINDS)
        podset = PodSetRequest(kind.name, kind.count, POD_REQUESTS, kind.topology)
        elapsed, placement = timed(lambda p=podset: snapshot.find_assignments([p]))
        finds.append(elapsed)
        if not placement.admitted:
            continue
        admitted += 1
        assignments = [placed.assignment for placed in placement.podsets]
        elapsed, _ = timed(lambda a=assignments: [snapshot.add_usage(x, POD_REQUESTS) for x in a])
        usages.append(elapsed)
        running.append((step + rng.randint(100, 800), assignments))
    wall = time.perf_counter() - start
    return {
        "nodes": size.nodes,
        "shape": size.shape,
        "workloads": workloads,
        "admitted": admitted,
        "not_fitting": workloads - admitted,
        "wall_s": wall,
        "workloads_per_s": workloads / wall,
        "find_p50_ms": statistics.median(finds),
        "find_p99_ms": percentile(finds, 0.99),
        "add_usage_p50_ms": statistics.median(usages) if usages else 0.0,
        "departure_p50_ms": statistics.median(departures) if departures else 0.0,
    }


def solve_stats(path: Path) -> dict:
    """`tas solve --stats FILE` in its own process: the stats line it prints on stderr."""
    command = [sys.executable, "-m", "tas.cli", "solve", "--stats", str(path)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stderr.splitlines()[-1])["stats"]


def mean_ms(summary: dict, clock: str = "total_ms") -> float:
    """Per workload on average, by wall clock (`total_ms`) or CPU time (`cpu_total_ms`)."""
    return summary[clock] / summary["count"] if summary["count"] else 0.0


def run_scenarios(sizes: Sequence[int], workloads: int, runs: int, directory: Path) -> list[dict]:
    """Every size with warm and cold pod shapes, on the mixed and the busy (rejection-heavy)
    cluster: `runs` processes each; per run the mean placement time per workload (all,
    admitted, rejected; by wall clock and by CPU time) and p50/p99; reported as medians over
    the runs, and against Kueue's time per workload."""
    rows = []
    for nodes, cold, busy in itertools.product(sizes, (False, True), (False, True)):
        path = directory / f"scenario-{nodes}-{'cold' if cold else 'warm'}-{busy}.json"
        path.write_text(json.dumps(scenarios.scenario(nodes, workloads, cold, 1, busy)))
        samples = [solve_stats(path) for _ in range(runs)]
        shapes = "cold" if cold else "warm"
        row = {
            "nodes": nodes,
            "shapes": shapes,
            "cluster": "busy" if busy else "mixed",
            "runs": runs,
            "workloads": workloads,
            "admitted": samples[0]["admitted"]["count"],
            "rejected": samples[0]["rejected"]["count"],
            "p50_ms": statistics.median(sample["placement"]["p50_ms"] for sample in samples),
            "p99_ms": statistics.median(sample["placement"]["p99_ms"] for sample in samples),
            "snapshot_ms": statistics.median(sample["snapshot_ms"] for sample in samples),
            "all_runs_mean_ms": [round(mean_ms(sample["placement"]), 4) for sample in samples],
        }
        kueue = KUEUE_MS.get((nodes, shapes))
        # Kueue's rejections: measured at 640 nodes only; elsewhere its per-workload time
        kueue_rejected = KUEUE_REJECTED_640_MS if nodes == 640 else kueue
        # median of the runs by wall clock and by CPU time; the least disturbed run by CPU time
        for clock, pick, suffix in (
            ("total_ms", statistics.median, ""),
            ("cpu_total_ms", statistics.median, "_cpu"),
            ("cpu_total_ms", min, "_cpu_best"),
        ):
            for part, kueue_part in (
                ("placement", kueue),
                ("admitted", kueue),
                ("rejected", kueue_rejected),
            ):
                name = "" if part == "placement" else f"{part}_"
                mean = pick(mean_ms(sample[part], clock) for sample in samples)
                row[f"{name}mean{suffix}_ms"] = mean
                if kueue is not None:
                    row[f"{name}ratio{suffix}"] = mean / kueue_part
        if kueue is not None:
            row["kueue_ms"] = kueue
        rows.append(row)
        print(f"scenario {nodes:,} nodes, {shapes}, {row['cluster']}", file=sys.stderr)
    return rows


def measure_parsing(nodes: int, runs: int, directory: Path) -> list[dict]:
    """`tas solve --stats` parse time (read, load, check every field) of one scenario with
    `nodes` nodes, as YAML and as JSON; median of `runs` processes."""
    import yaml

    document = scenarios.scenario(nodes, 200, False)
    rows = []
    for form in ("yaml", "json"):
        path = directory / f"parse-{nodes}.{form}"
        text = yaml.safe_dump(document, sort_keys=False) if form == "yaml" else json.dumps(document)
        path.write_text(text)
        samples = [solve_stats(path) for _ in range(runs)]
        rows.append(
            {
                "nodes": nodes,
                "format": form,
                "bytes": len(text.encode()),
                "parse_ms": statistics.median(sample["parse_ms"] for sample in samples),
                "parse_cpu_ms": statistics.median(sample["parse_cpu_ms"] for sample in samples),
                "all_runs_ms": [sample["parse_ms"] for sample in samples],
            }
        )
    return rows


def markdown(result: dict) -> str:
    lines = [
        "## Snapshot build",
        "",
        "| nodes | shape | construct ms | first placement ms | build ms |",
        "|---:|---|---:|---:|---:|",
    ]
    for row in result["builds"]:
        lines.append(
            f"| {row['nodes']:,} | {row['shape']} | {row['construct_ms']:.1f} | {row['first_placement_ms']:.1f} | {row['build_ms']:.1f} |"
        )
    lines += [
        "",
        "## Placement of one pod set (ms)",
        "",
        "| nodes | pod set | warm p50 | warm p99 | cold p50 | cold p99 | admitted |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for row in result["placements"]:
        lines.append(
            f"| {row['nodes']:,} | {row['pod_set']} | {row['warm_p50_ms']:.2f} | {row['warm_p99_ms']:.2f}"
            f" | {row['cold_p50_ms']:.2f} | {row['cold_p99_ms']:.2f} | {row['admitted']}/{row['repetitions']} |"
        )
    lines += [
        "",
        "## Growth of p50 between sizes",
        "",
        "| pod set | nodes | node ratio | N log N ratio | warm p50 ratio | cold p50 ratio |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for row in result["growth"]:
        lines.append(
            f"| {row['pod_set']} | {row['from_nodes']:,} -> {row['to_nodes']:,} | {row['node_ratio']:.1f}"
            f" | {row['n_log_n_ratio']:.1f} | {row['warm_p50_ratio']:.1f} | {row['cold_p50_ratio']:.1f} |"
        )
    seq = result["sequence"]
    lines += [
        "",
        f"## Sequence: {seq['workloads']:,} workloads with departures on {seq['nodes']:,} nodes",
        "",
        "| admitted | not fitting | wall s | workloads/s | find p50 ms | find p99 ms | add_usage p50 ms | departure p50 ms |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {seq['admitted']:,} | {seq['not_fitting']:,} | {seq['wall_s']:.1f} | {seq['workloads_per_s']:.0f}"
        f" | {seq['find_p50_ms']:.2f} | {seq['find_p99_ms']:.2f} | {seq['add_usage_p50_ms']:.3f} | {seq['departure_p50_ms']:.3f} |",
        "",
        "## Random scenarios through `tas solve --stats` (ms per workload; median of runs)",
        "",
        "Means per workload, all / admitted / rejected: by wall clock and by CPU time (median of",
        "the runs), and by CPU time in the least disturbed run. Ratios: ours / Kueue, same order.",
        "",
        "| nodes | shapes | cluster | admitted / rejected | wall | CPU | CPU, best run | p50 | p99 | Kueue | ratio, wall | ratio, CPU | ratio, CPU best run |",
        "|---:|---|---|---|---|---|---|---:|---:|---:|---|---|---|",
    ]

    def three(row: dict, key: str, suffix: str, digits: int) -> str:
        return " / ".join(
            f"{row[f'{part}{key}{suffix}']:.{digits}f}" for part in ("", "admitted_", "rejected_")
        )

    for row in result["scenarios"]:
        means = [three(row, "mean", suffix, 3) for suffix in ("_ms", "_cpu_ms", "_cpu_best_ms")]
        kueue, ratios = "-", ["-", "-", "-"]
        if "kueue_ms" in row:
            kueue = f"{row['kueue_ms']:.2f}"
            ratios = [three(row, "ratio", suffix, 2) for suffix in ("", "_cpu", "_cpu_best")]
        lines.append(
            f"| {row['nodes']:,} | {row['shapes']} | {row['cluster']} | {row['admitted']} / {row['rejected']}"
            f" | {' | '.join(means)} | {row['p50_ms']:.3f} | {row['p99_ms']:.2f} | {kueue} | {' | '.join(ratios)} |"
        )
    lines += [
        "",
        "## Parsing a scenario (`tas solve --stats` parse_ms; median of runs)",
        "",
        "| nodes | format | MB | parse ms | parse CPU ms |",
        "|---:|---|---:|---:|---:|",
    ]
    for row in result["parsing"]:
        lines.append(
            f"| {row['nodes']:,} | {row['format']} | {row['bytes'] / 1e6:.1f} | {row['parse_ms']:.0f} | {row['parse_cpu_ms']:.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only, for a smoke check")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--output",
        type=Path,
        default=None,
        help="default: bench/results/solver.json on a full run, nothing with --quick",
    )
    args = parser.parse_args(argv)
    output = args.output
    if output is None and not args.quick:
        output = Path(__file__).parent / "results" / "solver.json"

    sizes = QUICK_SIZES if args.quick else FULL_SIZES
    sequence_size, sequence_workloads = QUICK_SEQUENCE if args.quick else FULL_SEQUENCE
    scenario_sizes, scenario_workloads, scenario_runs = (
        QUICK_SCENARIOS if args.quick else FULL_SCENARIOS
    )
    result: dict = {
        "quick": args.quick,
        "seed": args.seed,
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average_at_start": os.getloadavg(),
        },
        "node": {"allocatable": NODE_ALLOCATABLE, "levels": LEVELS},
        "pod_requests": POD_REQUESTS,
        "builds": [],
        "placements": [],
    }
    for size in sizes:
        rng = random.Random(args.seed)
        nodes = build_nodes(size, rng)
        result["builds"].append({"nodes": size.nodes, "shape": size.shape, **measure_build(nodes)})
        snapshot = TopologySnapshot(LEVELS, nodes)
        for kind in KINDS:
            result["placements"].append(measure_kind(snapshot, nodes, kind, size, rng))
        print(f"measured {size.nodes:,} nodes", file=sys.stderr)
    result["growth"] = growth(result["placements"], sizes)
    result["sequence"] = run_sequence(sequence_size, sequence_workloads, args.seed)
    with tempfile.TemporaryDirectory(prefix="solver-bench-") as directory:
        result["scenarios"] = run_scenarios(
            scenario_sizes, scenario_workloads, scenario_runs, Path(directory)
        )
        result["parsing"] = measure_parsing(PARSE_NODES[args.quick], scenario_runs, Path(directory))
    result["load_average_at_end"] = os.getloadavg()

    print(markdown(result))
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(result, indent=2) + "\n")
        print(f"\nwrote {output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
