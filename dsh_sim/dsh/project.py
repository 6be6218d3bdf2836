"""A crash state of dsh-sim's runtime (a v3 log) as the v0 log DSH 0.1.0-rc.8 would hold.

DSH rc.8 reads only v0 (``session.jsonl[.zstd]``; a v3 header is refused by version), so to
ask the real DSH about a crash state of our runtime, the state is *projected*: the same
physical structure — header, one frame (or run of lines) per durable batch, the same torn
tail, the same damage — carrying the v0 spelling of the same events.  Both readers are then
asked about what is, byte for byte, the same situation: which records a reader keeps, where
the torn tail starts, which closers and verdicts repair appends.

The projection is the harness's, written from the spec (§10.1, inverting the migration): it
walks frames with :mod:`dsh_sim.adapters.simfs.frames` and decodes with ``zstandard`` itself,
never with ``runtime/`` — a bug in the runtime's reader must not move the projection with it.

Events (the inverse of :mod:`runtime.persistence.migration`): ``system/message`` disappears
and its prompt goes back into every later ``request/header``'s ``header.system``; an
``assistant/message``'s ``stream`` becomes the ``assistant/chunk`` events before it, cited by
``sourceEventSeqs``; an ``assistant/attempt`` becomes its chunks; range-encoded
``sourceEventSeqs`` are expanded and every reference renumbered; replace ops are spelled
``{op, start, end}``; ``tool/ptc-dispatch*`` → ``tool/code-dispatch*``; the closers' ids
``interrupted-tool-result-<call>-<seq>`` name their v0 seq.

Structure: a complete frame or line that does not decode to records is copied verbatim
(damage stays damage).  A torn zstd tail becomes a v0 frame whose complete blocks hold
exactly the projected complete records of the v3 tail, cut in the same structural element
(frame header, block header, block, checksum); a torn raw line stays torn (a complete JSON
record without its newline keeps that form, a fragment is copied).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

import zstandard

from dsh_sim.adapters.simfs.frames import MAGIC, FrameStructureError, layout_at

Record = dict[str, Any]
_RENAMED = {"tool/ptc-dispatch": "tool/code-dispatch", "tool/ptc-dispatch-start": "tool/code-dispatch-start"}


class NotProjectable(Exception):  # not a ValueError: those mean "copy verbatim" below
    """A crash state v0 cannot express faithfully (the comparison is skipped and counted)."""


def _dumps(record: Any) -> bytes:
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8", "backslashreplace")


def _frame(plain: bytes) -> bytes:
    return zstandard.ZstdCompressor(write_checksum=True).compress(plain)


def _expand(raw: Any) -> list[int]:
    out: list[int] = []
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, list) and len(item) == 2:
            out.extend(range(item[0], item[1] + 1))
        else:
            out.append(item)
    return out


class Projector:
    """Projects records in log order; carries the seq map and the current system prompt."""

    def __init__(self) -> None:
        self.seq_map: dict[int, int | None] = {}
        self.expected = 0  # the next v3 seq
        self.next = 0  # the next v0 seq
        self.system: str | None = None

    def header(self, record: Any) -> Record:
        if not isinstance(record, dict) or record.get("type") != "session":
            raise ValueError("not a session header")
        if record.get("isSeeded"):
            raise NotProjectable("a seeded (forked) session: its inherited cut has no v0 spelling here")
        out: Record = {"type": "session", "version": 0 if record.get("version") == 3 else record.get("version")}
        for key in ("id", "createdAt", "cwd", "parentSession", "origin", "delegationDepth"):
            if key in record:
                out[key] = record[key]
        if "agentPreset" in record:
            out["agentPreset"] = "code" if record["agentPreset"] == "ptc" else record["agentPreset"]
        return out

    def _ref(self, seq: Any) -> int:
        mapped = self.seq_map.get(seq) if isinstance(seq, int) else None
        if mapped is None:
            raise NotProjectable(f"a reference to seq {seq!r}, which has no v0 counterpart")
        return mapped

    def records(self, record: Any) -> list[Record]:
        """The v0 records of one v3 record (``ValueError``: not a record, copy it verbatim)."""
        if not isinstance(record, dict) or not isinstance(record.get("type"), str) or type(record.get("seq")) is not int:
            raise ValueError("not an event record")
        seq, kind = record["seq"], record["type"]
        base = self.next + (seq - self.expected)  # a seq gap (damage) stays a gap
        data = copy.deepcopy(record.get("data"))
        out: list[Record] = []
        if kind == "system/message":
            message = data.get("message") if isinstance(data, dict) else None
            blocks = message.get("content") if isinstance(message, dict) else None
            self.system = "".join(b.get("text", "") for b in blocks or [] if isinstance(b, dict))
            self.seq_map[seq] = None
            self.expected = seq + 1
            self.next = base
            return []
        if kind in ("assistant/message", "assistant/attempt") and isinstance(data, dict):
            for item in data.pop("stream", None) or []:
                if not isinstance(item, dict) or item.get("type") != "chunk":
                    raise NotProjectable(f"a stream record of type {item.get('type') if isinstance(item, dict) else item!r}")
                chunk = {"turn": data.get("turn"), "step": data.get("step"), "chunk": item.get("chunk")}
                out.append({"type": "assistant/chunk", "seq": base + len(out), "time": item.get("time"), "data": chunk})
            if kind == "assistant/attempt":
                self.seq_map[seq] = None
                self.expected, self.next = seq + 1, base + len(out)
                return out
        if kind == "request/header" and self.system is not None and isinstance(data, dict) and isinstance(data.get("header"), dict):
            data["header"]["system"] = self.system
        own = base + len(out)
        event: Record = {"type": _RENAMED.get(kind, kind), "seq": own, "time": record.get("time"), "data": data}
        if "ignorable" in record:
            event["ignorable"] = record["ignorable"]
        op = record.get("surfaceOp")
        if isinstance(op, dict) and op.get("op") == "replace":
            event["surfaceOp"] = {"op": "replace", "start": self._ref(op.get("startSeq")), "end": self._ref(op.get("endSeq"))}
        elif op is not None:
            event["surfaceOp"] = op
        sources = [c["seq"] for c in out] if kind == "assistant/message" and out else None
        if "sourceEventSeqs" in record:
            sources = (sources or []) + [self._ref(s) for s in _expand(record["sourceEventSeqs"])]
        if sources is not None:
            event["sourceEventSeqs"] = sources
        if kind == "command/done" and isinstance(data, dict) and "sourceEventSeq" in data:
            data["sourceEventSeq"] = self._ref(data["sourceEventSeq"])
        if kind.startswith("compaction/") and isinstance(data, dict) and ({"shadowedRange", "shadowedSeqs"} & set(data)):
            raise NotProjectable(f"{kind} references shadowed seqs")
        message = data.get("message") if kind == "tool/result" and isinstance(data, dict) else None
        source = message.get("source") if isinstance(message, dict) else None
        if (
            isinstance(message, dict)
            and isinstance(source, dict)
            and message.get("id") == f"interrupted-tool-result-{source.get('callId')}-{seq}"
        ):
            message["id"] = f"interrupted-tool-result-{source.get('callId')}-{own}"  # repair names a closer by its own seq
        out.append(event)
        self.seq_map[seq] = own
        self.expected, self.next = seq + 1, own + 1
        return out

    def lines(self, records: Sequence[Any]) -> bytes:
        return b"".join(_dumps(r) for record in records for r in self.records(record))


def project_events(records: Sequence[Record]) -> list[Record]:
    """The v0 events of a v3 event sequence (prefix and closers together: the seq map is shared)."""
    projector = Projector()
    return [r for record in records for r in projector.records(record)]


# -- the file ---------------------------------------------------------------------------------


def project(data: bytes | None, compression: str) -> bytes | None:
    """The v0 file for the v3 file ``data`` (``None``: no file).  :class:`NotProjectable` when
    the state cannot be spelled in v0."""
    if data is None:
        return None
    return _project_zstd(data) if compression == "zstd" else _project_raw(data)


def _lines_records(plain: bytes) -> list[Any] | None:
    """The records of a complete frame's plaintext, or ``None`` if it is not whole JSON lines."""
    if not plain.endswith(b"\n"):
        return None
    try:
        return [json.loads(line) for line in plain[:-1].split(b"\n")]
    except ValueError:
        return None


def _project_zstd(data: bytes) -> bytes:
    projector = Projector()
    out: list[bytes] = []
    o = 0
    first = True
    while o < len(data):
        try:
            layout = layout_at(data, o)
        except FrameStructureError:
            return b"".join(out) + data[o:]  # not frames from here on: damage, kept as it is
        if layout is None:
            out.append(_torn_frame(projector, data[o:]))
            break
        frame = data[o : layout.end]
        try:
            plain = zstandard.ZstdDecompressor().decompressobj().decompress(frame)
        except zstandard.ZstdError:
            plain = None
        records = _lines_records(plain) if plain is not None else None
        try:
            if records is None:
                raise ValueError("not whole records")
            if first and len(records) != 1:
                raise ValueError("a header frame holds exactly one line")
            out.append(_frame(_dumps(projector.header(records[0]))) if first else _frame(projector.lines(records)))
        except ValueError:
            out.append(frame)  # a frame that does not decode to records: the same damage in v0
        first = False
        o = layout.end
    return b"".join(out)


def _torn_position(fragment: bytes) -> str:
    """Where a torn frame ends: ``header`` (magic or frame header), ``block-header``, ``block``
    or ``checksum`` (every block complete)."""
    n = len(fragment)
    if n < 5:
        return "header"
    descriptor = fragment[4]
    fcs_code, single = descriptor >> 6, bool(descriptor & 0x20)
    fcs_size = (1 if single else 0) if fcs_code == 0 else (2, 4, 8)[fcs_code - 1]
    o = 5 + (0 if single else 1) + (0, 1, 2, 4)[descriptor & 0x03] + fcs_size
    if o > n:
        return "header"
    while True:
        if n - o < 3:
            return "block-header"
        block = fragment[o] | fragment[o + 1] << 8 | fragment[o + 2] << 16
        end = o + 3 + (1 if (block >> 1) & 3 == 1 else block >> 3)
        if end > n:
            return "block"
        o = end
        if block & 1:
            return "checksum"


def _torn_frame(projector: Projector, fragment: bytes) -> bytes:
    position = _torn_position(fragment)
    if position == "header":
        return fragment  # nothing of the frame's content exists yet: the same bytes say the same in v0
    try:
        plain = zstandard.ZstdDecompressor().decompressobj().decompress(fragment)
    except zstandard.ZstdError:
        return fragment  # the decoder fails on it: so it does on the same bytes in v0
    kept: list[Any] = []
    for line in plain[: plain.rfind(b"\n") + 1].split(b"\n")[:-1]:
        try:
            kept.append(json.loads(line))
        except ValueError:
            break
    try:
        complete = projector.lines(kept)
    except ValueError:
        return fragment
    return torn_v0_frame(complete, position)


def torn_v0_frame(complete: bytes, position: str) -> bytes:
    """A torn frame whose decodable content is exactly ``complete`` (whole lines), cut inside
    the next block's header or payload, or inside the checksum after the last block."""
    compressor = zstandard.ZstdCompressor(write_checksum=True)
    if position == "checksum":
        return compressor.compress(complete)[:-2]
    stream = compressor.compressobj()
    head = stream.compress(complete) + stream.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK) if complete else b""
    whole = head + stream.compress(b'{"type":"' + b"x" * 64) + stream.flush(zstandard.COMPRESSOBJ_FLUSH_FINISH)
    layout = layout_at(whole, 0)
    assert layout is not None
    start, end = next((a, b) for a, b in layout.blocks if a >= max(len(head), layout.header_end))
    return whole[: start + 1] if position == "block-header" else whole[: start + 3 + max(1, (end - start - 3) // 2)]


def _project_raw(data: bytes) -> bytes:
    projector = Projector()
    out: list[bytes] = []
    pos = 0
    first = True
    while pos < len(data):
        nl = data.find(b"\n", pos)
        line = data[pos:] if nl < 0 else data[pos : nl + 1]
        pos += len(line)
        try:
            record = json.loads(line)
            if first:
                projected = _dumps(projector.header(record))
            else:
                parts = projector.records(record)
                # a torn record is one unit: only its last v0 line stands for it (the chunks
                # before it would otherwise be whole lines a reader keeps)
                projected = b"".join(_dumps(r) for r in parts) if nl >= 0 else (_dumps(parts[-1]) if parts else b"")
        except ValueError:
            projected = line  # unparsable (damage, or a fragment): the same bytes in v0
        out.append(projected if nl >= 0 or projected is line else projected[:-1])
        first = False
    return b"".join(out)


__all__ = ["MAGIC", "NotProjectable", "Projector", "project", "project_events", "torn_v0_frame"]
