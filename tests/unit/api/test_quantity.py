"""Kubernetes quantities -> milli-units."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.api.quantity import canonical_number, parse_milli, parse_quantity, resources_to_milli


@pytest.mark.parametrize(
    ("text", "milli"),
    [
        ("2", 2000),
        ("0", 0),
        ("600m", 600),
        ("1.5", 1500),
        (".5", 500),
        ("5.", 5000),
        ("+1", 1000),
        ("1k", 1_000_000),
        ("1M", 10**9),
        ("1G", 10**12),
        ("1Ki", 1024 * 1000),
        ("4Gi", 4 * 2**30 * 1000),
        ("1.5Gi", 3 * 2**29 * 1000),
        ("1e3", 1_000_000),
        ("1E3", 1_000_000),
        ("1e-3", 1),
        ("1E", 10**18 * 1000),  # a bare E is the exa suffix, not an exponent
        (10, 10_000),
        (1.5, 1500),
    ],
)
def test_parses_kubernetes_forms(text: object, milli: int) -> None:
    assert parse_milli(text) == milli


@pytest.mark.parametrize(("text", "milli"), [("0.1m", 1), ("1.0001", 1001), ("1n", 1), ("1e-9", 1)])
def test_fractions_below_one_milli_round_up(text: str, milli: int) -> None:
    assert parse_milli(text) == milli


@pytest.mark.parametrize(
    "bad", ["", "abc", "1 ", " 1", "1e", "1.2.3", "Gi", "1Gb", "1ki", "--1", "0x10", "1_000"]
)
def test_refuses_malformed_strings_naming_them(bad: str) -> None:
    with pytest.raises(ValueError, match="not a Kubernetes quantity") as raised:
        parse_milli(bad)
    assert repr(bad) in str(raised.value)


@pytest.mark.parametrize("bad", [True, None, [1], {"a": 1}, float("inf"), float("nan")])
def test_refuses_non_quantity_types(bad: object) -> None:
    with pytest.raises(ValueError, match="quantity"):
        parse_milli(bad)


def test_refuses_absurd_exponents() -> None:
    with pytest.raises(ValueError, match="out of range"):
        parse_milli("1e100000")


def test_resources_to_milli_names_the_resource() -> None:
    assert resources_to_milli({"cpu": "2", "memory": "1Ki", "pods": 10}) == {
        "cpu": 2000,
        "memory": 1_024_000,
        "pods": 10_000,
    }
    with pytest.raises(ValueError, match=r"memory: quantity '4 Gi'"):
        resources_to_milli({"cpu": "1", "memory": "4 Gi"})
    with pytest.raises(ValueError, match=r"cpu: .*negative"):
        resources_to_milli({"cpu": "-1"})


@settings(max_examples=100, deadline=None)
@given(whole=st.integers(0, 10**9), thousandths=st.integers(0, 999))
def test_decimal_strings_are_exact(whole: int, thousandths: int) -> None:
    assert parse_milli(f"{whole}.{thousandths:03d}") == whole * 1000 + thousandths


@settings(max_examples=100, deadline=None)
@given(
    number=st.integers(0, 10**6),
    suffix=st.sampled_from(["Ki", "Mi", "Gi", "Ti", "k", "M", "G", "T", "m", ""]),
)
def test_suffixes_scale_exactly(number: int, suffix: str) -> None:
    scale = {
        "Ki": 2**10,
        "Mi": 2**20,
        "Gi": 2**30,
        "Ti": 2**40,
        "k": 10**3,
        "M": 10**6,
        "G": 10**9,
        "T": 10**12,
        "m": Fraction(1, 1000),
        "": 1,
    }[suffix]
    assert parse_quantity(f"{number}{suffix}") == number * scale


@settings(max_examples=100, deadline=None)
@given(mantissa=st.integers(0, 10**6), exponent=st.integers(-3, 12))
def test_exponent_form_matches_plain_digits(mantissa: int, exponent: int) -> None:
    assert parse_quantity(f"{mantissa}e{exponent}") == Fraction(mantissa) * Fraction(10) ** exponent


@pytest.mark.parametrize("suffix", ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"])
def test_every_binary_suffix_round_trips_through_the_formatter(suffix: str) -> None:
    """Our own formatter writes Ei for exbibytes; the parser must take it back."""
    assert (
        parse_milli(f"3{suffix}")
        == 3
        * {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}[suffix]
        * 1000
    )


@pytest.mark.parametrize("digits", ["٣", "\uff11", "²", "3\u0663", "1.\u0665"])
def test_only_ascii_digits_make_a_quantity(digits: str) -> None:
    with pytest.raises(ValueError, match="not a Kubernetes quantity"):
        parse_milli(digits)


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (1, "1"),
        (0, "0"),
        (0.5, "500m"),
        (1.5, "1500m"),
        (2000, "2k"),
        (1500, "1500"),
        (2_000_000_000, "2G"),
        (0.0000000001, "1n"),  # finer than a nano-unit: rounded up, as Go does
        (-2, "-2"),
    ],
    ids=["one", "zero", "half", "one-and-a-half", "2k", "1500", "2G", "sub-nano", "negative"],
)
def test_a_number_is_written_as_kubernetes_writes_the_quantity(number, text) -> None:
    assert canonical_number(number) == text


@settings(max_examples=200, deadline=None)
@given(
    st.integers(min_value=-(10**20), max_value=10**20)
    | st.integers(min_value=0, max_value=10**18).map(lambda n: n / 10**9)
)
def test_the_canonical_form_keeps_the_value(number) -> None:
    assert parse_quantity(canonical_number(number)) == Fraction(str(number))
