"""The spec's rules for the values inside a session log: strict JSON, the header, each record.

:mod:`dsh_sim.evidence.oracles.spec_log` reads the bytes (frames, lines, torn tails) and asks
this module whether each decoded value is one the spec allows.  Written from the spec
(§1.1 envelope, §1.3 surface events, §3.3 header, §10.1 the v3 generation), not from
``runtime/``.
"""

from __future__ import annotations

import json
import math
from typing import Any

VERSION = 3
MAX_SAFE = 2**53 - 1
ENVELOPE = ("type", "seq", "time", "data", "ignorable", "surfaceOp", "sourceEventSeqs")
HEADER_KEYS = ("type", "version", "id", "createdAt", "cwd", "parentSession", "isSeeded", "origin", "delegationDepth", "agentPreset")
SURFACE = frozenset({"user/message", "assistant/message", "tool/result", "system/message"})


class SpecViolation(ValueError):
    """Bytes the spec does not allow (``offset``: where in the file)."""

    def __init__(self, message: str, offset: int | None = None) -> None:
        super().__init__(message if offset is None else f"{message} (at byte {offset})")
        self.offset = offset


# -- strict JSON ------------------------------------------------------------------------------


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _int(text: str) -> int:
    if text == "-0":
        raise ValueError("-0 is not lossless JSON")
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if value == 0 and text.lstrip().startswith("-"):
        raise ValueError("-0 is not lossless JSON")
    return value


def _constant(text: str) -> Any:
    raise ValueError(f"{text} is not JSON")


def _checked_dict(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``_no_duplicates`` built in C: a duplicate key shrinks the dict, and then
    ``_no_duplicates`` raises its own error for the same pairs."""
    out = dict(pairs)
    return out if len(out) == len(pairs) else _no_duplicates(pairs)


# The one strict reading, with hooks that are cheaper where they cannot differ: an integer
# literal is refused only when it is exactly "-0" (JSON has no other spelling of a negative
# zero integer), so a text without "-0" parses its integers with the built-in ``int``.
_STRICT = json.JSONDecoder(object_pairs_hook=_checked_dict, parse_int=_int, parse_float=_float, parse_constant=_constant)
_STRICT_NO_MINUS_ZERO = json.JSONDecoder(object_pairs_hook=_checked_dict, parse_float=_float, parse_constant=_constant)


def strict_json(line: bytes) -> Any:
    """One JSON value as a JavaScript reader sees it losslessly (no NaN, no -0, no duplicate keys)."""
    text = line.decode("utf-8")  # UnicodeDecodeError is a ValueError
    if text.startswith("\ufeff"):  # (json.loads refuses a byte-order mark; so does this)
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_int=_int, parse_float=_float, parse_constant=_constant)
    return (_STRICT if "-0" in text else _STRICT_NO_MINUS_ZERO).decode(text)


def _safe_int(value: Any) -> bool:
    return type(value) is int and -MAX_SAFE <= value <= MAX_SAFE


def _lossless(value: Any, depth: int = 0) -> bool:
    """Every number a safe integer or a finite float; only JSON types (checked after parsing).

    (A container's leaves are judged in its own loop, without a call each: a leaf is one
    level deeper than its container, so a non-empty container at the depth limit fails.)"""
    if depth > 200:
        return False
    kind = type(value)
    if kind is dict:
        items: Any = value.values()
    elif kind is list:
        items = value
    else:
        return _leaf_lossless(value, kind)
    if depth >= 200 and items:
        return False
    for item in items:
        sub = type(item)
        if sub is str or sub is bool or item is None:
            continue
        if sub is dict or sub is list:
            if not _lossless(item, depth + 1):
                return False
        elif not _leaf_lossless(item, sub):
            return False
    return True


def _leaf_lossless(value: Any, kind: type) -> bool:
    if value is None or kind is bool or kind is str:
        return True
    if kind is int:
        return bool(-MAX_SAFE <= value <= MAX_SAFE)
    if kind is float:
        return math.isfinite(value)
    return False


# -- header and records -------------------------------------------------------------------------


def check_header(record: Any) -> dict[str, Any]:
    """The v3 header record, keys in the order the spec writes them (§3.3, §10.1, §12)."""
    if type(record) is not dict or record.get("type") != "session":
        raise SpecViolation("first record is not a session header")
    if type(record.get("version")) not in (int, float):  # "version number" (§3.3): a wrong shape, not a version
        raise SpecViolation("first record is not a session header")
    if record.get("version") != VERSION:
        raise SpecViolation(f"header version {record.get('version')!r}, expected {VERSION}")
    keys = list(record)
    if any(k not in HEADER_KEYS for k in keys):
        raise SpecViolation(f"header has keys outside the spec: {sorted(set(keys) - set(HEADER_KEYS))}")
    if keys != [k for k in HEADER_KEYS if k in record]:
        raise SpecViolation(f"header keys out of the spec's order: {keys}")
    for required in ("id", "createdAt", "isSeeded", "delegationDepth"):
        if required not in record:
            raise SpecViolation(f"header lacks {required}")
    if type(record["id"]) is not str or not record["id"]:
        raise SpecViolation("header id is not a non-empty string")
    for key in ("createdAt", "delegationDepth"):
        if not _safe_int(record[key]) or record[key] < 0:
            raise SpecViolation(f"header {key} is not a non-negative safe integer")
    if type(record["isSeeded"]) is not bool:
        raise SpecViolation("header isSeeded is not a boolean")
    if "cwd" in record and (type(record["cwd"]) is not str or not record["cwd"].startswith("/")):
        raise SpecViolation("header cwd is not an absolute path")
    if "origin" in record and record["origin"] != "subagent":
        raise SpecViolation('header origin is not "subagent"')
    for key in ("parentSession", "agentPreset"):
        if key in record and type(record[key]) is not str:
            raise SpecViolation(f"header {key} is not a string")
    return record


def _canonical_ranges(values: list[int]) -> list[Any]:
    """§10.1: runs of three or more consecutive seqs are stored as [start, end]."""
    if any(b <= a for a, b in zip(values, values[1:])):
        return list(values)
    out: list[Any] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        out.extend([[values[i], values[j]]] if j - i >= 2 else values[i : j + 1])
        i = j + 1
    return out


def expand_ranges(raw: Any, seq: int) -> list[int]:
    if type(raw) is not list:
        raise SpecViolation(f"sourceEventSeqs of seq {seq} is not an array")
    out: list[int] = []
    paired = False
    for item in raw:
        if type(item) is list:
            if len(item) != 2 or not all(_safe_int(v) and v >= 0 for v in item) or item[1] < item[0]:
                raise SpecViolation(f"sourceEventSeqs of seq {seq} holds an invalid range {item!r}")
            out.extend(range(item[0], item[1] + 1))
            paired = True
        elif _safe_int(item) and item >= 0:
            out.append(item)
        else:
            raise SpecViolation(f"sourceEventSeqs of seq {seq} holds {item!r}")
    # §12 (seq-ranges.ts): decoding validates pairs and strict increase — the increase is checked
    # once a pair is present (a plain list is taken as written, as the reference decoder does)
    if paired and any(b <= a for a, b in zip(out, out[1:])):
        raise SpecViolation(f"sourceEventSeqs of seq {seq} do not strictly increase")
    if any(s >= seq for s in out):
        raise SpecViolation(f"sourceEventSeqs of seq {seq} names a later event")
    return out


def check_record(record: Any, expected_seq: int, *, writer: bool) -> dict[str, Any]:
    """One stored event record (§1.1, §1.3, §10.1).  ``writer``: also the writer-only rules
    (key order, canonical range encoding)."""
    if type(record) is not dict:
        raise SpecViolation(f"record {expected_seq} is not a JSON object")
    keys = list(record)
    if any(k not in ENVELOPE for k in keys):
        raise SpecViolation(f"record {expected_seq} has keys outside the envelope: {sorted(set(keys) - set(ENVELOPE))}")
    if keys[:4] != ["type", "seq", "time", "data"]:
        raise SpecViolation(f"record {expected_seq} does not start with type, seq, time, data: {keys}")
    kind, seq = record["type"], record["seq"]
    if type(kind) is not str or not kind:
        raise SpecViolation(f"record {expected_seq} has no type")
    if seq != expected_seq or not _safe_int(seq):
        raise SpecViolation(f"record has seq {seq!r} where {expected_seq} comes next")
    if not _safe_int(record["time"]):
        raise SpecViolation(f"{kind} {seq}: time is not a safe integer")
    if not _lossless(record["data"]):
        raise SpecViolation(f"{kind} {seq}: data is not lossless JSON")
    if "ignorable" in record and record["ignorable"] is not True:
        raise SpecViolation(f"{kind} {seq}: ignorable may only be true")
    op = record.get("surfaceOp")
    sources = record.get("sourceEventSeqs")
    if kind in SURFACE:
        if op is None:
            raise SpecViolation(f"{kind} {seq}: a surface event without surfaceOp")
        if op != "append" and not (
            type(op) is dict
            and list(op) == ["op", "startSeq", "endSeq"]
            and op["op"] == "replace"
            and _safe_int(op["startSeq"])
            and _safe_int(op["endSeq"])
            and 0 <= op["startSeq"] <= op["endSeq"] < seq
        ):
            raise SpecViolation(f"{kind} {seq}: invalid surfaceOp {op!r}")
        if kind == "assistant/message" and sources is not None:
            raise SpecViolation(f"{kind} {seq}: an assistant message embeds its stream and carries no sourceEventSeqs")
        if sources == []:  # §1.3: only an assistant message may carry an empty array (and v3's carry none)
            raise SpecViolation(f"{kind} {seq}: empty sourceEventSeqs")
        if kind == "tool/result":
            data = record["data"]
            error = data.get("error") if type(data) is dict else None
            blocks = data.get("message", {}).get("content") if type(data) is dict and type(data.get("message")) is dict else None
            if error is not None and not (type(blocks) is list and blocks and type(blocks[0]) is dict and blocks[0].get("isError") is True):
                raise SpecViolation(f"tool/result {seq}: error metadata on a result that is not an error")
    elif op is not None or sources is not None:
        raise SpecViolation(f"{kind} {seq}: a log-only event carries surface metadata")
    if sources is not None:
        expanded = expand_ranges(sources, seq)
        canonical = _canonical_ranges(expanded)
        if sources != canonical:
            if writer:
                raise SpecViolation(f"{kind} {seq}: sourceEventSeqs {sources!r} are not in canonical range form")
            decoded: dict[str, Any] = {
                **record,
                "sourceEventSeqs": canonical,
            }  # a reader decodes the seqs; they are written canonical again
            return decoded
    return record
