"""Fixtures shared by the solver's unit tests."""

from __future__ import annotations

import pytest

from tas.solver import balanced


@pytest.fixture(params=[False, True], ids=["in place", "deep copies"])
def deep(request, monkeypatch):
    """Balanced placement both ways: pruning in place with an undo list, and Kueue's deep
    copies (the two must agree)."""
    monkeypatch.setattr(balanced, "ALWAYS_DEEP_COPY", request.param)
    return request.param
