"""`tas contest` against our own checker on generated inputs: every output obeys every
constraint after every request, deletions included, and every group type gets placed."""

from __future__ import annotations

import io

import pytest

from tas.offline.contest import adapter, checker, generator
from tests.unit.offline.contest.test_checker import EXAMPLE_INPUT as EXAMPLE

RUNS = [(shape, seed) for shape in ("small", "mixed", "churn", "saturating") for seed in range(4)]


def serve(text: str) -> str:
    out = io.StringIO()
    adapter.run(io.StringIO(text), out)
    return out.getvalue()


def placed_types(problem: checker.Problem, gave_up_at: int | None) -> set[int]:
    """The group types of the creation requests answered before the give-up."""
    types: dict[int, int] = {}
    placed: set[int] = set()
    for number, request in enumerate(problem.requests, start=1):
        if gave_up_at is not None and number >= gave_up_at:
            break
        if isinstance(request, checker.CreateGroup):
            types[request.group] = request.type
        elif isinstance(request, checker.CreateVms):
            placed.add(types[request.group])
    return placed


@pytest.mark.parametrize(("shape", "seed"), RUNS)
def test_every_answer_passes_the_checker(shape: str, seed: int) -> None:
    text = generator.generate(seed, shape)
    result = checker.check(text, serve(text))
    assert result.ok, result.error


def test_every_group_type_is_placed_somewhere() -> None:
    placed: set[int] = set()
    for seed in range(12):
        text = generator.generate(seed, "mixed")
        result = checker.check(text, serve(text))
        assert result.ok, result.error
        placed |= placed_types(checker.parse_input(text), result.gave_up_at)
    assert placed == set(range(10))


def test_the_statements_example_scores_19() -> None:
    text = EXAMPLE
    output = serve(text)
    result = checker.check(text, output)
    assert result.ok and result.score == 19, result
    assert output.strip().splitlines()[-1] == "-1"


def test_a_malformed_input_is_one_line_on_stderr() -> None:
    err = io.StringIO()
    code = adapter.main(io.StringIO("2 2 2 2 3\n8 16\n1\n1 1 1\n4\n"), io.StringIO(), err)
    assert code == 2 and err.getvalue().count("\n") == 1 and "K must be 2" in err.getvalue()
