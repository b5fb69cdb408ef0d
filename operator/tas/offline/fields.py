"""The small typed readers of a scenario (and of a trace): each returns the value, or raises
ScenarioError naming the field's path (`workloads[1].podSets[0].count`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tas.api.quantity import parse_milli


class ScenarioError(ValueError):
    """A malformed scenario: `path` is the field (`workloads[1].podSets[0].count`)."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}")


_TYPE_NAMES = {
    dict: "a mapping",
    list: "a list",
    str: "a string",
    bool: "true or false",
    int: "an integer",
}


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return {
        dict: "a mapping",
        list: "a list",
        str: "a string",
        int: "an integer",
        float: "a number",
    }.get(type(value), type(value).__name__)


def expect(value: object, kind: type, path: str) -> Any:
    # bool is a subclass of int; a count of `true` is a mistake, not 1.
    wrong_bool = kind is int and isinstance(value, bool)
    if not isinstance(value, kind) or wrong_bool:
        raise ScenarioError(path, f"must be {_TYPE_NAMES[kind]}, got {_describe(value)}")
    return value


def read_field(
    mapping: Mapping[str, Any], key: str, kind: type, path: str, default: Any = ...
) -> Any:
    """`mapping[key]` checked to be of `kind`; missing (or null) gives `default`, else an error."""
    child = join_path(path, key)
    value = mapping.get(key)
    if value is None:
        if default is ...:
            raise ScenarioError(child, "is required")
        return default
    return expect(value, kind, child)


def join_path(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def key_path(path: str, key: str) -> str:
    return f"{path}[{json.dumps(key)}]"


def check_keys(mapping: Mapping[Any, Any], path: str) -> None:
    for key in mapping:
        if not isinstance(key, str):
            raise ScenarioError(path, f"keys must be strings, got {key!r}")


def string_map(value: Any, path: str) -> dict[str, str]:
    mapping = expect(value, dict, path)
    check_keys(mapping, path)
    for key, item in mapping.items():
        expect(item, str, key_path(path, key))
    return dict(mapping)


def quantities(value: Any, path: str) -> dict[str, int]:
    mapping = expect(value, dict, path)
    check_keys(mapping, path)
    result = {}
    for name, quantity in mapping.items():
        try:
            milli = parse_milli(quantity)
        except ValueError as error:
            raise ScenarioError(key_path(path, name), str(error)) from None
        if milli < 0:
            raise ScenarioError(key_path(path, name), f"quantity {quantity!r} must not be negative")
        result[name] = milli
    return result
