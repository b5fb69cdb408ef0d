"""The integrations' real controllers, out of cluster on the local control plane: JobSet,
LeaderWorkerSet, the Kubeflow training-operator (PyTorchJob, TFJob, XGBoostJob, PaddleJob), the
MPI operator (MPIJob v2beta1), KubeRay (RayJob, RayCluster, RayService), Kubeflow Trainer
(TrainJob) and AppWrapper.

`e2e/build-bins.sh manifests` copies each one's CRDs and webhook manifests from its Go module
into the binary cache (seconds); `e2e/build-bins.sh integrations` also builds its manager (cold
times in build-bins.sh). Here:

- `install_crds(cluster, name)`: the CRDs from the module, applied server side.
- `Controller(cluster, name).start()`: the manager run with the cluster's admin kubeconfig, no
  leader election, no metrics, a health port and a webhook port of its own, and `stop()`.
  Webhooks, where the controller serves them: a CA and a serving certificate for 127.0.0.1 made
  by the harness and the module's webhook configurations (kustomize's patches applied) calling
  https://127.0.0.1:<port>/<path> with that CA. JobSet and LeaderWorkerSet read them from a
  configuration file; the training-operator and Trainer manage theirs with cert-controller,
  which waits for a Secret holding a CA and a certificate for its Service, and for its webhook
  configuration to take that CA, before it starts any reconciler: the harness writes both.
  KubeRay, the MPI operator and AppWrapper run without webhooks (Kueue's own webhooks, ours
  here, are what admission needs).

Ports: the API server's + the spec's offset (webhooks) and + 10 + offset (health), so clusters
side by side never share one; our operator's webhooks are at + 2. The MPI operator's health port
is fixed by its code (8080, all interfaces): one MPI operator per machine at a time.
"""

from __future__ import annotations

import base64
import datetime
import json
import os
import re
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from e2e import chart
from e2e.harness import ROOT, Cluster, wait_for
from tas.webhooks import certs

# cert-controller refuses a certificate that expires within 90 days (its look-ahead).
ROTATOR_CERT_LIFETIME = datetime.timedelta(days=365)
# Where cert-controller looks for the mounted certificate (a constant in both controllers' code);
# the webhook server itself reads $TMPDIR/k8s-webhook-server/serving-certs, one per process.
ROTATOR_MOUNT = Path("/tmp/k8s-webhook-server/serving-certs")
MPI_OPERATOR_HEALTH_PORT = 8080  # a constant in mpi-operator's server.go


@dataclass(frozen=True)
class Rotator:
    """What a controller's cert-controller rotator is set up with (its cert package)."""

    namespace: str
    secret: str
    service: str
    ca_name: str
    configuration: str  # the ValidatingWebhookConfiguration it injects its CA into

    @property
    def dns_name(self) -> str:
        return f"{self.service}.{self.namespace}.svc"


@dataclass(frozen=True)
class Spec:
    name: str
    version_key: str
    port_offset: int
    args: Callable[[Controller], list[str]]
    env: dict[str, str] = field(default_factory=dict)
    webhooks: bool = True
    rotator: Rotator | None = None
    namespace: str = ""  # created before start: its leases, secrets or configuration live there
    needs_crds: tuple[str, ...] = ()  # other integrations' CRDs it watches


def _config_file_args(api: str) -> Callable[[Controller], list[str]]:
    """JobSet and LeaderWorkerSet: a controller-runtime Configuration file."""

    def args(c: Controller) -> list[str]:
        config = {
            "apiVersion": api,
            "kind": "Configuration",
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "webhook": {"port": c.port, "host": "127.0.0.1", "certDir": str(c.cert_dir)},
            "metrics": {"bindAddress": "0"},
            "health": {"healthProbeBindAddress": "0"},
        }
        (c.dir / "config.yaml").write_text(yaml.safe_dump(config))
        return [f"--config={c.dir / 'config.yaml'}"]

    return args


def _training_operator_args(c: Controller) -> list[str]:
    """Its schemes are the kinds whose CRDs build-bins.sh copied (kubeflow.org_<kind>s.yaml):
    a scheme without its CRD stops the manager, and its v1 MPIJob must stay off (mpi-operator's
    v2beta1 CRD has the same name)."""
    crds = sorted((directory(c.cluster, c.name) / "crds").glob("kubeflow.org_*s.yaml"))
    schemes = [p.name.removeprefix("kubeflow.org_").removesuffix("s.yaml") for p in crds]
    return [
        *(f"--enable-scheme={s}" for s in schemes),
        "--leader-elect=false",
        "--metrics-bind-address=0",
        f"--health-probe-bind-address=127.0.0.1:{c.health_port}",
        f"--webhook-server-port={c.port}",
    ]


def _mpi_operator_args(c: Controller) -> list[str]:
    # Leader election cannot be turned off: its Lease lives in the spec's namespace.
    return [
        f"--kubeConfig={c.cluster.kubeconfig}",
        f"--lock-namespace={c.spec.namespace}",
        "--monitoring-port=0",
        "--kube-api-qps=50",
        "--kube-api-burst=100",
    ]


def _kuberay_args(c: Controller) -> list[str]:
    return [
        "--enable-leader-election=false",
        "--metrics-addr=0",
        f"--health-probe-bind-address=127.0.0.1:{c.health_port}",
        "--log-stdout-encoder=console",
    ]


def _trainer_args(c: Controller) -> list[str]:
    """Trainer v2.2 takes its settings from a Configuration file only (no more flags); no
    leaderElection there means none. cert-controller stays on (the harness feeds it)."""
    config = {
        "apiVersion": "config.trainer.kubeflow.org/v1alpha1",
        "kind": "Configuration",
        "webhook": {"port": c.port},
        "metrics": {"bindAddress": "0"},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{c.health_port}"},
    }
    (c.dir / "config.yaml").write_text(yaml.safe_dump(config))
    return [f"--config={c.dir / 'config.yaml'}"]


def _appwrapper_args(c: Controller) -> list[str]:
    """AppWrapper reads its configuration from a ConfigMap in its namespace ($NAMESPACE)."""
    config = {
        "webhooksEnabled": False,
        "controllerManager": {
            "metrics": {"bindAddress": "0"},
            "health": {"bindAddress": f"127.0.0.1:{c.health_port}"},
            "leaderElection": False,
        },
    }
    name = f"e2e-appwrapper-{c.port}"
    c.cluster.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": c.spec.namespace},
            "data": {"config.yaml": yaml.safe_dump(config)},
        }
    )
    return [f"--config={name}"]


# Where each controller keeps what it needs in the cluster (its code's default outside a pod,
# or what its environment variable says).
TRAINING_OPERATOR_NAMESPACE = "kubeflow"
TRAINER_NAMESPACE = "kubeflow-system"
APPWRAPPER_NAMESPACE = "appwrapper-system"

SPECS = {
    "jobset": Spec(
        "jobset", "JOBSET_VERSION", 3, _config_file_args("config.jobset.x-k8s.io/v1alpha1")
    ),
    "lws": Spec("lws", "LWS_VERSION", 4, _config_file_args("config.lws.x-k8s.io/v1alpha1")),
    "training-operator": Spec(
        "training-operator",
        "TRAINING_OPERATOR_VERSION",
        5,
        _training_operator_args,
        env={"MY_POD_NAMESPACE": TRAINING_OPERATOR_NAMESPACE},
        rotator=Rotator(
            TRAINING_OPERATOR_NAMESPACE,
            "training-operator-webhook-cert",
            "training-operator",
            "training-operator-ca",
            "validator.training-operator.kubeflow.org",
        ),
        namespace=TRAINING_OPERATOR_NAMESPACE,
    ),
    "mpi-operator": Spec(
        "mpi-operator",
        "MPI_OPERATOR_VERSION",
        6,
        _mpi_operator_args,
        webhooks=False,
        namespace="mpi-operator",
    ),
    "kuberay": Spec("kuberay", "KUBERAY_VERSION", 7, _kuberay_args, webhooks=False),
    "trainer": Spec(
        "trainer",
        "TRAINER_VERSION",
        8,
        _trainer_args,
        rotator=Rotator(
            TRAINER_NAMESPACE,
            "kubeflow-trainer-webhook-cert",
            "kubeflow-trainer-controller-manager",
            "kubeflow-trainer-ca",
            "validator.trainer.kubeflow.org",
        ),
        namespace=TRAINER_NAMESPACE,
        needs_crds=("jobset",),  # a TrainJob runs as a JobSet
    ),
    "appwrapper": Spec(
        "appwrapper",
        "APPWRAPPER_VERSION",
        9,
        _appwrapper_args,
        env={"NAMESPACE": APPWRAPPER_NAMESPACE},
        webhooks=False,
        namespace=APPWRAPPER_NAMESPACE,
    ),
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


def wait_handled(
    cluster: Cluster,
    operator_log: Callable[[], str],
    watches: Iterable[str],
    samples: Mapping[str, str],
    accepted: Callable[[dict], bool] = lambda obj: True,
) -> None:
    """Wait until the operator handles newly installed CRDs: it logs `<watch>: CRD <name>
    established` for each of `watches`, and then each kind's webhooks answer. kopf finds a new
    kind a moment after the operator's own CRD watch: until then the API server's calls to its
    webhooks get 404. A server-side dry run of creating each of `samples` (kind: manifest, YAML
    or JSON) goes through the webhooks, creating nothing; `accepted` checks what they returned."""
    for watch in watches:
        handled = re.compile(rf"(?<![\w-]){re.escape(watch)}: CRD \S+ established")
        wait_for(
            lambda handled=handled: handled.search(operator_log()),
            timeout=60,
            what=f"the operator to handle {watch}",
        )

    def webhooks_answer(manifest: str) -> bool:
        out = cluster.kubectl(
            "create", "-n", "default", "--dry-run=server", "-o", "json", "-f", "-",
            input=manifest, check=False,
        )  # fmt: skip
        if out.returncode != 0:  # shown by wait_for when it gives up
            raise AssertionError(out.stderr.strip()[-400:])
        return accepted(json.loads(out.stdout))

    for kind, manifest in samples.items():
        wait_for(
            lambda m=manifest: webhooks_answer(m), timeout=60, what=f"the {kind} webhooks to answer"
        )


def controller_ref(obj: dict) -> dict:
    """The ownerReference of an object `obj` controls, as its controller sets it."""
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _json_patch_replace(doc: dict, pointer: str, value: object) -> None:
    """Apply one kustomize `op: replace` (a JSON pointer into lists and maps)."""
    *parents, last = pointer.strip("/").split("/")
    target: object = doc
    for key in parents:
        target = target[int(key)] if isinstance(target, list) else target[key]  # type: ignore[index]
    if isinstance(target, list):
        target[int(last)] = value
    else:
        target[last] = value  # type: ignore[index]


def webhook_configurations(cluster: Cluster, name: str, url: str, ca: bytes) -> list[dict]:
    """The module's configurations with its kustomize patches, calling `url` with our CA; named
    after the controller, so several sit side by side, or as its cert rotator expects."""
    spec = SPECS[name]
    folder = directory(cluster, name) / "webhook"
    docs = [d for d in yaml.safe_load_all((folder / "manifests.yaml").read_text()) if d]
    patches: dict[str, list] = {}
    for path in folder.glob("*patch*.yaml"):
        kind = "Mutating" if "mutating" in path.name else "Validating"
        patches.setdefault(kind, []).extend(yaml.safe_load(path.read_text()) or [])
    out = []
    for doc in docs:
        kind = doc["kind"].removesuffix("WebhookConfiguration")
        for op in patches.get(kind, []):
            _json_patch_replace(doc, op["path"], op["value"])
        for hook in doc["webhooks"]:
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": url + path, "caBundle": _b64(ca)}
        named = f"e2e-{name}-{kind.lower()}"
        if spec.rotator and kind == "Validating":
            named = spec.rotator.configuration
        doc["metadata"] = {"name": named}
        out.append(doc)
    return out


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _named_ca(name: str, now: datetime.datetime) -> tuple[bytes, bytes]:
    """A CA whose certificate names `name` (cert-controller checks its CA against its CAName),
    its key RSA in PKCS#1, the only form cert-controller parses."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - certs.BACKDATE)
        .not_valid_after(now + ROTATOR_CERT_LIFETIME + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


class Controller:
    """One integration's real controller as a host process against `cluster`."""

    def __init__(self, cluster: Cluster, name: str) -> None:
        self.cluster = cluster
        self.spec = SPECS[name]
        self.name = name
        api = chart.api_port(cluster)
        self.port = api + self.spec.port_offset
        self.health_port = api + 10 + self.spec.port_offset
        self.dir = Path(tempfile.mkdtemp(prefix=f"tas-e2e-{name}-"))
        self.cert_dir = self.dir / "k8s-webhook-server" / "serving-certs"  # $TMPDIR/...
        self.log_path = self.dir / "manager.log"
        self.proc: subprocess.Popen | None = None
        self.configurations: list[dict] = []

    def start(self) -> Controller:
        try:
            return self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> Controller:
        for other in self.spec.needs_crds:
            install_crds(self.cluster, other)
        install_crds(self.cluster, self.name)
        if self.spec.namespace:
            self.cluster.apply(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.spec.namespace}}
            )
        ca = self._certificates() if self.spec.webhooks else b""
        self._launch()
        if self.spec.webhooks:
            self.configurations = webhook_configurations(
                self.cluster, self.name, f"https://127.0.0.1:{self.port}", ca
            )
            for doc in self.configurations:
                self.cluster.apply(json.dumps(doc))
        wait_for(self._ready, timeout=120, what=f"the {self.name} controller to be ready")
        for path in sorted((directory(self.cluster, self.name) / "extra").glob("*.yaml")):
            self.cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(path))
        return self

    def _certificates(self) -> bytes:
        """The serving certificate in cert_dir (and, for cert-controller, in its Secret); the CA."""
        now = datetime.datetime.now(datetime.UTC)
        rotator = self.spec.rotator
        if rotator:
            ca, ca_key = _named_ca(rotator.ca_name, now)
            hosts = [rotator.dns_name, "127.0.0.1"]
            cert, key = certs.make_serving(ca, ca_key, hosts, now, ROTATOR_CERT_LIFETIME)
        else:
            ca, ca_key = certs.make_ca(now, datetime.timedelta(days=1))
            cert, key = certs.make_serving(
                ca, ca_key, ["127.0.0.1"], now, datetime.timedelta(days=1)
            )
        self.cert_dir.mkdir(parents=True)
        (self.cert_dir / "tls.crt").write_bytes(cert)
        certs.write_private(self.cert_dir / "tls.key", key)
        if rotator:
            data = {"ca.crt": ca, "ca.key": ca_key, "tls.crt": cert, "tls.key": key}
            self._rotator_secret(rotator, data)
            if not (ROTATOR_MOUNT / "tls.crt").exists():  # it only checks that one is there
                ROTATOR_MOUNT.mkdir(parents=True, exist_ok=True)
                (ROTATOR_MOUNT / "tls.crt").write_bytes(cert)
        return ca

    def _rotator_secret(self, rotator: Rotator, data: dict[str, bytes]) -> None:
        self.cluster.kubectl(
            "delete", "secret", rotator.secret, "-n", rotator.namespace, "--ignore-not-found"
        )
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": rotator.secret, "namespace": rotator.namespace},
            "data": {k: _b64(v) for k, v in data.items()},
        }
        self.cluster.apply(secret)

    def _launch(self) -> None:
        command = [str(directory(self.cluster, self.name) / "manager"), *self.spec.args(self)]
        env = {
            **os.environ,
            "KUBECONFIG": self.cluster.kubeconfig,
            "TMPDIR": str(self.dir),
            **self.spec.env,
        }
        with self.log_path.open("w") as log:
            self.proc = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.dir
            )

    def _ready(self) -> bool:
        if self.proc is None or self.proc.poll() is not None:
            raise AssertionError(f"{self.name} controller exited:\n{self.log()[-3000:]}")
        if self.spec.rotator:  # ready: its CA injected, reconcilers and webhooks started
            return self._http_ok(self.health_port, "/readyz")
        if not self.spec.webhooks:
            mpi = self.name == "mpi-operator"
            return self._http_ok(MPI_OPERATOR_HEALTH_PORT if mpi else self.health_port, "/healthz")
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
        except OSError:
            return False
        time.sleep(0.5)  # the webhook server listens just before its handlers are registered
        return True

    @staticmethod
    def _http_ok(port: int, path: str) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as reply:
                return reply.status == 200
        except OSError:
            return False

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
