"""`make demo`: the operator on a local cluster, Kueue's example flow, and where every pod went.

Idempotent: a second run reuses the running cluster, the installed chart, the running operator
and the submitted Jobs, and prints the picture again. `make demo-down` stops it all.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from e2e import chart, topology
from e2e.chart import install, service_account_kubeconfig
from e2e.harness import ROOT, Cluster, local_cluster, wait_for
from tas.api.constants import CONVERTED_CRDS

EXAMPLES = ROOT / "examples"
SAMPLE_PREFIX = "tas-sample-preferred"


def port_open(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def say(text: str) -> None:
    print(f"==> {text}", flush=True)


def operator_running(pid_file: Path) -> bool:
    if not pid_file.exists():
        return False
    try:
        os.kill(int(pid_file.read_text()), 0)
        return True
    except (OSError, ValueError):
        return False


def start_operator(cluster: Cluster, state_dir: Path) -> None:
    pid_file, log = state_dir / "operator.pid", state_dir / "operator.log"
    if operator_running(pid_file):
        say("the operator is already running")
        return
    kubeconfig = service_account_kubeconfig(cluster, state_dir)
    tas = Path(sys.executable).parent / "tas"
    port = chart.webhook_port(cluster)
    proc = subprocess.Popen(
        [
            str(tas),
            "operator",
            f"--kubeconfig={kubeconfig}",
            f"--webhook-port={port}",
            "--webhook-host=127.0.0.1",
            f"--webhook-cert-secret={chart.NAMESPACE}/{chart.CERT_SECRET}",
            f"--leader-election-namespace={chart.NAMESPACE}",
            "--metrics-port=9090",
        ],
        stdout=log.open("a"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    pid_file.write_text(str(proc.pid))
    wait_for(lambda: "caches synced" in log.read_text(), timeout=60, what="the operator to sync")
    wait_for(lambda: port_open(port), timeout=30, what="the webhook server")
    wait_for(
        lambda: trusted(cluster),
        timeout=30,
        what="the operator's CA in the webhook configurations and the CRDs' conversion",
    )
    say(
        f"operator running under the chart's ServiceAccount (log: {log}, metrics: http://127.0.0.1:9090/metrics)"
    )


def trusted(cluster: Cluster) -> bool:
    """The webhooks (admission, and the CRDs' conversion) carry the operator's CA: Kueue's
    v1beta1 example queues are stored through the conversion webhook."""
    paths = [("mutatingwebhookconfiguration", chart.WEBHOOK_CONFIG, "webhooks[0]")]
    paths += [("crd", name, "spec.conversion.webhook") for name in CONVERTED_CRDS]
    return all(
        cluster.kubectl(
            "get", kind, name, "-o", f"jsonpath={{.{path}.clientConfig.caBundle}}"
        ).stdout
        for kind, name, path in paths
    )


def stop_operator(state_dir: Path) -> None:
    pid_file = state_dir / "operator.pid"
    if operator_running(pid_file):
        os.kill(int(pid_file.read_text()), signal.SIGTERM)
    pid_file.unlink(missing_ok=True)


def submit(cluster: Cluster) -> None:
    for name in ("topology.yaml", "resource-flavor.yaml", "cluster-queue.yaml", "local-queue.yaml"):
        cluster.kubectl("apply", "-f", str(EXAMPLES / "kueue-tas" / name))
    jobs = cluster.get_json("jobs", "-n", "default")["items"]
    if not any(j["metadata"]["name"].startswith(SAMPLE_PREFIX) for j in jobs):
        cluster.kubectl(
            "create", "-n", "default", "-f", str(EXAMPLES / "kueue-tas" / "sample-job.yaml")
        )
    for name in ("required-rack.yaml", "slices.yaml", "infeasible.yaml"):
        cluster.kubectl("apply", "-n", "default", "-f", str(EXAMPLES / "jobs" / name))


def picture(cluster: Cluster) -> str:
    nodes = cluster.get_json("nodes", "-l", "type=kwok")["items"]
    pods = cluster.get_json("pods", "-n", "default")["items"]
    per_node: dict[str, Counter] = defaultdict(Counter)
    for pod in pods:
        node = pod["spec"].get("nodeName")
        job = pod["metadata"].get("labels", {}).get("job-name", "?")
        if node and pod["status"].get("phase") == "Running":
            per_node[node][job] += 1
    short = {
        job: chr(ord("A") + i)
        for i, job in enumerate(sorted({j for c in per_node.values() for j in c}))
    }
    tree: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for node in nodes:
        labels = node["metadata"]["labels"]
        tree[labels[topology.BLOCK_LABEL]][labels[topology.RACK_LABEL]].append(
            node["metadata"]["name"]
        )
    lines = ["", "Where every pod landed (one letter per pod):"]
    lines += [f"  {letter} = {job}" for job, letter in short.items()]
    for block in sorted(tree):
        lines.append(f"block {block}")
        for rack in sorted(tree[block]):
            cells = []
            for host in sorted(tree[block][rack]):
                marks = "".join(short[j] * n for j, n in sorted(per_node[host].items()))
                cells.append(f"{host.split('-')[-1]}[{marks:<8}]")
            lines.append(f"  rack {rack:<6} " + " ".join(cells))
    return "\n".join(lines)


def waiting(cluster: Cluster) -> str:
    lines = []
    for wl in cluster.get_json("workloads", "-n", "default")["items"]:
        cond = next(
            (c for c in wl.get("status", {}).get("conditions", []) if c["type"] == "QuotaReserved"),
            None,
        )
        if cond and cond["status"] == "False":
            owner = wl["metadata"]["ownerReferences"][0]["name"]
            lines.append(f"  job {owner} waits: {cond['message']}")
    return "\n".join(["", "Waiting:", *lines]) if lines else ""


def main(argv: list[str]) -> int:
    if argv[1:] == ["down"]:
        state_dir = Path(os.environ["TAS_CLUSTER_DIR"])
        stop_operator(state_dir) if state_dir.exists() else None
        return 0
    t0 = time.monotonic()
    say("local cluster (the first run builds Kubernetes from source: tens of minutes)")
    cluster = local_cluster()
    state_dir = Path(cluster.local_dir or ".")
    say("32 kwok nodes: 2 blocks x 4 racks x 4 hosts, 8 cpu each")
    cluster.apply(topology.node_list(topology.Shape(blocks=2, racks=4, hosts=4)))
    cluster.kubectl("wait", "--for=condition=Ready", "node", "-l", "type=kwok", "--timeout=120s")
    say("helm install the chart (CRDs, RBAC, webhook configurations)")
    install(cluster)
    start_operator(cluster, state_dir)
    say(
        "Kueue's TAS example (Topology, ResourceFlavor, ClusterQueue, LocalQueue, 40-pod Job) and three more Jobs"
    )
    submit(cluster)

    def settled() -> bool:
        pods = cluster.get_json("pods", "-n", "default")["items"]
        return sum(1 for p in pods if p["status"].get("phase") == "Running") >= 40 + 16 + 16

    wait_for(settled, timeout=180, interval=1, what="the admitted Jobs' pods to run")
    print(picture(cluster))
    print(waiting(cluster))
    kubeconfig = cluster.kubeconfig
    print(f"""
Ready in {time.monotonic() - t0:.0f}s. Explore:
  export KUBECONFIG={kubeconfig}
  alias kubectl={cluster.tool("kubectl")}
  kubectl get workloads -n default
  kubectl describe workload -n default      # conditions, events, topologyAssignment
  kubectl get clusterqueue tas-cluster-queue -o yaml
  curl -s http://127.0.0.1:9090/metrics | grep ^tas_
  open http://127.0.0.1:8090                # tas view: the topology, live
  {Path(sys.executable).parent / "tas"} top                   # the same in this terminal
Stop it all with: make demo-down""")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
