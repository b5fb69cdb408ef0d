"""Reading kubeconfigs as kubectl does: a KUBECONFIG list merged (the first file wins each
entry and current-context), paths relative to their own file, the context's namespace,
tls-server-name and proxy-url; inline keys leave no file behind."""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
from pathlib import Path

import pytest
import yaml

from tas.kube import kubeconfig
from tas.kube.kubeconfig import KubeconfigError, default_namespace, load_connection

from .fakes import b64, pki

INSECURE = {"insecure-skip-tls-verify": True}


def config_file(path: Path, config: dict) -> str:
    path.write_text(yaml.safe_dump(config))
    return str(path)


@pytest.fixture
def two_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """Two kubeconfigs in two directories, both naming a cluster "shared" and a user "admin";
    each has its own token file next to it, and only the second sets a namespace."""
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    (first / "token").write_text("first-token")
    (second / "token").write_text("second-token")
    config_file(
        first / "config",
        {
            "current-context": "one",
            "contexts": [{"name": "one", "context": {"cluster": "shared", "user": "admin"}}],
            "clusters": [
                {"name": "shared", "cluster": {"server": "https://first:6443", **INSECURE}}
            ],
            "users": [{"name": "admin", "user": {"tokenFile": "token"}}],
        },
    )
    config_file(
        second / "config",
        {
            "current-context": "two",
            "contexts": [
                {"name": "one", "context": {"cluster": "other", "user": "other"}},
                {
                    "name": "two",
                    "context": {"cluster": "other", "user": "other", "namespace": "team"},
                },
            ],
            "clusters": [
                {"name": "shared", "cluster": {"server": "https://second:6443"}},
                {"name": "other", "cluster": {"server": "https://other:6443", **INSECURE}},
            ],
            "users": [
                {"name": "admin", "user": {"token": "second-admin"}},
                {"name": "other", "user": {"tokenFile": "token"}},
            ],
        },
    )
    return first / "config", second / "config"


def use(monkeypatch: pytest.MonkeyPatch, *paths: Path | str) -> None:
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join(str(p) for p in paths))


def test_the_first_file_wins_current_context_and_each_entry(two_files, monkeypatch) -> None:
    first, second = two_files
    use(monkeypatch, first, second)
    conn = load_connection()
    # current-context "one" (the first file's); context, cluster and user "one"/"shared"/
    # "admin" from the first file, and its token file read next to the first file.
    assert conn.server == "https://first:6443"
    assert asyncio.run(conn.authorization()) == "Bearer first-token"
    assert conn.namespace is None


def test_a_later_file_fills_in_what_the_first_does_not_set(tmp_path, two_files, monkeypatch):
    first, second = two_files
    only_users = config_file(tmp_path / "users", {"users": [{"name": "x", "user": {}}]})
    use(monkeypatch, only_users, second, first)
    conn = load_connection()
    # The first file sets no current-context: the second's ("two") is taken, with its
    # namespace, and its relative tokenFile is read next to the second file.
    assert conn.server == "https://other:6443"
    assert conn.namespace == "team"
    assert asyncio.run(conn.authorization()) == "Bearer second-token"


def test_missing_files_in_the_list_are_skipped_and_none_at_all_is_an_error(
    tmp_path, two_files, monkeypatch
) -> None:
    first, _ = two_files
    use(monkeypatch, tmp_path / "absent", first)
    assert load_connection().server == "https://first:6443"
    use(monkeypatch, tmp_path / "absent", tmp_path / "gone")
    with pytest.raises(KubeconfigError, match="no such file"):
        load_connection()


def test_an_explicit_kubeconfig_is_the_only_file_read(two_files, monkeypatch) -> None:
    first, second = two_files
    use(monkeypatch, first)
    assert load_connection(str(second)).server == "https://other:6443"


def test_the_context_namespace_is_the_default_namespace(two_files, monkeypatch) -> None:
    first, second = two_files
    monkeypatch.setattr(kubeconfig, "SERVICE_ACCOUNT", Path("/nonexistent"))
    monkeypatch.delenv("TAS_POD_NAMESPACE", raising=False)
    assert default_namespace(str(second)) == "team"
    assert default_namespace(str(first)) == "tas-system"  # no namespace in that context
    monkeypatch.setenv("TAS_POD_NAMESPACE", "from-env")
    assert default_namespace(str(second)) == "from-env"


def test_tls_server_name_and_proxy_url_are_read(tmp_path: Path) -> None:
    path = config_file(
        tmp_path / "config",
        {
            "current-context": "c",
            "contexts": [{"name": "c", "context": {"cluster": "k"}}],
            "clusters": [
                {
                    "name": "k",
                    "cluster": {
                        "server": "https://10.0.0.1:6443",
                        "tls-server-name": "api.internal",
                        "proxy-url": "http://user:pw@proxy.corp:3128",
                        **INSECURE,
                    },
                }
            ],
        },
    )
    conn = load_connection(path)
    assert conn.tls_server_name == "api.internal"
    assert conn.proxy_url == "http://user:pw@proxy.corp:3128"


@pytest.mark.parametrize(
    ("cluster", "message"),
    [
        ({"proxy-url": "socks5://proxy:1080"}, "proxy-url: socks5 scheme"),
        ({"certificate-authority-data": "not base64!"}, "certificate-authority-data"),
        ({"certificate-authority-data": b64(b"not a certificate")}, "certificate-authority"),
    ],
    ids=["socks-proxy", "bad-base64", "not-a-certificate"],
)
def test_a_cluster_field_that_cannot_be_used_is_named(tmp_path, cluster, message) -> None:
    path = config_file(
        tmp_path / "config",
        {
            "current-context": "c",
            "contexts": [{"name": "c", "context": {"cluster": "k"}}],
            "clusters": [{"name": "k", "cluster": {"server": "https://h:1", **cluster}}],
        },
    )
    with pytest.raises(KubeconfigError, match=message):
        load_connection(path)


def test_two_entries_of_one_name_in_a_file_are_an_error(tmp_path: Path) -> None:
    path = config_file(
        tmp_path / "config",
        {"clusters": [{"name": "k", "cluster": {}}, {"name": "k", "cluster": {}}]},
    )
    with pytest.raises(KubeconfigError, match="two clusters named 'k'"):
        load_connection(path)


def inline_tls_config(path: Path) -> str:
    p = pki(["127.0.0.1"])
    cert, key = p.client_certificate()
    return config_file(
        path,
        {
            "current-context": "c",
            "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
            "clusters": [
                {
                    "name": "k",
                    "cluster": {
                        "server": "https://127.0.0.1:1",
                        "certificate-authority-data": b64(p.ca),
                    },
                }
            ],
            "users": [
                {
                    "name": "u",
                    "user": {"client-certificate-data": b64(cert), "client-key-data": b64(key)},
                }
            ],
        },
    )


@pytest.mark.parametrize("memory_file", [True, False], ids=["memfd", "temporary-file"])
def test_inline_keys_and_certificates_leave_no_file_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memory_file: bool
) -> None:
    path = inline_tls_config(tmp_path / "config")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    if not memory_file:
        monkeypatch.setattr(kubeconfig, "_memory_file", lambda: None)
    for _ in range(3):
        conn = load_connection(path)
        assert conn.ssl is not False and conn.ssl.cert_store_stats()["x509_ca"] == 1
    assert list(scratch.iterdir()) == []
    assert not [f for f in open_files() if "tas-kube" in f]


def open_files() -> list[str]:
    """What this process's file descriptors point at (Linux), memory files included."""
    out = []
    for fd in os.listdir("/proc/self/fd") if os.path.isdir("/proc/self/fd") else []:
        with contextlib.suppress(OSError):
            out.append(os.readlink(f"/proc/self/fd/{fd}"))
    return out


def test_a_key_without_its_certificate_is_an_error(tmp_path: Path) -> None:
    path = inline_tls_config(tmp_path / "config")
    config = yaml.safe_load(Path(path).read_text())
    del config["users"][0]["user"]["client-certificate-data"]
    Path(path).write_text(yaml.safe_dump(config))
    with pytest.raises(KubeconfigError, match="go together"):
        load_connection(path)
