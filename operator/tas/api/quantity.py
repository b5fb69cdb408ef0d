"""Kubernetes resource quantities ("2", "600m", "4Gi", "1e3") as integer milli-units.

The solver compares every resource in milli-units, so `parse_milli("1")` is 1000 and
`parse_milli("1Ki")` is 1_024_000. Like Kubernetes' `Quantity.MilliValue()`, a value finer
than one milli-unit is rounded up: a request of "0.1m" still takes 1m.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from fractions import Fraction

_BINARY_SUFFIXES = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL_SUFFIXES = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
# The exponent form is tried before the plain suffixes so that "1E3" is 1000, while "1E"
# alone (no digits after it) is one exa.
_QUANTITY = re.compile(
    r"(?P<sign>[+-]?)(?P<number>\d+(?:\.\d*)?|\.\d+)"
    r"(?P<suffix>[eE][+-]?\d+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|)",
    re.ASCII,  # "٣" is a digit to Python, not to Kubernetes
)
# Far beyond any real resource; keeps "1e999999" from building a gigantic integer.
_MAX_EXPONENT = 60


def parse_quantity(value: object) -> Fraction:
    """The exact value of a Kubernetes quantity given as a string, an int or a float."""
    if isinstance(value, bool):  # bool is an int in Python; true/false is never a quantity
        raise ValueError(f"quantity {value!r} is not a number")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"quantity {value!r} is not a finite number")
        value = repr(value)  # "1.5", "1e-05": the decimal form YAML gave us, reparsed exactly
    if not isinstance(value, str):
        raise ValueError(f"quantity {value!r} must be a string or a number")
    match = _QUANTITY.fullmatch(value)
    if match is None:
        raise ValueError(
            f"quantity {value!r} is not a Kubernetes quantity (e.g. 2, 500m, 4Gi, 1e3)"
        )
    number = Fraction(match["number"] + ("0" if match["number"].endswith(".") else ""))
    if match["sign"] == "-":
        number = -number
    suffix = match["suffix"]
    if suffix in _BINARY_SUFFIXES:  # before the exponent form: "Ei" is exbi, not E + "i"
        return number * _BINARY_SUFFIXES[suffix]
    if suffix[:1] in ("e", "E") and len(suffix) > 1:
        exponent = int(suffix[1:])
        if abs(exponent) > _MAX_EXPONENT:
            raise ValueError(f"quantity {value!r}: exponent {exponent} is out of range")
        return number * Fraction(10) ** exponent
    return number * _DECIMAL_SUFFIXES[suffix]


def parse_milli(value: object) -> int:
    """A quantity in milli-units, rounded up to a whole milli-unit (never down to zero)."""
    if isinstance(value, str):
        return _parse_milli_text(value)
    return math.ceil(parse_quantity(value) * 1000)


@functools.lru_cache(maxsize=4096)
def _parse_milli_text(value: str) -> int:
    # A cluster's pods use a handful of distinct strings ("100m", "1Gi") tens of thousands of
    # times; exact Fraction arithmetic for each would dominate a restart's projection work.
    return math.ceil(parse_quantity(value) * 1000)


def resources_to_milli(resources: Mapping[str, object]) -> dict[str, int]:
    """`{"cpu": "2", "memory": "4Gi"}` -> `{"cpu": 2000, "memory": 4294967296000}`.

    A resource amount cannot be negative; the error names the resource and the bad value.
    """
    result: dict[str, int] = {}
    for name, value in resources.items():
        try:
            milli = parse_milli(value)
        except ValueError as error:
            raise ValueError(f"{name}: {error}") from None
        if milli < 0:
            raise ValueError(f"{name}: quantity {value!r} must not be negative")
        result[name] = milli
    return result


def canonical_number(value: int | float) -> str:
    """A quantity written as a JSON number, in the string form Kubernetes' Go types write it
    back (`Quantity.String()`, decimal SI): 1 -> "1", 0.5 -> "500m", 2000 -> "2k". A value
    finer than a nano-unit is rounded up to one, as Go does."""
    amount = Fraction(str(value))  # the decimal written, not the float's binary value
    sign = "-" if amount < 0 else ""
    amount = abs(amount)
    if amount == 0:
        return "0"
    for suffix, scale in reversed(_DECIMAL_SUFFIXES.items()):  # largest exponent first
        mantissa = amount / scale
        if mantissa.denominator == 1:
            return f"{sign}{mantissa.numerator}{suffix}"
    return f"{sign}{math.ceil(amount * 10**9)}n"
