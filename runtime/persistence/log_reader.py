"""Incremental decoding of a generation file: bytes in any pieces, events out as they are read.

A log can be larger than a tool should hold in memory (``dsh-sim inspect --json`` of a 50 MB
log), so the decoders are state machines that take no I/O, as h11's are: :meth:`feed` takes the
next bytes and returns the events they complete; :meth:`close` says how the file ended or raises
its refusal.  :func:`~runtime.persistence.log_format.decode_log` is one of these readers fed a
whole file (with memos), so there is one decoder and the two cannot disagree.

An event :meth:`feed` returned is only *provisionally* in the valid prefix: later damage can
refuse the whole log (in raw mode a ``turn/end`` after an unparsable line; in zstd mode any
complete frame that fails), so nothing is final until :meth:`close` returns.  The refusal is
the one a whole-file decode gives: damage to a frame's layout anywhere first, then the first
frame (or line) that does not decode, then the first unknown event type.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from runtime.persistence.decode_memo import Memo
from runtime.persistence.header import SessionHeader
from runtime.persistence.log_records import (
    LogCorruption,
    LogUnknownEventType,
    LogVersionUnsupported,
    TornTail,
    Unparsable,
    event_of_record,
    first_unknown,
    header_from_line,
    one_header_line,
    parse_record,
    records_of_frame,
    recover_torn,
)
from runtime.persistence.zstd_frames import (
    FrameFormatError,
    LogDecompressor,
    decode_frame,
    decode_torn_frame,
    frame_at,
    new_decompressor,
)
from runtime.session.events import EnvelopeError, Event

__all__ = ["LogEnd", "LogReader", "RawReader", "Resume", "ZstdReader", "reader_for"]


@attrs.frozen
class LogEnd:
    """How a file ended: its header, its torn tail (recovered records included), its size."""

    header: SessionHeader
    torn: TornTail | None
    size: int


@attrs.frozen
class Resume:
    """A clean decode of a prefix of the file (it ended exactly at ``size``): a reader resumed
    from it reads only the bytes after."""

    size: int
    header: SessionHeader
    next_seq: int


class _Window:
    """The unread bytes of a file: ``data[at:]`` starts at file offset ``origin + at``."""

    def __init__(self, origin: int) -> None:
        self.data = b""
        self.at = 0
        self.origin = origin

    def extend(self, chunk: bytes) -> None:
        if self.at < len(self.data):
            self.origin += self.at
            self.data = self.data[self.at :] + chunk
        else:
            self.origin += len(self.data)
            self.data = chunk
        self.at = 0

    @property
    def size(self) -> int:
        """The bytes fed so far (the file's size once everything was fed)."""
        return self.origin + len(self.data)


class _Reader:
    """What both readers keep: the unread window, the header, the next seq, the first unknown type."""

    def __init__(self, resume: Resume | None) -> None:
        self._window = _Window(0 if resume is None else resume.size)
        self.header = None if resume is None else resume.header
        self._next_seq = 0 if resume is None else resume.next_seq
        self._unknown: LogUnknownEventType | None = None  # raised by close, after every other refusal

    def _check_types(self, events: Sequence[Event]) -> None:
        if self._unknown is None:
            self._unknown = first_unknown(events)


class RawReader(_Reader):
    """JSONL: a header line, then one record per line (spec §3.3).

    An unparsable or seq-gapped line starts a tolerated crash tail: nothing after it is
    committed, and a later ``turn/end`` proves the damage is in the committed region (refused).
    A final fragment without its newline is the torn tail.
    """

    def __init__(self, resume: Resume | None = None, lines: Memo[bytes, Event] | None = None) -> None:
        super().__init__(resume)
        self._lines = lines  # line bytes -> event, for a process that reads the same log again
        self.committed = 0 if resume is None else resume.size  # file offset after the last committed line
        self._line_no = 1 + self._next_seq
        self._issue: str | None = None

    def feed(self, chunk: bytes) -> list[Event]:
        window = self._window
        window.extend(chunk)
        data, pos, origin = window.data, window.at, window.origin
        out: list[Event] = []
        if self.header is None:
            end = data.find(b"\n")
            if end < 0:
                return out
            self.header = header_from_line(data[:end])
            pos = end + 1
            self.committed = origin + pos
        lines = self._lines
        while True:
            nl = data.find(b"\n", pos)
            if nl < 0:
                break
            self._line_no += 1
            line = data[pos:nl]
            pos = nl + 1
            if self._issue is None and lines is not None:
                known = lines.get(line)
                if known is not None and known.seq == self._next_seq:
                    self._commit(known, out, origin + pos)
                    continue
            event = self._line(line)
            if event is not None:
                if lines is not None:
                    lines.put(line, event)
                self._commit(event, out, origin + pos)
        window.at = pos
        return out

    def _line(self, line: bytes) -> Event | None:
        """The next committed event, or ``None`` for a line of the crash tail."""
        try:
            record = parse_record(line)
        except Unparsable:
            if self._issue is None:
                self._issue = f"corrupt session log: unparsable committed event at line {self._line_no}"
            return None
        if self._issue is not None:
            # inside a tolerated crash tail only a turn/end matters: it proves the damage
            # is in the committed region
            if record.get("type") == "turn/end":
                raise LogCorruption(self._issue)
            return None
        try:
            event = event_of_record(record, line)
        except EnvelopeError as err:
            # a complete JSON object is not a torn write: refuse instead of dropping it
            # (and everything after it) as a crash tail
            raise LogCorruption(f"corrupt session log: invalid committed event at line {self._line_no}: {err}") from None
        if event.seq != self._next_seq:
            self._issue = (
                f"corrupt session log: seq gap in committed region at line {self._line_no} (expected {self._next_seq}, got {event.seq})"
            )
            if event.type == "turn/end":
                raise LogCorruption(self._issue)
            return None
        return event

    def _commit(self, event: Event, out: list[Event], end: int) -> None:
        self._check_types((event,))
        out.append(event)
        self._next_seq += 1
        self.committed = end

    def close(self) -> LogEnd:
        if self.header is None:
            raise LogCorruption("empty or header-less session log")
        if self._unknown is not None:
            raise self._unknown
        size = self._window.size
        torn = TornTail(self.committed, (), size - self.committed) if self.committed < size else None
        return LogEnd(self.header, torn, size)


class ZstdReader(_Reader):
    """Zstandard: a header frame, then one checksummed frame per durable batch (spec §3.4).

    Every complete frame must decode whole; a structurally incomplete final frame is the torn
    tail, whose complete records are recovered.
    """

    def __init__(
        self,
        resume: Resume | None = None,
        frames: Memo[bytes, tuple[Event, ...]] | None = None,
        headers: Memo[bytes, SessionHeader] | None = None,
    ) -> None:
        super().__init__(resume)
        self._frames = frames  # frame bytes -> its events (a hit must also start at the right seq)
        self._headers = headers
        self._complete = 0 if resume is None else 1  # complete frames seen
        self._decompressor: LogDecompressor | None = None  # made on the first frame decoded
        self._pending: LogCorruption | LogVersionUnsupported | None = None  # the first frame that failed

    def feed(self, chunk: bytes) -> list[Event]:
        window = self._window
        window.extend(chunk)
        data, pos, origin = window.data, window.at, window.origin
        out: list[Event] = []
        while pos < len(data):
            try:
                layout = frame_at(data, pos, origin)
            except FrameFormatError as err:  # a frame's layout is never a torn write
                raise LogCorruption(str(err)) from None
            if layout is None:
                break
            frame = data if pos == 0 and layout.end == len(data) else data[pos : layout.end]
            start = origin + pos
            pos = layout.end
            self._complete += 1
            if self._pending is None:
                try:
                    self._frame(frame, start, out)
                except FrameFormatError as err:
                    self._pending = LogCorruption(str(err))
                except (LogCorruption, LogVersionUnsupported) as err:
                    self._pending = err
        window.at = pos
        return out

    def _frame(self, frame: bytes, start: int, out: list[Event]) -> None:
        if self.header is None:
            self.header = self._header(frame, start)
            return
        records = None if self._frames is None else self._frames.get(frame)
        if records is None or records[0].seq != self._next_seq:
            self._decompressor = self._decompressor or new_decompressor()
            records = tuple(records_of_frame(decode_frame(frame, start, self._decompressor), start, self._next_seq))
            if self._frames is not None:
                self._frames.put(frame, records)
        self._check_types(records)
        out.extend(records)
        self._next_seq += len(records)

    def _header(self, frame: bytes, start: int) -> SessionHeader:
        header = None if self._headers is None else self._headers.get(frame)
        if header is None:
            header = header_from_line(one_header_line(decode_frame(frame, start)))
            if self._headers is not None:
                self._headers.put(frame, header)
        return header

    def close(self) -> LogEnd:
        """How the file ended; the records recovered from a torn final frame are in ``torn``."""
        if self._complete == 0:
            raise LogCorruption("empty or header-less Zstandard session log")
        if self._pending is not None:
            raise self._pending
        assert self.header is not None  # the first complete frame decoded as the header
        window = self._window
        rest = window.data[window.at :]
        torn = None
        if rest:
            self._decompressor = self._decompressor or new_decompressor()
            recovered = recover_torn(decode_torn_frame(rest, self._decompressor), self._next_seq)
            torn = TornTail(window.origin + window.at, tuple(recovered), len(rest))
            self._check_types(recovered)
        if self._unknown is not None:
            raise self._unknown
        return LogEnd(self.header, torn, window.size)


LogReader = RawReader | ZstdReader


def reader_for(compression: str, resume: Resume | None = None) -> LogReader:
    """A reader without memos (one pass over one file), for ``compression`` ``none`` or ``zstd``."""
    if compression == "zstd":
        return ZstdReader(resume)
    if compression == "none":
        return RawReader(resume)
    raise ValueError(f"unknown compression {compression!r}")
