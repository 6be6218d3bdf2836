"""Lossless JSON: values that survive ``JSON.stringify``/``JSON.parse`` unchanged.

Session data crosses languages (the reference runtime is TypeScript), so a value is
accepted only when every reader would get back exactly what was written: no tuples or sets,
no NaN/Infinity, no ``-0.0``, no integers outside the IEEE-754 safe range, no cycles, no lone
surrogates, only string keys.
"""

from __future__ import annotations

import json
import math
from typing import Any, TypeGuard

MAX_SAFE_INTEGER = 2**53 - 1
_MESSAGE = "event data is not losslessly JSON-serializable"


def is_safe_integer(value: object) -> TypeGuard[int]:
    return type(value) is int and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER


def lossless_copy(value: Any, where: str = "data") -> Any:
    """Return a deep copy of ``value`` made of plain JSON types, or raise ``TypeError``.

    The copy means a caller mutating its object later cannot change a buffered event.
    """
    try:
        return _copy(value, None, set())
    except _Refused as err:
        raise _fail(where + "".join(map(_step_text, reversed(err.steps))), err.why) from None


def _fail(where: str, why: str) -> TypeError:
    return TypeError(f"{_MESSAGE}: {why} at {where}")


class _Refused(Exception):
    """A refusal on its way out: its location is assembled while unwinding, never on success."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why
        self.steps: list[int | str] = []  # list indices and dict keys, innermost first


def _step_text(step: int | str) -> str:
    return f"[{step}]" if type(step) is int else f".{step}"


def _copy(value: Any, step: int | str | None, active: set[int]) -> Any:
    """Copy ``value`` (found at ``step`` of its container); a refusal records ``step`` on its way out."""
    try:
        kind = type(value)
        if value is None or kind is bool:
            return value
        if kind is int:
            if not is_safe_integer(value):
                raise _Refused(f"integer {value} is outside the safe range")
            return value
        if kind is float:
            if not math.isfinite(value):
                raise _Refused(f"non-finite number {value!r}")
            if value == 0.0 and math.copysign(1.0, value) < 0:
                raise _Refused("negative zero")
            return value
        if kind is str:
            if not value.isascii():  # only a non-ASCII string can hold a lone surrogate
                _check_text(value)
            return value
        if kind is list or kind is dict:
            ident = id(value)
            if ident in active:
                raise _Refused("a cycle")
            active.add(ident)
            try:
                if kind is list:
                    return [_copy(item, i, active) for i, item in enumerate(value)]
                out: dict[str, Any] = {}
                for key, item in value.items():
                    if type(key) is not str:
                        raise _Refused(f"non-string key {key!r}")
                    if not key.isascii():
                        _check_text(key)
                    out[key] = _copy(item, key, active)
                return out
            finally:
                active.discard(ident)
        raise _Refused(f"unsupported type {kind.__name__}")
    except _Refused as err:
        if step is not None:
            err.steps.append(step)
        raise


def _check_text(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise _Refused("a lone surrogate in a string") from None


def dumps(value: Any) -> str:
    """The one JSON encoding used for every stored record: compact, UTF-8, key order kept."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
