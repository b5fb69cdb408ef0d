"""Our kubeconfig reader: the forms real kubeconfigs take, and clear errors for broken ones."""

import asyncio
import stat
from pathlib import Path

import pytest
import yaml

from tas.kube.kubeconfig import Connection, KubeconfigError, load_connection


def authorization(conn: Connection) -> str | None:
    return asyncio.run(conn.authorization())


def write(tmp_path: Path, user: dict, cluster: dict | None = None) -> str:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "c",
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "clusters": [
            {
                "name": "k",
                "cluster": cluster
                or {"server": "https://127.0.0.1:6443/", "insecure-skip-tls-verify": True},
            }
        ],
        "users": [{"name": "u", "user": user}],
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_a_static_token_and_an_insecure_cluster(tmp_path: Path) -> None:
    conn = load_connection(write(tmp_path, {"token": "abc"}))
    assert conn.server == "https://127.0.0.1:6443"
    assert authorization(conn) == "Bearer abc"
    assert conn.insecure and conn.ssl is not False and not conn.ssl.check_hostname


def test_a_token_file_is_read_relative_to_the_kubeconfig(tmp_path: Path) -> None:
    (tmp_path / "tok").write_text("from-file\n")
    conn = load_connection(write(tmp_path, {"tokenFile": "tok"}))
    assert authorization(conn) == "Bearer from-file"


def test_an_exec_plugin_gives_the_token(tmp_path: Path) -> None:
    plugin = tmp_path / "plugin.sh"
    plugin.write_text(
        '#!/bin/sh\necho \'{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",'
        '"status":{"token":"exec-\'$GREETING\'","expirationTimestamp":"2999-01-01T00:00:00Z"}}\'\n'
    )
    plugin.chmod(plugin.stat().st_mode | stat.S_IEXEC)
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": str(plugin),
            "env": [{"name": "GREETING", "value": "hi"}],
        }
    }
    conn = load_connection(write(tmp_path, user))
    assert authorization(conn) == "Bearer exec-hi"


def test_basic_auth_and_a_plain_http_server(tmp_path: Path) -> None:
    conn = load_connection(
        write(tmp_path, {"username": "a", "password": "b"}, {"server": "http://127.0.0.1:8080"})
    )
    assert conn.ssl is False and authorization(conn) == "Basic YTpi"


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda c: c.pop("current-context"), "no current-context"),
        (lambda c: c["contexts"][0]["context"].update(cluster="nope"), "no cluster named 'nope'"),
        (lambda c: c["clusters"][0]["cluster"].pop("server"), "has no server"),
    ],
)
def test_a_broken_kubeconfig_names_what_is_wrong(tmp_path: Path, mutate, message: str) -> None:
    path = write(tmp_path, {"token": "x"})
    config = yaml.safe_load(Path(path).read_text())
    mutate(config)
    Path(path).write_text(yaml.safe_dump(config))
    with pytest.raises(KubeconfigError, match=message):
        load_connection(path)


def test_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(KubeconfigError, match="kubeconfig"):
        load_connection(str(tmp_path / "absent"))
