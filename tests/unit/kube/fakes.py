"""A fake API server (aiohttp) on the test's own loop, certificates for it, and kubeconfigs."""

from __future__ import annotations

import base64
import contextlib
import datetime
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import yaml
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tas.webhooks import certs


@contextlib.asynccontextmanager
async def serve(app: web.Application, tls: ssl.SSLContext | None = None) -> AsyncIterator[str]:
    """Serve `app` on 127.0.0.1 until the block ends; yields its base URL."""
    runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


@dataclass
class Pki:
    ca: bytes
    ca_key: bytes
    server_cert: bytes
    server_key: bytes

    def server_context(self, tmp_path: Path, require_client_cert: bool = False) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cadata=self.ca.decode())
        (tmp_path / "srv.pem").write_bytes(self.server_cert + self.server_key)
        context.load_cert_chain(tmp_path / "srv.pem")
        (tmp_path / "srv.pem").unlink()
        context.verify_mode = ssl.CERT_REQUIRED if require_client_cert else ssl.CERT_NONE
        return context

    def client_certificate(self, name: str = "tas-test") -> tuple[bytes, bytes]:
        """(certificate PEM, key PEM) for client authentication, signed by the CA."""
        ca = x509.load_pem_x509_certificate(self.ca)
        ca_key = serialization.load_pem_private_key(self.ca_key, password=None)
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(ca.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256())  # type: ignore[arg-type]
        )
        pem_key = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        return cert.public_bytes(serialization.Encoding.PEM), pem_key


def pki(server_names: list[str]) -> Pki:
    now = datetime.datetime.now(datetime.UTC)
    ca, ca_key = certs.make_ca(now, datetime.timedelta(days=1))
    cert, key = certs.make_serving(ca, ca_key, server_names, now, datetime.timedelta(days=1))
    return Pki(ca, ca_key, cert, key)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def kubeconfig(
    path: Path,
    *,
    cluster: dict,
    user: dict | None = None,
    namespace: str | None = None,
    names: tuple[str, str, str] = ("c", "k", "u"),
) -> str:
    """One file with one context (named names[0]) on one cluster and one user."""
    context_name, cluster_name, user_name = names
    context = {"cluster": cluster_name, "user": user_name}
    if namespace:
        context["namespace"] = namespace
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": context_name,
        "contexts": [{"name": context_name, "context": context}],
        "clusters": [{"name": cluster_name, "cluster": cluster}],
        "users": [{"name": user_name, "user": user or {}}],
    }
    path.write_text(yaml.safe_dump(config))
    return str(path)


def tls_app() -> web.Application:
    """Answers /whoami with the common name of the client certificate, if any."""

    async def whoami(request: web.Request) -> web.Response:
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        subject = dict(x[0] for x in (peer or {}).get("subject", ()))
        return web.json_response({"user": subject.get("commonName")})

    app = web.Application()
    app.router.add_get("/whoami", whoami)
    return app
