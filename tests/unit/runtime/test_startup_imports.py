"""What `tas operator` imports before its first admission: nothing that only later steps need.

The CRDs' pydantic models (~0.5 s to build), the topology view's server and templates, the
offline commands' reports and kopf are loaded after the caches are synced, off the loop; a
module imported on the way to the first admission that pulls one of them in adds its time to
every restart.
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
    "tas.offline.summary",
    "kopf",
)


def loaded_after(modules: tuple[str, ...]) -> set[str]:
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "print('\\n'.join(sys.modules))"
    )
    env = {**os.environ, "PYTHONPATH": f"{OPERATOR}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
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
