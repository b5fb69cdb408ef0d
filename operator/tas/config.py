"""Operator settings: command-line flags first, then TAS_* environment variables, then defaults."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from tas import features
from tas.api.fairsharing import FairSharingConfig
from tas.api.frameworks import Integrations
from tas.api.frameworks import defaults as default_integrations

# The largest AdmissionReview body the webhooks read; a larger one is refused (413) unread.
# A review carries the object, for an UPDATE its old version too, each with its managedFields
# and kubectl's last-applied annotation. The largest realistic one measured (an UPDATE of a
# JobSet of four replicated Jobs with sidecars, applied with kubectl) is under 64 KiB; a cap
# of four times that leaves room for big pod templates while a flood of reviews costs a
# quarter of what 1 MiB ones would. --webhook-max-review-bytes raises it for larger objects.
MAX_REVIEW_BYTES = 256 << 10
# A LeaderWorkerSet makes one Workload per replica: the most one object may ask for. Kueue sets
# no bound; without one a single object costs work and memory in proportion to a number its
# author writes (up to 2**31 - 1). --max-leaderworkerset-replicas; the chart's
# maxLeaderWorkerSetReplicas.
DEFAULT_MAX_LEADERWORKERSET_REPLICAS = 1000

# `tas view`'s page: localhost only, as it has no authentication (--view-address; the chart's
# view.address; empty disables it).
DEFAULT_VIEW_ADDRESS = "127.0.0.1:8090"

SYSTEM_NAMESPACE = "kube-system"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"  # set on every namespace by the API server


def default_managed_jobs_namespace_selector(own_namespace: str) -> dict:
    """Kueue's default managedJobsNamespaceSelector: every namespace but kube-system and the
    operator's own (the chart renders the same one into its webhooks' namespaceSelector)."""
    return {
        "matchExpressions": [
            {
                "key": NAMESPACE_NAME_LABEL,
                "operator": "NotIn",
                "values": [SYSTEM_NAMESPACE, own_namespace],
            }
        ]
    }


_SELECTOR_OPERATORS = {"In", "NotIn", "Exists", "DoesNotExist"}


def parse_label_selector(text: str) -> dict:
    """A LabelSelector written as JSON (`{"matchExpressions": [...]}`, `{"matchLabels": {...}}`);
    raises ValueError saying what is wrong."""
    try:
        selector = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(selector, dict) or set(selector) - {"matchLabels", "matchExpressions"}:
        raise ValueError("must be an object with matchLabels and/or matchExpressions")
    labels = selector.get("matchLabels") or {}
    if not isinstance(labels, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in labels.items()
    ):
        raise ValueError("matchLabels must map label keys to string values")
    expressions = selector.get("matchExpressions") or []
    if not isinstance(expressions, list):
        raise ValueError("matchExpressions must be a list")
    for i, expr in enumerate(expressions):
        if not isinstance(expr, dict) or not isinstance(expr.get("key"), str):
            raise ValueError(f"matchExpressions[{i}] must have a key")
        if expr.get("operator") not in _SELECTOR_OPERATORS:
            raise ValueError(
                f"matchExpressions[{i}].operator must be one of {sorted(_SELECTOR_OPERATORS)}"
            )
        values = expr.get("values") or []
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise ValueError(f"matchExpressions[{i}].values must be a list of strings")
        if bool(values) != (expr["operator"] in ("In", "NotIn")):
            raise ValueError(
                f"matchExpressions[{i}].values must be set for In and NotIn, and only for them"
            )
    return selector


DEFAULT_DEFRAGMENTATION_MOVES_PER_HOUR = 10


@dataclass(frozen=True)
class Settings:
    kubeconfig: str | None = None
    namespaces: tuple[str, ...] = ()  # empty: every namespace
    gates: features.FeatureGates = field(default_factory=features.defaults)
    # Which kinds are admitted (Kueue's integrations.frameworks): api/frameworks.py.
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
    # Kueue's managedJobsNamespaceSelector (a LabelSelector): queued objects elsewhere are left
    # alone, by the webhooks (the chart's namespaceSelector) and the controllers alike. None:
    # Kueue's default, every namespace but kube-system and leader_election_namespace.
    managed_jobs_namespace_selector: Mapping | None = None
    max_leaderworkerset_replicas: int = DEFAULT_MAX_LEADERWORKERSET_REPLICAS
    view_address: str = DEFAULT_VIEW_ADDRESS  # the topology view's HOST:PORT; "" disables it
    # Gate TASDefragmentation: the most workloads of one ClusterQueue moved in an hour.
    defragmentation_moves_per_hour: int = DEFAULT_DEFRAGMENTATION_MOVES_PER_HOUR
    # Kueue's fairSharing and admissionFairSharing configuration sections (--kueue-config).
    fair_sharing: FairSharingConfig = field(default_factory=FairSharingConfig)

    @property
    def managed_namespaces_selector(self) -> Mapping:
        if self.managed_jobs_namespace_selector is not None:
            return self.managed_jobs_namespace_selector
        return default_managed_jobs_namespace_selector(self.leader_election_namespace)

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
