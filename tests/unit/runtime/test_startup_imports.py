"""What `tas operator` imports before its first admission: nothing that only later steps need.

The topology view's server and templates, the offline commands' reports and kopf are loaded
after the caches are synced, off the loop, and the CRDs' pydantic models (~0.7 s to build) not
at all (tests/unit/api/test_kinds.py); a module imported on the way to the first admission that
pulls one of them in adds its time to every restart.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

OPERATOR = Path(__file__).resolve().parents[3] / "operator"
ON_THE_WAY = ("tas.cli", "tas.runtime.runtime")  # the entry point and what it starts
LATER = (
    "pydantic",
    "tas.api.models",
    "jinja2",
    "tas.view.live_server",
    "tas.view.server",
    "aiohttp.web",
    "tas.offline.summary",
    "kopf",
)
# `tas operator` itself, stopped at its first API request: what it loaded by then, one per line,
# then the collector's state (tests/unit/runtime/test_startup_collector.py).
UNTIL_FIRST_REQUEST = """
import os, sys
from aiohttp import client

async def first_request(self, *args, **kwargs):
    import gc
    print("\\n".join(sys.modules))
    print(f"gc:{gc.isenabled()}:{gc.get_freeze_count()}:{gc.get_stats()[2]['collections']}")
    sys.stdout.flush()
    os._exit(0)

client.ClientSession._request = first_request
from tas.cli import main
sys.argv = ["tas", "operator", "--kubeconfig", sys.argv[1], "--webhook-port", "0",
            "--metrics-port", "0", "--view-address", "127.0.0.1:0"]
main()
"""
KUBECONFIG = """
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:9", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


def loaded_after(modules: tuple[str, ...]) -> set[str]:
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "print('\\n'.join(sys.modules))"
    )
    return run_python(code)


def run_python(code: str, *args: str) -> set[str]:
    env = {**os.environ, "PYTHONPATH": f"{OPERATOR}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=60,
    )
    return set(out.stdout.split())


@pytest.fixture(scope="module")
def loaded() -> set[str]:
    return loaded_after(ON_THE_WAY)


@pytest.mark.parametrize("module", LATER)
def test_the_way_to_the_first_admission_does_not_load(loaded: set[str], module: str) -> None:
    assert module not in loaded


def test_the_check_sees_what_is_loaded() -> None:
    """The same check does see these modules once something imports them."""
    loaded = loaded_after(("tas.api.models", "tas.view.live_server"))
    assert {"pydantic", "jinja2"} <= loaded


def test_the_operators_start_up_loads_none_of_them_before_its_first_request(tmp_path) -> None:
    """The flags are checked before the lists start (the view's address among them) without
    loading what serves them later."""
    config = tmp_path / "config"
    config.write_text(KUBECONFIG)
    loaded = run_python(UNTIL_FIRST_REQUEST, str(config))
    assert "tas.runtime.runtime" in loaded  # it did get as far as the lists
    assert sorted(m for m in LATER if m in loaded) == []
