"""The admission webhooks' certificates: a long-lived CA and a shorter-lived serving certificate
it signs, kept together in one Secret that every replica serves from (rotation.py keeps it).

Pure: bytes and times in, bytes out. `plan` says what the Secret should hold now:
- the CA lives 10 years and is replaced when less than one is left; a replaced CA stays in the
  bundle (`ca.crt`) until it expires, so a replica still serving a certificate it signed stays
  trusted while the others move on;
- the serving certificate lives 1 year and is replaced when a third of that is left, when its
  CA is no longer the current one, or when it does not name every host the webhooks are
  reached at.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TypeGuard, get_args

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.types import (
    CertificateIssuerPrivateKeyTypes,
    PrivateKeyTypes,
)
from cryptography.x509.oid import NameOID

# Secret keys, as cert-controller (and kubernetes.io/tls Secrets) name them.
TLS_CRT, TLS_KEY, CA_CRT, CA_KEY = "tls.crt", "tls.key", "ca.crt", "ca.key"
# What the webhook server reads; the CA's key never leaves the Secret.
SERVED = (TLS_CRT, TLS_KEY, CA_CRT)
BACKDATE = datetime.timedelta(minutes=5)  # clocks of the API server and ours may differ a little


@dataclass(frozen=True)
class Lifetimes:
    ca: datetime.timedelta = datetime.timedelta(days=3650)
    ca_renew_before: datetime.timedelta = datetime.timedelta(days=365)
    serving: datetime.timedelta = datetime.timedelta(days=365)
    serving_renew_before: datetime.timedelta = datetime.timedelta(days=365 // 3)


DEFAULT_LIFETIMES = Lifetimes()


def _san(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def make_ca(now: datetime.datetime, lifetime: datetime.timedelta) -> tuple[bytes, bytes]:
    """(certificate PEM, key PEM) of a new CA."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name(
        [x509.NameAttribute(NameOID.COMMON_NAME, f"tas-operator-webhook-ca-{int(now.timestamp())}")]
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + lifetime)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return _pem(cert), _pem_key(key)


def make_serving(
    ca_pem: bytes,
    ca_key_pem: bytes,
    hosts: list[str],
    now: datetime.datetime,
    lifetime: datetime.timedelta,
) -> tuple[bytes, bytes]:
    """(certificate PEM, key PEM) for `hosts` (DNS names or IPs), signed by the CA."""
    ca = x509.load_pem_x509_certificate(ca_pem)
    ca_key = serialization.load_pem_private_key(ca_key_pem, password=None)
    if not _can_sign(ca_key):
        raise ValueError(f"the CA key ({type(ca_key).__name__}) cannot sign certificates")
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(min(now + lifetime, ca.not_valid_after_utc))
        .add_extension(
            x509.SubjectAlternativeName([_san(h) for h in dict.fromkeys(hosts)]), critical=False
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return _pem(cert), _pem_key(key)


# ---- what the Secret should hold -------------------------------------------------------------


def _can_sign(key: PrivateKeyTypes) -> TypeGuard[CertificateIssuerPrivateKeyTypes]:
    return isinstance(key, get_args(CertificateIssuerPrivateKeyTypes))


def _load_certs(pem: bytes | None) -> list[x509.Certificate]:
    try:
        return x509.load_pem_x509_certificates(pem) if pem else []
    except ValueError:
        return []


def _load_key(pem: bytes | None):
    try:
        return serialization.load_pem_private_key(pem, password=None) if pem else None
    except (ValueError, TypeError):
        return None


def _same_key(cert: x509.Certificate, key) -> bool:
    return key is not None and cert.public_key() == key.public_key()


def _signed_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def _names(cert: x509.Certificate) -> set[str]:
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set()
    return {str(n) for n in san.get_values_for_type(x509.DNSName)} | {
        str(n) for n in san.get_values_for_type(x509.IPAddress)
    }


def plan(
    data: dict[str, bytes],
    hosts: list[str],
    now: datetime.datetime,
    lifetimes: Lifetimes = DEFAULT_LIFETIMES,
) -> dict[str, bytes] | None:
    """What the Secret should hold, or None when what it holds is good as it is."""
    bundle = _load_certs(data.get(CA_CRT))
    ca_key = _load_key(data.get(CA_KEY))
    ca = next((c for c in bundle if _same_key(c, ca_key)), None)
    out = dict(data)
    # Renewed from the moment renewal_due names (inclusive), so that moment always acts.
    if ca is None or ca.not_valid_after_utc - now <= lifetimes.ca_renew_before:
        ca_pem, ca_key_pem = make_ca(now, lifetimes.ca)
        ca = x509.load_pem_x509_certificate(ca_pem)
        out[CA_KEY] = ca_key_pem
    # The current CA first, then earlier ones until they expire.
    trusted = [ca, *(c for c in bundle if c != ca and c.not_valid_after_utc > now)]
    out[CA_CRT] = b"".join(_pem(c) for c in trusted)

    served = _load_certs(data.get(TLS_CRT))
    if not (
        served
        and _same_key(served[0], _load_key(data.get(TLS_KEY)))
        and _signed_by(served[0], ca)
        and served[0].not_valid_after_utc - now > lifetimes.serving_renew_before
        and set(hosts) <= _names(served[0])
    ):
        # Every host a valid certificate already names is kept: replicas started with fewer
        # names never take one away from the others.
        names = [*hosts, *sorted(_names(served[0]) - set(hosts))] if served else list(hosts)
        out[TLS_CRT], out[TLS_KEY] = make_serving(
            _pem(ca), out[CA_KEY], names, now, lifetimes.serving
        )
    return None if out == data else out


def renewal_due(
    data: dict[str, bytes], lifetimes: Lifetimes = DEFAULT_LIFETIMES
) -> datetime.datetime:
    """When `plan` will next want to change `data` (by time alone)."""
    times = [
        c.not_valid_after_utc - lifetimes.ca_renew_before for c in _load_certs(data.get(CA_CRT))[:1]
    ]
    times += [
        c.not_valid_after_utc - lifetimes.serving_renew_before
        for c in _load_certs(data.get(TLS_CRT))[:1]
    ]
    return min(times) if times else datetime.datetime.now(datetime.UTC)


def serving_expiry(data: dict[str, bytes]) -> datetime.datetime:
    served = _load_certs(data.get(TLS_CRT))
    return served[0].not_valid_after_utc if served else datetime.datetime.now(datetime.UTC)


def write_private(path: Path, content: bytes) -> None:
    """Replace `path` atomically with a file that is mode 0600 from its first byte."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(
            fd, 0o600
        )  # O_CREAT's mode is cut by the umask, never widened; an old file keeps its own
        os.write(fd, content)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def write_served(directory: Path, data: dict[str, bytes]) -> bool:
    """Write what the webhook server reads into `directory` (private); True if anything changed."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    changed = False
    for name in SERVED:
        path = directory / name
        if not path.exists() or path.read_bytes() != data[name]:
            write_private(path, data[name])
            changed = True
    return changed
