"""Every client made from one kubeconfig (the runtime's, kopf's login, a login again on a 401)
shares one TLS context; a kubeconfig whose CA or client key changed gets a new one."""

from __future__ import annotations

from pathlib import Path

from tas.kube.kubeconfig import load_connection

from .fakes import Pki, b64, kubeconfig, pki


def write(path: Path, p: Pki) -> str:
    cert, key = p.client_certificate()
    return kubeconfig(
        path,
        cluster={"server": "https://127.0.0.1:6443", "certificate-authority-data": b64(p.ca)},
        user={"client-certificate-data": b64(cert), "client-key-data": b64(key)},
    )


def test_one_kubeconfig_read_twice_shares_its_context(tmp_path: Path):
    p = pki(["127.0.0.1"])
    path = write(tmp_path / "config", p)
    first, again = load_connection(path), load_connection(path)
    assert first.ssl is again.ssl
    assert first.credentials is not again.credentials  # credentials are read afresh


def test_a_rotated_certificate_gets_a_new_context(tmp_path: Path):
    old, new = pki(["127.0.0.1"]), pki(["127.0.0.1"])
    path = write(tmp_path / "config", old)
    before = load_connection(path)
    write(tmp_path / "config", new)
    after = load_connection(path)
    assert after.ssl is not before.ssl
    assert after.ssl.get_ca_certs() != before.ssl.get_ca_certs()
