"""Fair sharing at scale: one fair-sharing preemption decision, and an admission cycle with fair
sharing on and off.

    PYTHONPATH=operator .venv/bin/python bench/fair_sharing_bench.py            # full run
    PYTHONPATH=operator .venv/bin/python bench/fair_sharing_bench.py --quick    # smaller, no file

1. Preemption (as bench/preemption_bench.py, whose cluster it reuses): `--blocks` blocks of 10
   racks of 32 hosts (8 cpu; 16 blocks = 5,120 nodes), every rack filled by one running
   workload of 128 x 2 cpu (required rack): 160 workloads in 8 ClusterQueues of one cohort.
   q0 has two blocks' worth of nominal quota and runs 4 of them; q1-q7 have none of their own
   and run the rest on the cohort's quota (22-23 each: all borrowed). A request in q0 for a
   whole block (1,280 x 2 cpu, required block) takes from the queues with the highest share
   until a block is free, then puts back every victim not needed. Reported per mode (the default gates, where q0 within its nominal
   quota reclaims whatever the shares; and FairSharingPreemptWithinNominal off, where the
   LessThanOrEqualToFinalShare strategy decides each victim): the decision's CPU time (median
   of --repeats), the placements simulated, the victims, their blocks and reasons.
2. The admission cycle: the real AdmissionLoop over --pending workloads spread over 8
   ClusterQueues of one cohort, on 512 nodes (bench/loop_stall_bench.py's cluster, other pods
   filling 5-8 of each node's 8 cpu). Two shapes: `never-fit` (each asks more of one rack than
   any rack has free: every one decided by the solver) and `quota` (one 1-cpu pod each, the
   cohort's quota admits 400). Wall time of one cycle with fair sharing off and on.
Reported, never asserted. A full run writes bench/results/fair_sharing.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import loop_stall_bench as stall
import preemption_bench as classical
from tas import features
from tas.admission.decide import decide
from tas.admission.loop import AdmissionLoop
from tas.api.fairsharing import FairSharing
from tas.cache import projections as proj
from tas.offline import reader
from tas.offline import scenario as tas_scenario

RESULTS = Path(__file__).parent / "results" / "fair_sharing.json"
QUEUES = 8
FAIR = {"fairSharing": {"preemptionStrategies": ["LessThanOrEqualToFinalShare"]}}


# ---- 1. one preemption decision --------------------------------------------------------------


def preemption_document(blocks: int, seed: int) -> dict:
    document = classical.document(blocks, seed)
    racks = blocks * classical.RACKS
    rack_cpu = 8 * classical.HOSTS
    own = 2 * classical.RACKS * rack_cpu  # q0: two blocks' worth; q1-q7: none of their own
    document["clusterQueues"] = [
        {
            "name": f"q{i}",
            "cohort": "all",
            "nominalQuota": {"cpu": str(own if i == 0 else 0), "memory": "1Pi"},
            "preemption": {"reclaimWithinCohort": "Any"},
        }
        for i in range(QUEUES)
    ]
    document["cohorts"] = [
        {"name": "all", "nominalQuota": {"cpu": str(racks * rack_cpu - own), "memory": "1Pi"}}
    ]
    light = racks // 40  # q0 runs a few (4 of 160): with the request, within its quota
    for index, workload in enumerate(document["workloads"]):
        queue = 0 if index < light else 1 + (index - light) % (QUEUES - 1)
        workload["clusterQueue"] = f"q{queue}"
    document.update(FAIR)
    return document


def preempt(blocks: int, repeats: int, seed: int) -> dict:
    scen = reader.parse_scenario(preemption_document(blocks, seed))
    state = tas_scenario.cluster_state(scen)
    for step, workload in enumerate(scen.workloads):
        info = tas_scenario.workload_info(workload, workload.cluster_queue, step)
        state.upsert_workload(info)
        d = decide(state, info, state.cluster_queues[workload.cluster_queue])
        assert d.admitted, d.message
        state.upsert_workload(tas_scenario.admitted_info(info, d, step))
    request = classical.preemptor()
    incoming = tas_scenario.workload_info(
        reader.Workload(request.name, request.podsets, "q0", 0), "q0", len(scen.workloads)
    )
    state.upsert_workload(incoming)
    cq = state.cluster_queues["q0"]
    snapshot = state.snapshot(reader.SCENARIO_FLAVOR)
    place = snapshot.find_assignments
    out = {"nodes": len(scen.nodes), "running": len(scen.workloads), "queues": QUEUES}
    for mode, gates in (
        ("default gates", {}),
        ("FairSharingPreemptWithinNominal=false", {"FairSharingPreemptWithinNominal": False}),
    ):
        calls = 0

        def counted(podsets):
            nonlocal calls
            calls += 1
            return place(podsets)

        times = []
        with features.activated(features.from_mapping(gates)):
            for _ in range(repeats):
                snapshot.find_assignments = counted
                calls = 0
                started = time.process_time()
                d = decide(state, incoming, cq)
                times.append(time.process_time() - started)
                snapshot.find_assignments = place
        assert d.preemption is not None, d.message
        targets = d.preemption.targets
        out[mode] = {
            "decide_ms": round(statistics.median(times) * 1000, 1),
            "decide_ms_runs": [round(t * 1000, 1) for t in times],
            "placements": calls,
            "victims": len(targets),
            "victim_queues": sorted({t.workload.admission_cq for t in targets}),
            "victim_blocks": sorted(
                {
                    dom.values[0].split("-")[0]
                    for t in targets
                    for ps in state.charges()[t.workload.key].pod_sets
                    for dom in ps.assignment.domains
                }
            ),
            "reasons": sorted({t.reason for t in targets}),
        }
    return out


# ---- 2. the admission cycle ------------------------------------------------------------------


def cycle_state(pending: int, shape: str, fair: bool):
    state = stall.cluster(0)
    state.fair_sharing = FairSharing() if fair else None
    cohort_quota = 400 if shape == "quota" else 1_000_000
    groups = [
        {
            "coveredResources": ["cpu"],
            "flavors": [{"name": "tas", "resources": [{"name": "cpu", "nominalQuota": str(q)}]}],
        }
        for q in (cohort_quota,)
    ]
    state.upsert_cohort(proj.cohort_from_object({"metadata": {"name": "all"}, "spec": {
        "resourceGroups": groups}}))  # fmt: skip
    state.delete_local_queue("ns", "lq")
    state.delete_cluster_queue("cq")
    for i in range(QUEUES):
        zero = [{"coveredResources": ["cpu"], "flavors": [
            {"name": "tas", "resources": [{"name": "cpu", "nominalQuota": "0"}]}]}]  # fmt: skip
        obj = {"metadata": {"name": f"q{i}"}, "spec": {"namespaceSelector": {},
               "cohortName": "all", "resourceGroups": zero,
               "fairSharing": {"weight": str(1 + i % 3)}}}  # fmt: skip
        state.upsert_cluster_queue(proj.cluster_queue_from_object(obj))
        state.upsert_local_queue("ns", f"lq{i}", f"q{i}")
    for i in range(pending):
        obj = stall.workload(i)
        obj["spec"]["queueName"] = f"lq{i % QUEUES}"
        if shape == "quota":
            obj["spec"]["podSets"][0]["count"] = 1
        state.upsert_workload(proj.workload_from_object(obj))
    return state


async def one_cycle(pending: int, shape: str, fair: bool) -> float:
    state = cycle_state(pending, shape, fair)
    state.snapshot("tas")
    loop = AdmissionLoop(state, stall.Writer())
    loop.writer.write_cohort_status = _no_write  # type: ignore[attr-defined]
    started = time.perf_counter()
    await loop.cycle()
    took = time.perf_counter() - started
    await loop.drain()
    return took


async def _no_write(*args) -> None:
    await asyncio.sleep(0)


def cycles(pending: int, repeats: int) -> dict:
    out = {}
    for shape in ("never-fit", "quota"):
        for fair in (False, True):
            runs = [asyncio.run(one_cycle(pending, shape, fair)) for _ in range(repeats)]
            out[f"{shape}, fair sharing {'on' if fair else 'off'}"] = {
                "cycleSeconds": round(statistics.median(runs), 3),
                "runs": [round(r, 3) for r in runs],
            }
    return {"pending": pending, "nodes": stall.BLOCKS * stall.RACKS * stall.HOSTS, **out}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=16)
    parser.add_argument("--pending", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="8 blocks, 200 pending, no file")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    blocks, pending = (8, 200) if args.quick else (args.blocks, args.pending)
    result = {
        "command": " ".join(["bench/fair_sharing_bench.py", *sys.argv[1:]]),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg_start": os.getloadavg(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "preemption": preempt(blocks, args.repeats, args.seed),
        "cycle": cycles(pending, args.repeats),
        "loadavg_end": os.getloadavg(),
    }
    print(json.dumps(result, indent=2))
    targets = [args.output] if args.output else []
    if not args.quick:
        targets.append(RESULTS)
    for target in targets:
        target.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
