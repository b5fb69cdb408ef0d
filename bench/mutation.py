"""Mutation testing of the decision code with mutmut (`make mutation`; not part of `make test`).

    .venv/bin/python bench/mutation.py                         # every module, in the order below
    .venv/bin/python bench/mutation.py --module ungater/plan.py --module hotswap/health.py
    .venv/bin/python bench/mutation.py --budget-minutes 60     # stop after an hour (partial)
    .venv/bin/python bench/mutation.py --report                # no run: report what is recorded

mutmut makes one-change copies ("mutants") of each function and runs, for each, only the unit
tests that call that function (it records which once, with coverage of the trampolines). A
mutant is killed when a test fails, survives when all pass. The tests are the fast unit
directories named in pyproject.toml's [tool.mutmut], with the `mutation` Hypothesis profile
(tests/unit/conftest.py): fixed examples, no database.

mutmut runs from build/mutation/, where `src` links to operator/ (mutmut strips only a leading
`src.` from module names), always under `nice -n 19` with one worker: the machine is shared.
Its verdicts stay in build/mutation/mutants/ between runs, so a run that stops early resumes
where it stopped; `--fresh` starts over (needed after the code or the tests change).

The report gives, per module, killed / survived / timeout / no tests / not checked and the score
(killed + timeout over the mutants checked), and lists survivors with the reason recorded in
EQUIVALENT below, or "unexplained". A run that covers every module to the end writes
bench/results/mutation.json; any other run (some modules, a budget that ran out) writes
/tmp/tas-mutation.json unless `--output` says otherwise, and marks itself partial.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "build" / "mutation"
MUTANTS = WORK / "mutants"
RESULTS = ROOT / "bench" / "results" / "mutation.json"
PARTIAL = Path("/tmp/tas-mutation.json")

# Run in this order: the small decision modules first, the solver (thousands of mutants) last.
MODULES = [
    "ungater/plan.py",
    "ungater/ranks.py",
    "hotswap/health.py",
    "admission/decide.py",
    "admission/preemption.py",
    "admission/holds.py",
    "cache/quota.py",
    "api/annotations.py",
    "solver/",
]

# mutmut's exit codes (mutmut.stats.status_by_exit_code), folded into the report's columns.
STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 34: "skipped"}
STATUS.update({c: "timeout" for c in (36, -24, 24, 152, 255)})
STATUS.update({None: "not checked", 37: "killed"})

# Survivors that are not behaviour differences, with the reason. Keys are mutmut's mutant names
# (stable while the function's source is unchanged; a changed function renumbers its mutants).
_NONE_IS_ZERO = "`need.get(resource, 0)` -> a None default: the next line skips both alike"
_NEVER_EMPTY = (
    "the fallback text for a failed placement without a message: every PlacementFailure has one"
)
EQUIVALENT: dict[str, str] = {
    **{
        f"tas.solver.snapshot.xǁTopologySnapshotǁupsert_node__mutmut_{n}": (
            "performance only: the node's change rebuilds the tree instead of refreshing its "
            "leaf in place; the same answers (test_incremental_updates compares both)"
        )
        for n in (15, 19)
    },
    **{
        f"tas.solver.snapshot.xǁTopologySnapshotǁ_set_free__mutmut_{n}": (
            "performance only: the capacity array turns into Python ints earlier than needed "
            "(exact either way)"
        )
        for n in (1, 3, 4, 5)
    },
    "tas.solver.snapshot.xǁTopologySnapshotǁ_set_free__mutmut_2": (
        "converts on an in-range value instead of an out-of-range one: the `pods` row is always "
        "first (row 0) and never past 2**62, so a leaf's refresh converts before any huge value"
    ),
    **{
        f"tas.solver.snapshot.xǁTopologySnapshotǁ_label_column__mutmut_{n}": (
            "performance only: the label column is computed again instead of cached"
        )
        for n in (1, 2)
    },
    **{
        f"tas.solver.snapshot.xǁTopologySnapshotǁ_label_column__mutmut_{n}": (
            "numpy's default dtype for a list of Python ints is int64 here"
        )
        for n in (19, 21)
    },
    **{
        f"tas.solver.snapshot.xǁTopologySnapshotǁ_replacement_domain__mutmut_{n}": (
            "`slice_only` and the key it picks are only tested for membership in the "
            "topology's levels, and levels[0] and levels[-1] both are"
        )
        for n in (3, 4, 5, 6, 7, 8, 13, 14)
    },
    **{
        f"tas.solver.snapshot.xǁTopologySnapshotǁfind_replacement__mutmut_{n}": (
            "`layers[0].size > 0` -> `>= 0` / `> 1`: slice sizes are at least 1 (the "
            "annotations are validated) and a size of 1 divides every count"
        )
        for n in (36, 37)
    },
    **{
        f"tas.solver.snapshot.xǁTopologySnapshotǁ_replacement_domain__mutmut_{n}": (
            "`layers[0].size > 0` -> `>= 0` / `> 1`: slice sizes are at least 1 (the "
            "annotations are validated) and a size of 1 divides every count"
        )
        for n in (24, 25)
    },
    "tas.solver.snapshot.xǁTopologySnapshotǁ_replacement_domain__mutmut_32": (
        "`len(layers) > 1` -> `>= 1`: with one layer the innermost broken layer is that layer"
    ),
    "tas.solver.snapshot.xǁTopologySnapshotǁ_eligibility_per_leaf__mutmut_13": (
        "first_untolerated_taint of a node without taints is None, as the shortcut gives"
    ),
    "tas.solver.snapshot.xǁTopologySnapshotǁ_merge__mutmut_3": (
        "`_merge` runs only after `_ensure_tree`: the tree is never None there"
    ),
    **{f"tas.solver.tree.xǁDomainǁ__repr____mutmut_{n}": "debugging text only" for n in (1, 2)},
    "tas.admission.decide.x__quota_shortfall__mutmut_9": _NONE_IS_ZERO,
    "tas.admission.decide.x__quota_shortfall__mutmut_11": _NONE_IS_ZERO,
    "tas.admission.decide.x_decide__mutmut_56": (
        '`placements = None` -> `""`: only ever read as a truth value or through `or ()`'
    ),
    "tas.admission.decide.x_decide__mutmut_77": _NEVER_EMPTY,
    "tas.admission.decide.x_decide__mutmut_78": _NEVER_EMPTY,
    **{
        f"tas.solver.numa.x_{function}__mutmut_{n}": (
            "zip's `strict`: False is its default and None is as false; where the mutant makes it "
            "True the lengths are equal by construction (one room entry per zone)"
        )
        for function, numbers in (
            ("place", (18, 21)),
            ("taken", (13, 16)),
            ("fill_zones", (6, 9, 10)),
        )
        for n in numbers
    },
    "tas.solver.numa.x_fill_zones__mutmut_17": (
        "`here > 0` -> `>= 0`: extending by zero pods adds nothing"
    ),
    "tas.solver.numa.x_zones_needed__mutmut_37": (
        "a zone lacking the resource counted as 1 milli-unit: it can lower the answer only when "
        "the zones cannot hold the pods, and placement asks only for counts they hold"
    ),
    "tas.solver.numa.x_count__mutmut_8": (
        "`limit <= 0` -> `< 0`: with a limit of 0 every later branch also returns 0"
    ),
    "tas.ungater.plan.x_plan__mutmut_28": (
        "`free[domain] > 0` -> `>= 0` when counting pods already there: a full domain's free "
        "count goes to -1 instead of staying at 0, and every later use asks `> 0`"
    ),
}


def module_of(meta: Path) -> str:
    """`solver/` for every file of the solver package, else the path under operator/tas/."""
    rel = meta.relative_to(MUTANTS / "src" / "tas").as_posix().removesuffix(".meta")
    return "solver/" if rel.startswith("solver/") else rel


def glob_of(module: str) -> str:
    """mutmut's name pattern for a module's mutants (`tas.ungater.plan.*`)."""
    return "tas." + module.removesuffix(".py").rstrip("/").replace("/", ".") + ".*"


def prepare(fresh: bool) -> None:
    if fresh and MUTANTS.exists():
        shutil.rmtree(MUTANTS)
    WORK.mkdir(parents=True, exist_ok=True)
    for name, target in (("src", "../../operator"), ("tests", "../../tests")):
        link = WORK / name
        if not link.is_symlink():
            link.symlink_to(target)
    shutil.copyfile(ROOT / "pyproject.toml", WORK / "pyproject.toml")


def unchecked(module: str) -> list[str] | None:
    """The module's mutants without a verdict yet; None before mutmut made any."""
    metas = [m for m in (MUTANTS / "src" / "tas").rglob("*.py.meta") if module_of(m) == module]
    if not metas:
        return None
    codes = {}
    for meta in metas:
        codes.update(json.loads(meta.read_text())["exit_code_by_key"])
    return sorted(name for name, code in codes.items() if code is None)


def run_mutmut(module: str, deadline: float | None) -> bool:
    """mutmut over the module's mutants not checked yet (named: mutmut reruns every mutant a
    pattern matches), niced, one worker; False if the deadline stopped it."""
    names = unchecked(module)
    if names == []:
        print(f"{module}: every mutant has a verdict (--fresh to run again)", flush=True)
        return True
    mutmut = Path(sys.executable).with_name("mutmut")
    cmd = ["nice", "-n", "19", str(mutmut), "run", "--max-children", "1"]
    cmd += names if names is not None else [glob_of(module)]
    print("+", " ".join(cmd[:7]), f"... ({len(cmd) - 7} names or patterns)", flush=True)
    proc = subprocess.Popen(cmd, cwd=WORK, start_new_session=True)
    try:
        proc.wait(timeout=None if deadline is None else max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        print("budget spent: stopping mutmut (verdicts so far are kept)", flush=True)
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        return False
    if proc.returncode != 0:
        raise SystemExit(f"mutmut failed with exit code {proc.returncode}")
    return True


def report(modules: list[str]) -> dict:
    """Per-module counts and score from mutmut's verdicts in build/mutation/mutants/."""
    per_module: dict[str, Counter] = {m: Counter() for m in modules}
    survivors: dict[str, list[dict]] = {m: [] for m in modules}
    for meta in sorted((MUTANTS / "src" / "tas").rglob("*.py.meta")):
        module = module_of(meta)
        if module not in per_module:
            continue
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        for name, code in sorted(codes.items()):
            status = STATUS.get(code, "suspicious")
            per_module[module][status] += 1
            if status in ("survived", "no tests", "suspicious"):
                reason = EQUIVALENT.get(name, "unexplained")
                survivors[module].append({"mutant": name, "status": status, "reason": reason})
    out = {}
    for module, counts in per_module.items():
        total = sum(counts.values())
        checked = total - counts["not checked"] - counts["skipped"]
        caught = counts["killed"] + counts["timeout"]
        equivalent = sum(1 for s in survivors[module] if s["reason"] != "unexplained")
        out[module] = {
            "complete": total > 0 and counts["not checked"] == 0,
            "mutants": total,
            "checked": checked,
            "killed": counts["killed"],
            "timeout": counts["timeout"],
            "survived": counts["survived"],
            "no_tests": counts["no tests"],
            "suspicious": counts["suspicious"],
            "not_checked": counts["not checked"],
            "equivalent": equivalent,
            # over the mutants checked; equivalent survivors still count against it
            "score": round(100 * caught / checked, 1) if checked else None,
            # the same with the mutants marked equivalent left out
            "score_without_equivalent": (
                round(100 * caught / (checked - equivalent), 1) if checked > equivalent else None
            ),
            "survivors": survivors[module],
        }
    return out


def print_table(modules: dict) -> None:
    print("\n| module | mutants | checked | killed | timeout | survived | no tests | score |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, m in modules.items():
        score = "-" if m["score"] is None else f"{m['score']}%"
        if not m["complete"]:
            score += " (partial)"
        print(
            f"| {name} | {m['mutants']} | {m['checked']} | {m['killed']} | {m['timeout']} | "
            f"{m['survived']} | {m['no_tests']} | {score} |"
        )
    for name, m in modules.items():
        for s in m["survivors"]:
            print(f"  {name}: {s['mutant']} ({s['status']}): {s['reason']}")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--module", action="append", choices=MODULES, help="repeatable")
    parser.add_argument("--budget-minutes", type=float, help="stop mutmut after this long")
    parser.add_argument("--report", action="store_true", help="report only, run nothing")
    parser.add_argument("--fresh", action="store_true", help="forget earlier verdicts")
    parser.add_argument("--output", type=Path, help="where the JSON goes")
    args = parser.parse_args()
    modules = args.module or MODULES
    started = time.time()
    load_start = os.getloadavg()
    prepare(args.fresh)
    finished = True
    if not args.report:
        deadline = None
        if args.budget_minutes is not None:
            deadline = time.monotonic() + 60 * args.budget_minutes
        for module in modules:  # one at a time, so a budget that runs out leaves whole modules
            if deadline is not None and time.monotonic() >= deadline:
                finished = False
                break
            if not run_mutmut(module, deadline):
                finished = False
                break
    results = report(modules)
    print_table(results)
    whole = (
        finished and set(modules) == set(MODULES) and all(m["complete"] for m in results.values())
    )
    output = args.output or (RESULTS if whole else PARTIAL)
    document = {
        "tool": "mutmut " + _mutmut_version(),
        "command": "nice -n 19 mutmut run --max-children 1 (bench/mutation.py)",
        "partial": not whole,
        # a report reads the verdicts earlier runs left; its time and load are its own
        "mode": "report" if args.report else "run",
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average_start": load_start,
        "load_average_end": os.getloadavg(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "seconds": round(time.time() - started),
        "modules": results,
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(document, indent=2) + "\n")
    print(f"\nwrote {output}" + (" (partial)" if not whole else ""))
    return 0


def _mutmut_version() -> str:
    from importlib.metadata import version

    return version("mutmut")


if __name__ == "__main__":
    raise SystemExit(main())
