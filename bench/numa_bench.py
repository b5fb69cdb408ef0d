"""Solver time with NUMA zones (gate TASNUMAZones) against without, on one scenario.

    .venv/bin/python bench/numa_bench.py                 # 5,120 nodes x 2 zones, 200 workloads
    .venv/bin/python bench/numa_bench.py --nodes 640 --quick --output /tmp/numa.json

The scenario is bench/scenarios.py's (every feature: required / preferred / unconstrained,
slices, leader + workers, selectors, taints), with every pod Guaranteed (limits = requests, whole
CPUs) so that every pod set is counted per zone where zones exist. The two runs differ only in
the gate and in each node's `numa`: two zones, each with half the node's CPUs and GPUs (less
half its usage). Both run `tas solve`'s loop: place each workload (find_assignments, the
solver: the ratio the issue asks for), then for an admitted one pick its pods' zones, record
its usage and take those zones (the operator's cache and ungater do this part; timed on its
own as bookkeeping).
CPU times; medians of --repeats runs, the two kinds alternating. A full run writes bench/results/numa.json, --quick only
--output.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import scenarios  # bench/scenarios.py
from tas.api.quantity import parse_milli
from tas.offline import reader
from tas.offline import scenario as tas_scenario
from tas.solver import TopologySnapshot

RESULTS = Path(__file__).parent / "results" / "numa.json"
ZONE_RESOURCES = ("cpu", "nvidia.com/gpu")


def guaranteed(document: dict) -> dict:
    """Every pod set's requests become one container's limits (Guaranteed, whole CPUs)."""
    for workload in document["workloads"]:
        for podset in workload["podSets"]:
            requests = dict(podset.pop("requests"))
            cpu = parse_milli(requests.get("cpu", "1"))
            requests["cpu"] = str(max(1, -(-cpu // 1000)))  # whole CPUs
            requests.setdefault("memory", "1Gi")
            podset["containers"] = [{"name": "main", "resources": {"limits": requests}}]
    return document


def with_zones(document: dict, zones: int = 2) -> dict:
    document = json.loads(json.dumps(document))
    document["featureGates"] = {**document.get("featureGates", {}), "TASNUMAZones": True}
    for node in document["nodes"]:
        usage = node.get("usage", {})
        per_zone = []
        for index in range(zones):
            available = {}
            for name in ZONE_RESOURCES:
                total = parse_milli(node["allocatable"].get(name, 0))
                used = parse_milli(usage.get(name, 0))
                share = (total - used) // zones + (((total - used) % zones) if index == 0 else 0)
                available[name] = f"{share}m"
            per_zone.append({"name": f"node-{index}", "available": available})
        node["numa"] = {"scope": "container", "zones": per_zone}
    return document


def run(document: dict) -> tuple[list[float], list[float], int]:
    """The CPU ms of each workload's placement (find_assignments) and of its bookkeeping when
    admitted (usage, and with zones the zones its pods take: what the operator's cache does),
    as `tas solve` runs them."""
    parsed = reader.parse_scenario(document)
    snapshot = TopologySnapshot(parsed.levels, parsed.nodes, parsed.flavor, parsed.options)
    snapshot.build()
    nodes = {node.name: node for node in parsed.nodes}
    place, keep, admitted = [], [], 0
    for workload in parsed.workloads:
        started = time.process_time()
        placement = snapshot.find_assignments(workload.podsets)
        placed = time.process_time()
        if placement.admitted:
            admitted += 1
            placement = snapshot.numa_zones(workload.podsets, placement)
            requests = {podset.name: podset.requests for podset in workload.podsets}
            for one in placement.podsets:
                snapshot.add_usage(one.assignment, requests[one.name])
            tas_scenario._take_zones(snapshot, nodes, workload, placement)
        place.append((placed - started) * 1000)
        keep.append((time.process_time() - placed) * 1000)
    return place, keep, admitted


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, choices=sorted(scenarios.SHAPES), default=5120)
    parser.add_argument("--workloads", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="never writes bench/results")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)

    plain = guaranteed(scenarios.scenario(args.nodes, args.workloads, cold=False))
    zoned = with_zones(plain)
    # The two runs alternate, so that the machine's drift (it is shared) hits both alike.
    samples: dict[str, dict[str, list]] = {
        name: {"medians": [], "place": [], "keep": [], "admitted": []}
        for name in ("node totals", "NUMA zones")
    }
    for _ in range(args.repeats):
        for name, document in (("node totals", plain), ("NUMA zones", zoned)):
            place, keep, admitted = run(document)
            samples[name]["medians"].append(statistics.median(place))
            samples[name]["place"].append(sum(place))
            samples[name]["keep"].append(sum(keep))
            samples[name]["admitted"].append(admitted)
    rows = {
        name: {
            "placement_median_ms": round(statistics.median(got["medians"]), 3),
            "placement_total_ms": round(statistics.median(got["place"]), 1),
            "bookkeeping_total_ms": round(statistics.median(got["keep"]), 1),
            "admitted": got["admitted"][-1],
        }
        for name, got in samples.items()
    }
    plain_row, zoned_row = rows["node totals"], rows["NUMA zones"]
    ratio_median = zoned_row["placement_median_ms"] / max(plain_row["placement_median_ms"], 1e-9)
    ratio_total = zoned_row["placement_total_ms"] / max(plain_row["placement_total_ms"], 1e-9)
    result = {
        "nodes": args.nodes,
        "zones_per_node": 2,
        "workloads": args.workloads,
        "repeats": args.repeats,
        "rows": rows,
        "ratio_median": round(ratio_median, 2),
        "ratio_total": round(ratio_total, 2),
        "python": platform.python_version(),
        "command": "bench/numa_bench.py " + " ".join(argv or sys.argv[1:]),
    }
    print(
        f"| {args.nodes} nodes x 2 zones | placement median ms | placement total ms "
        "| bookkeeping total ms | admitted |"
    )
    print("|---|---|---|---|---|")
    for name, row in rows.items():
        print(
            f"| {name} | {row['placement_median_ms']} | {row['placement_total_ms']} "
            f"| {row['bookkeeping_total_ms']} | {row['admitted']} |"
        )
    print(f"placement ratio (NUMA / totals): median {ratio_median:.2f}x, total {ratio_total:.2f}x")
    text = json.dumps(result, indent=2) + "\n"
    if args.output:
        args.output.write_text(text)
    if not args.quick:
        RESULTS.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
