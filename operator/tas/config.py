"""Operator settings: command-line flags first, then TAS_* environment variables, then defaults."""

from __future__ import annotations

from dataclasses import dataclass, field

from tas import features
from tas.integrations import Integrations
from tas.integrations import defaults as default_integrations

# The largest AdmissionReview body the webhooks read; a larger one is refused (413) unread.
# A review carries the object, for an UPDATE its old version too, each with its managedFields
# and kubectl's last-applied annotation. The largest realistic one measured (an UPDATE of a
# JobSet of four replicated Jobs with sidecars, applied with kubectl) is under 64 KiB; a cap
# of four times that leaves room for big pod templates while a flood of reviews costs a
# quarter of what 1 MiB ones would. --webhook-max-review-bytes raises it for larger objects.
MAX_REVIEW_BYTES = 256 << 10


@dataclass(frozen=True)
class Settings:
    kubeconfig: str | None = None
    namespaces: tuple[str, ...] = ()  # empty: every namespace
    gates: features.FeatureGates = field(default_factory=features.defaults)
    # Which kinds are admitted (Kueue's integrations.frameworks): tas/integrations.py.
    integrations: Integrations = field(default_factory=default_integrations)
    # Admission webhooks: where the API server reaches this process.
    webhook_listen: str = "127.0.0.1"
    webhook_port: int = 9443
    webhook_host: str | None = (
        None  # the name in the webhook URL and certificate; defaults to listen
    )
    webhook_cert_dir: str | None = None  # where the served certificate files are written
    # (namespace, name) of the Secret every replica shares the certificate through (the
    # chart's); without one, the process makes its own.
    webhook_cert_secret: tuple[str, str] | None = None
    # In a pod: (namespace, name, port) of the Service in front of the webhooks; its DNS names
    # go into the certificate.
    webhook_service: tuple[str, str, int] | None = None
    webhook_config_name: str = "tas-operator.kueue.x-k8s.io"
    webhook_max_review_bytes: int = MAX_REVIEW_BYTES
    metrics_port: int = 0  # 0 disables the metrics endpoint
    # Only the replica holding this namespace's Lease admits; the others stand by.
    leader_elect: bool = True
    leader_election_namespace: str = "tas-system"
    log_level: str = "INFO"

    @property
    def webhook_url_host(self) -> str:
        return self.webhook_host or self.webhook_listen

    @property
    def webhook_cert_hosts(self) -> list[str]:
        """The names the API server may reach the webhooks at: the Service's, and the host."""
        hosts = []
        if self.webhook_service:
            namespace, name, _ = self.webhook_service
            hosts += [f"{name}.{namespace}.svc", f"{name}.{namespace}.svc.cluster.local"]
        if self.webhook_url_host not in ("0.0.0.0", "::", ""):
            hosts.append(self.webhook_url_host)
        return hosts or ["localhost"]
