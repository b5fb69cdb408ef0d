"""Unit-test settings shared by every directory below.

`make mutation` (bench/mutation.py) runs these tests once per mutant. It selects the
`mutation` Hypothesis profile: the same examples on every run and no example database, so a
mutant is killed or not whatever ran before it. Under a mutant, property tests run after the
example tests (the first failure ends the run, and the example tests are the quick ones), and
each property test tries at most MUTATION_EXAMPLES examples: a surviving mutant runs every
selected test, and at full length the solver's thousands of mutants take most of a day.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

settings.register_profile("mutation", derandomize=True, database=None, deadline=None)

MUTATION_EXAMPLES = 25


def _under_a_mutant() -> bool:
    return os.environ.get("MUTANT_UNDER_TEST", "") not in ("", "stats", "mutant_generation")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if not _under_a_mutant():
        return
    items.sort(key=lambda item: getattr(getattr(item, "obj", None), "is_hypothesis_test", False))
    for item in items:
        test = getattr(getattr(item, "obj", None), "__func__", getattr(item, "obj", None))
        # Hypothesis reads a test's settings from this attribute when the test is called;
        # there is no public way to lower max_examples below a test's own @settings.
        own = getattr(test, "_hypothesis_internal_use_settings", None)
        if own is not None and own.max_examples > MUTATION_EXAMPLES:
            test._hypothesis_internal_use_settings = settings(own, max_examples=MUTATION_EXAMPLES)
