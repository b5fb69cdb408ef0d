"""The Helm chart installed into the test cluster, and a kubeconfig with its ServiceAccount's
token: the operator runs on the host (no container runs here) with exactly the chart's RBAC.

The chart's webhook configurations call https://127.0.0.1:<webhook_port> instead of its
Service (nothing in this cluster routes Services to the host). Every operator process of one
cluster listens on that one port together (kopf's server sets SO_REUSEPORT), so the kernel
spreads the calls over the live ones as a Service spreads them over replicas.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from e2e.harness import ROOT, Cluster

RELEASE = "tas-operator"
NAMESPACE = "tas-system"
CHART = ROOT / "helm" / "tas-operator"
CERT_SECRET = f"{RELEASE}-webhook-cert"
WEBHOOK_CONFIG = "tas-operator.kueue.x-k8s.io"  # the chart's <fullname>-webhook-cert


def webhook_port(cluster: Cluster) -> int:
    """The port the host operators of `cluster` serve webhooks on: its API server's port + 2
    (each local cluster has its own API port, so clusters side by side never share one)."""
    return api_port(cluster) + 2


def api_port(cluster: Cluster) -> int:
    server = cluster.kubectl(
        "config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"
    ).stdout
    return urlsplit(server).port or 443


# A node label no node has: the chart's own pods stay Pending. The operator under test runs on
# the host; on a kwok node its pods would take capacity (200m each) that the tests' whole-node
# arithmetic counts, on whichever topology nodes the scheduler picked.
NO_NODE = "tas-operator\\.io/e2e-no-node"


def host_values(cluster: Cluster) -> tuple[str, ...]:
    """Values for an operator on the host: the webhooks are called by URL, and the chart's
    Deployment runs nowhere."""
    return (
        "--set",
        f"webhook.url=https://127.0.0.1:{webhook_port(cluster)}",
        "--set-string",
        f"nodeSelector.{NO_NODE}=true",
    )


def helm(cluster: Cluster, *args: str) -> str:
    cmd = [cluster.tool("helm"), f"--kubeconfig={cluster.kubeconfig}", *args]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


def install(cluster: Cluster, *values: str) -> None:
    """Install, taking over what exists (CRDs or webhook configurations from an earlier run)."""
    if RELEASE in helm(cluster, "list", "-n", NAMESPACE, "-q").split():
        return
    helm(
        cluster,
        "install",
        RELEASE,
        str(CHART),
        "-n",
        NAMESPACE,
        "--create-namespace",
        "--take-ownership",
        *host_values(cluster),
        *values,
    )
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")


def upgrade(cluster: Cluster, *values: str) -> None:
    helm(cluster, "upgrade", RELEASE, str(CHART), "-n", NAMESPACE, *host_values(cluster), *values)


def service_account_kubeconfig(cluster: Cluster, directory: Path | None = None) -> str:
    token = cluster.kubectl(
        "create", "token", RELEASE, "-n", NAMESPACE, "--duration=4h"
    ).stdout.strip()
    server = cluster.kubectl(
        "config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"
    ).stdout
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "sa",
        "clusters": [
            {"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}
        ],
        "users": [{"name": "sa", "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "c", "user": "sa"}}],
    }
    path = (directory or Path(tempfile.mkdtemp(prefix="tas-sa-"))) / "sa-kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def deployment_flag(cluster: Cluster, name: str) -> str | None:
    """The value of --<name> the installed Deployment passes (None when it passes none): what a
    restarted pod would get; None too when the chart is not installed."""
    found = cluster.kubectl(
        "get", "deployment", "-n", NAMESPACE, RELEASE, "-o", "json", check=False
    )
    if found.returncode != 0:
        return None
    deployment = json.loads(found.stdout)
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    return next((a.split("=", 1)[1] for a in args if a.startswith(f"--{name}=")), None)


def deployment_gates(cluster: Cluster) -> str:
    """The --feature-gates the installed Deployment passes."""
    return deployment_flag(cluster, "feature-gates") or ""


@contextlib.contextmanager
def webhooks_fail_open(cluster: Cluster) -> Iterator[None]:
    """Let queued Jobs be created while no operator serves the webhooks (a benchmark's backlog
    made while the operator is down): their failurePolicy is Ignore until the block ends."""

    def set_policy(policy: str) -> None:
        for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration"):
            hooks = cluster.get_json(kind, WEBHOOK_CONFIG)["webhooks"]
            ops = [
                {"op": "replace", "path": f"/webhooks/{i}/failurePolicy", "value": policy}
                for i in range(len(hooks))
            ]
            cluster.kubectl("patch", kind, WEBHOOK_CONFIG, "--type=json", "-p", json.dumps(ops))

    set_policy("Ignore")
    try:
        yield
    finally:
        set_policy("Fail")
