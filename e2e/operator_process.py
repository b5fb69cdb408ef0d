"""The operator as a host process against the test cluster (no container runs here)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from e2e.harness import ROOT, Cluster, wait_for

WEBHOOK_CONFIG = "tas-operator.kueue.x-k8s.io"


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
        """SIGTERM, and SIGKILL after 30 s."""
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
        extra: tuple[str, ...] = (),
    ):
        self.cluster = cluster
        self.kubeconfig = kubeconfig or cluster.kubeconfig
        self.gates = gates
        self.extra = extra
        self.port = free_port()
        self.metrics_port = free_port()
        self.log_path = Path(tempfile.mkdtemp(prefix="tas-operator-")) / "operator.log"
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    def start(self, sync_timeout: float = 120) -> float:
        try:
            return self._start(sync_timeout)
        except Exception:
            # A port free when chosen may be taken by the time the process binds it (other
            # work shares the machine): choose again, once.
            if (
                "Address already in use"
                not in self.log().split(f"===== start {self.starts} =====")[-1]
            ):
                raise
            self.port, self.metrics_port = free_port(), free_port()
            return self._start(sync_timeout)

    def _start(self, sync_timeout: float) -> float:
        self.starts += 1
        cmd = [
            str(Path(sys.executable).parent / "tas"),
            "operator",
            f"--kubeconfig={self.kubeconfig}",
            f"--webhook-port={self.port}",
            f"--metrics-port={self.metrics_port}",
            "--log-level=DEBUG",
            *self.extra,
        ]
        if self.gates:
            cmd.append(f"--feature-gates={self.gates}")
        log = self.log_path.open("a")
        log.write(f"\n===== start {self.starts} =====\n")
        log.flush()
        self.proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=os.environ.copy()
        )
        mark = f"===== start {self.starts} ====="
        started = time.monotonic()
        try:
            wait_for(
                lambda: self._alive() and "caches synced" in self.log().split(mark)[-1],
                timeout=sync_timeout,
                what="the operator to sync its caches",
            )
            synced = time.monotonic() - started
            wait_for(
                lambda: self._alive() and self._webhook_listening() and self._webhook_registered(),
                timeout=30,
                what="the operator's webhooks to be served and registered",
            )
        except Exception:
            self.kill()  # never leave a half-started operator behind
            raise
        return synced

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

    def _webhook_registered(self) -> bool:
        conf = self.cluster.get_json("mutatingwebhookconfiguration", WEBHOOK_CONFIG)
        return any(
            f":{self.port}/" in (w["clientConfig"].get("url") or "") for w in conf["webhooks"]
        )

    def stop(self, remove_webhooks: bool = True) -> None:
        self.terminate()
        if not remove_webhooks:
            return
        # Webhook configurations outlive the process; without it, labelled Jobs could not be created.
        for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration"):
            self.cluster.kubectl("delete", kind, WEBHOOK_CONFIG, "--ignore-not-found", check=False)

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
