"""`tas solve FILE`: place a scenario's workloads offline (the contract: docs/reference/scenario-format.md).

The file is read and checked in full before anything is placed, so a malformed scenario prints
exactly one line on stderr, naming the field, and nothing on stdout. Placement then runs the
solver on one snapshot, keeping the capacity of each admitted workload for the next.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import IO, Any

from tas import features
from tas.api import topologyassignment
from tas.api.format import format_milli
from tas.offline import summary
from tas.offline.fields import ScenarioError
from tas.offline.reader import SCENARIO_FLAVOR, Scenario, Workload, parse_scenario
from tas.offline.yaml_loader import load_document, read_text
from tas.solver import numa
from tas.solver.types import (
    Node,
    WorkloadPlacement,
)

MAX_MESSAGE = 1_000  # characters of an error line: a message never echoes a whole input


@dataclass
class Timings:
    """Where `tas solve` spends its time, in seconds (`--stats`): wall-clock, and the CPU time
    of the process, which other load on the machine hardly changes."""

    parse: float = 0.0  # reading the file, loading YAML or JSON, checking every field
    parse_cpu: float = 0.0
    snapshot: float = 0.0  # the domain tree and capacity arrays, built once
    # per workload: admitted?, then the wall and CPU seconds of finding its assignment plus,
    # when admitted, recording its usage
    placements: list[tuple[bool, float, float]] = field(default_factory=list)


def solve(scenario: Scenario, timings: Timings | None = None) -> dict[str, Any]:
    """Place every workload in order on one snapshot; an admitted one keeps its capacity.
    With ClusterQueues, every workload goes through the operator's admission decision."""
    if scenario.cluster_queues:
        with features.activated(scenario.gates):  # admission reads them where they act
            return admit(scenario, timings)
    from tas.solver.snapshot import TopologySnapshot

    started = time.perf_counter()
    snapshot = TopologySnapshot(scenario.levels, scenario.nodes, scenario.flavor, scenario.options)
    snapshot.build()
    nodes = {node.name: node for node in scenario.nodes}
    if timings is not None:
        timings.snapshot = time.perf_counter() - started
    placements = []
    for workload in scenario.workloads:
        started, started_cpu = time.perf_counter(), time.process_time()
        placement = place(snapshot, nodes, workload)
        if timings is not None:
            wall, cpu = time.perf_counter() - started, time.process_time() - started_cpu
            timings.placements.append((placement.admitted, wall, cpu))
        placements.append(placement)
    # The output is built after the placements, so that the garbage collector's passes its
    # objects set off are not timed as placement.
    return {
        "workloads": [
            _result(workload, placement)
            for workload, placement in zip(scenario.workloads, placements, strict=True)
        ]
    }


def place(snapshot: Any, nodes: dict[str, Node], workload: Workload) -> WorkloadPlacement:
    """The workload's placement on the snapshot; when admitted, it holds its capacity there
    (and its NUMA zones in `nodes`) from now on."""
    placement = snapshot.find_assignments(workload.podsets)
    if placement.admitted:
        placement = snapshot.numa_zones(workload.podsets, placement)
        hold(snapshot, nodes, workload, placement)
    return placement


def hold(
    snapshot: Any,
    nodes: dict[str, Node],
    workload: Workload,
    placement: WorkloadPlacement,
    sign: int = 1,
) -> None:
    """Take (sign -1: give back) the capacity and NUMA zones of an admitted placement."""
    requests = {podset.name: podset.requests for podset in workload.podsets}
    for placed in placement.podsets:
        snapshot.add_usage(placed.assignment, requests[placed.name], sign)
    _take_zones(snapshot, nodes, workload, placement, sign)


def _take_zones(
    snapshot: Any,
    nodes: dict[str, Node],
    workload: Workload,
    placement: WorkloadPlacement,
    sign: int = 1,
) -> None:
    """What the operator's cache does after an admission: the zones the placement chose give
    up what its pods align there (sign -1: get it back when the pods leave)."""
    shapes = {podset.name: podset.numa for podset in workload.podsets}
    for placed in placement.podsets:
        shape = shapes[placed.name]
        for host, pods in placed.numa_zones.items():
            node = nodes[host]
            if node.numa is None or shape is None:
                continue
            nodes[host] = replace(node, numa=numa.taken(node.numa, shape, pods, sign))
            snapshot.upsert_node(nodes[host])


def _result(workload: Workload, placement: WorkloadPlacement) -> dict[str, Any]:
    if not placement.admitted:
        return {"name": workload.name, "admitted": False, "message": placement.failure}
    return {
        "name": workload.name,
        "admitted": True,
        "podSets": [
            {
                "name": placed.name,
                "count": placed.count,
                "topologyAssignment": topologyassignment.to_api(
                    placed.assignment, sort_by_values=True
                ),
            }
            | (
                {
                    "numaZones": {
                        host: [list(p) for p in pods] for host, pods in placed.numa_zones.items()
                    }
                }
                if placed.numa_zones
                else {}
            )
            for placed in placement.podsets
        ],
    }


def stats_line(timings: Timings) -> str:
    """`tas solve --stats`: one JSON object on one line, times in milliseconds."""

    def summary(samples: list[tuple[bool, float, float]]) -> dict[str, Any]:
        ordered = sorted(wall for _, wall, _ in samples)
        return {
            "count": len(ordered),
            "total_ms": round(sum(ordered) * 1e3, 3),
            "p50_ms": round(_percentile(ordered, 0.50) * 1e3, 3),
            "p99_ms": round(_percentile(ordered, 0.99) * 1e3, 3),
            "cpu_total_ms": round(sum(cpu for _, _, cpu in samples) * 1e3, 3),
        }

    placements = timings.placements
    stats = {
        "parse_ms": round(timings.parse * 1e3, 1),
        "parse_cpu_ms": round(timings.parse_cpu * 1e3, 1),
        "snapshot_ms": round(timings.snapshot * 1e3, 1),
        "placement": summary(placements),
        "admitted": summary([sample for sample in placements if sample[0]]),
        "rejected": summary([sample for sample in placements if not sample[0]]),
    }
    return json.dumps({"stats": stats})


def _percentile(ordered: list[float], fraction: float) -> float:
    """Nearest rank: with few samples p99 is (close to) the maximum; 0 without samples."""
    if not ordered:
        return 0.0
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def main(
    path: str, stdout: IO[str], stderr: IO[str], stats: bool = False, output: str | None = None
) -> int:
    """Exit 0 with JSON on stdout (not fitting is an answer), or 1 with one line on stderr.
    With `stats`, a successful run also prints `stats_line` on stderr. `output` is `-o`: by
    default a summary on a terminal, the JSON elsewhere (offline/summary.py)."""
    started, started_cpu = time.perf_counter(), time.process_time()
    try:
        scenario = parse_scenario(load_document(read_text(path)))
        timings = Timings(
            parse=time.perf_counter() - started, parse_cpu=time.process_time() - started_cpu
        )
        # A `running` workload that does not fit is found only while deciding.
        result = solve(scenario, timings)
    except ScenarioError as error:
        stderr.write(error_line(error) + "\n")
        return 1
    summary.write(
        result,
        summary.chosen(output, stdout),
        stdout,
        lambda report: json.dumps(report, indent=2),
        lambda report: summary.solve_text(
            report, scenario.levels, _labels_by_leaf(scenario), SCENARIO_FLAVOR
        ),
    )
    if stats:
        stderr.write(stats_line(timings) + "\n")
    return 0


def _labels_by_leaf(scenario: Scenario) -> dict[str, Mapping[str, str]]:
    """Each node's labels by its value of the lowest level (a hostname, usually): what the
    domains of a topologyAssignment name."""
    leaf = scenario.levels[-1]
    return {node.labels[leaf]: node.labels for node in scenario.nodes if leaf in node.labels}


def error_line(error: ScenarioError) -> str:
    """A malformed file's one line on stderr, whatever the message holds, and not too long."""
    line = " ".join(str(error).split())
    if len(line) > MAX_MESSAGE:
        line = line[:MAX_MESSAGE] + f"... ({len(line)} characters)"
    return line


# ---------------------------------------------------------------------------------------------
# With clusterQueues: the operator's own admission decision, offline.

SCENARIO_NAMESPACE = "scenario"
SCENARIO_TOPOLOGY = "scenario"
_EPOCH = datetime(2000, 1, 1)


def admit(scenario: Scenario, timings: Timings | None = None) -> dict[str, Any]:
    """Decide every workload in order as the admission loop does, on a cache built from the
    scenario: quota, cohorts and borrowing, then the topology, then preemption. A preemptor's
    victims are evicted at once (their pods gone) and it is admitted in their room; the
    victims are not requeued. A `running` workload is admitted before the others are tried
    and never preempts."""
    from tas.admission.decide import decide

    started = time.perf_counter()
    state = cluster_state(scenario)
    if timings is not None:
        timings.snapshot = time.perf_counter() - started

    default_queue = scenario.cluster_queues[0]["metadata"]["name"]
    results: dict[str, dict[str, Any]] = {}
    order = sorted(range(len(scenario.workloads)), key=lambda i: not scenario.workloads[i].running)
    for step, index in enumerate(order):
        workload = scenario.workloads[index]
        queue = workload.cluster_queue or default_queue
        info = workload_info(workload, queue, index)
        started, started_cpu = time.perf_counter(), time.process_time()
        state.upsert_workload(info)
        decision = decide(state, info, state.cluster_queues[queue], now=at(len(order) + 1))
        preempted: list[str] = []
        if decision.preemption is not None and not workload.running:
            for target in decision.preemption.targets:
                victim = target.workload
                state.delete_workload(*victim.key)
                results[victim.name] |= {
                    "evicted": True,
                    "preemptedBy": workload.name,
                    "preemptionReason": target.reason,
                }
                preempted.append(victim.name)
            decision = decide(state, info, state.cluster_queues[queue], now=at(len(order) + 1))
        if decision.admitted:
            state.upsert_workload(admitted_info(info, decision, step))
        if timings is not None:
            wall, cpu = time.perf_counter() - started, time.process_time() - started_cpu
            timings.placements.append((decision.admitted, wall, cpu))
        if workload.running and not decision.admitted:
            raise ScenarioError(f"workloads[{index}].running", f"does not fit: {decision.message}")
        results[workload.name] = _decision_result(workload, queue, decision, preempted)
    return {
        "workloads": [results[w.name] for w in scenario.workloads],
        "clusterQueues": _queue_usage(scenario, state),
    }


def _queue_usage(scenario: Scenario, state) -> list[dict[str, Any]]:
    """Each ClusterQueue's usage and borrowing after every decision, in the scenario's order."""
    tree = state.quota_tree()
    queues = []
    for obj in scenario.cluster_queues:
        name = obj["metadata"]["name"]
        used = state.quota_usage(name, SCENARIO_FLAVOR)
        covered = [r for g in state.cluster_queues[name].resource_groups for r in g.covered]
        queues.append(
            {
                "name": name,
                "usage": {r: format_milli(r, used.get(r, 0)) for r in sorted(covered)},
                "borrowed": {
                    r: format_milli(r, tree.borrowed(name, (SCENARIO_FLAVOR, r)))
                    for r in sorted(covered)
                },
                **_weighted_share(state, name),
            }
        )
    return queues


def _weighted_share(state, name: str) -> dict[str, int]:
    """With fair sharing on, the queue's status.fairSharing.weightedShare; else nothing (the
    output stays as it was)."""
    from tas.cache import fairshare

    if state.fair_sharing is None:
        return {}
    return fairshare.status(state.quota_tree(), ("cq", name), True) or {}


def cluster_state(scenario: Scenario):
    """The operator's cache as the scenario's cluster: its topology, flavor, queues, cohorts
    and nodes, no workload yet."""
    from tas.cache import projections
    from tas.cache.state import ClusterState

    state = ClusterState(scenario.options)
    state.fair_sharing = scenario.fair_sharing.fair_sharing
    state.upsert_topology(SCENARIO_TOPOLOGY, scenario.levels)
    state.upsert_flavor(
        projections.FlavorInfo(
            SCENARIO_FLAVOR,
            scenario.flavor.node_labels,
            scenario.flavor.tolerations,
            SCENARIO_TOPOLOGY,
        )
    )
    for obj in scenario.cohorts:
        state.upsert_cohort(projections.cohort_from_object(obj))
    for obj in scenario.cluster_queues:
        state.upsert_cluster_queue(projections.cluster_queue_from_object(obj))
        name = obj["metadata"]["name"]
        state.upsert_local_queue(SCENARIO_NAMESPACE, name, name)
    state.upsert_namespace(SCENARIO_NAMESPACE, {})
    for node in scenario.nodes:
        state.upsert_node(node)
    return state


def at(seconds: float) -> datetime:
    """A scenario's step, or a trace's simulated second, as a time for the admission code."""
    return _EPOCH + timedelta(seconds=seconds)


def workload_info(workload: Workload, queue: str, index: float):
    """The workload as a pending Workload; `index` (a step or a second) is its creation."""
    from tas.cache.projections import WorkloadInfo

    return WorkloadInfo(
        namespace=SCENARIO_NAMESPACE,
        name=workload.name,
        uid=workload.name,
        resource_version="1",
        generation=1,
        queue_name=queue,
        priority=workload.priority,
        created=at(index),  # the scenario's order is the queue's age order
        pod_sets=workload.podsets,
        admission_cq=None,
        admissions=(),
        conditions=(),
        unhealthy_nodes=(),
        relaxations=workload.relaxations,
    )


def admitted_info(info, decision, step: float):
    """The workload as its status would read once admitted at `step` (its charge comes from
    it, and its admission time orders it among preemption candidates)."""
    from tas.cache.projections import PodSetAdmission

    when = at(step).isoformat() + "Z"
    conditions = tuple(
        {"type": t, "status": "True", "reason": t, "lastTransitionTime": when}
        for t in ("QuotaReserved", "Admitted")
    )
    return replace(
        info,
        resource_version="2",
        admission_cq=decision.charge.cluster_queue,
        admissions=tuple(
            PodSetAdmission(ps.name, ps.flavor, ps.count, ps.assignment)
            for ps in decision.charge.pod_sets
        ),
        conditions=conditions,
    )


def _decision_result(workload: Workload, queue: str, decision, preempted: list[str]) -> dict:
    if not decision.admitted:
        return {
            "name": workload.name,
            "admitted": False,
            "clusterQueue": queue,
            "message": decision.message,
        }
    out: dict[str, Any] = {
        "name": workload.name,
        "admitted": True,
        "clusterQueue": queue,
        "podSets": [
            {"name": ps.name, "count": ps.count}
            | (
                {
                    "topologyAssignment": topologyassignment.to_api(
                        ps.assignment, sort_by_values=True
                    )
                }
                if ps.assignment is not None
                else {}
            )
            for ps in decision.charge.pod_sets
        ],
    }
    if preempted:
        out["preempted"] = preempted
    return out
