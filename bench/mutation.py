"""Mutation testing of the decision code with mutmut (`make mutation`; not part of `make test`).

    .venv/bin/python bench/mutation.py                         # every module, in the order below
    .venv/bin/python bench/mutation.py --module ungater/plan.py --module hotswap/health.py
    .venv/bin/python bench/mutation.py --budget-minutes 60     # stop after an hour (partial)
    .venv/bin/python bench/mutation.py --report                # no run: report what is recorded
    .venv/bin/python bench/mutation.py --module solver/ --sample 150   # estimate from a sample
    .venv/bin/python bench/mutation.py --survivors --module ...  # check survivors again (new tests)

mutmut makes one-change copies ("mutants") of each function and runs, for each, only the unit
tests that call that function (it records which once, with coverage of the trampolines). A
mutant is killed when a test fails, survives when all pass. The tests are the fast unit
directories named in pyproject.toml's [tool.mutmut], with the `mutation` Hypothesis profile
(tests/unit/conftest.py): fixed examples, no database, and at most 25 examples per property
test (a survivor runs every selected test; at full length the solver alone takes most of a day).

mutmut runs from build/mutation/, where `src` links to operator/ (mutmut strips only a leading
`src.` from module names), always under `nice -n 19`, with one worker unless `--workers` says
more: the machine is shared. Its verdicts stay in build/mutation/mutants/ between runs, so a run
that stops early resumes where it stopped; `--fresh` starts over, `--survivors` checks the
survivors again (a verdict of killed stays right when tests are added; a survivor may not).

`--sample N` checks only N mutants of each file, drawn at random from all of the file's
mutants (checked or not: mutmut takes those with the quickest tests first, so the checked ones
are not a fair sample), and estimates a package's score with a 95% interval: complete files
count exactly, sampled ones by their sample, each weighted by its number of mutants.

The report gives, per module, killed / survived / timeout / no tests / not checked and the score
(killed + timeout over the mutants checked), and lists survivors with the reason recorded in
bench/mutation_equivalent.json, or "unexplained". A run that covers every module to the end writes
bench/results/mutation.json; any other run (some modules, a budget that ran out) writes
/tmp/tas-mutation.json unless `--output` says otherwise, and marks itself partial.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
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

# Survivors that are not behaviour differences, with the reason: mutmut's mutant name -> why
# no valid input tells it apart. Names are stable while the function's source is unchanged (a
# changed function renumbers its mutants: check the reasons again with `mutmut show NAME`).
EQUIVALENT: dict[str, str] = json.loads((ROOT / "bench" / "mutation_equivalent.json").read_text())


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


def metas_of(module: str) -> list[Path]:
    return sorted(m for m in (MUTANTS / "src" / "tas").rglob("*.py.meta") if module_of(m) == module)


def unchecked(
    module: str, among: set[str] | None = None, survivors: bool = False
) -> list[str] | None:
    """The module's mutants without a verdict yet (and with `survivors`, those that survived
    or no test reached: new tests may catch them), only those `among` if given; None before
    mutmut made any."""
    metas = metas_of(module)
    if not metas:
        return None
    codes = {}
    for meta in metas:
        codes.update(json.loads(meta.read_text())["exit_code_by_key"])
    again = {"not checked"} | ({"survived", "no tests"} if survivors else set())
    return sorted(
        name
        for name, code in codes.items()
        if STATUS.get(code) in again
        and (among is None or name in among)
        and not (code is not None and name in EQUIVALENT)  # a survivor explained stays one
    )


def sample_of(module: str, size: int, seed: int) -> set[str]:
    """`size` mutants of each of the module's files drawn at random (all of a smaller file),
    from every mutant, checked or not: those checked already came first in mutmut's
    quickest-tests-first order, and would bias a sample of the rest."""
    names: set[str] = set()
    for meta in metas_of(module):
        keys = sorted(json.loads(meta.read_text())["exit_code_by_key"])
        if len(keys) <= size:
            names.update(keys)
        else:
            names.update(random.Random(f"{seed}:{meta.name}").sample(keys, size))
    return names


def run_mutmut(
    module: str,
    deadline: float | None,
    workers: int,
    among: set[str] | None = None,
    survivors: bool = False,
) -> bool:
    """mutmut over the module's mutants not checked yet (named: mutmut reruns every mutant a
    pattern matches), niced; False if the deadline stopped it."""
    names = unchecked(module, among, survivors)
    if names == []:
        print(f"{module}: every mutant has a verdict (--fresh to run again)", flush=True)
        return True
    mutmut = Path(sys.executable).with_name("mutmut")
    cmd = ["nice", "-n", "19", str(mutmut), "run", "--max-children", str(workers)]
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


def report(modules: list[str], sample: set[str] | None = None) -> dict:
    """Per-module counts and score from mutmut's verdicts in build/mutation/mutants/; for a
    package, per file too, and with a sample, the package's score estimated from it."""
    per_module: dict[str, Counter] = {m: Counter() for m in modules}
    survivors: dict[str, list[dict]] = {m: [] for m in modules}
    files: dict[str, dict] = {}
    for meta in sorted((MUTANTS / "src" / "tas").rglob("*.py.meta")):
        module = module_of(meta)
        if module not in per_module:
            continue
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        if module.endswith("/") and codes:
            name = meta.relative_to(MUTANTS / "src" / "tas").as_posix().removesuffix(".meta")
            files.setdefault(module, {})[name] = file_counts(codes, sample)
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
        if module in files:
            out[module]["files"] = files[module]
            out[module]["estimate"] = estimate(files[module])
    return out


def file_counts(codes: dict[str, int | None], sample: set[str] | None) -> dict:
    """One file's mutants: all, checked, caught; and of its sample (all of it when every
    mutant is checked), the caught share, without the survivors marked equivalent."""
    status = {name: STATUS.get(code, "suspicious") for name, code in codes.items()}
    checked = [n for n, s in status.items() if s not in ("not checked", "skipped")]
    caught = [n for n in checked if status[n] in ("killed", "timeout")]
    complete = len(checked) == len(codes)
    drawn = set(codes) if complete or sample is None else set(codes) & sample
    drawn_checked = [n for n in checked if n in drawn]
    counted = [n for n in drawn_checked if n in caught or n not in EQUIVALENT]
    return {
        "mutants": len(codes),
        "checked": len(checked),
        "caught": len(caught),
        "complete": complete,
        "sample": len(drawn),
        "sample_checked": len(drawn_checked),
        "sample_caught": sum(1 for n in drawn_checked if n in caught),
        "sample_equivalent": len(drawn_checked) - len(counted),
    }


def estimate(files: dict[str, dict]) -> dict | None:
    """The package's score from its files, each weighted by its number of mutants: a complete
    file counts exactly, a sampled one by its sample's share, with a 95% interval from the
    sampled files (normal approximation, finite population correction). Survivors marked
    equivalent are left out; None until every sample is checked."""
    total = sum(f["mutants"] for f in files.values())
    if not total or any(f["sample_checked"] < f["sample"] for f in files.values()):
        return None
    score = variance = 0.0
    for f in files.values():
        n = f["sample_checked"] - f["sample_equivalent"]
        if n == 0:
            continue
        share = f["sample_caught"] / n
        weight = f["mutants"] / total
        score += weight * share
        if not f["complete"]:
            correction = 1 - f["sample"] / f["mutants"]
            variance += weight**2 * share * (1 - share) / n * correction
    margin = 1.96 * math.sqrt(variance)
    low, high = max(0.0, score - margin), min(1.0, score + margin)
    return {
        "score_without_equivalent": round(100 * score, 1),
        "ci95": [round(100 * low, 1), round(100 * high, 1)],
        "sampled_files": sorted(name for name, f in files.items() if not f["complete"]),
    }


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
        for file, f in m.get("files", {}).items():
            drawn = f"sample {f['sample_caught']}/{f['sample_checked']} of {f['sample']}"
            print(f"  {file}: {f['caught']}/{f['checked']} of {f['mutants']} caught; {drawn}")
        if m.get("estimate"):
            e = m["estimate"]
            print(f"  {name} estimated: {e['score_without_equivalent']}% (95%: {e['ci95']})")
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
    parser.add_argument(
        "--workers", type=int, default=1, help="mutants checked at once (default 1: shared cores)"
    )
    parser.add_argument(
        "--sample",
        type=int,
        help="check only N mutants per file, drawn at random, and estimate a package's score",
    )
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed")
    parser.add_argument(
        "--survivors",
        action="store_true",
        help="check again the survivors not marked equivalent (after new tests)",
    )
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
            among = None if args.sample is None else sample_of(module, args.sample, args.seed)
            if among == set():
                # no mutants made yet: without this, a sample would be every mutant
                raise SystemExit(
                    f"{module}: mutmut has not made its mutants yet; run once without --sample "
                    "(--budget-minutes 1 will do), then sample"
                )
            if not run_mutmut(module, deadline, args.workers, among, args.survivors):
                finished = False
                break
    sample = None
    if args.sample is not None:
        sample = set().union(*(sample_of(m, args.sample, args.seed) for m in modules))
    results = report(modules, sample)
    print_table(results)
    whole = (
        finished
        and args.sample is None
        and set(modules) == set(MODULES)
        and all(m["complete"] for m in results.values())
    )
    output = args.output or (RESULTS if whole else PARTIAL)
    document = {
        "tool": "mutmut " + _mutmut_version(),
        "command": f"nice -n 19 mutmut run --max-children {args.workers} (bench/mutation.py)",
        "partial": not whole,
        "sample": None if args.sample is None else {"per_file": args.sample, "seed": args.seed},
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
