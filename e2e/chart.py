"""The Helm chart installed into the test cluster, and a kubeconfig with its ServiceAccount's
token: the operator runs on the host (no container runs here) with exactly the chart's RBAC."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import yaml

from e2e.harness import ROOT, Cluster

RELEASE = "tas-operator"
NAMESPACE = "tas-system"
CHART = ROOT / "helm" / "tas-operator"


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
        *values,
    )
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")


def upgrade(cluster: Cluster, *values: str) -> None:
    helm(cluster, "upgrade", RELEASE, str(CHART), "-n", NAMESPACE, *values)


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


def deployment_gates(cluster: Cluster) -> str:
    """The --feature-gates the installed Deployment passes: what a restarted pod would get."""
    deployment = cluster.get_json("deployment", "-n", NAMESPACE, RELEASE)
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    return next((a.split("=", 1)[1] for a in args if a.startswith("--feature-gates=")), "")
