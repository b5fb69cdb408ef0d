"""Unit-test settings shared by every directory below.

`make mutation` (bench/mutation.py) runs these tests once per mutant. It selects the
`mutation` Hypothesis profile: the same examples on every run and no example database, so a
mutant is killed or not whatever ran before it. Under a mutant, property tests run after the
example tests: the first failure ends the run, and the example tests are the quick ones.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

settings.register_profile("mutation", derandomize=True, database=None, deadline=None)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if os.environ.get("MUTANT_UNDER_TEST", "") in ("", "stats", "mutant_generation"):
        return
    items.sort(key=lambda item: getattr(getattr(item, "obj", None), "is_hypothesis_test", False))
