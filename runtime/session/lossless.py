"""Lossless JSON: values that survive ``JSON.stringify``/``JSON.parse`` unchanged.

Session data crosses languages (the reference runtime is TypeScript), so a value is
accepted only when every reader would get back exactly what was written: no tuples or sets,
no NaN/Infinity, no ``-0.0``, no integers outside the IEEE-754 safe range, no cycles, no lone
surrogates, only string keys.
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_SAFE_INTEGER = 2**53 - 1
_MESSAGE = "event data is not losslessly JSON-serializable"


def is_safe_integer(value: object) -> bool:
    return type(value) is int and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER


def lossless_copy(value: Any, where: str = "data") -> Any:
    """Return a deep copy of ``value`` made of plain JSON types, or raise ``TypeError``.

    The copy means a caller mutating its object later cannot change a buffered event.
    """
    return _copy(value, where, set())


def _fail(where: str, why: str) -> TypeError:
    return TypeError(f"{_MESSAGE}: {why} at {where}")


def _copy(value: Any, where: str, active: set[int]) -> Any:
    kind = type(value)
    if value is None or kind is bool:
        return value
    if kind is int:
        if not is_safe_integer(value):
            raise _fail(where, f"integer {value} is outside the safe range")
        return value
    if kind is float:
        if not math.isfinite(value):
            raise _fail(where, f"non-finite number {value!r}")
        if value == 0.0 and math.copysign(1.0, value) < 0:
            raise _fail(where, "negative zero")
        return value
    if kind is str:
        _check_text(value, where)
        return value
    if kind is list or kind is dict:
        ident = id(value)
        if ident in active:
            raise _fail(where, "a cycle")
        active.add(ident)
        try:
            if kind is list:
                return [_copy(item, f"{where}[{i}]", active) for i, item in enumerate(value)]
            out: dict[str, Any] = {}
            for key, item in value.items():
                if type(key) is not str:
                    raise _fail(where, f"non-string key {key!r}")
                _check_text(key, where)
                out[key] = _copy(item, f"{where}.{key}", active)
            return out
        finally:
            active.discard(ident)
    raise _fail(where, f"unsupported type {kind.__name__}")


def _check_text(text: str, where: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise _fail(where, "a lone surrogate in a string") from None


def dumps(value: Any) -> str:
    """The one JSON encoding used for every stored record: compact, UTF-8, key order kept."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
