"""Lossless JSON: values that survive ``JSON.stringify``/``JSON.parse`` unchanged.

Session data crosses languages (the reference runtime is TypeScript), so a value is
accepted only when every reader would get back exactly what was written: no tuples or sets,
no NaN/Infinity, no ``-0.0``, no integers outside the IEEE-754 safe range, no cycles, only
string keys.  A lone surrogate is JSON text like any other (spec §1.1 does not refuse it):
written escaped as ``JSON.stringify`` writes it (``"\\ud800"``), it reads back unchanged in
both languages.  What is refused is a surrogate pair held as two code points, a Python string
JavaScript cannot hold apart from the astral character it spells: JSON reads it back as one.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable
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


def check_lossless(value: Any, where: str = "data") -> None:
    """Refuse exactly what :func:`lossless_copy` refuses (the same ``TypeError``), without copying.

    For a value that is encoded right after the check, with no checkpoint between: the
    encoded bytes are then the private copy, and a deep copy would only be thrown away.
    Unlike :func:`check_parsed` it looks for everything an in-memory value can hold (cycles,
    tuples, non-string keys, other types).
    """
    try:
        kind = type(value)
        if kind is dict or kind is list:
            _walk_container(value, kind, set())
        else:
            _check_leaf(value, kind)
    except _Refused as err:
        raise _fail(where + "".join(map(_step_text, reversed(err.steps))), err.why) from None


def check_parsed(value: Any, where: str = "data") -> None:
    """Refuse what :func:`lossless_copy` refuses, without copying, for freshly parsed JSON.

    A value ``json.loads`` just returned is already made of plain JSON types and owned by no
    one else, so copying it buys nothing; it can still hold what JSON allows and this format
    does not (an unsafe integer, ``NaN``/``Infinity``, ``-0``), so it is
    walked once.  The refusal is the very ``TypeError`` ``lossless_copy`` would raise.  Only
    for parsed JSON: it never meets a cycle, a tuple or a non-string key, so it does not look.
    """
    try:
        _check(value)
    except _Refused as err:
        raise _fail(where + "".join(map(_step_text, reversed(err.steps))), err.why) from None


# Everything check_parsed refuses leaves a trace in the JSON text it was parsed from: an unsafe
# integer or a float that overflows to infinity needs 16 digits in a row or an exponent; NaN and
# Infinity are spelled so; negative zero starts "-0".  (Parsed JSON never holds a split surrogate
# pair: the decoder joins an escaped pair, and raw surrogate bytes are not UTF-8, so the reader
# refuses them before parsing.)  The test may fire on clean text (a "3e" in an id): that only
# costs the walk.  Substring tests on the digits mapped to "0" are several times faster than one
# regular expression with these alternatives.
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")


def text_may_refuse(text: bytes) -> bool:
    """Whether JSON parsed from ``text`` could hold a value :func:`check_parsed` refuses: when it
    is ``False`` the walk is sure to pass and can be skipped (tests/runtime/test_lossless.py
    checks that implication on generated JSON)."""
    if b"-0" in text or b"NaN" in text or b"Infinity" in text:
        return True
    digits = text.translate(_DIGITS_AS_ZERO)
    return b"0000000000000000" in digits or b"0e" in digits or b"0E" in digits


def _check_scalar(value: Any, kind: type) -> None:
    if kind is int:
        if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            raise _Refused(f"integer {value} is outside the safe range")
    elif kind is float:
        if not math.isfinite(value):
            raise _Refused(f"non-finite number {value!r}")
        if value == 0.0 and math.copysign(1.0, value) < 0:
            raise _Refused("negative zero")
    elif kind is str and not value.isascii():
        _check_text(value)


def _check(value: Any) -> None:
    """The walk of :func:`check_parsed`; a refusal collects its location on the way out."""
    kind = type(value)
    if kind is dict:
        for key, item in value.items():
            if not key.isascii():
                _check_text(key)  # located at the object, as lossless_copy does
            try:
                sub = type(item)
                if sub is dict or sub is list:
                    _check(item)
                elif sub is not bool and item is not None:
                    _check_scalar(item, sub)
            except _Refused as err:
                err.steps.append(key)
                raise
    elif kind is list:
        for index, item in enumerate(value):
            try:
                sub = type(item)
                if sub is dict or sub is list:
                    _check(item)
                elif sub is not bool and item is not None:
                    _check_scalar(item, sub)
            except _Refused as err:
                err.steps.append(index)
                raise
    elif kind is not bool and value is not None:
        _check_scalar(value, kind)


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
        if kind is dict or kind is list:
            return _copy_container(value, kind, active)
        _check_leaf(value, kind)
        return value
    except _Refused as err:
        if step is not None:
            err.steps.append(step)
        raise


def _check_leaf(value: Any, kind: type) -> None:
    """Refuse a scalar JSON cannot carry losslessly (or anything that is not a JSON scalar)."""
    if kind is str:
        if not value.isascii():  # only a non-ASCII string can hold a surrogate (and no call for the rest)
            _check_text(value)
    elif kind is int:
        if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            raise _Refused(f"integer {value} is outside the safe range")
    elif kind is float:
        if not math.isfinite(value):
            raise _Refused(f"non-finite number {value!r}")
        if value == 0.0 and math.copysign(1.0, value) < 0:
            raise _Refused("negative zero")
    elif value is not None and kind is not bool:
        raise _Refused(f"unsupported type {kind.__name__}")


def _copy_container(value: Any, kind: type, active: set[int]) -> Any:
    """A list's or dict's copy; scalars are checked in line (most of a document is scalars, and a
    call per scalar was most of the cost).  A refusal records the item's index or key."""
    ident = id(value)
    if ident in active:
        raise _Refused("a cycle")
    active.add(ident)
    try:
        if kind is list:
            items: list[Any] = []
            for index, item in enumerate(value):
                sub = type(item)
                try:
                    if sub is dict or sub is list:
                        items.append(_copy_container(item, sub, active))
                    else:
                        _check_leaf(item, sub)
                        items.append(item)
                except _Refused as err:
                    err.steps.append(index)
                    raise
            return items
        out: dict[str, Any] = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _Refused(f"non-string key {key!r}")
            if not key.isascii():
                _check_text(key)
            sub = type(item)
            try:
                if sub is dict or sub is list:
                    out[key] = _copy_container(item, sub, active)
                else:
                    _check_leaf(item, sub)
                    out[key] = item
            except _Refused as err:
                err.steps.append(key)
                raise
        return out
    finally:
        active.discard(ident)


def _walk_container(value: Any, kind: type, active: set[int]) -> None:
    """:func:`_copy_container`'s checks, in the same order, building nothing."""
    ident = id(value)
    if ident in active:
        raise _Refused("a cycle")
    active.add(ident)
    try:
        if kind is list:
            for index, item in enumerate(value):
                sub = type(item)
                try:
                    if sub is dict or sub is list:
                        _walk_container(item, sub, active)
                    else:
                        _check_leaf(item, sub)
                except _Refused as err:
                    err.steps.append(index)
                    raise
            return
        for key, item in value.items():
            if type(key) is not str:
                raise _Refused(f"non-string key {key!r}")
            if not key.isascii():
                _check_text(key)
            sub = type(item)
            try:
                if sub is dict or sub is list:
                    _walk_container(item, sub, active)
                else:
                    _check_leaf(item, sub)
            except _Refused as err:
                err.steps.append(key)
                raise
    finally:
        active.discard(ident)


_SPLIT_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def holds_split_pair(text: str) -> bool:
    """Whether ``text`` holds a surrogate pair as two code points: written as JSON it reads back
    as the one astral character (every string a log holds is checked for it, not only data)."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # it holds a surrogate: lone ones are fine, a pair spelled as two is not
        return _SPLIT_PAIR.search(text) is not None
    return False


def join_text(left: str, right: str) -> str:
    """``left + right`` as JavaScript concatenates strings: a high surrogate ending ``left`` and a
    low one starting ``right`` become the one character they spell (streamed text may be cut
    inside a pair; kept as two code points, the message would be refused as a split pair)."""
    if left and right and "\ud800" <= left[-1] <= "\udbff" and "\udc00" <= right[0] <= "\udfff":
        pair = 0x10000 + ((ord(left[-1]) - 0xD800) << 10) + (ord(right[0]) - 0xDC00)
        return left[:-1] + chr(pair) + right[1:]
    return left + right


def _check_text(text: str) -> None:
    if holds_split_pair(text):
        raise _Refused("a surrogate pair held as two code points (JSON reads it back as one) in a string")


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)  # json.dumps with these builds one per call


def dumps(value: Any) -> str:
    """The one JSON encoding used for every stored record: compact, UTF-8, key order kept."""
    return _ENCODER.encode(value)


def _acyclic_encoder() -> Callable[[Any, int], Any] | None:
    """:data:`_ENCODER`'s C encoder, built once and without its cycle check (``markers``)."""
    try:
        from _json import make_encoder
    except ImportError:  # pragma: no cover - an interpreter without CPython's accelerator
        return None
    return make_encoder(None, _ENCODER.default, json.encoder.encode_basestring, None, ":", ",", False, False, False)


_ACYCLIC = _acyclic_encoder()


def encode_utf8(text: str) -> bytes:
    """JSON text from :func:`dumps` as UTF-8, a lone surrogate escaped as ``JSON.stringify``
    escapes it (``\\ud800``, lower-case hex: exactly what ``backslashreplace`` writes).  A
    surrogate is the only code point UTF-8 cannot carry and stands only inside a string of the
    text, where the escape means the same code unit; everything else is written as it is."""
    return text.encode("utf-8", "backslashreplace")


def dumps_lines(values: Iterable[Any]) -> str:
    """Every value as :func:`dumps` encodes it, each followed by a newline: a batch's lines.

    Only for values already known to be acyclic: every one passed :func:`check_lossless` /
    :func:`lossless_copy` or came from a decoder.  Then the cycle check of :func:`dumps` finds
    nothing, and building the C encoder for every value costs more than encoding the value.
    """
    encode = _ACYCLIC
    if encode is None:  # pragma: no cover
        return "".join([dumps(value) + "\n" for value in values])
    return "".join(["".join(encode(value, 0)) + "\n" for value in values])
