"""The JobSet and LeaderWorkerSet controllers, real, out of cluster on the local control plane.

`e2e/build-bins.sh manifests` copies each one's CRDs and webhook manifests from its Go module
into the binary cache (seconds); `e2e/build-bins.sh integrations` also builds its manager (cold:
about 10 min each). Here:

- `install_crds(cluster, name)`: the CRDs from the module, applied server side.
- `Controller(cluster, name).start()`: a CA and a serving certificate for 127.0.0.1 made by the
  harness, the module's webhook configurations (kustomize's patches applied: the objectSelector
  of its pod webhooks) calling https://127.0.0.1:<port>/<path> with that CA, a configuration
  file (webhook on 127.0.0.1 with our certificate, no internal certificate management, no
  leader election, no metrics), and the manager run with the cluster's admin kubeconfig.
  `stop()` stops it and deletes its webhook configurations.

Each controller's webhook port is the API server's port + 3 (JobSet) or + 4 (LeaderWorkerSet),
beside our own (+ 2), so clusters side by side never share one.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from e2e import chart
from e2e.harness import ROOT, Cluster, wait_for
from tas.webhooks import certs


@dataclass(frozen=True)
class Spec:
    name: str
    version_key: str
    port_offset: int
    config_api: str


SPECS = {
    "jobset": Spec("jobset", "JOBSET_VERSION", 3, "config.jobset.x-k8s.io/v1alpha1"),
    "lws": Spec("lws", "LWS_VERSION", 4, "config.lws.x-k8s.io/v1alpha1"),
}


def versions() -> dict[str, str]:
    return dict(
        line.split("=", 1)
        for line in (ROOT / "e2e" / "versions.env").read_text().splitlines()
        if "=" in line and not line.startswith("#")
    )


def directory(cluster: Cluster, name: str) -> Path:
    """Where build-bins.sh put the controller's files (built or not)."""
    spec = SPECS[name]
    bins = Path(cluster.bin_dir or _bin_dir())
    return bins / "integrations" / f"{name}-v{versions()[spec.version_key]}"


def _bin_dir() -> str:
    out = subprocess.run(
        ["bash", str(ROOT / "e2e" / "build-bins.sh"), "--dir"], capture_output=True, text=True
    )
    return out.stdout.strip().splitlines()[-1]


def built(cluster: Cluster, name: str) -> bool:
    return (directory(cluster, name) / "manager").is_file()


def install_crds(cluster: Cluster, name: str) -> list[str]:
    """Apply the module's CRDs and wait until they are established; their names."""
    names = []
    for path in sorted((directory(cluster, name) / "crds").glob("*.yaml")):
        cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(path))
        names.append(yaml.safe_load(path.read_text())["metadata"]["name"])
    for crd in names:
        wait_for(
            lambda crd=crd: any(
                c["type"] == "Established" and c["status"] == "True"
                for c in cluster.get_json("crd", crd).get("status", {}).get("conditions", [])
            ),
            timeout=60,
            what=f"CRD {crd} established",
        )
    return names


def webhook_configurations(cluster: Cluster, name: str, url: str, ca: bytes) -> list[dict]:
    """The module's configurations with its kustomize patches (replace /webhooks/N), calling
    `url` with our CA; named after the controller, so several sit side by side."""
    folder = directory(cluster, name) / "webhook"
    docs = [d for d in yaml.safe_load_all((folder / "manifests.yaml").read_text()) if d]
    patches: dict[str, list] = {}
    for path in folder.glob("*patch*.yaml"):
        kind = "Mutating" if "mutating" in path.name else "Validating"
        patches[kind] = yaml.safe_load(path.read_text()) or []
    out = []
    for doc in docs:
        kind = doc["kind"].removesuffix("WebhookConfiguration")
        for op in patches.get(kind, []):
            index = int(op["path"].rsplit("/", 1)[1])
            doc["webhooks"][index] = op["value"]
        for hook in doc["webhooks"]:
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": url + path, "caBundle": _b64(ca)}
        doc["metadata"] = {"name": f"e2e-{name}-{kind.lower()}"}
        out.append(doc)
    return out


def _b64(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode()


class Controller:
    """One integration's real controller as a host process against `cluster`."""

    def __init__(self, cluster: Cluster, name: str) -> None:
        self.cluster = cluster
        self.spec = SPECS[name]
        self.name = name
        self.port = chart.api_port(cluster) + self.spec.port_offset
        self.dir = Path(tempfile.mkdtemp(prefix=f"tas-e2e-{name}-"))
        self.log_path = self.dir / "manager.log"
        self.proc: subprocess.Popen | None = None
        self.configurations: list[dict] = []

    def start(self) -> Controller:
        install_crds(self.cluster, self.name)
        now = datetime.datetime.now(datetime.UTC)
        ca, ca_key = certs.make_ca(now, datetime.timedelta(days=1))
        cert, key = certs.make_serving(ca, ca_key, ["127.0.0.1"], now, datetime.timedelta(days=1))
        cert_dir = self.dir / "certs"
        cert_dir.mkdir()
        (cert_dir / "tls.crt").write_bytes(cert)
        certs.write_private(cert_dir / "tls.key", key)
        config = {
            "apiVersion": self.spec.config_api,
            "kind": "Configuration",
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "webhook": {"port": self.port, "host": "127.0.0.1", "certDir": str(cert_dir)},
            "metrics": {"bindAddress": "0"},
            "health": {"healthProbeBindAddress": "0"},
        }
        (self.dir / "config.yaml").write_text(yaml.safe_dump(config))
        with self.log_path.open("w") as log:
            self.proc = subprocess.Popen(
                [
                    str(directory(self.cluster, self.name) / "manager"),
                    f"--config={self.dir / 'config.yaml'}",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "KUBECONFIG": self.cluster.kubeconfig},
                cwd=self.dir,
            )
        self.configurations = webhook_configurations(
            self.cluster, self.name, f"https://127.0.0.1:{self.port}", ca
        )
        for doc in self.configurations:
            self.cluster.apply(json.dumps(doc))
        wait_for(self._serving, timeout=60, what=f"the {self.name} controller's webhooks")
        return self

    def _serving(self) -> bool:
        if self.proc is None or self.proc.poll() is not None:
            raise AssertionError(f"{self.name} controller exited:\n{self.log()[-3000:]}")
        import socket

        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
        except OSError:
            return False
        time.sleep(0.5)  # the webhook server listens just before its handlers are registered
        return True

    def stop(self) -> None:
        for doc in self.configurations:
            kind = doc["kind"].lower()
            self.cluster.kubectl(
                "delete", kind, doc["metadata"]["name"], "--ignore-not-found", check=False
            )
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
