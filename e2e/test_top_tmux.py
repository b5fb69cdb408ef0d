"""`tas top` in a real terminal (tmux) against the operator on the local cluster: the screen
holds the numbers the API holds, and follows the cluster as it changes.

An admitted Job's row shows its pod count and hosts; its rack's cpu shows what its
topologyAssignment charges there (plus any pod outside a queue on that rack) over the rack's
allocatable; a Job that cannot fit shows its QuotaReserved message; deleting the admitted Job
frees its rack on screen at a later refresh.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from e2e import jobs
from e2e.harness import Cluster, wait_for
from e2e.topology import RACK_LABEL

pytestmark = pytest.mark.e2e

TMUX = "/usr/bin/tmux"
WIDTH, HEIGHT = 240, 70  # the whole frame of the 8-node e2e topology fits
REQUIRED = jobs.PREFIX + "podset-required-topology"
RACK_ROW = re.compile(
    r"^\s*rack (?P<rack>\S+)\s+(?P<hosts>\d+)\s+[█▒░]+ (?P<used>\S+)/(?P<total>\S+)"
)
TERMINAL = {"Succeeded", "Failed"}


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Callable[[list[str]], Callable[[], str]]]:
    """Run a command in a detached tmux session of its own server; returns what the screen
    shows, on demand."""
    if not os.access(TMUX, os.X_OK):
        pytest.skip(f"{TMUX} is not installed")
    socket = str(tmp_path / "tmux.sock")

    def tmux(*args: str) -> str:
        return subprocess.run(
            [TMUX, "-u", "-S", socket, *args], check=True, capture_output=True, text=True
        ).stdout

    def start(command: list[str]) -> Callable[[], str]:
        environment = [f"{k}={v}" for k, v in os.environ.items() if k == "PYTHONPATH"]
        env_flags = [flag for pair in environment for flag in ("-e", pair)]
        tmux(
            "new-session", "-d", "-s", "top", "-x", str(WIDTH), "-y", str(HEIGHT),
            *env_flags, "-e", "LANG=C.UTF-8",
            # the size must come from the terminal, not from this process's environment
            shlex.join(["env", "-u", "COLUMNS", "-u", "LINES", *command]),
        )  # fmt: skip
        return lambda: tmux("capture-pane", "-p", "-t", "top")

    yield start
    subprocess.run([TMUX, "-S", socket, "kill-server"], capture_output=True)


def rack_cpu(screen: str) -> dict[str, tuple[int, str, str]]:
    """Rack -> (hosts, used cpu, allocatable cpu) as the screen shows them (cpu comes first)."""
    rows = (RACK_ROW.match(line) for line in screen.splitlines())
    return {r["rack"]: (int(r["hosts"]), r["used"], r["total"]) for r in rows if r}


def showing(screen: Callable[[], str], check: Callable[[str], bool]) -> Callable[[], str]:
    """For wait_for: the screen once `check` holds on it; else the screen is what was seen."""

    def look() -> str:
        text = screen()
        if not check(text):
            raise AssertionError("the screen:\n" + text)
        return text

    return look


def cores(quantity: str) -> float:
    return float(quantity[:-1]) / 1000 if quantity.endswith("m") else float(quantity)


def number(value: float) -> str:
    """As `tas top` prints a cpu amount (whole cores here)."""
    return f"{value:g}"


def api_rack_cpu(cluster: Cluster, rack: str, charged: Counter, job: str) -> tuple[int, str, str]:
    """What the API says of the rack: its nodes, the cpu the Workload's topologyAssignment
    charges on them plus that of running pods of no queue (not the Job's own), and their
    allocatable."""
    nodes = [
        n
        for n in cluster.get_json("nodes")["items"]
        if n["metadata"]["labels"].get(RACK_LABEL) == rack
    ]
    names = {n["metadata"]["name"] for n in nodes}
    used = float(sum(charged[name] for name in names))  # one cpu per pod
    for pod in cluster.get_json("pods", "-A")["items"]:
        spec, labels = pod["spec"], pod["metadata"].get("labels", {})
        queued = jobs.QUEUE_LABEL in labels or labels.get("job-name") == job
        if (
            spec.get("nodeName") in names
            and not queued
            and pod["status"].get("phase") not in TERMINAL
        ):
            used += sum(
                cores(c["resources"].get("requests", {}).get("cpu", "0"))
                for c in spec["containers"]
            )
    total = sum(cores(n["status"]["allocatable"]["cpu"]) for n in nodes)
    return len(nodes), number(used), number(total)


def test_top_shows_the_numbers_the_api_holds(
    cluster: Cluster, namespace: str, user_queue: str, operator, terminal
) -> None:
    cluster.apply(
        jobs.job("shown", user_queue, pods=4, annotations={REQUIRED: RACK_LABEL}), namespace
    )
    # 20 one-cpu pods in one rack of 2 x 8 cpus never fit: the Job waits with a reason
    cluster.apply(
        jobs.job("waits", user_queue, pods=20, annotations={REQUIRED: RACK_LABEL}), namespace
    )
    admitted = jobs.wait_admitted(cluster, namespace, "shown")
    key = f"{namespace}/{admitted['metadata']['name']}"
    charged = jobs.assignment_counts(admitted)
    labels = jobs.node_labels(cluster)
    (rack,) = {labels[host][RACK_LABEL] for host in charged}
    message = jobs.condition(
        jobs.wait_pending_message(cluster, namespace, "waits", "allows to fit"), "QuotaReserved"
    )["message"]
    waiting_key = f"{namespace}/{jobs.workload_of(cluster, namespace, 'waits')['metadata']['name']}"

    url = operator.view_url.rstrip("/")
    screen = terminal([sys.executable, "-m", "tas.cli", "top", "--url", url, "--interval", "0.5"])

    expected = api_rack_cpu(cluster, rack, charged, "shown")
    shown = wait_for(
        showing(screen, lambda text: rack_cpu(text).get(rack) == expected and key in text),
        timeout=30,
        what=f"rack {rack} at {expected} and {key} on screen",
    )
    row = next(line for line in shown.splitlines() if line.startswith(key))
    assert row.split()[1:] == [
        admitted["status"]["admission"]["clusterQueue"],
        str(sum(charged.values())),  # pods
        str(len(charged)),  # hosts
    ]
    pending = next(line for line in shown.splitlines() if line.startswith(waiting_key))
    assert pending.split()[2] == "20"
    flat = " ".join(shown.split())  # the reason column folds long messages
    assert " ".join(message.split()[:6]) in flat, message

    cluster.kubectl("delete", "job", "-n", namespace, "shown", "--wait=false")
    wait_for(
        lambda: jobs.workload_of(cluster, namespace, "shown") is None,
        timeout=60,
        what="the Job's Workload deleted",
    )
    freed = api_rack_cpu(cluster, rack, Counter(), "shown")
    wait_for(
        showing(screen, lambda text: rack_cpu(text).get(rack) == freed and key not in text),
        timeout=15,
        what=f"rack {rack} freed on screen ({freed})",
    )
