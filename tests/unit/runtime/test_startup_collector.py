"""The collector during `tas operator`'s start-up: paused while modules load (their objects live
as long as the process; walking them only costs), those objects kept out of later full walks,
and collecting again before the first request, so that nothing made afterwards piles up."""

from __future__ import annotations

import gc

import pytest

from tas import pacing
from tests.unit.runtime.test_startup_imports import KUBECONFIG, UNTIL_FIRST_REQUEST, run_python


def test_the_operator_collects_again_by_its_first_request_with_its_modules_set_aside(tmp_path):
    config = tmp_path / "config"
    config.write_text(KUBECONFIG)
    (answer,) = [line for line in run_python(UNTIL_FIRST_REQUEST, str(config)) if "gc:" in line]
    enabled, frozen, full_collections = answer.split(":")[1:]
    assert enabled == "True"
    assert int(frozen) > 10_000  # the start-up modules' objects, out of the full walks
    assert int(full_collections) == 0  # none walked them while they loaded


@pytest.mark.parametrize("before", [True, False], ids=["collecting", "paused-by-the-caller"])
def test_importing_the_cli_leaves_the_collector_as_it_found_it(before):
    code = (
        "import gc\n"
        f"gc.enable() if {before} else gc.disable()\n"
        "import tas.cli\n"
        "print(gc.isenabled())"
    )
    assert run_python(code) == {str(before)}


@pytest.mark.parametrize("before", [True, False], ids=["collecting", "paused-by-the-caller"])
@pytest.mark.parametrize("set_aside", [True, False], ids=["set-aside", "left"])
def test_imports_uncollected_pauses_then_restores(before, set_aside):
    was = gc.isenabled()
    (gc.enable if before else gc.disable)()
    try:
        frozen = gc.get_freeze_count()
        with pacing.imports_uncollected(set_aside=set_aside):
            assert not gc.isenabled()
            made = [[] for _ in range(1000)]
        assert gc.isenabled() is before
        if set_aside:
            assert gc.get_freeze_count() >= frozen + len(made)
        else:
            assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
        (gc.enable if was else gc.disable)()
