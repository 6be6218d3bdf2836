"""Encode batches and decode whole generation files (spec §3.3–§3.4, §3.7).

Raw mode (``compression="none"``): the file is JSONL.  A final fragment without a newline is
a torn tail; an unparsable or seq-gapped line starts a tolerated crash tail unless a later
record is a ``turn/end`` (then the damage is inside the committed region and is refused).

Zstd mode: frame 1 is exactly the header line; each further frame is one durable batch with
a content checksum.  Every complete frame must decode, pass its checksum and hold only whole,
contiguous records — a checksummed frame cannot be torn, so damage there is refused, never
repaired.  A structurally incomplete final frame is the torn tail; the complete records its
partial plaintext holds are recovered.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import attrs

from runtime.persistence.decode_memo import Memo
from runtime.persistence.header import (
    HeaderError,
    HeaderVersionError,
    SessionHeader,
    parse_header,
)
from runtime.persistence.zstd_frames import (
    FrameFormatError,
    compress_frame,
    decode_frame,
    decode_torn_frame,
    first_frame,
    new_decompressor,
    scan_frames,
)
from runtime.session.events import EnvelopeError, Event
from runtime.session.lossless import dumps, dumps_lines
from runtime.session.vocabulary import KNOWN_EVENT_TYPES

COMPRESSIONS = ("zstd", "none")


class LogCorruption(ValueError):
    """The stored bytes are damaged beyond a torn tail."""


class LogVersionUnsupported(ValueError):
    def __init__(self, version: int | float) -> None:
        super().__init__(f"log format v{version}")
        self.version = version


class GenerationMismatch(ValueError):
    """Staged bytes that do not decode to exactly the generation that was meant."""


class LogUnknownEventType(ValueError):
    def __init__(self, kind: str, seq: int) -> None:
        super().__init__(f'unknown event type "{kind}" at seq {seq}')
        self.kind = kind
        self.seq = seq


@attrs.frozen
class TornTail:
    """Bytes after ``truncate_to`` are a torn tail; ``recovered`` are whole records in it."""

    truncate_to: int
    recovered: tuple[Event, ...]
    torn_bytes: int


@attrs.frozen
class DecodedLog:
    header: SessionHeader
    events: tuple[Event, ...]  # the valid prefix, seqs 0..n-1, recovered records included
    torn: TornTail | None
    file_size: int


def header_line(header: SessionHeader) -> bytes:
    return (dumps(header.to_record()) + "\n").encode()


def event_lines(events: Sequence[Event]) -> bytes:
    """Events admitted by a write handle or built by a decoder (never a cycle in their data)."""
    return dumps_lines([event.to_record() for event in events]).encode()


def encode_header(header: SessionHeader, compression: str) -> bytes:
    line = header_line(header)
    return compress_frame(line) if compression == "zstd" else line


def encode_batch(events: Sequence[Event], compression: str) -> bytes:
    """One durable batch: raw lines, or exactly one checksummed zstd frame."""
    lines = event_lines(events)
    return compress_frame(lines) if compression == "zstd" else lines


def _parse_int(text: str) -> Any:
    # JSON "-0" is an integer to Python but negative zero to JavaScript; the reference
    # refuses it (seqs, createdAt, delegationDepth), so keep it distinguishable.
    return -0.0 if text == "-0" else int(text)


_DECODER = json.JSONDecoder(parse_int=_parse_int)  # one decoder: json.loads(..., parse_int=) builds one per call


def _loads(line: bytes) -> Any:
    """One JSON value; nesting deeper than the parser's recursion bound is invalid JSON here
    (a hostile record must not surface as a RecursionError in the reader)."""
    try:
        # exactly what json.loads does with bytes: detect the encoding, keep surrogates for the checks
        return _DECODER.decode(line.decode(json.detect_encoding(line), "surrogatepass"))
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


class Unparsable(ValueError):
    """A line that is not a record at all: what a torn or garbage write leaves behind."""


def parse_record(line: bytes) -> dict[str, Any]:
    """One JSON object line, read losslessly (every generation's records start here)."""
    try:
        record = _loads(line)
    except ValueError:
        raise Unparsable("not valid JSON") from None
    if type(record) is not dict:
        raise Unparsable("not a JSON object")
    return record


def _parse_line(line: bytes) -> Event:
    try:
        return Event.from_parsed(parse_record(line))
    except Unparsable as err:
        raise EnvelopeError(str(err)) from None


def _header_from_line(line: bytes) -> SessionHeader:
    try:
        record = _loads(line)
    except ValueError:
        raise LogCorruption("corrupt session log: header line is not valid JSON") from None
    return _header_from_record(record)


def _header_from_record(record: Any) -> SessionHeader:
    """A parsed header record, with the header's refusals as log errors."""
    try:
        return parse_header(record)
    except HeaderVersionError as err:
        raise LogVersionUnsupported(err.version) from None
    except HeaderError as err:
        raise LogCorruption(f"corrupt session log: {err}") from None


def one_header_line(head: bytes) -> bytes:
    """The header line a first zstd frame holds (without its newline): exactly one line."""
    if not head.endswith(b"\n") or head.count(b"\n") != 1:
        raise LogCorruption("corrupt Zstandard session log: first frame is not exactly one header line")
    return head[:-1]


def frame_lines(plaintext: bytes) -> list[bytes]:
    """The record lines of a complete frame: a checksummed frame ends on a whole record."""
    if not plaintext.endswith(b"\n"):
        raise LogCorruption("corrupt Zstandard session log: complete frame contains a torn JSONL record")
    return plaintext[:-1].split(b"\n")


def torn_lines(partial: bytes) -> list[bytes]:
    """The whole lines at the start of a torn frame's partial plaintext (the cut one dropped)."""
    return partial[: partial.rfind(b"\n") + 1].split(b"\n")[:-1]


def _check_vocabulary(events: Sequence[Event]) -> None:
    for event in events:
        if event.type not in KNOWN_EVENT_TYPES and not event.ignorable:
            raise LogUnknownEventType(event.type, event.seq)


@attrs.frozen
class _Clean:
    """A decode that ended exactly at the end of its bytes (no torn tail, no crash tail):
    a longer log that starts with the same bytes is decoded from there on."""

    size: int
    header: SessionHeader
    events: tuple[Event, ...]


# Decoded bytes, remembered by content (see decode_memo for why sharing them is safe).
LOGS: Memo[tuple[str, bytes], DecodedLog] = Memo(4)
CLEAN: Memo[tuple[str, bytes], _Clean] = Memo(8)
FRAMES: Memo[bytes, tuple[Event, ...]] = Memo(4096)
LINES: Memo[bytes, Event] = Memo(8192)
HEADERS: Memo[bytes, SessionHeader] = Memo(64)


def decode_log(data: bytes, compression: str) -> DecodedLog:
    if compression not in COMPRESSIONS:
        raise ValueError(f"unknown compression {compression!r}")
    key = (compression, data) if type(data) is bytes else None
    base = None
    if key is not None:
        cached = LOGS.get(key)
        if cached is not None:
            return cached
        base = _clean_prefix(compression, data)
    decoded = _decode_zstd(data, base) if compression == "zstd" else _decode_raw(data, base)
    _check_vocabulary(decoded.events)
    if key is not None:
        LOGS.put(key, decoded)
    return decoded


def _clean_prefix(compression: str, data: bytes) -> _Clean | None:
    """The longest remembered clean decode of a proper prefix of ``data``."""
    best: _Clean | None = None
    for (kind, prefix), clean in CLEAN.items():
        if kind == compression and len(prefix) < len(data) and (best is None or clean.size > best.size) and data.startswith(prefix):
            best = clean
    return best


def _remember_clean(compression: str, data: bytes, header: SessionHeader, events: list[Event], base: _Clean | None) -> None:
    """Called by a decoder that reached the end of ``data`` cleanly; the new events' types
    are checked first (what ``decode_log`` would refuse must never become a base)."""
    if type(data) is bytes:
        _check_vocabulary(events[len(base.events) if base else 0 :])
        CLEAN.put((compression, data), _Clean(len(data), header, tuple(events)))


def _decode_raw(data: bytes, base: _Clean | None = None) -> DecodedLog:
    if base is not None:
        header, events, committed, line_no = base.header, list(base.events), base.size, 1 + len(base.events)
    else:
        end = data.find(b"\n")
        if end < 0:
            raise LogCorruption("empty or header-less session log")
        header, events, committed, line_no = _header_from_line(data[:end]), [], end + 1, 1
    issue: str | None = None
    pos = committed
    while True:
        nl = data.find(b"\n", pos)
        if nl < 0:
            break
        line_no += 1
        line = data[pos:nl]
        pos = nl + 1
        if issue is None:
            known = LINES.get(line)
            if known is not None and known.seq == len(events):
                events.append(known)
                committed = pos
                continue
        try:
            record = parse_record(line)
        except Unparsable:
            if issue is None:
                issue = f"corrupt session log: unparsable committed event at line {line_no}"
            continue
        if issue is not None:
            # inside a tolerated crash tail only a turn/end matters: it proves the damage
            # is in the committed region
            if record.get("type") == "turn/end":
                raise LogCorruption(issue)
            continue
        try:
            event = Event.from_parsed(record)
        except EnvelopeError as err:
            # a complete JSON object is not a torn write: refuse instead of dropping it
            # (and everything after it) as a crash tail
            raise LogCorruption(f"corrupt session log: invalid committed event at line {line_no}: {err}") from None
        if event.seq != len(events):
            issue = f"corrupt session log: seq gap in committed region at line {line_no} (expected {len(events)}, got {event.seq})"
            if event.type == "turn/end":
                raise LogCorruption(issue)
            continue
        LINES.put(line, event)
        events.append(event)
        committed = pos
    if committed == len(data):
        _remember_clean("none", data, header, events, base)
    torn = TornTail(committed, (), len(data) - committed) if committed < len(data) else None
    return DecodedLog(header, tuple(events), torn, len(data))


def _records_of_frame(plaintext: bytes, start: int, first_seq: int) -> list[Event]:
    out: list[Event] = []
    for line in frame_lines(plaintext):
        try:
            event = _parse_line(line)
        except EnvelopeError as err:
            raise LogCorruption(f"corrupt Zstandard session log: invalid record in frame at byte {start}: {err}") from None
        expected = first_seq + len(out)
        if event.seq != expected:
            raise LogCorruption(f"corrupt Zstandard session log: seq gap in frame at byte {start} (expected {expected}, got {event.seq})")
        out.append(event)
    return out


def _recover_torn(plaintext: bytes, first_seq: int) -> list[Event]:
    """Whole, contiguous records at the start of a torn frame's partial plaintext."""
    out: list[Event] = []
    for line in torn_lines(plaintext):
        try:
            event = _parse_line(line)
        except EnvelopeError:
            break
        if event.seq != first_seq + len(out):
            break
        out.append(event)
    return out


def _decode_zstd(data: bytes, base: _Clean | None = None) -> DecodedLog:
    decompressor = None  # made on the first frame the memo does not know
    try:
        if base is not None:
            scan = scan_frames(data, base.size)
            header, events, body = base.header, list(base.events), scan.frames
        else:
            scan = scan_frames(data)
            if not scan.frames:
                raise LogCorruption("empty or header-less Zstandard session log")
            header, events, body = _header_frame(data, scan.frames[0]), [], scan.frames[1:]
        for start, end in body:
            frame = data[start:end]
            records = FRAMES.get(frame)
            if records is None or records[0].seq != len(events):  # a hit must also start at the right seq
                decompressor = decompressor or new_decompressor()
                records = tuple(_records_of_frame(decode_frame(frame, start, decompressor), start, len(events)))
                FRAMES.put(frame, records)
            events.extend(records)
    except FrameFormatError as err:
        raise LogCorruption(str(err)) from None
    if scan.torn_start is None:
        _remember_clean("zstd", data, header, events, base)
    torn = None
    if scan.torn_start is not None:
        decompressor = decompressor or new_decompressor()
        recovered = _recover_torn(decode_torn_frame(data[scan.torn_start :], decompressor), len(events))
        torn = TornTail(scan.torn_start, tuple(recovered), len(data) - scan.torn_start)
        events.extend(recovered)
    return DecodedLog(header, tuple(events), torn, len(data))


def _header_frame(data: bytes, span: tuple[int, int]) -> SessionHeader:
    """The header of a zstd log from its first frame (remembered by the frame's bytes)."""
    frame = data[span[0] : span[1]]
    header = HEADERS.get(frame)
    if header is None:
        header = _header_from_line(one_header_line(decode_frame(frame, span[0])))
        HEADERS.put(frame, header)
    return header


def header_of(data: bytes, compression: str) -> SessionHeader | None:
    """The header alone, from a prefix of the file (for listing; spec §3.8).

    ``None`` when ``data`` holds no complete header record yet (empty, magic-only or a
    header frame cut short) or when its first record is not a session header at all; a
    complete header frame that fails its checksum, or holds more than the header line, is
    corruption.  Later frames are never looked at, so damage there does not hide the
    session from a listing.
    """
    if compression == "none":
        end = data.find(b"\n")
        if end < 0:
            return None
        line = data[:end]
    else:
        try:
            layout = first_frame(data)
        except FrameFormatError:
            return None
        if layout is None:
            return None
        try:
            head = decode_frame(data[: layout.end], 0)
        except FrameFormatError:
            raise LogCorruption("corrupt Zstandard session log: header frame failed validation") from None
        line = one_header_line(head)
    try:
        record = _loads(line)
    except ValueError:
        return None
    if type(record) is not dict or record.get("type") != "session":
        return None
    return _header_from_record(record)


def encode_generation(header: SessionHeader, events: Sequence[Event], compression: str) -> bytes:
    """A whole generation in one go: header frame (or line), then every event as one batch."""
    data = encode_header(header, compression)
    return data + encode_batch(events, compression) if events else data
