"""The view model as JSON-ready data and back: `/model.json` of `tas view`, read by `tas top`."""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

from tas.view import model
from tas.view.model import ClusterView

T = TypeVar("T")


def to_data(view: ClusterView) -> dict[str, Any]:
    """Plain dicts, lists and scalars (tuples become lists), ready for json.dumps."""
    return _plain(view)


def from_data(data: Mapping[str, Any]) -> ClusterView:
    """The inverse of to_data; a missing or mistyped field raises ValueError naming it."""
    return _build(ClusterView, data, "view")


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


def _build(cls: type[T], data: Any, where: str) -> T:
    if not isinstance(data, Mapping):
        raise ValueError(f"{where}: expected an object")
    hints = typing.get_type_hints(cls, vars(model))
    values = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name in data:
            values[f.name] = _value(hints[f.name], data[f.name], f"{where}.{f.name}")
    try:
        return cls(**values)
    except TypeError as exc:
        raise ValueError(f"{where}: {exc}") from None


def _value(hint: Any, data: Any, where: str) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):  # X | None
        if data is None:
            return None
        return _value(next(a for a in args if a is not type(None)), data, where)
    if dataclasses.is_dataclass(hint):
        return _build(hint, data, where)  # type: ignore[arg-type]
    if origin is tuple:
        if not isinstance(data, list):
            raise ValueError(f"{where}: expected a list")
        return tuple(_value(args[0], item, f"{where}[{i}]") for i, item in enumerate(data))
    if origin is not None and issubclass(origin, Mapping):
        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: expected an object")
        return {str(k): _value(args[1], v, f"{where}.{k}") for k, v in data.items()}
    if hint is float and isinstance(data, int | float) and not isinstance(data, bool):
        return float(data)
    wrong_type = isinstance(hint, type) and not isinstance(data, hint)
    if wrong_type or isinstance(data, bool) != (hint is bool):  # True is an int to Python
        raise ValueError(f"{where}: expected {getattr(hint, '__name__', hint)}")
    return data
