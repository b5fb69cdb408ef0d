"""Defragmentation (gate TASDefragmentation) in `tas simulate`, against BestFit and the
fragmentation-aware profile, on the saturating training traces.

    PYTHONPATH=operator .venv/bin/python bench/defrag_bench.py            # writes bench/results/defrag.json
    PYTHONPATH=operator .venv/bin/python bench/defrag_bench.py --quick    # one trace, writes nothing

Each trace is the generator's (`--shape training --load 1.5`), with every rack-sized gang
(required or preferred rack) annotated `tas-operator.io/movable: "true"` (default
movable-after, 5 minutes); block-sized gangs are not movable. Seed 1's is shipped as
examples/traces/training-saturating-movable-5120.json, so `tas simulate --compare
TASDefragmentation=true` on it reproduces the first BestFit row; `--traces DIR` writes all.

Reported per profile (BestFit, fragmentation-aware) without and with defragmentation: pods
placed before the first failure, mean wait of the large gangs (those required in a block),
moves per hour and per admitted workload.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
from pathlib import Path
from typing import Any

from tas.offline.simulate import generate
from tas.offline.simulate.run import simulate
from tas.offline.simulate.trace import parse_trace

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
BLOCK_REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PROFILES = {
    "BestFit": {},
    "FragmentationAware": {"TASProfileFragmentationAware": True},
}


def movable_trace(seed: int, nodes: int, workloads: int) -> dict[str, Any]:
    return generate.trace("training", seed, nodes, workloads, load=1.5, movable=True)


def large(entry: dict[str, Any]) -> bool:
    return entry["podSets"][0].get("annotations", {}).get(BLOCK_REQUIRED) == generate.BLOCK


def run(document: dict[str, Any], gates: dict[str, bool]) -> dict[str, Any]:
    first_seen: dict[str, float] = {}

    def observe(now: float, running: Any) -> None:
        for name in running:
            first_seen.setdefault(name, now)

    report = simulate(parse_trace(document, gates), observe)
    arrivals = {e["name"]: e["arrival"] for e in document["workloads"] if large(e)}
    waits = [first_seen[n] - a for n, a in arrivals.items() if n in first_seen]
    moves = report.get("defragmentation", {})
    return {
        "podsPlacedBeforeFirstFailure": report["podsPlacedBeforeFirstFailure"],
        "firstFailure": (report["firstFailure"] or {}).get("workload"),
        "largeGangs": len(arrivals),
        "largeGangMeanWaitSeconds": round(statistics.fmean(waits), 1) if waits else None,
        "largeGangsNeverAdmitted": len(arrivals) - len(waits),
        "moves": moves.get("moves", 0),
        "movesPerHour": moves.get("movesPerHour", 0.0),
        "movesPerAdmission": moves.get("movesPerAdmission", 0.0),
        "end": report["end"],
    }


def bench(seeds: list[int], nodes: int, workloads: int, keep: Path | None) -> list[dict]:
    rows = []
    for seed in seeds:
        document = movable_trace(seed, nodes, workloads)
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            (keep / f"training-saturating-movable-{nodes}-seed{seed}.json").write_text(
                generate.dumps(document)
            )
        for profile, gates in PROFILES.items():
            base = run(document, gates)
            moved = run(document, {**gates, "TASDefragmentation": True})
            before = base["podsPlacedBeforeFirstFailure"]
            rows.append(
                {
                    "seed": seed,
                    "profile": profile,
                    "without": base,
                    "with": moved,
                    "podsBeforeFirstFailureRatio": (
                        round(moved["podsPlacedBeforeFirstFailure"] / before, 3) if before else None
                    ),
                }
            )
    return rows


def summary(rows: list[dict]) -> dict[str, dict[str, float]]:
    """Per profile: the mean ratio of pods before the first failure, the mean large-gang wait
    with over without, and the most moves per admitted workload of any seed."""
    out = {}
    for profile in PROFILES:
        mine = [r for r in rows if r["profile"] == profile]
        waits = [
            r["with"]["largeGangMeanWaitSeconds"] / r["without"]["largeGangMeanWaitSeconds"]
            for r in mine
            if r["without"]["largeGangMeanWaitSeconds"]
        ]
        out[profile] = {
            "meanPodsBeforeFirstFailureRatio": round(
                statistics.fmean(r["podsBeforeFirstFailureRatio"] for r in mine), 3
            ),
            "meanLargeGangWaitRatio": round(statistics.fmean(waits), 3) if waits else None,
            "maxMovesPerAdmission": max(r["with"]["movesPerAdmission"] for r in mine),
        }
    return out


def table(rows: list[dict]) -> str:
    out = [
        "| seed | profile | pods before 1st failure (without → with) | ratio | large-gang mean "
        "wait s (without → with) | moves | moves/h | moves/admission |",
        "|---:|---|---|---:|---|---:|---:|---:|",
    ]
    for r in rows:
        a, b = r["without"], r["with"]
        out.append(
            f"| {r['seed']} | {r['profile']} | {a['podsPlacedBeforeFirstFailure']} → "
            f"{b['podsPlacedBeforeFirstFailure']} | {r['podsBeforeFirstFailureRatio']} | "
            f"{a['largeGangMeanWaitSeconds']} → {b['largeGangMeanWaitSeconds']} | {b['moves']} | "
            f"{b['movesPerHour']} | {b['movesPerAdmission']} |"
        )
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--output", type=Path)
    parser.add_argument("--traces", type=Path, help="write the movable traces here")
    args = parser.parse_args()
    seeds = [1] if args.quick else [1, 2, 3, 4, 5]
    nodes, workloads = (640, 150) if args.quick else (5120, 300)
    rows = bench(seeds, nodes, workloads, args.traces)
    print(table(rows))
    print(json.dumps(summary(rows), indent=1))
    output = args.output or (None if args.quick else RESULTS / "defrag.json")
    if output is not None:
        result = {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "nodes": nodes,
            "workloads": workloads,
            "summary": summary(rows),
            "rows": rows,
        }
        output.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
