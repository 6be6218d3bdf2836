"""One record of a generation file: a JSON line read losslessly, a header, a frame's lines.

The pieces every decoder of the format shares (the whole-file decode, the incremental
readers, the v0 reader), with the refusals they raise.  Reading a line is most of what a
decode costs, so the common case is kept cheap: the C scanner without per-integer callbacks
and no walk of ``data`` when the line's text cannot hold anything the format refuses
(:func:`runtime.session.lossless.text_may_refuse`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import attrs

from runtime.persistence.header import HeaderError, HeaderVersionError, SessionHeader, parse_header
from runtime.session.events import EnvelopeError, Event
from runtime.session.lossless import text_may_refuse
from runtime.session.vocabulary import KNOWN_EVENT_TYPES


class LogCorruption(ValueError):
    """The stored bytes are damaged beyond a torn tail."""


class LogVersionUnsupported(ValueError):
    def __init__(self, version: int | float) -> None:
        super().__init__(f"log format v{version}")
        self.version = version


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


def _parse_int(text: str) -> Any:
    # JSON "-0" is an integer to Python but negative zero to JavaScript; the reference
    # refuses it (seqs, createdAt, delegationDepth), so keep it distinguishable.
    return -0.0 if text == "-0" else int(text)


_DECODER = json.JSONDecoder(parse_int=_parse_int)  # one decoder: json.loads(..., parse_int=) builds one per call
_PLAIN_DECODER = json.JSONDecoder()  # for text without "-0": integers parsed in C, no call per integer


def _text_of(line: bytes) -> str:
    """The line as ``json.loads`` would decode bytes (encoding detected), except that bytes of
    a surrogate are refused (``UnicodeDecodeError``, a ``ValueError``): they are not UTF-8, and
    reading them as the code unit would hand back text a JavaScript reader reads as U+FFFD.  A
    line starting ``{`` and a non-NUL byte is UTF-8 to ``detect_encoding``."""
    if line[:1] == b"{" and line[1:2] != b"\x00":
        return line.decode("utf-8")
    return line.decode(json.detect_encoding(line))


def load_json(line: bytes) -> Any:
    """One JSON value; nesting deeper than the parser's recursion bound is invalid JSON here
    (a hostile record must not surface as a RecursionError in the reader)."""
    decoder = _DECODER if b"-0" in line else _PLAIN_DECODER
    text = _text_of(line)
    try:
        try:
            value, end = decoder.raw_decode(text)  # a record line has no whitespace around it
        except ValueError:
            return decoder.decode(text)  # whatever json.loads says (leading whitespace, its error)
        return value if end == len(text) else decoder.decode(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


class Unparsable(ValueError):
    """A line that is not a record at all: what a torn or garbage write leaves behind."""


def parse_record(line: bytes) -> dict[str, Any]:
    """One JSON object line, read losslessly (every generation's records start here)."""
    try:
        record = load_json(line)
    except ValueError:
        raise Unparsable("not valid JSON") from None
    if type(record) is not dict:
        raise Unparsable("not a JSON object")
    return record


def event_of_record(record: dict[str, Any], line: bytes) -> Event:
    """The event a record parsed from ``line`` holds (:class:`EnvelopeError` if none); its data
    is walked only when the line's text could hold a value the format refuses."""
    return Event.from_parsed(record, text_checked=not text_may_refuse(line))


def parse_line(line: bytes) -> Event:
    try:
        record = parse_record(line)
    except Unparsable as err:
        raise EnvelopeError(str(err)) from None
    return event_of_record(record, line)


def header_from_line(line: bytes) -> SessionHeader:
    try:
        record = load_json(line)
    except ValueError:
        raise LogCorruption("corrupt session log: header line is not valid JSON") from None
    return header_from_record(record)


def header_from_record(record: Any) -> SessionHeader:
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


def records_of_frame(plaintext: bytes, start: int, first_seq: int) -> list[Event]:
    """The events of the complete frame at byte ``start``, which must begin at ``first_seq``."""
    out: list[Event] = []
    for line in frame_lines(plaintext):
        try:
            event = parse_line(line)
        except EnvelopeError as err:
            raise LogCorruption(f"corrupt Zstandard session log: invalid record in frame at byte {start}: {err}") from None
        expected = first_seq + len(out)
        if event.seq != expected:
            raise LogCorruption(f"corrupt Zstandard session log: seq gap in frame at byte {start} (expected {expected}, got {event.seq})")
        out.append(event)
    return out


def recover_torn(plaintext: bytes, first_seq: int) -> list[Event]:
    """Whole, contiguous records at the start of a torn frame's partial plaintext."""
    out: list[Event] = []
    for line in torn_lines(plaintext):
        try:
            event = parse_line(line)
        except EnvelopeError:
            break
        if event.seq != first_seq + len(out):
            break
        out.append(event)
    return out


def first_unknown(events: Sequence[Event]) -> LogUnknownEventType | None:
    """The refusal of the first event of a type this build does not know and may not skip."""
    for event in events:
        if event.type not in KNOWN_EVENT_TYPES and not event.ignorable:
            return LogUnknownEventType(event.type, event.seq)
    return None
