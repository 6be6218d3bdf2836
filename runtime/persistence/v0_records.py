"""One v0 storage record as the reference reads it: an event's envelope, the message of a
message event, its ``sourceEventSeqs``, and a packed row's expansion into ``assistant/chunk``
events (spec §3.3, the reference's ``validateRow`` and ``adoptSessionEvent``).

Numbers are read as JavaScript wrote them: a v0 log was written and read by JavaScript, whose
``2.0`` and ``-0`` are the integers 2 and 0.  A record this module refuses raises
:class:`~runtime.persistence.log_format.LogCorruption` (a malformed packed row is
:class:`~runtime.persistence.log_format.Unparsable`, a possible torn tail), and a record whose
``seq`` is no integer raises :class:`SeqNotNext` (a seq gap); whether that is a tolerated crash
tail is the scanner's business (:mod:`runtime.persistence.v0_format`).
"""

from __future__ import annotations

import json
import math
from typing import Any

import attrs

from runtime.persistence.log_format import LogCorruption, Unparsable, parse_record
from runtime.session.lossless import is_safe_integer

ROW_TAGS = {"text-chunks": "text-delta", "reasoning-chunks": "reasoning-delta", "tool-call-chunks": "tool-call-delta"}
_ENVELOPE_KEYS = frozenset({"type", "seq", "time", "data", "ignorable", "surfaceOp", "sourceEventSeqs"})


@attrs.frozen
class V0Event:
    """One stored v0 event; ``surface_op`` keeps the v0 spelling ``{op, start, end}``."""

    type: str
    seq: int
    time: int
    data: Any
    ignorable: bool = False
    surface_op: Any = None
    source_event_seqs: tuple[int, ...] | None = None

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {"type": self.type, "seq": self.seq, "time": self.time, "data": self.data}
        if self.ignorable:
            record["ignorable"] = True
        if self.source_event_seqs is not None:
            record["sourceEventSeqs"] = list(self.source_event_seqs)
        if self.surface_op is not None:
            record["surfaceOp"] = self.surface_op
        return record


# -- numbers as JavaScript wrote them ------------------------------------------------------


def js_integer(value: Any) -> int | None:
    """``value`` as the integer JavaScript reads it (``2.0`` and ``-0`` are the integers 2 and 0:
    a v0 log was written and read by JavaScript, which has no other numbers), ``None`` if it is
    not a safe integer (``Number.isSafeInteger``)."""
    if type(value) is float and value.is_integer():
        value = int(value)
    return value if is_safe_integer(value) else None


def _is_minus_zero(value: Any) -> bool:
    return type(value) is float and value == 0 and math.copysign(1.0, value) < 0


def js_count(value: Any, *, minus_zero: bool = True) -> int | None:
    """A non-negative safe integer (the reference refuses ``-0`` for some fields), or ``None``."""
    number = js_integer(value)
    if number is None or number < 0 or (not minus_zero and _is_minus_zero(value)):
        return None
    return number


def is_js_number(value: Any) -> bool:
    return type(value) in (int, float)


def js_number(value: int | float) -> int | float:
    """A number as JavaScript writes it back: an integral float is the integer (``-0`` is 0)."""
    return int(value) if type(value) is float and value.is_integer() and abs(value) < 1e21 else value


# -- records --------------------------------------------------------------------------------


class _Malformed(Unparsable):
    """A malformed packed row: like bad JSON, not a record at all (a tolerated crash tail)."""


class SeqNotNext(ValueError):
    """A record whose seq is no integer at all: like any seq but the next one, a seq gap."""

    def __init__(self, kind: str, got: Any) -> None:
        super().__init__(kind)
        self.kind = kind
        self.got = got


def _event(record: dict[str, Any]) -> V0Event:
    extra = sorted(set(record) - _ENVELOPE_KEYS)
    if extra:
        raise LogCorruption(f"event has unexpected envelope keys {extra}")
    kind, seq, time = record.get("type"), js_count(record.get("seq")), js_integer(record.get("time"))
    if type(kind) is not str or not kind:
        shown = "undefined" if "type" not in record else json.dumps(kind).replace('"', "")
        raise LogCorruption(f'event type "{shown}" (seq {record.get("seq")}) is not part of the v0 vocabulary')
    if seq is None:
        raise SeqNotNext(kind, record.get("seq", "undefined"))
    if time is None or "data" not in record:
        raise LogCorruption(f"{kind} event has an invalid seq, time or data")
    if "ignorable" in record and record["ignorable"] is not True:
        raise LogCorruption(f"{kind} event at seq {seq}: ignorable may only be true")
    sources = None
    if "sourceEventSeqs" in record:
        sources = _seq_list(record["sourceEventSeqs"], kind, seq)
    _check_message(kind, seq, record["data"])
    return V0Event(kind, seq, time, record["data"], "ignorable" in record, record.get("surfaceOp"), sources)


_MESSAGE_EVENTS = ("user/message", "assistant/message", "tool/result")


def _check_message(kind: str, seq: int, data: Any) -> None:
    """The message an event of spec §1.2's message types carries has its shape (the reference
    reader checks it as it adopts each event, so a log whose message is missing or malformed is
    refused, not replayed into a surface without one)."""
    if kind not in _MESSAGE_EVENTS:
        return
    subject = f"session event at seq {seq}"
    record = data if type(data) in (dict, list) else None  # a JavaScript array is an object too
    message = record if kind == "user/message" else (record.get("message") if type(record) is dict else None)
    if type(message) is not dict or type(message.get("id")) is not str or not message["id"]:
        raise LogCorruption(f"{subject} lacks an identified message")
    role = "assistant" if kind == "assistant/message" else "user"
    if message.get("role") != role:
        raise LogCorruption(f'{subject} message must have role "{role}"')
    source = message.get("source")
    if type(source) is not dict or type(source.get("kind")) is not str or not source["kind"]:
        raise LogCorruption(f"{subject} message has invalid source")
    content = message.get("content")
    if type(content) is not list:
        raise LogCorruption(f"{subject} message has invalid content")
    if kind == "assistant/message":
        if source["kind"] != "model" or not all(type(source.get(k)) is str and source[k] for k in ("provider", "model")):
            raise LogCorruption(f"{subject} message must have model source")
    elif kind == "tool/result":
        call_id = source.get("callId")
        if source["kind"] != "tool" or type(call_id) is not str or not call_id:
            raise LogCorruption(f"{subject} message must have tool source")
        block = content[0] if len(content) == 1 else None
        if type(block) is not dict or block.get("type") != "tool-result" or type(block.get("content")) is not list:
            raise LogCorruption(f"{subject} message must contain one tool-result block")
        if block.get("toolCallId") != call_id:
            raise LogCorruption(f"{subject} message has mismatched tool call ids")


def _seq_list(raw: Any, kind: str, owner: int) -> tuple[int, ...]:
    """Plain seqs: ``[start, end]`` ranges are the v2+ storage form (spec §10.1), and the
    reference refuses them in v0 as it replays the surface."""
    if type(raw) is not list:
        raise LogCorruption(f"sourceEventSeqs at seq {owner} must be an array")
    out: list[int] = []
    for item in raw:
        single = js_count(item)
        if single is None:
            raise LogCorruption(f'session event "{kind}" sourceEventSeqs must densely contain non-negative safe integers')
        out.append(single)
    return tuple(out)


def _bad_row(tag: str, why: str) -> _Malformed:
    return _Malformed(f"malformed {tag} storage row: {why}")


def expand_row(record: dict[str, Any]) -> list[V0Event]:
    """The chunk events a packed row stands for, validated as the reference's ``validateRow``
    does (its checks, in its order, with its texts; numbers read as JavaScript reads them)."""
    tag = record["type"]
    if set(record) != {"type", "seq0", "time0", "data"}:
        raise _bad_row(tag, "envelope must be exactly {type, seq0, time0, data}")
    seq0 = js_count(record["seq0"])
    if seq0 is None:
        raise _bad_row(tag, "seq0 must be a non-negative safe integer")
    time0 = js_integer(record["time0"])
    if time0 is None:
        raise _bad_row(tag, "time0 must be a safe integer")
    data = record["data"]
    if type(data) not in (dict, list):  # a JavaScript array is an object too (with no such keys)
        raise _bad_row(tag, "data must be an object")
    keys = set(data) if type(data) is dict else set()
    if tag == "tool-call-chunks":
        payload_key = "args"
        if keys not in ({"turn", "step", "index", "id", "name", "dt", "args"}, {"turn", "step", "index", "id", "dt", "args"}):
            raise _bad_row(tag, "data must be exactly {turn, step, index, id, name?, dt, args}")
        if type(data["id"]) is not str or ("name" in data and type(data["name"]) is not str):
            raise _bad_row(tag, "id (and name when present) must be strings")
    else:
        payload_key = "texts"
        if keys != {"turn", "step", "index", "dt", "texts"}:
            raise _bad_row(tag, "data must be exactly {turn, step, index, dt, texts}")
    assert type(data) is dict
    if not all(is_js_number(data[k]) for k in ("turn", "step", "index")):
        raise _bad_row(tag, "turn/step/index must be numbers")
    members, dt = data[payload_key], data["dt"]
    if type(members) is not list or not members or not all(type(m) is str for m in members):
        raise _bad_row(tag, f"{payload_key} must be a non-empty string array")
    gaps = [js_integer(g) for g in dt] if type(dt) is list else [None]
    if any(g is None for g in gaps):
        raise _bad_row(tag, "dt must be an array of safe integers")
    if len(gaps) != len(members) - 1:
        raise _bad_row(tag, f"dt length {len(gaps)} does not match {len(members)} members")
    if not is_safe_integer(seq0 + len(members) - 1):
        raise _bad_row(tag, "member seqs must stay safe integers")
    times = [time0]
    for gap in gaps:
        assert gap is not None
        times.append(times[-1] + gap)
        if not is_safe_integer(times[-1]):
            raise _bad_row(tag, "member times must stay safe integers")
    turn, step, index = (js_number(data[k]) for k in ("turn", "step", "index"))
    out: list[V0Event] = []
    for k, member in enumerate(members):
        chunk: dict[str, Any] = {"type": ROW_TAGS[tag], "index": index}
        if tag == "tool-call-chunks":
            chunk["id"] = data["id"]
            if "name" in data:
                chunk["name"] = data["name"]
            chunk["argumentsDelta"] = member
        else:
            chunk["text"] = member
        out.append(V0Event("assistant/chunk", seq0 + k, times[k], {"turn": turn, "step": step, "chunk": chunk}))
    return out


def records_of(line: bytes) -> list[V0Event]:
    record = parse_record(line)
    if type(record.get("type")) is str and record["type"] in ROW_TAGS:
        return expand_row(record)
    return [_event(record)]
