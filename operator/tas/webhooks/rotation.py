"""Keeps the webhooks' certificate valid: the Secret, the files the server reads, the caBundles.

Every replica runs one. It reads the chart's Secret, and when `certs.plan` says so (empty,
expiring, missing a host) it writes a new certificate into it, guarded by the resourceVersion it
read: when two replicas try at once, one wins and the other reads the winner's. Then it writes
the served files (mode 0600; the server loads them again through `on_renewed`) and puts the
CA bundle into the chart's two webhook configurations and into the conversion webhook of each
CRD that has one, only where it differs. It never creates, empties or deletes a webhook
configuration: they belong to the chart, and a replica stopping must not take the webhooks
away from the others.

Without a Secret (a single process on a workstation) the certificate is made in memory and
still rotated on time.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import logging
from collections.abc import Callable
from pathlib import Path

from tas.api.constants import CONVERTED_CRDS
from tas.kube import CRDS, MERGE, STRATEGIC, Kube, KubeError
from tas.kube.retry import Backoff
from tas.webhooks import certs

log = logging.getLogger(__name__)

CONFIG_KINDS = ("mutatingwebhookconfigurations", "validatingwebhookconfigurations")
ADMISSION = "/apis/admissionregistration.k8s.io/v1"
CHECK_EVERY = 600.0  # seconds between checks: picks up a Secret another replica rotated
CONFLICTS = 5  # 409s in a row before a check gives up (and backs off)


class CertificateError(Exception):
    pass


class WebhookCertificates:
    def __init__(
        self,
        kube: Kube,
        directory: Path,
        hosts: list[str],
        config_name: str,
        *,
        secret: tuple[str, str] | None = None,
        lifetimes: certs.Lifetimes = certs.DEFAULT_LIFETIMES,
        check_every: float = CHECK_EVERY,
        backoff: Backoff | None = None,
    ) -> None:
        self.kube = kube
        self.directory = directory
        self.hosts = list(dict.fromkeys(h for h in hosts if h))
        self.config_name = config_name
        self.secret = secret
        self.lifetimes = lifetimes
        self.check_every = check_every
        self.backoff = backoff or Backoff(base=1.0, cap=60.0)
        self.data: dict[str, bytes] = {}  # what is served
        self.missing_configs: set[str] = set()  # warned about once
        self.ready = asyncio.Event()  # set once the webhook configurations trust what is served
        self.on_renewed: list[Callable[[], None]] = []  # called once new files are written

    @property
    def files(self) -> tuple[Path, Path, Path]:
        crt, key, ca = certs.SERVED
        return self.directory / crt, self.directory / key, self.directory / ca

    # ---- one check -------------------------------------------------------------------------------

    async def check(self, now: datetime.datetime | None = None) -> None:
        """Make sure the Secret, the files and the caBundles hold a valid certificate."""
        now = now or datetime.datetime.now(datetime.UTC)
        data = await self._secret_data(self.secret, now) if self.secret else self._local_data(now)
        if certs.write_served(self.directory, data):
            log.info("serving the webhook certificate valid until %s", _expiry(data))
            for reload in self.on_renewed:
                reload()
        self.data = data
        await self._inject_ca_bundle(data[certs.CA_CRT])
        # The admission webhooks can serve now. The CRDs' bundles follow: reading the CRDs
        # (large objects, from an API server busy with a restart's lists) would delay them.
        self.ready.set()
        await self._inject_conversion_ca_bundle(data[certs.CA_CRT])

    def _local_data(self, now: datetime.datetime) -> dict[str, bytes]:
        return certs.plan(self.data, self.hosts, now, self.lifetimes) or self.data

    async def _secret_data(
        self, secret_ref: tuple[str, str], now: datetime.datetime
    ) -> dict[str, bytes]:
        namespace, name = secret_ref
        path = f"/api/v1/namespaces/{namespace}/secrets/{name}"
        for _ in range(CONFLICTS):
            secret = await self.kube.get(path)
            if secret is None:
                raise CertificateError(
                    f"Secret {namespace}/{name} not found: the chart creates it "
                    "(or pass --webhook-cert-secret the name of one the operator may update)"
                )
            data = {k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items()}
            wanted = certs.plan(data, self.hosts, now, self.lifetimes)
            if wanted is None:
                return data
            # resourceVersion in the body: the API server refuses (409) a Secret changed since.
            secret["data"] = {k: base64.b64encode(v).decode() for k, v in wanted.items()}
            try:
                await self.kube.replace(path, secret)
            except KubeError as exc:
                if exc.conflict:
                    continue  # another replica wrote one: read it
                raise
            log.info("wrote a new webhook certificate into Secret %s/%s", namespace, name)
            return wanted
        raise CertificateError(f"Secret {namespace}/{name} kept changing under us")

    async def _inject_ca_bundle(self, bundle: bytes) -> None:
        encoded = base64.b64encode(bundle).decode()
        for kind in CONFIG_KINDS:
            path = f"{ADMISSION}/{kind}/{self.config_name}"
            config = await self.kube.get(path)
            if config is None:
                if kind not in self.missing_configs:
                    log.warning("%s %s not found: install the chart", kind, self.config_name)
                    self.missing_configs.add(kind)
                continue
            self.missing_configs.discard(kind)
            stale = [
                w["name"]
                for w in config.get("webhooks") or []
                if (w.get("clientConfig") or {}).get("caBundle") != encoded
            ]
            if stale:
                # Strategic merge by webhook name: only caBundle changes, nothing is removed.
                patch = {
                    "webhooks": [{"name": n, "clientConfig": {"caBundle": encoded}} for n in stale]
                }
                await self.kube.patch(path, patch, STRATEGIC)
                log.info("CA bundle set in %s %s for %s", kind, self.config_name, ", ".join(stale))

    async def _inject_conversion_ca_bundle(self, bundle: bytes) -> None:
        encoded = base64.b64encode(bundle).decode()
        for name in CONVERTED_CRDS:
            crd = await self.kube.get(f"{CRDS}/{name}")
            conversion = ((crd or {}).get("spec") or {}).get("conversion") or {}
            if crd is None or conversion.get("strategy") != "Webhook":
                if name not in self.missing_configs:
                    log.warning("CRD %s has no conversion webhook: install the chart", name)
                    self.missing_configs.add(name)
                continue
            self.missing_configs.discard(name)
            client = (conversion.get("webhook") or {}).get("clientConfig") or {}
            if client.get("caBundle") != encoded:
                patch = {
                    "spec": {"conversion": {"webhook": {"clientConfig": {"caBundle": encoded}}}}
                }
                await self.kube.patch(f"{CRDS}/{name}", patch, MERGE)
                log.info("CA bundle set in the conversion webhook of CRD %s", name)

    # ---- forever --------------------------------------------------------------------------------

    async def run(self) -> None:
        """Check now, then again before anything is due, and every `check_every` seconds."""
        failures = 0
        while True:
            try:
                await self.check()
            except Exception as exc:  # a bad Secret too: keep serving what we have, try again
                failures += 1
                delay = self.backoff.delay(failures, getattr(exc, "retry_after", None))
                log.warning("webhook certificate check failed (again in %.0fs): %s", delay, exc)
            else:
                failures = 0
                due = certs.renewal_due(self.data, self.lifetimes)
                until_due = (due - datetime.datetime.now(datetime.UTC)).total_seconds()
                delay = max(1.0, min(self.check_every, until_due))
            await asyncio.sleep(delay)

    def provisional(self) -> None:
        """A certificate to start serving with before the Secret has been read (the API server
        may be away): nobody trusts it, but the port and the liveness probe come up, and the
        first good check replaces it."""
        if not all(p.exists() for p in self.files):
            now = datetime.datetime.now(datetime.UTC)
            fresh = certs.plan({}, self.hosts, now, self.lifetimes)
            assert fresh is not None  # from nothing, plan always makes a CA and a certificate
            certs.write_served(self.directory, fresh)


def _expiry(data: dict[str, bytes]) -> str:
    return certs.serving_expiry(data).isoformat()
