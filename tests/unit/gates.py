"""The process's feature gates (tas.features) for one block of a test, and what they were
again after it, so that no test leaks its gates into the next."""

from __future__ import annotations

from contextlib import AbstractContextManager

from tas import features


def gates(**values: bool) -> AbstractContextManager[None]:
    """`with gates(TASPartialSlices=True): ...`: these gates over the defaults, as an operator
    started with `--feature-gates` has them."""
    return features.activated(features.from_mapping(values))
