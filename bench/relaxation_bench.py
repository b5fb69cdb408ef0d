"""Wait, then relax (TASTopologyRelaxation) against required-only and preferred-only placement:
mean wait and placement tightness on the shipped training traces.

Each trace is replayed by `tas simulate`'s own code three times, changing only the pod sets'
level annotation (slice annotations kept):

- required:   every level asked for is required (a shipped `preferred` becomes `required`);
- preferred:  every level asked for is preferred;
- relaxation: required, with `tas-operator.io/podset-topology-relaxation` relaxing a rack to
  the block after 10 minutes and to unconstrained after 30 (a block: to unconstrained after 30),
  and the gate on.

Tightness, per admitted workload: the racks and blocks its pods span, and the levels spanned
(0: one rack, 1: one block over several racks, 2: several blocks).

    .venv/bin/python bench/relaxation_bench.py [--output bench/results/relaxation.json]
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "operator"))

from tas.offline.simulate import trace as tracefile  # noqa: E402
from tas.offline.simulate.run import simulate  # noqa: E402

TRACES = ("training-5120.json", "training-saturating-5120.json")
RESULTS = ROOT / "bench" / "results" / "relaxation.json"
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
RELAXATION = "tas-operator.io/podset-topology-relaxation"
GATE = "TASTopologyRelaxation"
HOST = "kubernetes.io/hostname"
STAGES = {  # the level asked for -> its later stages
    "cloud.provider.com/topology-rack": "cloud.provider.com/topology-block after 10m, "
    "unconstrained after 30m",
    "cloud.provider.com/topology-block": "unconstrained after 30m",
}
VARIANTS = ("required", "preferred", "relaxation")


def variant(document: dict, name: str) -> dict:
    out = copy.deepcopy(document)
    for workload in out["workloads"]:
        for podset in workload["podSets"]:
            annotations = podset.get("annotations") or {}
            level = annotations.pop(REQUIRED, None) or annotations.pop(PREFERRED, None)
            if level is None:
                continue
            annotations[PREFERRED if name == "preferred" else REQUIRED] = level
            if name == "relaxation":
                annotations[RELAXATION] = STAGES[level]
            podset["annotations"] = annotations
    if name == "relaxation":
        out["featureGates"] = {**out.get("featureGates", {}), GATE: True}
    return out


def measure(document: dict) -> dict:
    trace = tracefile.parse_trace(document)
    arrival = {t.name: t.arrival for t in trace.workloads}
    path_of = {
        node.labels[HOST]: tuple(node.labels[level] for level in trace.scenario.levels[:-1])
        for node in trace.scenario.nodes
    }
    first: dict[str, tuple[float, set]] = {}

    def observe(now: float, running: Mapping) -> None:
        for name, uses in running.items():
            if name not in first:
                hosts = {d.values[-1] for use in uses for d in use.assignment.domains}
                first[name] = (now, {path_of[h] for h in hosts})

    report = simulate(trace, observe)
    waits = [now - arrival[name] for name, (now, _) in first.items()]
    racks = [len(paths) for _, paths in first.values()]
    blocks = [len({p[0] for p in paths}) for _, paths in first.values()]
    levels = [0 if r == 1 else 1 if b == 1 else 2 for r, b in zip(racks, blocks, strict=True)]
    return {
        "workloadsAdmitted": report["workloadsAdmitted"],
        "workloadsNeverAdmitted": report["workloadsNeverAdmitted"],
        "meanWaitSeconds": round(statistics.fmean(waits), 1),
        "p90WaitSeconds": report["waitSeconds"]["p90"],
        "meanRacksSpanned": round(statistics.fmean(racks), 3),
        "meanBlocksSpanned": round(statistics.fmean(blocks), 3),
        "meanLevelsSpanned": round(statistics.fmean(levels), 3),
        "withinOneRack": round(levels.count(0) / len(levels), 3),
        "podsPlacedBeforeFirstFailure": report["podsPlacedBeforeFirstFailure"],
        "end": report["end"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    results = {"stages": STAGES, "traces": {}}
    for name in TRACES:
        document = json.loads((ROOT / "examples" / "traces" / name).read_text())
        results["traces"][name] = {v: measure(variant(document, v)) for v in VARIANTS}
    print("| trace | variant | admitted | mean wait s | racks | blocks | levels spanned |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, by_variant in results["traces"].items():
        for v, m in by_variant.items():
            print(
                f"| {name} | {v} | {m['workloadsAdmitted']} | {m['meanWaitSeconds']} "
                f"| {m['meanRacksSpanned']} | {m['meanBlocksSpanned']} | {m['meanLevelsSpanned']} |"
            )
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
