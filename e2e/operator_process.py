"""The operator as a host process against the test cluster (no container runs here)."""

from __future__ import annotations

import base64
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from e2e import chart
from e2e.harness import ROOT, Cluster, wait_for
from tas.api.constants import CONVERTED_CRDS

WEBHOOK_CONFIG = chart.WEBHOOK_CONFIG


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HostProcess:
    """A controller run as a host process (no container runs here), stopped by its own pid."""

    proc: subprocess.Popen | None = None

    def kill(self) -> None:
        """SIGKILL: nothing gets to clean up, as when a node dies under the operator."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)

    def terminate(self) -> None:
        """SIGTERM, as a rolling update does, and SIGKILL after 30 s."""
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


class OperatorProcess(HostProcess):
    def __init__(
        self,
        cluster: Cluster,
        *,
        kubeconfig: str | None = None,
        gates: str = "",
        integrations: str | None = None,
        extra: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        command: Sequence[str] | None = None,
    ):
        """`command` runs `tas` (default: this venv's); e.g. the image's, through image/run.sh.
        `integrations` (--integrations): default, what the installed chart's Deployment passes."""
        self.cluster = cluster
        self.command = list(command or [str(Path(sys.executable).parent / "tas")])
        self.env = env or {}
        self.kubeconfig = kubeconfig or cluster.kubeconfig
        self.gates = gates
        self.integrations = integrations
        self.extra = extra
        self.port = chart.webhook_port(cluster)  # shared by every operator of the cluster
        self.metrics_port = free_port()
        self.view_port = free_port()  # each operator its own: several may run in one test
        self.log_path = Path(tempfile.mkdtemp(prefix="tas-operator-")) / "operator.log"
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    def start(self, sync_timeout: float = 120) -> float:
        """Start the process and wait until it has synced and serves trusted webhooks."""
        mark = self.launch()
        started = time.monotonic()
        try:
            wait_for(
                lambda: self._alive() and "caches synced" in self.log().split(mark)[-1],
                timeout=sync_timeout,
                what="the operator to sync its caches",
            )
            synced = time.monotonic() - started
            wait_for(
                lambda: self._alive() and self._webhook_listening() and self.webhooks_trusted(),
                timeout=30,
                what="the operator's webhooks to be served, with its CA in their configurations",
            )
        except Exception:
            self.kill()  # never leave a half-started operator behind
            raise
        return synced

    def launch(self) -> str:
        """Start the process without waiting for it (as a kubelet starts a container); returns
        the line that marks this start in the log."""
        self.starts += 1
        cmd = [
            *self.command,
            "operator",
            f"--kubeconfig={self.kubeconfig}",
            f"--webhook-port={self.port}",
            "--webhook-host=127.0.0.1",
            f"--webhook-cert-secret={chart.NAMESPACE}/{chart.CERT_SECRET}",
            f"--leader-election-namespace={chart.NAMESPACE}",
            f"--metrics-port={self.metrics_port}",
            f"--view-address=127.0.0.1:{self.view_port}",
            "--log-level=DEBUG",
            *self.extra,
        ]
        if self.gates:
            cmd.append(f"--feature-gates={self.gates}")
        integrations = self.integrations
        if integrations is None:
            integrations = chart.deployment_flag(self.cluster, "integrations")
        if integrations is not None:
            cmd.append(f"--integrations={integrations}")
        with self.log_path.open("a") as log:  # the child keeps its own copy of the descriptor
            log.write(f"\n===== start {self.starts} =====\n")
            log.flush()
            self.proc = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env={**os.environ, **self.env}
            )
        return f"===== start {self.starts} ====="

    def _alive(self) -> bool:
        if self.proc is None or self.proc.poll() is not None:
            raise AssertionError(f"operator exited:\n{self.log()[-3000:]}")
        return True

    def _webhook_listening(self) -> bool:
        """The webhook server accepts connections (after a restart on the same port, the
        configuration names it before the new process serves it)."""
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
        except OSError:
            return False
        return True

    def webhooks_trusted(self) -> bool:
        """Both webhook configurations, and the conversion webhook of every CRD that has one,
        carry the CA of the certificate in the chart's Secret."""
        secret = self.cluster.get_json("secret", "-n", chart.NAMESPACE, chart.CERT_SECRET)
        ca = (secret.get("data") or {}).get("ca.crt")
        if not ca:
            return False
        for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration"):
            hooks = self.cluster.get_json(kind, WEBHOOK_CONFIG).get("webhooks") or []
            if not hooks or any(h["clientConfig"].get("caBundle") != ca for h in hooks):
                return False
        for name in CONVERTED_CRDS:
            conversion = self.cluster.get_json("crd", name)["spec"]["conversion"]
            if conversion["webhook"]["clientConfig"].get("caBundle") != ca:
                return False
        return base64.b64decode(ca) != b""

    def stop(self) -> None:
        """SIGTERM. The webhook configurations stay: they belong to the chart, and queued Jobs
        are refused while no operator serves them (as with Kueue)."""
        self.terminate()

    @property
    def view_url(self) -> str:
        """The topology view's page (served once the caches have synced)."""
        return f"http://127.0.0.1:{self.view_port}/"

    def metric(self, name: str, labels: str = "") -> float:
        """One sample from the operator's Prometheus endpoint (0 when absent)."""
        text = (
            urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=10)
            .read()
            .decode()
        )
        series = f"{name}{{{labels}}}" if labels else name
        for line in text.splitlines():
            if line.startswith(series + " "):
                return float(line.split()[-1])
        return 0.0

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
