"""aiohttp's import-time TLS contexts load no CA store (the operator never uses them), while
every context the operator makes afterwards still gets the system's store, whatever
SSL_CERT_FILE was before."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tas.kube.kubeconfig import CA_FILE_ENV

PROBE = """
import json, os, ssl
import tas.kube.client
import aiohttp.connector as c
print(json.dumps({
    "aiohttp": [c._SSL_CONTEXT_VERIFIED.cert_store_stats()["x509_ca"],
                c._SSL_CONTEXT_UNVERIFIED.cert_store_stats()["x509_ca"]],
    "env": os.environ.get("SSL_CERT_FILE"),
    "later": ssl.create_default_context().cert_store_stats()["x509_ca"],
}))
"""
PLAIN = "import ssl; print(ssl.create_default_context().cert_store_stats()['x509_ca'])"


def run(code: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    return done.stdout.strip()


@pytest.mark.parametrize("ca_file", [None, "system", os.devnull])
def test_aiohttp_loads_no_ca_store_and_later_contexts_load_the_usual_one(ca_file) -> None:
    env = {k: v for k, v in os.environ.items() if k != CA_FILE_ENV}
    if ca_file == "system":
        ca_file = os.environ.get(CA_FILE_ENV) or "/etc/ssl/certs/ca-certificates.crt"
    if ca_file is not None:
        env[CA_FILE_ENV] = ca_file
    usual = int(run(PLAIN, env))
    seen = json.loads(run(PROBE, env))
    assert seen == {"aiohttp": [0, 0], "env": ca_file, "later": usual}
    if ca_file != os.devnull:
        assert usual > 0  # the store exists here, so the zeros above are the change's
