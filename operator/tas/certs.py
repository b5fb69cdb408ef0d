"""The admission webhooks' serving certificate.

With several replicas behind one Service, every replica must present a certificate the same
caBundle verifies: the chart mounts one (tls.crt, tls.key, ca.crt, from a Secret it makes) and
`serving_files` uses it. Without one (a single process on a workstation), a self-signed
certificate is made at start-up; it is its own CA.
"""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def _san(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def write_self_signed(directory: Path, hosts: list[str], days: int = 365) -> tuple[Path, Path]:
    """Write cert.pem and key.pem for `hosts` (DNS names or IPs) into `directory`."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(
            x509.SubjectAlternativeName([_san(h) for h in dict.fromkeys(hosts)]), critical=False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    certfile, keyfile = directory / "cert.pem", directory / "key.pem"
    certfile.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    keyfile.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    keyfile.chmod(0o600)
    return certfile, keyfile


def serving_files(directory: Path, hosts: list[str]) -> tuple[Path, Path, Path | None]:
    """(certfile, keyfile, cafile): the mounted certificate if there is one, else a fresh
    self-signed one (cafile None: the certificate is its own CA)."""
    cert, key, ca = directory / "tls.crt", directory / "tls.key", directory / "ca.crt"
    if cert.exists() and key.exists():
        return cert, key, ca if ca.exists() else None
    certfile, keyfile = write_self_signed(directory, hosts)
    return certfile, keyfile, None
