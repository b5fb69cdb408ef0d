"""TASProfileFragmentationAware against Kueue's BestFit: pods placed before the first failure.

Two measures, each on inputs made by our own generators (deterministic per seed):
- `tas simulate --compare TASProfileFragmentationAware=true` on traces of 5,120 nodes: training
  gangs, and mixed gangs with placement groups that grow (shape `growing`), each at offered
  loads 1.0 and 1.3; and the shipped examples/traces;
- `tas contest` with and without the gate on seed 001 inputs, scored by our checker.

    .venv/bin/python bench/profile_bench.py [--output bench/results/profile.json] [--quick]

Writes the commit, the machine's load, the per-input numbers and, per family of traces and
over all of them, the median and mean ratios. `--quick` runs 2 seeds (for a try; it never
writes the results file unless --output is given).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
TAS = (PYTHON, "-m", "tas.cli")
SIMULATED = ("training", "growing")  # the generator's shapes measured, each at both loads
GATE = "TASProfileFragmentationAware=true"
RESULTS = ROOT / "bench" / "results" / "profile.json"


def run(*args: str, stdin: str | None = None) -> str:
    done = subprocess.run(args, input=stdin, capture_output=True, text=True, check=True)
    return done.stdout


def simulate(path: Path) -> dict:
    report = json.loads(run(*TAS, "simulate", str(path), "--compare", GATE, "-o", "json"))
    base, ours = report["base"], report["compared"]
    return {
        "trace": path.name,
        "bestfit": base["podsPlacedBeforeFirstFailure"],
        "profile": ours["podsPlacedBeforeFirstFailure"],
        "ratio": report["podsPlacedBeforeFirstFailureRatio"],
        "bestfitMedianMs": base["decisions"]["medianMs"],
        "profileMedianMs": ours["decisions"]["medianMs"],
        "profileP90Ms": ours["decisions"]["p90Ms"],
    }


def contest(seed: int, shape: str) -> dict:
    text = run(PYTHON, "-m", "tas.offline.contest.generator", "--seed", str(seed), "--shape", shape)
    scores = {}
    with tempfile.TemporaryDirectory() as tmp:
        given = Path(tmp) / "in.txt"
        given.write_text(text)
        for name, gates in (("bestfit", []), ("profile", ["--feature-gates", GATE])):
            output = Path(tmp) / f"{name}.txt"
            # the groups planner: the one the gate changes (the default is the growth planner)
            output.write_text(run(*TAS, "contest", "--planner", "groups", *gates, stdin=text))
            result = json.loads(
                subprocess.run(
                    [PYTHON, "-m", "tas.offline.contest.checker", str(given), str(output)],
                    capture_output=True,
                    text=True,
                ).stdout
            )
            if not result["ok"]:
                raise SystemExit(f"contest {shape} seed {seed} ({name}): {result['error']}")
            scores[name] = result["score"]
            scores["totalVms"] = result["total_vms"]
    ratio = scores["profile"] / scores["bestfit"] if scores["bestfit"] else None
    return {"shape": shape, "seed": seed, **scores, "ratio": ratio}


def _generated(tmp: Path, shape: str, load: str, seed: int) -> Path:
    path = tmp / f"{shape}-load{load}-seed{seed}.json"
    args = ("--shape", shape, "--seed", str(seed), "--nodes", "5120", "--load", load)
    path.write_text(run(PYTHON, "-m", "tas.offline.simulate.generate", *args))
    return path


def summary(rows: list[dict]) -> dict:
    ratios = [r["ratio"] for r in rows if r["ratio"] is not None]
    return {
        "inputs": len(rows),
        "medianRatio": statistics.median(ratios) if ratios else None,
        "meanRatio": round(statistics.fmean(ratios), 4) if ratios else None,
        "better": sum(1 for r in ratios if r > 1),
        "worse": sum(1 for r in ratios if r < 1),
        "bestfitTotal": sum(r["bestfit"] for r in rows),
        "profileTotal": sum(r["profile"] for r in rows),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    seeds = range(1, 3) if args.quick else range(1, 7)
    families: dict[str, list[dict]] = {}
    load_before = os.getloadavg()
    commit = run("git", "-C", str(ROOT), "rev-parse", "HEAD").strip()
    with tempfile.TemporaryDirectory() as tmp:
        paths = [
            (shape, _generated(Path(tmp), shape, load, seed))
            for shape in SIMULATED
            for load in ("1.0", "1.3")
            for seed in seeds
        ]
        paths.extend(("shipped", p) for p in sorted((ROOT / "examples" / "traces").glob("*.json")))
        for family, path in paths:
            families.setdefault(family, []).append(simulate(path))
            print(json.dumps(families[family][-1]), file=sys.stderr)
    contests = []
    for shape in ("mixed", "saturating", "churn", "large"):
        for seed in seeds:
            contests.append(contest(seed, shape))
            print(json.dumps(contests[-1]), file=sys.stderr)
    result = {
        "command": "bench/profile_bench.py" + (" --quick" if args.quick else ""),
        "commit": commit,
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "loadBefore": load_before,
            "loadAfter": os.getloadavg(),
        },
        "gate": GATE,
        "simulate": {
            "summary": summary([t for rows in families.values() for t in rows]),
            "families": {
                name: {"summary": summary(rows), "traces": rows} for name, rows in families.items()
            },
        },
        "contest": {"summary": summary(contests), "inputs": contests},
    }
    print(json.dumps({name: f["summary"] for name, f in result["simulate"]["families"].items()}))
    print(
        json.dumps(
            {k: v["summary"] for k, v in result.items() if isinstance(v, dict) and "summary" in v}
        )
    )
    output = args.output or (None if args.quick else RESULTS)
    if output is not None:
        output.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
