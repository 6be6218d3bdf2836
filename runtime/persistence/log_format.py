"""Encode batches and decode whole generation files (spec §3.3–§3.4, §3.7).

Decoding is :mod:`~runtime.persistence.log_reader`'s incremental readers fed the whole file,
with memos for a process that reads one log many times as it grows; the format's rules:

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

from collections.abc import Sequence

import attrs

from runtime.persistence.decode_memo import Memo
from runtime.persistence.header import SessionHeader
from runtime.persistence.log_reader import RawReader, Resume, ZstdReader
from runtime.persistence.log_records import (
    LogCorruption,
    LogUnknownEventType,
    LogVersionUnsupported,
    TornTail,
    Unparsable,
    header_from_record,
    load_json,
    one_header_line,
    parse_record,
)
from runtime.persistence.zstd_frames import FrameFormatError, compress_frame, decode_frame, first_frame
from runtime.session.events import Event
from runtime.session.lossless import dumps, dumps_lines, encode_utf8

__all__ = [
    "COMPRESSIONS",
    "DecodedLog",
    "GenerationMismatch",
    "LogCorruption",
    "LogUnknownEventType",
    "LogVersionUnsupported",
    "TornTail",
    "Unparsable",
    "decode_log",
    "encode_batch",
    "encode_generation",
    "encode_header",
    "event_lines",
    "header_line",
    "header_of",
    "parse_record",
]

COMPRESSIONS = ("zstd", "none")


class GenerationMismatch(ValueError):
    """Staged bytes that do not decode to exactly the generation that was meant."""


@attrs.frozen
class DecodedLog:
    header: SessionHeader
    events: tuple[Event, ...]  # the valid prefix, seqs 0..n-1, recovered records included
    torn: TornTail | None
    file_size: int


def header_line(header: SessionHeader) -> bytes:
    return encode_utf8(dumps(header.to_record()) + "\n")


def event_lines(events: Sequence[Event]) -> bytes:
    """Events admitted by a write handle or built by a decoder (never a cycle in their data)."""
    return encode_utf8(dumps_lines([event.to_record() for event in events]))


def encode_header(header: SessionHeader, compression: str) -> bytes:
    line = header_line(header)
    return compress_frame(line) if compression == "zstd" else line


def encode_batch(events: Sequence[Event], compression: str) -> bytes:
    """One durable batch: raw lines, or exactly one checksummed zstd frame."""
    lines = event_lines(events)
    return compress_frame(lines) if compression == "zstd" else lines


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
    """The whole file ``data``: the incremental reader of its compression fed it at once, with
    the memos (a process reads one log many times as it grows)."""
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


def _decode(reader: RawReader | ZstdReader, compression: str, data: bytes, base: _Clean | None) -> DecodedLog:
    events = list(base.events) if base is not None else []
    events.extend(reader.feed(data[base.size :] if base is not None else data))
    end = reader.close()
    if end.torn is None:
        if type(data) is bytes:
            CLEAN.put((compression, data), _Clean(len(data), end.header, tuple(events)))
    else:
        events.extend(end.torn.recovered)
    return DecodedLog(end.header, tuple(events), end.torn, end.size)


def _resume(base: _Clean | None) -> Resume | None:
    return None if base is None else Resume(base.size, base.header, len(base.events))


def _decode_raw(data: bytes, base: _Clean | None = None) -> DecodedLog:
    return _decode(RawReader(_resume(base), LINES), "none", data, base)


def _decode_zstd(data: bytes, base: _Clean | None = None) -> DecodedLog:
    return _decode(ZstdReader(_resume(base), FRAMES, HEADERS), "zstd", data, base)


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
        record = load_json(line)
    except ValueError:
        return None
    if type(record) is not dict or record.get("type") != "session":
        return None
    return header_from_record(record)


def encode_generation(header: SessionHeader, events: Sequence[Event], compression: str) -> bytes:
    """A whole generation in one go: header frame (or line), then every event as one batch."""
    data = encode_header(header, compression)
    return data + encode_batch(events, compression) if events else data
