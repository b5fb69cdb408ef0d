"""How the operator's event loop fares while its webhook port is flooded with large reviews.

The operator side runs in this process, as in `tas operator`: the WebhookServer that kopf is
given, called with kopf's own review function and our registered handlers, and on the same
event loop two probes of that loop's health:

- a ticker that sleeps 5 ms and records how late it wakes (lease renewal, the liveness answer
  and every admission write wait like this);
- a worker that does 1 ms of pure-Python work and yields, counting the slices done per second
  (the share of the loop left to admission), reported relative to the idle phase.

A second process (a client, so that its own work does not share this interpreter) sends
AdmissionReviews of a Job over TLS on keep-alive connections at a fixed rate, as anyone who
can reach the webhook port could. The Job carries a container with a long list of small
environment variables, the shape that costs kopf most (it copies and diffs the whole object
for a mutating review); half the reviews go to the mutating webhook and half to the validating
one. Phases: idle, then each (rate, body size) of --loads.

    PYTHONPATH=operator .venv/bin/python bench/webhook_flood_bench.py
    PYTHONPATH=operator .venv/bin/python bench/webhook_flood_bench.py --loads 200x1024,200x200

Reported, never asserted: ticker lag p50/p99/max (ms), loop work share, reviews answered per
second by status, and the client's latency p50/p99. Run it from a checkout before and after a
change to compare (the script uses only the WebhookServer's constructor and kopf's protocol).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import functools
import json
import multiprocessing
import os
import ssl
import sys
import tempfile
import time
import uuid
from pathlib import Path

TICK = 0.005
WORK_SLICE = 0.001
CONNECTIONS = 32


def job_review(size: int, operation: str = "CREATE") -> dict:
    """A review of about `size` bytes."""
    entry = len(json.dumps({"name": "VAR_00000", "value": "x" * 40}, separators=(",", ":"))) + 1
    env = [{"name": f"VAR_{i:05}", "value": "x" * 40} for i in range(max(0, size - 600) // entry)]
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "flood",
            "namespace": "tenant",
            "uid": str(uuid.uuid4()),
            "labels": {"kueue.x-k8s.io/queue-name": "q"},
        },
        "spec": {
            "parallelism": 1,
            "template": {"spec": {"containers": [{"name": "c", "image": "busybox", "env": env}]}},
        },
    }
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "operation": operation,
            "resource": {"group": "batch", "version": "v1", "resource": "jobs"},
            "userInfo": {"username": "tenant"},
            "object": job,
            "oldObject": None,
        },
    }


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# ---- the client (its own process) ---------------------------------------------------------------


def client(url: str, rate: float, size_kib: int, seconds: float, out) -> None:
    """Send `rate` reviews a second for `seconds`; put (latencies, statuses) on `out`."""
    import aiohttp
    import orjson

    from tas.handlers.operator import SUSPEND_WEBHOOK, VALIDATE_WEBHOOK

    body = orjson.dumps(job_review(size_kib * 1024))
    paths = [f"{url}/{SUSPEND_WEBHOOK}", f"{url}/{VALIDATE_WEBHOOK}"]

    async def run():
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        connector = aiohttp.TCPConnector(ssl=context, limit=CONNECTIONS)
        timeout = aiohttp.ClientTimeout(total=30)
        latencies, statuses = [], {}

        async def one(path):
            start = time.perf_counter()
            try:
                async with session.post(path, data=body, headers=HEADERS) as response:
                    await response.read()
                    status = str(response.status)
            except Exception as exc:  # a refused or reset connection is an answer too
                status = type(exc).__name__
            latencies.append(time.perf_counter() - start)
            statuses[status] = statuses.get(status, 0) + 1

        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
            tasks, start, sent = [], time.perf_counter(), 0
            while time.perf_counter() - start < seconds:
                tasks.append(asyncio.create_task(one(paths[sent % 2])))
                sent += 1
                await asyncio.sleep(max(0.0, start + sent / rate - time.perf_counter()))
            await asyncio.gather(*tasks)
        return latencies, statuses, sent

    latencies, statuses, sent = asyncio.run(run())
    out.put({"latencies": latencies, "statuses": statuses, "sent": sent})


HEADERS = {"Content-Type": "application/json"}


# ---- the operator side (this process) -----------------------------------------------------------


class LoopProbe:
    """Ticker lag and pure-Python work slices on the loop, recorded per phase."""

    def __init__(self) -> None:
        self.lags: list[float] = []
        self.slices = 0

    async def tick(self) -> None:
        while True:
            start = time.perf_counter()
            await asyncio.sleep(TICK)
            self.lags.append(time.perf_counter() - start - TICK)

    async def work(self) -> None:
        while True:
            end = time.perf_counter() + WORK_SLICE
            while time.perf_counter() < end:
                pass
            self.slices += 1
            await asyncio.sleep(0)

    def reset(self) -> None:
        self.lags, self.slices = [], 0


def review_function(memo):
    """kopf's review function with our registered handlers, as kopf hands it to the server."""
    import kopf
    from kopf._cogs.structs import ephemera, references
    from kopf._core.engines.admission import serve_admission_request

    from tas.handlers.operator import ForgetfulMemories

    insights = references.Insights()
    insights.webhook_resources.add(
        references.Resource(group="batch", version="v1", plural="jobs", kind="Job", namespaced=True)
    )
    return functools.partial(
        serve_admission_request,
        settings=kopf.OperatorSettings(),
        memories=ForgetfulMemories(),
        memobase=ephemera.AnyMemo(memo),
        registry=kopf.get_default_registry(),
        insights=insights,
        indices={},
    )


def certificate(directory: Path) -> tuple[Path, Path, Path]:
    from tas.webhooks import certs

    now = datetime.datetime.now(datetime.UTC)
    certs.write_served(directory, certs.plan({}, ["127.0.0.1"], now, certs.DEFAULT_LIFETIMES))
    return tuple(directory / name for name in certs.SERVED)  # type: ignore[return-value]


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def phase(probe: LoopProbe, seconds: float, load=None) -> dict:
    """One phase: the loop probes, and the client's load if any."""
    probe.reset()
    result = None
    if load is None:
        await asyncio.sleep(seconds)
    else:
        result = await asyncio.get_running_loop().run_in_executor(None, load, seconds)
    lags = [1000 * lag for lag in probe.lags]
    out = {
        "tick_lag_ms_p50": round(percentile(lags, 0.5), 2),
        "tick_lag_ms_p99": round(percentile(lags, 0.99), 2),
        "tick_lag_ms_max": round(max(lags, default=float("nan")), 2),
        "work_slices_per_s": round(probe.slices / seconds, 1),
    }
    if result is not None:
        latencies = [1000 * x for x in result["latencies"]]
        out |= {
            "sent": result["sent"],
            "answered_per_s": round(len(latencies) / seconds, 1),
            "statuses": result["statuses"],
            "latency_ms_p50": round(percentile(latencies, 0.5), 1),
            "latency_ms_p99": round(percentile(latencies, 0.99), 1),
        }
    return out


def run_client(url: str, rate: float, size_kib: int, seconds: float) -> dict:
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=client, args=(url, rate, size_kib, seconds, queue))
    process.start()
    result = queue.get()
    process.join()
    return result


async def bench(loads: list[tuple[float, int]], seconds: float) -> dict:
    import kopf

    import tas.handlers.operator  # noqa: F401  (registers the handlers)
    from tas.config import Settings
    from tas.webhooks.server import WebhookServer

    directory = Path(tempfile.mkdtemp(prefix="tas-flood-"))
    certfile, keyfile, cafile = certificate(directory)
    port = free_port()
    server = WebhookServer(
        addr="127.0.0.1",
        port=port,
        host="127.0.0.1",
        certfile=certfile,
        keyfile=keyfile,
        cafile=cafile,
    )
    memo = kopf.Memo(settings=Settings(), loop=asyncio.get_running_loop())
    serving = server(review_function(memo))
    await serving.__anext__()  # listening
    probe = LoopProbe()
    tasks = [asyncio.create_task(probe.tick()), asyncio.create_task(probe.work())]
    results = {"idle": await phase(probe, seconds)}
    idle_slices = results["idle"]["work_slices_per_s"]
    url = f"https://127.0.0.1:{port}"
    for rate, size_kib in loads:
        load = functools.partial(run_client, url, rate, size_kib)
        name = f"{rate:g}/s x {size_kib} KiB"
        results[name] = await phase(probe, seconds, load)
        results[name]["work_share"] = round(results[name]["work_slices_per_s"] / idle_slices, 2)
        print(name, results[name], file=sys.stderr, flush=True)
    for task in tasks:
        task.cancel()
    with contextlib.suppress(StopAsyncIteration, asyncio.CancelledError):
        await serving.aclose()
    return results


def parse_load(text: str) -> tuple[float, int]:
    rate, _, size = text.partition("x")
    return float(rate), int(size)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--loads",
        default="200x1024,200x200",
        help="comma-separated RATExKIB phases (reviews a second x body size in KiB)",
    )
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each phase")
    parser.add_argument("--output", help="also write the results (JSON) here")
    args = parser.parse_args()
    loads = [parse_load(x) for x in args.loads.split(",") if x]
    results = {
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "load_average_at_start": os.getloadavg(),
        "phases": asyncio.run(bench(loads, args.seconds)),
        "load_average_at_end": os.getloadavg(),
    }
    text = json.dumps(results, indent=2)
    print(text)
    if args.output:
        Path(args.output).write_text(text + "\n")


if __name__ == "__main__":
    main()
