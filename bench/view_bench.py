"""The topology view under load, on the local cluster with kwok nodes (reported, never asserted).

    .venv/bin/python bench/view_bench.py --nodes 500 [--output FILE]

With the operator running and its view served, once the cluster has settled:
1. page load: GET / (rendered on the operator's loop), median of 5, and its size;
2. update latency: a node cordoned (kubectl patch) until an SSE event draws it cordoned, and
   back, with 5 viewers connected; from kubectl's start (upper bound: includes its start-up)
   and from its return (lower bound);
3. operator CPU, idle and with a node change every second: with nobody watching (the view is
   not rebuilt) and with 5 viewers connected;
4. bytes per update event.

Uses the cluster in KUBECONFIG, or starts the local one (TAS_CLUSTER_DIR, TAS_API_PORT,
TAS_ETCD_PORT; defaults are this bench's own). Writes bench/results/view.json (one entry per
node count, merged with what is there) and prints a table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.operator_bench import setup  # noqa: E402
from e2e import topology  # noqa: E402
from e2e.harness import (  # noqa: E402
    Cluster,
    WaitTimeout,
    cluster_from_env,
    stop_local_cluster,
    wait_for,
)
from e2e.operator_process import OperatorProcess  # noqa: E402

VIEWERS = 5
SHAPES = {  # blocks x racks x hosts
    500: topology.Shape(blocks=5, racks=10, hosts=10),
    5000: topology.Shape(blocks=10, racks=25, hosts=20),
}


class Viewers:
    """SSE clients on a loop of their own thread: each event's arrival time and size."""

    def __init__(self, url: str, count: int) -> None:
        self.url, self.count = url, count
        self.events: list[list[tuple[float, str]]] = [[] for _ in range(count)]
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def start(self) -> None:
        self.thread.start()
        for i in range(self.count):
            asyncio.run_coroutine_threadsafe(self._follow(i), self.loop)

    async def _follow(self, index: int) -> None:
        timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
        # a version from the future: the first event is the whole page (connected)
        url = self.url + "events?since=999999999"
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.get(url) as response,
        ):
            data: list[str] = []
            async for raw in response.content:
                line = raw.decode().rstrip("\n")
                if line.startswith("data: "):
                    data.append(line[6:])
                elif not line and data:
                    self.events[index].append((time.monotonic(), "\n".join(data)))
                    data = []

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._close(), self.loop).result(timeout=30)
        self.loop.call_soon_threadsafe(self.loop.stop)

    async def _close(self) -> None:
        followers = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in followers:
            task.cancel()
        await asyncio.gather(*followers, return_exceptions=True)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cordon(cluster: Cluster, node: str, on: bool) -> float:
    """Patch the node; returns when kubectl did."""
    cluster.kubectl(
        "patch", "node", node, "--type=merge", "-p", json.dumps({"spec": {"unschedulable": on}})
    )
    return time.monotonic()


def wait_drawn(viewers: Viewers, node: str, cordoned: bool, after: float) -> float:
    """When viewer 0 got an event drawing `node` (un)cordoned, after `after`."""
    marker = f'id="host/tas-flavor/{node}"'

    def seen():
        for at, text in list(viewers.events[0]):
            if at < after or marker not in text:
                continue
            part = text.split(marker, 1)[0].rsplit("<div", 1)[-1]
            if ("mark-cordoned" in part) == cordoned:
                return at
        return None

    return wait_for(seen, timeout=30, interval=0.02, what=f"{node} drawn")


def settled(url: str, quiet: float = 5.0) -> bool:
    """The view unchanged for `quiet` seconds (kwok finishes marking new nodes Ready)."""

    def model() -> dict:
        with urllib.request.urlopen(url + "model.json", timeout=60) as r:
            data = json.load(r)
        data.pop("at", None)
        return data

    first = model()
    time.sleep(quiet)
    return model() == first


def page_load(url: str) -> dict:
    times, size = [], 0
    for _ in range(5):
        start = time.monotonic()
        with urllib.request.urlopen(url, timeout=120) as response:
            size = len(response.read())
        times.append(time.monotonic() - start)
    return {"median_s": statistics.median(times), "runs_s": times, "bytes": size}


def update_latency(cluster: Cluster, viewers: Viewers, nodes: list[str], rounds: int) -> dict:
    upper, lower = [], []
    for i in range(rounds):
        node = nodes[(i * 37) % len(nodes)]
        for on in (True, False):
            started = time.monotonic()
            returned = cordon(cluster, node, on)
            drawn = wait_drawn(viewers, node, on, started)
            upper.append(drawn - started)
            lower.append(max(0.0, drawn - returned))
    return {
        "from_kubectl_start_median_s": statistics.median(upper),
        "from_kubectl_return_median_s": statistics.median(lower),
        "from_kubectl_start_max_s": max(upper),
        "changes": len(upper),
    }


def cpu_while_viewed(cluster: Cluster, pid: int, nodes: list[str], seconds: float) -> dict:
    out = {}
    for label, churn in (("idle", False), ("one_change_per_s", True)):
        cpu, wall = cpu_seconds(pid), time.monotonic()
        i = 0
        while time.monotonic() - wall < seconds:
            if churn:
                cordon(cluster, nodes[i % len(nodes)], i % 2 == 0)  # on, then off
                i += 1
            time.sleep(max(0.0, 1.0 - (time.monotonic() - wall) % 1.0))
        out[label + "_percent"] = 100 * (cpu_seconds(pid) - cpu) / (time.monotonic() - wall)
    return out


def measure(cluster: Cluster, nodes_wanted: int, rounds: int, cpu_window: float) -> dict:
    shape = SHAPES[nodes_wanted]
    setup(cluster, shape)
    names = [n["metadata"]["name"] for n in topology.nodes(shape)]
    op = OperatorProcess(cluster)
    op.start(sync_timeout=900)
    try:
        url = op.view_url

        def all_drawn():
            with urllib.request.urlopen(url + "model.json", timeout=60) as r:
                return json.dumps(json.load(r)).count('"marks"') >= len(names)

        wait_for(all_drawn, timeout=300, interval=1, what="every node in the view")
        try:
            wait_for(lambda: settled(url), timeout=300, interval=0.1, what="the cluster to settle")
            calm = True
        except WaitTimeout:  # kwok's nodes still changing (a loaded machine): say so, go on
            calm = False
        result: dict = {"nodes": len(names), "settled": calm, "page_load": page_load(url)}
        result["operator_cpu_without_viewers"] = cpu_while_viewed(
            cluster, op.proc.pid, names, cpu_window
        )
        print(f"cpu, nobody watching: {result['operator_cpu_without_viewers']}", flush=True)
        print(f"{len(names)} nodes: page load {result['page_load']}", flush=True)
        viewers = Viewers(url, VIEWERS)
        viewers.start()
        wait_for(lambda: all(v for v in viewers.events), timeout=30, what="viewers connected")
        result["update_latency"] = update_latency(cluster, viewers, names, rounds)
        print(f"update latency: {result['update_latency']}", flush=True)
        result["operator_cpu_with_5_viewers"] = cpu_while_viewed(
            cluster, op.proc.pid, names, cpu_window
        )
        print(f"cpu: {result['operator_cpu_with_5_viewers']}", flush=True)
        sizes = [len(text) for _, text in viewers.events[0][1:]]  # past the catch-up
        result["bytes_per_update"] = {
            "median": statistics.median(sizes),
            "max": max(sizes),
            "events": len(sizes),
            "viewers_still_connected": sum(1 for v in viewers.events if v),
        }
        viewers.stop()
    finally:
        op.stop()
    return result


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--nodes", type=int, choices=sorted(SHAPES), default=500)
    parser.add_argument("--rounds", type=int, default=10, help="cordon/uncordon pairs")
    parser.add_argument("--cpu-seconds", type=float, default=30.0)
    parser.add_argument("--output", default=str(ROOT / "bench" / "results" / "view.json"))
    args = parser.parse_args()
    os.environ.setdefault("TAS_CLUSTER_DIR", str(ROOT / ".cluster" / "bench-view"))
    os.environ.setdefault("TAS_API_PORT", "20443")
    os.environ.setdefault("TAS_ETCD_PORT", "16379")
    cluster = cluster_from_env()
    load_at_start = os.getloadavg()
    try:
        result = measure(cluster, args.nodes, args.rounds, args.cpu_seconds)
    finally:
        if not os.environ.get("KUBECONFIG") and not os.environ.get("KEEP_CLUSTER"):
            stop_local_cluster()  # the bench's own cluster: stopped, as every process it starts
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip()
    result["machine"] = {
        "cpus": os.cpu_count(),
        "load_at_start": load_at_start,
        "load_at_end": os.getloadavg(),
        "commit": commit,
    }
    out = Path(args.output)
    merged = json.loads(out.read_text()) if out.exists() else {}
    merged[str(args.nodes)] = result
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(merged, indent=2) + "\n")
    lat, cpu = result["update_latency"], result["operator_cpu_with_5_viewers"]
    size = result["bytes_per_update"]
    print(
        "| nodes | page load | update (from kubectl start / return) | CPU idle / 1 change/s | bytes/update |"
    )
    print("|---|---|---|---|---|")
    print(
        f"| {result['nodes']} | {result['page_load']['median_s']:.2f} s, "
        f"{result['page_load']['bytes'] // 1024} KiB | {lat['from_kubectl_start_median_s']:.2f} / "
        f"{lat['from_kubectl_return_median_s']:.2f} s | {cpu['idle_percent']:.1f} / "
        f"{cpu['one_change_per_s_percent']:.1f} % | {size['median']:.0f} |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
