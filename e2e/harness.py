"""What tests need to talk to a real cluster: the local one from cluster.sh, or any in KUBECONFIG."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parent.parent
CLUSTER_SH = ROOT / "e2e" / "cluster.sh"
T = TypeVar("T")


class WaitTimeout(AssertionError):
    pass


def wait_for(
    check: Callable[[], T], *, timeout: float = 30.0, interval: float = 0.2, what: str = ""
) -> T:
    """Poll `check` until it returns something truthy, or fail after `timeout` seconds.

    Tests observe the cluster from outside, so they poll with a deadline; never a fixed sleep.
    The last exception or value is in the failure message, to show what was seen.
    """
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            value = check()
            if value:
                return value
            last = value
        except Exception as exc:  # the object may not exist yet
            last = exc
        if time.monotonic() > deadline:
            raise WaitTimeout(
                f"timed out after {timeout:.0f}s waiting for {what or check}: last {last!r}"
            )
        time.sleep(interval)


@dataclass
class Cluster:
    kubeconfig: str
    bin_dir: str | None  # where kubectl/helm come from; None means PATH
    local_dir: str | None  # the local cluster's directory (logs), None for an external cluster

    def tool(self, name: str) -> str:
        if self.bin_dir and (Path(self.bin_dir) / name).exists():
            return str(Path(self.bin_dir) / name)
        found = shutil.which(name)
        if not found:
            raise FileNotFoundError(f"{name} not found (build it with `make bins`)")
        return found

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        cmd = [self.tool("kubectl"), f"--kubeconfig={self.kubeconfig}", *args]
        result = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=120)
        if check and result.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed ({result.returncode}): {result.stderr.strip()}"
            )
        return result

    def get_json(self, *args: str) -> dict:
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)

    def apply(self, manifest: dict | str, namespace: str | None = None) -> None:
        text = manifest if isinstance(manifest, str) else json.dumps(manifest)
        ns = [f"--namespace={namespace}"] if namespace else []
        self.kubectl("apply", *ns, "-f", "-", input=text)

    def create_namespace(self, prefix: str = "t") -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        self.kubectl("create", "namespace", name)
        return name

    def delete_namespace(self, name: str, timeout: int = 90) -> None:
        """Delete a namespace and wait until it is gone, so that its pods hold no capacity in
        the next test. A pod would otherwise end only after its grace period, or, on a node a
        test removed, after the pod garbage collector's quarantine (about a minute each). A
        terminating namespace takes no new pods, so its pods are then removed at once."""
        self.kubectl("delete", "namespace", name, "--wait=false", check=False)
        self.kubectl(
            "delete", "pods", "--all", f"--namespace={name}", "--grace-period=0", "--force",
            "--wait=false", check=False,
        )  # fmt: skip
        self.kubectl(
            "wait", "--for=delete", f"namespace/{name}", f"--timeout={timeout}s", check=False
        )

    def logs(self) -> str:
        """The tail of every local component's log, for a failing test to show."""
        if not self.local_dir:
            return ""
        parts = []
        for log in sorted(Path(self.local_dir).glob("*.log")):
            lines = log.read_text(errors="replace").splitlines()[-15:]
            parts.append(f"--- {log.name} ---\n" + "\n".join(lines))
        return "\n".join(parts)


def cluster_env(directory: str | Path, api_port: int, etcd_port: int) -> dict[str, str]:
    """The environment that makes cluster.sh start (or stop) a cluster of its own: its
    directory and ports, so that several run side by side."""
    return {
        "TAS_CLUSTER_DIR": str(directory),
        "TAS_API_PORT": str(api_port),
        "TAS_ETCD_PORT": str(etcd_port),
    }


def local_cluster(env: dict[str, str] | None = None) -> Cluster:
    """Start the local cluster (or reuse the running one) and describe it. `env` (see
    cluster_env) overrides the process environment's TAS_* settings."""
    out = subprocess.run(
        ["bash", str(CLUSTER_SH), "up"],
        capture_output=True,
        text=True,
        timeout=3600,
        env={**os.environ, **(env or {})},
    )
    if out.returncode != 0:
        raise RuntimeError(f"cluster.sh up failed:\n{out.stderr[-4000:]}")
    kubeconfig = out.stdout.strip().splitlines()[-1].removeprefix("KUBECONFIG=")
    local_dir = str(Path(kubeconfig).parent)
    bin_dir = (Path(local_dir) / "bin-dir").read_text().strip()
    return Cluster(kubeconfig=kubeconfig, bin_dir=bin_dir, local_dir=local_dir)


def stop_local_cluster(env: dict[str, str] | None = None) -> None:
    """`cluster.sh down` for the cluster `env` names: stops its processes, removes its data."""
    subprocess.run(
        ["bash", str(CLUSTER_SH), "down"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def external_cluster(kubeconfig: str) -> Cluster:
    bins = subprocess.run(
        ["bash", str(ROOT / "e2e" / "build-bins.sh"), "--dir"], capture_output=True, text=True
    )
    bin_dir = bins.stdout.strip().splitlines()[-1] if bins.returncode == 0 else None
    return Cluster(kubeconfig=kubeconfig, bin_dir=bin_dir, local_dir=None)


def cluster_from_env() -> Cluster:
    kubeconfig = os.environ.get("KUBECONFIG")
    return external_cluster(kubeconfig) if kubeconfig else local_cluster()
