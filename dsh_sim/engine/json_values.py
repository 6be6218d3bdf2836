"""Edge values of event data, with what the spec says of each (§1.1 "lossless JSON").

Session data crosses languages, so an append accepts only what every reader gets back exactly:
``-0``, NaN/±Infinity, integers outside the IEEE-754 safe range, a surrogate pair held as two
code points, non-string keys, tuples, sets and cycles are refused at ``Session.append`` with a ``TypeError`` naming
"losslessly JSON-serializable", and nothing is stored; the rest must read back unchanged.  The
verdicts here are written from the spec, apart from the runtime's own check
(``runtime/session/lossless.py``), so a slip there shows: a refused value the runtime stores
makes its log unreadable, an accepted one it refuses is a refusal the spec does not make.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

REFUSAL_TEXT = "losslessly JSON-serializable"
_MAX_SAFE = 2**53 - 1


@attrs.frozen
class EdgeValue:
    make: Callable[[], Any]  # a fresh value each time (appends must not share one object)
    refused: bool  # what the spec says an append does with it
    why: str


def _cycle() -> Any:
    value: dict[str, Any] = {"a": 1}
    value["self"] = value
    return value


EDGE_VALUES: dict[str, EdgeValue] = {
    # refused
    "negative-zero": EdgeValue(lambda: -0.0, True, "-0 does not survive JSON.stringify (it becomes 0)"),
    "nested-negative-zero": EdgeValue(lambda: {"a": [1, {"b": -0.0}]}, True, "-0 anywhere in the value"),
    "unsafe-integer": EdgeValue(lambda: _MAX_SAFE + 1, True, "outside the IEEE-754 safe range"),
    "negative-unsafe-integer": EdgeValue(lambda: -_MAX_SAFE - 1, True, "outside the IEEE-754 safe range"),
    "nan": EdgeValue(lambda: float("nan"), True, "NaN is not JSON"),
    "infinity": EdgeValue(lambda: [float("-inf")], True, "±Infinity is not JSON"),
    "split-surrogate-pair": EdgeValue(lambda: ["\ud83d\ude00"], True, "two code points JSON reads back as one (U+1F600)"),
    "split-surrogate-pair-key": EdgeValue(lambda: {"ok": 1, "\udbff\udfff": 2}, True, "the same in an object's key (U+10FFFF)"),
    "non-string-key": EdgeValue(lambda: {1: "one"}, True, "JSON object keys are strings"),
    "tuple": EdgeValue(lambda: {"pair": (1, 2)}, True, "a tuple would read back as a list"),
    "set": EdgeValue(lambda: {1, 2}, True, "a set is not JSON"),
    "cycle": EdgeValue(_cycle, True, "a cycle cannot be serialized"),
    # accepted, and read back exactly
    "largest-safe-integer": EdgeValue(lambda: [_MAX_SAFE, -_MAX_SAFE], False, "the safe range's ends"),
    "positive-zero": EdgeValue(lambda: [0.0, 0], False, "+0 as a float and as an integer"),
    "tiny-float": EdgeValue(lambda: 5e-324, False, "the smallest subnormal"),
    "huge-float": EdgeValue(lambda: -1.7976931348623157e308, False, "the largest finite magnitude"),
    "astral-text": EdgeValue(lambda: 'é😀\u2028\x00"\\', False, "non-ASCII, astral, line separator, NUL, quote, backslash"),
    "lone-surrogate": EdgeValue(
        lambda: "a\ud800b", False, "JSON.stringify escapes a lone surrogate (\\ud800) and JSON.parse reads it back"
    ),
    "lone-surrogates-in-keys": EdgeValue(
        lambda: {"\udc00": ["\udbff", "\udfff\ud800"]}, False, "lone surrogates in a key, high at the end, low before high"
    ),
    "deep": EdgeValue(lambda: {"k": [[[[{"": None, "t": True}]]]]}, False, "nesting, an empty key, null and true"),
}
EDGE_NAMES = tuple(EDGE_VALUES)
