"""The offline commands' output for people: `tas solve` and `tas simulate` print a short
summary when stdout is a terminal, and their report (the contract of
docs/reference/scenario-format.md and trace-format.md) when it is piped or with `-o json|yaml`.

Only formatting: the summaries read the reports the commands already build, nothing else.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any

from tas.offline.formats import FORMATS, JSON, TEXT, YAML
from tas.view.amounts import duration
from tas.view.words import short_level

__all__ = ["FORMATS", "JSON", "TEXT", "YAML"]
MAX_VALUES = 6  # domains named per level on one line; the rest are counted
PERCENT_DIGITS = 1
FULL_REPORT = "(the whole report: -o json)"


def chosen(output: str | None, stream: IO[str]) -> str:
    """`-o` when given; otherwise the summary on a terminal and JSON anywhere else (a pipe,
    a file, a test's buffer), so that scripts get the contract unchanged."""
    if output is not None:
        return output
    isatty = getattr(stream, "isatty", None)
    return TEXT if isatty is not None and isatty() else JSON


def write(
    report: Any, output: str, stream: IO[str], as_json: Callable[[Any], str], as_text: Callable
) -> None:
    """The report as `output` says: `as_json` is the command's own JSON (byte for byte what it
    printed before there was a choice), `as_text` its summary."""
    if output == TEXT:
        text = as_text(report)
    elif output == YAML:
        import yaml

        plain = json.loads(json.dumps(report))  # what the JSON holds (a gate is a str Enum)
        text = yaml.safe_dump(plain, sort_keys=False, allow_unicode=True).rstrip("\n")
    else:
        text = as_json(report)
    stream.write(text + "\n")


# ---- tas solve ---------------------------------------------------------------------------------


def solve_text(
    result: Mapping[str, Any],
    levels: Sequence[str],
    host_labels: Mapping[str, Mapping[str, str]],
    flavor: str,
) -> str:
    """One line per workload: where it went (its flavor, then per pod set the domains of each
    level that hold its pods) or why not. `host_labels` maps a hostname to its node's labels,
    to name the block and rack of an assignment made of hostnames."""
    rows = [_solve_row(w, levels, host_labels, flavor) for w in result["workloads"]]
    width = max((len(name) for name, _ in rows), default=0)
    lines = [f"{name.ljust(width)}  {rest}" for name, rest in rows]
    admitted = [w for w in result["workloads"] if w["admitted"]]
    evicted = sum(1 for w in admitted if w.get("evicted"))
    lines.append(
        f"{len(admitted) - evicted} of {len(rows)} workloads admitted"
        + (f", {evicted} more admitted then evicted" if evicted else "")
    )
    for queue in result.get("clusterQueues", ()):
        lines.append(f"clusterQueue {queue['name']}: {_quantities(queue['usage'])} used")
    return "\n".join(lines)


def _solve_row(
    workload: Mapping[str, Any],
    levels: Sequence[str],
    host_labels: Mapping[str, Mapping[str, str]],
    flavor: str,
) -> tuple[str, str]:
    queue = f" in {workload['clusterQueue']}" if "clusterQueue" in workload else ""
    if not workload["admitted"]:
        return workload["name"], f"waiting{queue}: {workload['message']}"
    podsets = "; ".join(
        _podset_place(podset, levels, host_labels) for podset in workload["podSets"]
    )
    line = f"admitted{queue} to {flavor}: {podsets}"
    if workload.get("preempted"):
        line += f" (preempted {', '.join(workload['preempted'])})"
    if workload.get("evicted"):
        line += f"; then evicted by {workload['preemptedBy']} ({workload['preemptionReason']})"
    return workload["name"], line


def _podset_place(
    podset: Mapping[str, Any],
    levels: Sequence[str],
    host_labels: Mapping[str, Mapping[str, str]],
) -> str:
    head = f"{podset['name']} {podset['count']} pod{'s' if podset['count'] != 1 else ''}"
    assignment = podset.get("topologyAssignment")
    if not assignment:
        return head
    per_level = _pods_per_domain(assignment, levels, host_labels)
    parts = [f"{short_level(level)} {_named(pods)}" for level, pods in per_level.items()]
    return " · ".join([head, *parts])


def _pods_per_domain(
    assignment: Mapping[str, Any],
    levels: Sequence[str],
    host_labels: Mapping[str, Mapping[str, str]],
) -> dict[str, dict[str, int]]:
    """Per level, top first: each domain holding pods and how many. An assignment of
    hostnames (Kueue's shape when the lowest level is the hostname) gets its higher levels
    from the hosts' labels."""
    out: dict[str, dict[str, int]] = {level: {} for level in levels}
    assigned = list(assignment["levels"])
    for domain in assignment["domains"]:
        values = dict(zip(assigned, domain["values"], strict=False))
        if len(assigned) == 1 and len(levels) > 1:
            labels = host_labels.get(domain["values"][0], {})
            values = {level: labels.get(level, "?") for level in levels} | values
        for level in levels:
            if level in values:
                pods = out[level]
                pods[values[level]] = pods.get(values[level], 0) + domain["count"]
    return {level: pods for level, pods in out.items() if pods}


def _named(pods: Mapping[str, int]) -> str:
    """`r1` for one domain; `x1 (2), x2 (2)` for several, the first MAX_VALUES of them."""
    if len(pods) == 1:
        return next(iter(pods))
    shown = [f"{value} ({count})" for value, count in sorted(pods.items())[:MAX_VALUES]]
    more = len(pods) - MAX_VALUES
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def _quantities(values: Mapping[str, str]) -> str:
    return ", ".join(f"{name}={value}" for name, value in values.items()) or "nothing"


# ---- tas simulate ------------------------------------------------------------------------------


def simulate_text(result: Mapping[str, Any]) -> str:
    """The report in a dozen lines; with --compare, both runs and the ratio."""
    if "base" not in result:
        return "\n".join([*_report_lines(result), FULL_REPORT])
    ratio = result["podsPlacedBeforeFirstFailureRatio"]
    lines = ["with the trace's gates:", *("  " + x for x in _report_lines(result["base"]))]
    lines += [f"with {result['gates']}:", *("  " + x for x in _report_lines(result["compared"]))]
    ratio_text = "n/a (none before)" if ratio is None else f"{ratio:g}"
    lines.append(f"pods before the first failure, compared / base: {ratio_text}")
    return "\n".join([*lines, FULL_REPORT])


def _report_lines(report: Mapping[str, Any]) -> list[str]:
    waits, decisions = report["waitSeconds"], report["decisions"]
    lines = [
        f"{report['workloads']:,} workloads, {report['pods']:,} pods on {report['nodes']:,} "
        f"nodes over {duration(report['end'])} ({report['admission']} admission)",
        _first_failure(report),
        f"pods placed: {report['podsPlaced']:,}; workloads admitted "
        f"{report['workloadsAdmitted']:,}, never admitted {report['workloadsNeverAdmitted']:,}"
        + (f"; evictions {report['evictions']:,}" if report["evictions"] else ""),
        f"utilisation, mean / peak: {_utilisation(report['timeline'], report['end'])}",
        f"waits: median {duration(waits['median'])}, p90 {duration(waits['p90'])}, "
        f"max {duration(waits['max'])}",
        f"decisions: {decisions['count']:,}, median {decisions['medianMs']:g} ms, "
        f"p90 {decisions['p90Ms']:g} ms, max {decisions['maxMs']:g} ms",
    ]
    for name, group in report.get("groups", {}).items():
        lines.append(
            f"group {name}: {group['membersAdmitted']} of {group['members']} members admitted, "
            f"{group['podsPlaced']:,} pods"
        )
    return lines


def _first_failure(report: Mapping[str, Any]) -> str:
    before = report["podsPlacedBeforeFirstFailure"]
    failure = report["firstFailure"]
    if failure is None:
        return f"pods before the first failure: {before:,} (no workload failed on arrival)"
    return (
        f"pods before the first failure: {before:,}; at {duration(failure['time'])} "
        f"{failure['workload']} did not fit:\n  {failure['message']}"
    )


def _utilisation(timeline: Sequence[Mapping[str, Any]], end: float) -> str:
    """Per resource, the mean over time (each entry holds until the next) and the peak."""
    if not timeline:
        return "nothing ran"
    parts = []
    names = list(timeline[0]["utilisation"])
    for resource in sorted(names, key=lambda name: name == "pods"):  # pods last: least telling
        values = [entry["utilisation"].get(resource, 0.0) for entry in timeline]
        times = [entry["time"] for entry in timeline] + [end]
        spans = [later - earlier for earlier, later in itertools.pairwise(times)]
        total = sum(spans)
        mean = (
            sum(v * s for v, s in zip(values, spans, strict=True)) / total if total else values[0]
        )
        parts.append(f"{resource} {_percent(mean)} / {_percent(max(values))}")
    return ", ".join(parts)


def _percent(fraction: float) -> str:
    return f"{round(fraction * 100, PERCENT_DIGITS):g}%"
