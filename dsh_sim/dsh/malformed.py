"""Malformed v0 sources from the grammar of spec §3.3: every header field and every packed-row
member given every kind of JSON value, one at a time.

The damage corpus (:mod:`dsh_sim.dsh.generate`) cuts and flips bytes the way crashes and bad
media do; the mutation run over ``v0_format`` and ``migration`` showed that what a *malformed*
(but well-framed) historical log gets was left to the unit tests.  Here each header field
(``type``, ``version``, ``id``, ``createdAt``, ``cwd``, ``parentSession``, ``seedLength``,
``origin``, ``delegationDepth``, ``agentPreset``, the retired ``sandboxMode`` /
``approvalPolicy`` and an unknown member) and each member of a packed chunk row (the envelope's
``seq0``, ``time0``, ``data``; the data's ``turn``, ``step``, ``index``, ``dt``, ``texts`` /
``args``, ``id``, ``name``) is removed or set to each :data:`VALUES` class in turn, on a log the
real DSH wrote.  A row is damaged where a later ``turn/end`` commits it (the log must be refused)
and in the open last turn (a tolerated crash tail: the row is dropped).  Nothing is predicted:
the real DSH's reading is the reference, and :mod:`dsh_sim.dsh.diff` compares the two.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from typing import Any

from dsh_sim.dsh.damage import edit_header
from dsh_sim.dsh.shapes import Log
from runtime.persistence.zstd_frames import compress_frame, decode_frame, scan_frames

ABSENT = object()  # the member is removed


def _minus_zero() -> float:
    return -0.0  # JSON ``-0.0``: JavaScript reads -0, Python -0.0


# one value of each JSON kind a field can meet, the edges of the numeric rules included
VALUES: dict[str, Any] = {
    "absent": ABSENT,
    "null": None,
    "true": True,
    "empty-string": "",
    "string": "x",
    "absolute-path": "/elsewhere",
    "zero": 0,
    "minus-zero": _minus_zero(),
    "one": 1,
    "integral-float": 2.0,
    "fraction": 1.5,
    "negative": -1,
    "max-safe": 2**53 - 1,
    "unsafe": 2**53,
    "huge": 1e300,
    "empty-array": [],
    "array": [1, "x"],
    "object": {"k": 1},
}

HEADER_FIELDS = (
    "type",
    "version",
    "id",
    "createdAt",
    "cwd",
    "parentSession",
    "seedLength",
    "origin",
    "delegationDepth",
    "agentPreset",
    "sandboxMode",
    "approvalPolicy",
    "futureField",
)
# members whose mere presence (or kind) is what a reader looks at: a few values say it all
PRESENCE = ("absent", "null", "string", "one", "object")
PRESENCE_ONLY = {"type", "sandboxMode", "approvalPolicy", "futureField", "data.extra", "extra"}
# fields whose value is a string the header must carry through (its own value, besides VALUES)
HEADER_EXTRA: dict[str, dict[str, Any]] = {"origin": {"subagent": "subagent", "other-origin": "parent"}}

ROW_MEMBERS = ("seq0", "time0", "data", "data.turn", "data.step", "data.index", "data.dt", "data.payload", "data.extra")
ROW_TAGS = ("text-chunks", "tool-call-chunks")  # reasoning rows share text rows' grammar
# the payload and the gaps given structures VALUES does not hold
PAYLOAD_EXTRA: dict[str, Any] = {"one-member": "one", "number-member": 1, "null-member": None}  # one member replaced
DT_EXTRA: dict[str, Any] = {
    "one-short": "short",
    "one-long": "long",
    "negative-gaps": "negative",
    "fraction-gap": "fraction",
    "minus-zero-gap": "minus-zero",
    "unsafe-gap": "unsafe",
    "time-overflows": "overflow",
}


def header_variants() -> Iterator[tuple[str, str, Any]]:
    """(case name, field, value) for every header field and value class (``ABSENT`` removes)."""
    for field in HEADER_FIELDS:
        values = _values_for(field)
        values.update(HEADER_EXTRA.get(field, {}))
        for name, value in values.items():
            yield f"{field}-{name}", field, value


def _values_for(member: str) -> dict[str, Any]:
    if member in PRESENCE_ONLY:
        return {name: VALUES[name] for name in PRESENCE}
    return dict(VALUES)


def rewrite_header(data: bytes, compression: str, field: str, value: Any) -> bytes:
    """The log with its header's ``field`` set to ``value`` (or removed), bytes after it kept."""

    def apply(record: dict[str, Any]) -> None:
        if value is ABSENT:
            record.pop(field, None)
        else:
            record[field] = value

    return edit_header(data, compression, apply)


# -- packed rows -------------------------------------------------------------------------------


def packed_log(session_id: str) -> Log:
    """Two turns whose answers pack into rows: turn 1's is committed by its ``turn/end``, turn 2
    is open (its row is in a crash tail)."""
    log = Log(session_id)
    log.start_turn("first")
    log.cut()
    log.answer("a committed answer", deltas=True)
    log.end_step()
    log.end_turn()
    log.cut()
    log.start_turn("second")
    log.cut()
    log.answer("an answer in the open turn", deltas=True)
    log.cut()
    return log


def row_variants() -> Iterator[tuple[str, Callable[[dict[str, Any]], dict[str, Any]]]]:
    """(case name, edit) for every row member and value class; the edit returns a new row."""
    yield "valid-as-tool-call", _as_tool_call
    for member in ROW_MEMBERS:
        for name, value in _values_for(member).items():
            yield f"{member}-{name}", _setter(member, value)
    for name, value in PAYLOAD_EXTRA.items():
        yield f"data.payload-{name}", _member(value)
    for name, how in DT_EXTRA.items():
        yield f"data.dt-{name}", _gaps(how)
    for field in ("id", "name"):
        for name, value in VALUES.items():
            yield f"tool-call.{field}-{name}", _tool_field(field, value)


def _payload_key(row: dict[str, Any]) -> str:
    return "args" if row["type"] == "tool-call-chunks" else "texts"


def _copy(row: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(row)


def _setter(member: str, value: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def edit(row: dict[str, Any]) -> dict[str, Any]:
        out = _copy(row)
        target: Any = out
        key = member
        if member.startswith("data."):
            if not isinstance(out["data"], dict):
                return out
            target, key = out["data"], member[len("data.") :]
            key = {"payload": _payload_key(out), "extra": "x"}.get(key, key)
        if value is ABSENT:
            target.pop(key, None)
        else:
            target[key] = copy.deepcopy(value)
        return out

    return edit


def _member(value: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The payload with its second member replaced by ``value`` (``"one"``: the first alone, so
    the gaps no longer match), every other member and the gaps kept."""

    def edit(row: dict[str, Any]) -> dict[str, Any]:
        out = _copy(row)
        key = _payload_key(out)
        members = out["data"][key]
        out["data"][key] = members[:1] if value == "one" else [members[0], value, *members[2:]]
        return out

    return edit


def _gaps(how: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def edit(row: dict[str, Any]) -> dict[str, Any]:
        out = _copy(row)
        dt: list[Any] = out["data"]["dt"]
        if how == "short":
            out["data"]["dt"] = dt[:-1]
        elif how == "long":
            out["data"]["dt"] = dt + [1]
        elif how == "negative":
            out["data"]["dt"] = [-g - 1 for g in dt]
        elif how == "fraction":
            out["data"]["dt"] = dt[:-1] + [0.5]
        elif how == "minus-zero":
            out["data"]["dt"] = dt[:-1] + [_minus_zero()]
        elif how == "unsafe":
            out["data"]["dt"] = dt[:-1] + [2**53]
        elif how == "overflow":  # each gap safe, their running sum not
            out["data"]["dt"] = [2**53 - 2] + [2**52] * (len(dt) - 1)
        return out

    return edit


def _as_tool_call(row: dict[str, Any]) -> dict[str, Any]:
    """The text row as a tool-call row (DSH writes these for streamed tool-call arguments)."""
    out = _copy(row)
    if out["type"] != "text-chunks":
        return out
    data = out["data"]
    out["type"] = "tool-call-chunks"
    out["data"] = {
        "turn": data["turn"],
        "step": data["step"],
        "index": data["index"],
        "id": "tc-1",
        "name": "pay",
        "dt": data["dt"],
        "args": data["texts"],
    }
    return out


def _tool_field(field: str, value: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    setter = _setter(f"data.{field}", value)
    return lambda row: setter(_as_tool_call(row))


EVENT_MEMBERS = ("type", "seq", "time", "data", "surfaceOp", "sourceEventSeqs", "ignorable", "extra")
SOURCES_EXTRA: dict[str, Any] = {
    "range": [[0, 2]],
    "descending-range": [[2, 0]],
    "minus-zero-entry": [_minus_zero()],
    "integral-float-entry": [5.0],
    "string-entry": ["5"],
    "nested": [[[5]]],
}


def event_variants() -> Iterator[tuple[str, Callable[[dict[str, Any]], dict[str, Any]]]]:
    """(case name, edit) for every envelope member of an ordinary event and value class."""
    for member in EVENT_MEMBERS:
        for name, value in _values_for(member).items():
            yield f"{member}-{name}", _setter(member if member != "extra" else "x", value)
    for name, value in SOURCES_EXTRA.items():
        yield f"sourceEventSeqs-{name}", _setter("sourceEventSeqs", value)


def edit_row(data: bytes, compression: str, which: int, edit: Callable[[dict[str, Any]], dict[str, Any]]) -> bytes:
    """The log with its ``which``-th packed row (0 = first) replaced by ``edit(row)``."""
    return _edit_record(data, compression, which, edit, lambda line: b'-chunks"' in line[:30])


EVENT_TARGETS = ("assistant/message", "user/message")  # one that cites chunks, one that a user writes


def edit_event(data: bytes, compression: str, kind: str, which: int, edit: Callable[[dict[str, Any]], dict[str, Any]]) -> bytes:
    """The log with its ``which``-th event of type ``kind`` replaced by ``edit(record)``."""
    prefix = b'{"type":"' + kind.encode() + b'"'
    return _edit_record(data, compression, which, edit, lambda line: line.startswith(prefix))


def _edit_record(
    data: bytes,
    compression: str,
    which: int,
    edit: Callable[[dict[str, Any]], dict[str, Any]],
    chosen: Callable[[bytes], bool],
) -> bytes:
    def picked(lines: list[bytes]) -> list[int]:
        return [i for i, line in enumerate(lines) if line.startswith(b'{"type":"') and chosen(line)]

    if compression == "none":
        lines = data.split(b"\n")
        index = picked(lines[1:])[which] + 1
        lines[index] = _dump(edit(json.loads(lines[index])))
        return b"\n".join(lines)
    seen = 0
    for start, end in scan_frames(data).frames[1:]:
        lines = decode_frame(data[start:end], start).split(b"\n")
        found = picked(lines)
        if which < seen + len(found):
            index = found[which - seen]
            lines[index] = _dump(edit(json.loads(lines[index])))
            return data[:start] + compress_frame(b"\n".join(lines)) + data[end:]
        seen += len(found)
    raise IndexError(f"the log has {seen} such records, not {which + 1}")


def _dump(record: dict[str, Any]) -> bytes:
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "backslashreplace")


# -- structure -----------------------------------------------------------------------------------


def structure_variants(log: Log) -> Iterator[tuple[str, Log]]:
    """``log`` with its last turn broken the way no agent loop writes it — one event dropped, or
    two neighbours swapped — seqs renumbered and citations followed (a citation of a dropped
    event is dropped).  What a recovery must close in such a turn (spec §2) is then whatever DSH's
    ``interruptedTurnClosers`` and dsh-sim's repair make of it, compared exactly."""
    start = max(i for i, e in enumerate(log.events) if e["type"] == "turn/start")
    for i in range(start, len(log.events)):
        yield f"drop-{i - start}-{log.events[i]['type'].replace('/', '.')}", _rebuilt(log, [j for j in range(len(log.events)) if j != i])
    for i in range(start, len(log.events)):  # a step that lost its end and one of its events
        end = next((j for j in range(i + 1, len(log.events)) if log.events[j]["type"] == "step/end"), None)
        if end is not None:
            kept = [j for j in range(len(log.events)) if j not in (i, end)]
            yield f"drop-{i - start}-{log.events[i]['type'].replace('/', '.')}-and-step.end", _rebuilt(log, kept)
    for i in range(start, len(log.events) - 1):
        order = list(range(len(log.events)))
        order[i], order[i + 1] = order[i + 1], order[i]
        name = f"swap-{i - start}-{log.events[i]['type'].replace('/', '.')}-{log.events[i + 1]['type'].replace('/', '.')}"
        yield name, _rebuilt(log, order)


def second_step_log(session_id: str) -> Log:
    """A balanced turn, then a turn cut in its second step: the first step called ``x1`` and got
    its result, the second has answered."""
    log = Log(session_id)
    log.balanced_turn("prompt 1", "c1")
    log.start_turn("interrupted")
    log.cut()
    log.answer("paying", ("x1",))
    log.cut()
    seq = log.call("x1")
    log.cut()
    log.result("x1", seq)
    log.end_step()
    log.start_step()
    log.answer("done")
    log.cut()
    return log


def _rebuilt(log: Log, order: list[int]) -> Log:
    """A copy of ``log`` holding its events in ``order`` (indices into ``log.events``), renumbered,
    cut into the original batches (emptied ones removed)."""
    new_seq = {old: new for new, old in enumerate(order)}
    batch_of = {}
    for b, batch in enumerate(log.batches):
        for event in batch:
            batch_of[event["seq"]] = b
    out = Log(log.id, log.cwd)
    batches: dict[int, list[dict[str, Any]]] = {}
    for old in order:
        event = copy.deepcopy(log.events[old])
        event["seq"] = new_seq[old]
        if "sourceEventSeqs" in event:
            event["sourceEventSeqs"] = [new_seq[s] for s in event["sourceEventSeqs"] if s in new_seq]
        out.events.append(event)
        batches.setdefault(batch_of.get(old, len(log.batches)), []).append(event)
    out.batches = [batches[b] for b in sorted(batches)]
    return out
