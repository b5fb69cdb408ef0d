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
import re
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

# Fallback only, when the Kueue-Go harness (bench/kueue_go) is not built: Kueue's Go TAS code
# (HEAD of Aug 2026), placement loop only, ms per workload, on the same kind of random
# scenarios, measured once on another run. A rejected workload cost Kueue 0.25-0.36 ms at 640.
KUEUE_MS = {
    (640, "warm"): 0.39,
    (5120, "warm"): 3.04,
    (20480, "warm"): 14.9,
    (640, "cold"): 0.36,
    (5120, "cold"): 3.38,
    (20480, "cold"): 13.9,
}
KUEUE_REJECTED_640_MS = 0.25
# Where `make bench-kueue-go` builds the harness; --kueue-go overrides it.
KUEUE_GO_BINARY = (
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    / "tas-operator"
    / "kueue-go"
    / "kueue-go"
)
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


OURS = (sys.executable, "-m", "tas.cli", "solve")


def solve_stats(path: Path) -> dict:
    """`tas solve --stats FILE` in its own process: the stats line it prints on stderr."""
    return run_placer(OURS, path)[0]


def run_placer(command: Sequence[str], path: Path) -> tuple[dict, list[dict]]:
    """`tas solve --stats` or the Kueue-Go harness on FILE, in its own process: the stats
    line it prints on stderr and the workloads' results it prints on stdout."""
    done = subprocess.run([*command, "--stats", str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{command[0]} failed on {path}: {done.stderr.strip()}")
    stats = json.loads(done.stderr.splitlines()[-1])["stats"]
    return stats, json.loads(done.stdout)["workloads"]


def mean_ms(summary: dict, clock: str = "total_ms") -> float:
    """Per workload on average, by wall clock (`total_ms`) or CPU time (`cpu_total_ms`)."""
    return summary[clock] / summary["count"] if summary["count"] else 0.0


# (stats clock, how runs are combined, key suffix): median by wall clock and by CPU time, and
# the least disturbed run by CPU time
CLOCKS = (
    ("total_ms", statistics.median, ""),
    ("cpu_total_ms", statistics.median, "_cpu"),
    ("cpu_total_ms", min, "_cpu_best"),
)
PARTS = ("placement", "admitted", "rejected")


def means(samples: list[dict], prefix: str = "") -> dict[str, float | None]:
    """Mean ms per workload of all / admitted / rejected, combined over runs as CLOCKS says;
    None for a part no workload fell in."""
    row: dict[str, float | None] = {}
    for clock, pick, suffix in CLOCKS:
        for part in PARTS:
            name = "" if part == "placement" else f"{part}_"
            counted = samples[0][part]["count"] > 0
            value = pick(mean_ms(sample[part], clock) for sample in samples) if counted else None
            row[f"{prefix}{name}mean{suffix}_ms"] = value
    return row


def ratios(row: dict) -> dict[str, float | None]:
    """Ours / Kueue for every mean both sides have."""
    out: dict[str, float | None] = {}
    for _, _, suffix in CLOCKS:
        for part in PARTS:
            name = "" if part == "placement" else f"{part}_"
            ours, kueue = row[f"{name}mean{suffix}_ms"], row[f"kueue_{name}mean{suffix}_ms"]
            out[f"{name}ratio{suffix}"] = ours / kueue if ours is not None and kueue else None
    return out


def kueue_constants(nodes: int, shapes: str) -> dict[str, float | None]:
    """The fallback: one earlier per-workload time for every clock and part (and, at 640 nodes,
    the cheapest rejection for rejected workloads); None where none was measured."""
    kueue = KUEUE_MS.get((nodes, shapes))
    rejected = KUEUE_REJECTED_640_MS if nodes == 640 else kueue
    row: dict[str, float | None] = {}
    for _, _, suffix in CLOCKS:
        for part in PARTS:
            name = "" if part == "placement" else f"{part}_"
            row[f"kueue_{name}mean{suffix}_ms"] = rejected if part == "rejected" else kueue
    return row


def _message(workload: dict) -> str:
    """A rejection's message without the topology's name: Kueue quotes the Topology object's,
    `tas solve` (whose scenario names none) the level's."""
    return re.sub(r'^topology "[^"]*"', "topology", workload.get("message", ""))


def agreement(ours: list[dict], kueue: list[dict]) -> dict:
    """How many workloads both sides decide alike, place alike (the same assignment of every
    pod set) and reject with the same message; the first few that differ."""
    decisions = [a["admitted"] == b["admitted"] for a, b in zip(ours, kueue, strict=True)]
    placements = [a == b for a, b in zip(ours, kueue, strict=True) if a["admitted"]]
    messages = [
        _message(a) == _message(b)
        for a, b in zip(ours, kueue, strict=True)
        if not a["admitted"] and not b["admitted"]
    ]
    differing = [
        {"name": a["name"], "ours": a["admitted"], "kueue": b["admitted"]}
        for a, b in zip(ours, kueue, strict=True)
        if a["admitted"] != b["admitted"] or (a["admitted"] and a != b)
    ]
    return {
        "decisions_agree": sum(decisions),
        "assignments_agree": sum(placements),
        "admitted_by_both": len(placements),
        "messages_agree": sum(messages),
        "rejected_by_both": len(messages),
        "differing": differing[:10],
    }


def run_scenarios(
    sizes: Sequence[int], workloads: int, runs: int, directory: Path, kueue_go: Path | None
) -> list[dict]:
    """Every size with warm and cold pod shapes, on the mixed and the busy (rejection-heavy)
    cluster: `runs` processes of `tas solve --stats` each, and as many of the Kueue-Go harness
    when built (alternating, so that both meet the same load); per run the mean placement time
    per workload (all, admitted, rejected; by wall clock and by CPU time) and p50/p99; reported
    as medians over the runs, with ours / Kueue ratios from the same run."""
    rows = []
    for nodes, cold, busy in itertools.product(sizes, (False, True), (False, True)):
        shapes = "cold" if cold else "warm"
        path = directory / f"scenario-{nodes}-{shapes}-{busy}.json"
        path.write_text(json.dumps(scenarios.scenario(nodes, workloads, cold, 1, busy)))
        ours, kueue = [], []
        for _ in range(runs):
            ours.append(run_placer(OURS, path))
            if kueue_go is not None:
                kueue.append(run_placer((str(kueue_go),), path))
        samples = [stats for stats, _ in ours]
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
            **means(samples),
            **kueue_side(kueue, ours[0][1], nodes, shapes),
        }
        rows.append(row | ratios(row))
        print(f"scenario {nodes:,} nodes, {shapes}, {row['cluster']}", file=sys.stderr)
    return rows


def kueue_side(runs: list[tuple[dict, list[dict]]], ours: list[dict], nodes: int, shapes: str):
    """Kueue's columns of a scenario row: measured by the harness on the same run, or (not
    built) the labelled fallback constants."""
    if not runs:
        return {"kueue_source": "constant", **kueue_constants(nodes, shapes)}
    samples = [stats for stats, _ in runs]
    return {
        "kueue_source": "kueue-go",
        "kueue_admitted": samples[0]["admitted"]["count"],
        "kueue_rejected": samples[0]["rejected"]["count"],
        "kueue_p50_ms": statistics.median(sample["placement"]["p50_ms"] for sample in samples),
        "kueue_p99_ms": statistics.median(sample["placement"]["p99_ms"] for sample in samples),
        "kueue_all_runs_mean_ms": [round(mean_ms(sample["placement"]), 4) for sample in samples],
        **means(samples, "kueue_"),
        "agreement": agreement(ours, runs[0][1]),
    }


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
    ]
    lines += scenario_table(result["scenarios"])
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


def scenario_table(rows: list[dict]) -> list[str]:
    """The random scenarios: ours and Kueue's means per workload, the ratios, and whether
    both sides decided (and placed) alike."""
    lines = [
        "## Random scenarios through `tas solve --stats` (ms per workload; median of runs)",
        "",
        "Means per workload, all / admitted / rejected: by wall clock and by CPU time (median of",
        "the runs), and by CPU time in the least disturbed run; Kueue's the same way from the",
        "Kueue-Go harness on the same run (source `kueue-go`), or an earlier measurement when it",
        "is not built (source `constant`). Ratios: ours / Kueue, same order. Agree: workloads",
        "both decide alike, and admitted ones both place alike.",
        "",
        "| nodes | shapes | cluster | admitted / rejected | wall | CPU | CPU, best run | p50 | p99"
        " | Kueue wall | Kueue CPU | Kueue CPU, best run | Kueue source | ratio, wall | ratio, CPU"
        " | ratio, CPU best run | agree: decisions, placements |",
        "|---:|---|---|---|---|---|---|---:|---:|---|---|---|---|---|---|---|---|",
    ]

    def three(row: dict, key: str, digits: int) -> str:
        values = (row[key.format(part)] for part in ("", "admitted_", "rejected_"))
        return " / ".join("-" if value is None else f"{value:.{digits}f}" for value in values)

    for row in rows:
        ours = [three(row, "{}mean" + suffix + "_ms", 3) for _, _, suffix in CLOCKS]
        kueue = [three(row, "kueue_{}mean" + suffix + "_ms", 3) for _, _, suffix in CLOCKS]
        ratio = [three(row, "{}ratio" + suffix, 2) for _, _, suffix in CLOCKS]
        agree = "-"
        if "agreement" in row:
            a = row["agreement"]
            agree = (
                f"{a['decisions_agree']}/{row['workloads']},"
                f" {a['assignments_agree']}/{a['admitted_by_both']}"
            )
        lines.append(
            f"| {row['nodes']:,} | {row['shapes']} | {row['cluster']} | {row['admitted']} / {row['rejected']}"
            f" | {' | '.join(ours)} | {row['p50_ms']:.3f} | {row['p99_ms']:.2f} | {' | '.join(kueue)}"
            f" | {row['kueue_source']} | {' | '.join(ratio)} | {agree} |"
        )
    return lines


def kueue_go_binary(option: Path | None) -> Path | None:
    """--kueue-go, or the harness where `make bench-kueue-go` builds it; None if neither."""
    if option is not None:
        if not os.access(option, os.X_OK):
            raise SystemExit(f"--kueue-go: {option} is not an executable")
        return option
    return KUEUE_GO_BINARY if os.access(KUEUE_GO_BINARY, os.X_OK) else None


def versions(kueue_go: Path) -> dict:
    """The Kueue module and Go versions the harness was built with; for the result file."""
    done = subprocess.run([kueue_go, "--version"], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def commit() -> str:
    """The commit measured (with "+dirty" when the tree has changes)."""
    here = Path(__file__).parent
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True)
    dirty = subprocess.run(
        ["git", "status", "--porcelain"], cwd=here, capture_output=True, text=True
    )
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


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
    parser.add_argument(
        "--kueue-go",
        type=Path,
        default=None,
        help=f"the Kueue-Go harness (make bench-kueue-go); default: {KUEUE_GO_BINARY} if built",
    )
    args = parser.parse_args(argv)
    kueue_go = kueue_go_binary(args.kueue_go)
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
        "commit": commit(),
        "kueue_go": None if kueue_go is None else {"binary": str(kueue_go), **versions(kueue_go)},
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
            scenario_sizes, scenario_workloads, scenario_runs, Path(directory), kueue_go
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
