"""Every `tas contest` planner on generated saturating inputs: VMs placed before the first
failure, scored by our checker, and the shape of the request each one failed on.

    .venv/bin/python bench/contest_bench.py [--shapes growing,saturating] [--seeds 1-8]
        [--planners growth,groups,...] [--output bench/results/contest.json] [--quick]

Each planner runs as its own `tas contest --planner NAME` process (the contest's 30 s and
512 MB are per process: both are measured). Writes the commit, the machine's load, per input
the scores, seconds and peak memory of every planner, and the totals; prints a markdown table.
`--quick` runs 2 seeds of the growing shape and writes nothing unless --output is given.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "operator"))

from tas.offline.contest import checker, generator  # noqa: E402
from tas.offline.contest.adapter import PLANNERS  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "contest.json"
GATE = "TASProfileFragmentationAware=true"
# "groups+gate": the groups planner with the fragmentation-aware profile on.
ALL = (*PLANNERS, "groups+gate")


def serve(planner: str, given: Path, answer: Path) -> dict:
    """One `tas contest` process; its seconds and peak memory (MB)."""
    name, _, gate = planner.partition("+")
    args = [sys.executable, "-m", "tas.cli", "contest", "--planner", name]
    if gate:
        args += ["--feature-gates", GATE]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "operator")}
    start = time.perf_counter()
    with given.open() as stdin, answer.open("w") as stdout:
        process = subprocess.Popen(args, stdin=stdin, stdout=stdout, env=env)
        _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    if status:
        raise SystemExit(f"{planner} on {given}: exit status {status}")
    return {"seconds": round(seconds, 2), "peakMb": round(usage.ru_maxrss / 1024)}


def failure(problem: checker.Problem, gave_up_at: int | None) -> str | None:
    """The failed request: its group's type, its size and VM type, the group's live VMs, and
    how full the pool was (live VMs' share of it, the larger of CPU and memory)."""
    if gave_up_at is None:
        return None
    pool = problem.pool
    servers = pool.domains * pool.pods * pool.racks * pool.servers
    kinds: dict[int, checker.CreateGroup] = {}
    owner: dict[int, tuple[int, float]] = {}
    for request in problem.requests[: gave_up_at - 1]:
        if isinstance(request, checker.CreateGroup):
            kinds[request.group] = request
        elif isinstance(request, checker.CreateVms):
            vm = problem.vm_types[request.vm_type - 1]
            share = vm.numa * max(vm.cpu / pool.cpu, vm.mem / pool.mem) / (2 * servers)
            owner.update(dict.fromkeys(request.vms, (request.group, share)))
        else:
            for v in request.vms:
                del owner[v]
    request = problem.requests[gave_up_at - 1]
    assert isinstance(request, checker.CreateVms)
    group = kinds[request.group]
    vm = problem.vm_types[request.vm_type - 1]
    live = sum(1 for g, _ in owner.values() if g == request.group)
    load = sum(share for _, share in owner.values())
    parts = f"/{group.partitions}" if group.partitions else ""
    return (
        f"type {group.type}{parts} +{len(request.vms)} x ({vm.numa},{vm.cpu},{vm.mem})"
        f" beside {live} live; pool {load:.0%} used"
    )


def one_input(shape: str, seed: int, planners: list[str]) -> dict:
    text = generator.generate(seed, shape)
    problem = checker.parse_input(text)
    row: dict = {"shape": shape, "seed": seed, "pool": text.split("\n", 1)[0]}
    with tempfile.TemporaryDirectory() as tmp:
        given = Path(tmp) / "in.txt"
        given.write_text(text)
        for planner in planners:
            answer = Path(tmp) / "out.txt"
            cost = serve(planner, given, answer)
            result = checker.check(text, answer.read_text())
            if not result.ok:
                raise SystemExit(f"{shape} seed {seed}, {planner}: {result.error}")
            row["totalVms"] = result.total_vms
            row[planner] = {
                "score": result.score,
                **cost,
                "failedOn": failure(problem, result.gave_up_at),
            }
    return row


def table(rows: list[dict], planners: list[str]) -> str:
    head = "| input | pool NxPxRxS | " + " | ".join(planners) + " |"
    lines = [head, "|---|---|" + "---:|" * len(planners)]
    for row in rows:
        scores = " | ".join(str(row[p]["score"]) for p in planners)
        lines.append(f"| {row['shape']} {row['seed']} | {row['pool'][:-2]} | {scores} |")
    totals = " | ".join(f"**{sum(r[p]['score'] for r in rows)}**" for p in planners)
    lines.append(f"| total | | {totals} |")
    return "\n".join(lines)


def seeds_of(text: str) -> list[int]:
    low, _, high = text.partition("-")
    return list(range(int(low), int(high or low) + 1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="growing,saturating")
    parser.add_argument("--seeds", default="1-8", help="first-last")
    parser.add_argument("--planners", default=",".join(ALL))
    parser.add_argument("--output", type=Path)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    shapes = ["growing"] if args.quick else args.shapes.split(",")
    seeds = [1, 2] if args.quick else seeds_of(args.seeds)
    planners = args.planners.split(",")
    unknown = [p for p in planners if p not in ALL]
    if unknown:
        parser.error(f"--planners: unknown {', '.join(unknown)}; one of {', '.join(ALL)}")
    load_before = os.getloadavg()
    rows = []
    for shape in shapes:
        for seed in seeds:
            rows.append(one_input(shape, seed, planners))
            print(json.dumps(rows[-1]), file=sys.stderr)
    print(table(rows, planners))
    result = {
        "command": "bench/contest_bench.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "commit": subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip(),
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "loadBefore": load_before,
            "loadAfter": os.getloadavg(),
        },
        "totals": {p: sum(r[p]["score"] for r in rows) for p in planners},
        "maxSeconds": {p: max(r[p]["seconds"] for r in rows) for p in planners},
        "maxPeakMb": {p: max(r[p]["peakMb"] for r in rows) for p in planners},
        "inputs": rows,
    }
    output = args.output or (None if args.quick else RESULTS)
    if output is not None:
        output.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
