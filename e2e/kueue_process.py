"""Kueue's released manager as a host process against a local cluster, for bench/vs_kueue.py.

It runs out of cluster exactly as our operator does (see operator_process.py): the admin
kubeconfig, webhooks served on 127.0.0.1 with a self-signed certificate, and the webhook
configurations and CRD conversion webhooks pointed at https://127.0.0.1:<port>/... URLs.

Nothing of Kueue's is kept in this repository. The binary and the module's
config/components (CRDs, webhook manifests, the shipped manager configuration) come from the
cache that e2e/build-kueue.sh fills from the Go module proxy; this module reads them at run
time and changes only what running outside a cluster requires:

- the Configuration (config.kueue.x-k8s.io/v1beta2) is the shipped one with addresses on
  127.0.0.1, internal certificate management off, batch/v1 Jobs as the only integration,
  VisibilityOnDemand off (its extra API server needs the cluster's aggregation layer) and the
  TAS gates written out at their defaults (the same in v0.15.0 and v0.17.0; the gates v0.17.0
  added are left to their defaults). The Configuration's API (v1beta2), the command's flags
  and the metrics certificate path are the same in both releases;
- with internal certificate management off, Kueue insists on a metrics certificate at the
  fixed path /etc/kueue/metrics/certs. It gets one in a private mount namespace
  (`unshare -m`) with an overlay on /etc: the host's /etc is never written;
- the Lease of its leader election is deleted before each start (Kueue does not release it
  on shutdown, so a restart would otherwise first wait out the old one; ours releases it).

Never install this and our operator in one cluster: both serve kueue.x-k8s.io.
"""

from __future__ import annotations

import base64
import copy
import datetime
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import yaml

from e2e.harness import ROOT, Cluster, wait_for
from e2e.operator_process import HostProcess, free_port
from tas.webhooks.certs import make_ca, make_serving

BUILD_SCRIPT = ROOT / "e2e" / "build-kueue.sh"
NAMESPACE = "kueue-system"
LEASE = "c1f6bfd2.kueue.x-k8s.io"  # the shipped configuration's leaderElection.resourceName
METRICS_CERTS = "/etc/kueue/metrics/certs"  # fixed in Kueue's main.go when certs are external
# TAS gates at Kueue v0.15.0's defaults, which v0.17.0 keeps (pkg/features/kube_features.go of
# each module), written out so the run records them; VisibilityOnDemand (on by default) needs an
# in-cluster Service.
GATES = {
    "TopologyAwareScheduling": True,
    "TASProfileMixed": True,
    "TASFailedNodeReplacement": True,
    "TASFailedNodeReplacementFailFast": True,
    "TASReplaceNodeOnPodTermination": True,
    "TASBalancedPlacement": False,
    "VisibilityOnDemand": False,
}


def kueue_version() -> str:
    """e2e/versions.env's KUEUE_VERSION, or TAS_KUEUE_VERSION (as build-kueue.sh reads them)."""
    if os.environ.get("TAS_KUEUE_VERSION"):
        return os.environ["TAS_KUEUE_VERSION"]
    for line in (ROOT / "e2e" / "versions.env").read_text().splitlines():
        if line.startswith("KUEUE_VERSION="):
            return line.split("=", 1)[1].strip()
    raise RuntimeError("KUEUE_VERSION missing from e2e/versions.env")


def build(config_only: bool = False) -> Path:
    """The cache directory with `kueue` and `config/components`, built if missing (with
    `config_only`, only the manifests, fetched in seconds)."""
    args = ["--config"] if config_only else []
    out = subprocess.run(["bash", str(BUILD_SCRIPT), *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"build-kueue.sh failed:\n{out.stderr[-4000:]}")
    return Path(out.stdout.strip().splitlines()[-1])


def load_all(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


class KueueProcess(HostProcess):
    """Kueue's manager, started and stopped like OperatorProcess (same method names)."""

    name = "kueue"

    def __init__(
        self, cluster: Cluster, *, qps: float | None = None, config_only: bool = False
    ) -> None:
        """`config_only`: only the manifests are needed (the process is never started)."""
        self.cluster = cluster
        self.dir = build(config_only)
        self.components = self.dir / "config" / "components"
        self.version = kueue_version()
        self.qps = qps
        self.port = free_port()
        self.health_port = free_port()
        self.metrics_port = free_port()
        self.work = Path(tempfile.mkdtemp(prefix="kueue-"))
        self.log_path = self.work / "kueue.log"
        self.proc: subprocess.Popen | None = None
        self.starts = 0
        self._stored: dict[str, str] = {}
        self._serving_cert()

    # ---- what goes into the cluster -----------------------------------------------------------

    def _serving_cert(self) -> None:
        """One certificate for 127.0.0.1 serves the webhooks and the metrics endpoint."""
        now, year = datetime.datetime.now(datetime.UTC), datetime.timedelta(days=365)
        ca, ca_key = make_ca(now, year)
        cert, key = make_serving(ca, ca_key, ["127.0.0.1", "localhost"], now, year)
        self.ca_bundle = base64.b64encode(ca).decode()
        webhook = self.work / "webhook-certs"
        metrics = self.work / "etc-upper" / METRICS_CERTS.removeprefix("/etc/")
        for d in (webhook, metrics):
            d.mkdir(parents=True, exist_ok=True)
            (d / "tls.crt").write_bytes(cert)
            (d / "tls.key").write_bytes(key)
            (d / "tls.key").chmod(0o600)
        (self.work / "etc-work").mkdir()

    def _url(self, path: str) -> dict:
        return {"url": f"https://127.0.0.1:{self.port}{path}", "caBundle": self.ca_bundle}

    def crds(self) -> list[dict]:
        """Kueue's CRDs; those its kustomization gives a conversion webhook get one on 127.0.0.1."""
        crd_dir = self.components / "crd"
        kustomization = yaml.safe_load((crd_dir / "kustomization.yaml").read_text())
        conversion = {}
        for patch in kustomization.get("patches", []):
            for doc in load_all(crd_dir / patch["path"]):
                conversion[doc["metadata"]["name"]] = doc["spec"]["conversion"]
        out = []
        for path in sorted((crd_dir / "bases").glob("*.yaml")):
            for crd in load_all(path):
                conv = copy.deepcopy(conversion.get(crd["metadata"]["name"]))
                if conv:
                    service = conv["webhook"]["clientConfig"]["service"]
                    conv["webhook"]["clientConfig"] = self._url(service.get("path", "/convert"))
                    crd["spec"]["conversion"] = conv
                out.append(crd)
        return out

    def stored_version(self, plural: str) -> str:
        """The apiVersion Kueue stores `plural` in (kueue.x-k8s.io/v1beta1 up to v0.15,
        v1beta2 from v0.16), read from its CRD."""
        if plural not in self._stored:
            path = self.components / "crd" / "bases" / f"kueue.x-k8s.io_{plural}.yaml"
            (crd,) = load_all(path)
            version = next(v["name"] for v in crd["spec"]["versions"] if v.get("storage"))
            self._stored[plural] = f"{crd['spec']['group']}/{version}"
        return self._stored[plural]

    def webhook_configurations(self) -> list[dict]:
        """The shipped webhook configurations, their kustomization's patches applied (namespace
        selectors), named as the release names them, each webhook called by URL."""
        hook_dir = self.components / "webhook"
        patches: dict[tuple[str, str], dict] = {}
        for patch in yaml.safe_load((hook_dir / "kustomization.yaml").read_text())["patches"]:
            doc = yaml.safe_load(patch["patch"])
            for hook in doc.get("webhooks", []):
                patches[(doc["kind"], hook["name"])] = hook
        out = []
        for conf in load_all(hook_dir / "manifests.yaml"):
            conf["metadata"] = {"name": "kueue-" + conf["metadata"]["name"]}
            for hook in conf["webhooks"]:
                hook.update(patches.get((conf["kind"], hook["name"]), {}))
                hook["clientConfig"] = self._url(hook["clientConfig"]["service"]["path"])
            out.append(conf)
        return out

    def configuration(self) -> dict:
        shipped = self.components / "manager" / "controller_manager_config.yaml"
        cfg = yaml.safe_load(shipped.read_text())
        cfg["namespace"] = NAMESPACE
        cfg["health"] = {"healthProbeBindAddress": f"127.0.0.1:{self.health_port}"}
        cfg["metrics"] = {"bindAddress": f"127.0.0.1:{self.metrics_port}"}
        cfg["webhook"] = {
            "port": self.port,
            "host": "127.0.0.1",
            "certDir": str(self.work / "webhook-certs"),
        }
        cfg["leaderElection"] = {**cfg.get("leaderElection", {}), "resourceNamespace": NAMESPACE}
        cfg["internalCertManagement"] = {"enable": False}
        cfg["integrations"] = {"frameworks": ["batch/job"]}
        cfg["featureGates"] = dict(GATES)
        if self.qps is not None:
            cfg["clientConnection"] = {"qps": self.qps, "burst": int(2 * self.qps)}
        return cfg

    def install(self) -> None:
        """CRDs and Kueue's namespace; the webhooks are registered by start()."""
        self.cluster.kubectl(
            "apply", "--server-side", "--force-conflicts", "-f", "-",
            input=yaml.safe_dump_all(self.crds()),
        )  # fmt: skip
        self.cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
        self.cluster.kubectl("create", "namespace", NAMESPACE, check=False)

    # ---- the process --------------------------------------------------------------------------

    def command(self) -> list[str]:
        config = self.work / "config.yaml"
        config.write_text(yaml.safe_dump(self.configuration()))
        upper, work = self.work / "etc-upper", self.work / "etc-work"
        mount = f"mount -t overlay overlay -o lowerdir=/etc,upperdir={upper},workdir={work} /etc"
        kueue = f"exec {self.dir / 'kueue'} --config={config} --zap-log-level=info"
        return ["unshare", "-m", "--propagation", "private", "sh", "-c", f"{mount} && {kueue}"]

    def start(self, sync_timeout: float = 120) -> float:
        """Start and wait until ready (webhooks served). Returns the seconds that took."""
        self.starts += 1
        self.cluster.kubectl("delete", "lease", LEASE, "-n", NAMESPACE, "--ignore-not-found")
        self.cluster.apply(
            {"apiVersion": "v1", "kind": "List", "items": self.webhook_configurations()}
        )
        log = self.log_path.open("a")
        log.write(f"\n===== start {self.starts} =====\n")
        log.flush()
        env = {**os.environ, "KUBECONFIG": self.cluster.kubeconfig}
        started = time.monotonic()
        self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            wait_for(self._ready, timeout=sync_timeout, interval=0.1, what="Kueue ready")
        except Exception:
            self.kill()
            raise
        return time.monotonic() - started

    def _ready(self) -> bool:
        if self.proc is None or self.proc.poll() is not None:
            raise AssertionError(f"kueue exited:\n{self.log()[-3000:]}")
        url = f"http://127.0.0.1:{self.health_port}/readyz"
        try:
            return urllib.request.urlopen(url, timeout=1).status == 200
        except OSError:
            return False

    def stop(self, remove_webhooks: bool = True) -> None:
        self.terminate()
        if remove_webhooks:  # with failurePolicy Fail, Jobs could not be created without it
            for conf in self.webhook_configurations():
                kind = conf["kind"].lower()
                self.cluster.kubectl(
                    "delete", kind, conf["metadata"]["name"], "--ignore-not-found", check=False
                )

    def cleanup(self) -> None:
        shutil.rmtree(self.work, ignore_errors=True)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
