"""An independent reader of the session-log format, written from the spec, not from ``runtime/``.

The runtime's own decoder is the thing under test, so the harness reads every byte it judges
through this second implementation of the spec (§1.1 envelope, §3.3 lines, §3.4 frames, §3.7
reading, §10.1 the v3 generation; the rules for each decoded value are in
:mod:`~dsh_sim.evidence.oracles.spec_records`):

* :func:`check_written` — **format conformance**: bytes a writer produced must be exactly what
  the spec says a writer produces (a checksummed zstd frame per batch holding whole records,
  strict JSON, the envelope and v3 surface rules, dense seqs).  Any deviation is a finding.
* :func:`read_recoverable` — **what a reader must recover** from a file a crash may have cut:
  complete frames (or lines) are strict; a structurally incomplete final frame is the torn
  tail, whose complete, contiguous records are kept; a raw fragment without its newline is
  torn.  Damage a crash cannot produce is a refusal.

Decoding is memoised by the bytes of each frame (raw: of each line), so judging thousands of
crash states of one session decodes each frame once.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from typing import Any

import attrs
import zstandard

from dsh_sim.adapters.simfs.frames import FrameStructureError, layout_at
from dsh_sim.evidence.oracles import log_prefixes
from dsh_sim.evidence.oracles.bytes_memo import BytesMemo
from dsh_sim.evidence.oracles.spec_records import SpecViolation, check_header, check_record, strict_json


@attrs.frozen
class SpecLog:
    """A log as the spec reads it: header, records (stored JSON objects), where it ends."""

    header: dict[str, Any]
    records: tuple[dict[str, Any], ...]
    frames: tuple[tuple[int, int], ...]  # zstd: every complete frame, header frame first; raw: ()
    counts: tuple[int, ...]  # zstd: records in each body frame (one per batch); raw: ()
    complete_end: int  # end of the last complete frame (raw: of the last committed line)
    torn_start: int | None  # where a torn tail starts (None: the file ends cleanly)
    recovered: int  # records kept from inside the torn tail (zstd only)


# -- frames ------------------------------------------------------------------------------------


def _frame_end(data: bytes, start: int) -> int | None:
    """End of the zstd frame at ``start`` by its structure (RFC 8878); None if cut short."""
    try:
        layout = layout_at(data, start)
    except FrameStructureError as err:
        raise SpecViolation(str(err).rsplit(" (at byte", 1)[0], err.offset) from None
    return None if layout is None else layout.end


_THREAD = threading.local()


def _decompressor() -> zstandard.ZstdDecompressor:
    """This thread's decompression context, made once: a new one per frame cost more than
    decoding a batch's frame.  Each use makes one decompressobj and is done with it before
    the next (a new decompressobj resets the context), and contexts are not shared between
    threads (a migration verifies in a worker thread)."""
    context = getattr(_THREAD, "context", None)
    if context is None:
        context = _THREAD.context = zstandard.ZstdDecompressor()
    return context


def _frame_plaintext(frame: bytes, start: int, *, writer: bool) -> bytes:
    descriptor = frame[4]
    if writer and not descriptor & 0x04:
        raise SpecViolation("a frame without its content checksum", start)
    if writer and descriptor & 0x03:
        raise SpecViolation("a frame that needs a dictionary", start)
    decoder = _decompressor().decompressobj()
    try:
        plain = decoder.decompress(frame)
    except zstandard.ZstdError as err:
        raise SpecViolation(f"a complete frame does not decode ({err})", start) from None
    if not decoder.eof or decoder.unused_data:
        raise SpecViolation("a complete frame does not end where its structure ends", start)
    return plain


class _Memo:
    """Bounded memo of decoded frames (or lines) keyed by their bytes."""

    def __init__(self, size: int = 8192) -> None:
        self._size = size
        self._items: OrderedDict[tuple[bytes, int, bool], Any] = OrderedDict()

    def get(self, key: tuple[bytes, int, bool]) -> Any:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: tuple[bytes, int, bool], value: Any) -> None:
        self._items[key] = value
        if len(self._items) > self._size:
            self._items.popitem(last=False)

    def clear(self) -> None:
        self._items.clear()


_FRAMES = _Memo()
_LINES = _Memo()
_LOGS = BytesMemo(64)  # whole logs (see _read), per (zstd, writer)


def clear_memos() -> None:
    """Forget every remembered decode (a fuzz example's logs are never read by the next)."""
    _FRAMES.clear()
    _LINES.clear()
    _LOGS.clear()
    log_prefixes.clear()


def _lines_of(plain: bytes, where: int) -> list[bytes]:
    if not plain.endswith(b"\n"):
        raise SpecViolation("a complete frame ends inside a record", where)
    lines = plain[:-1].split(b"\n")
    if any(not line for line in lines):
        raise SpecViolation("an empty line", where)
    return lines


def _records_of_frame(frame: bytes, start: int, first_seq: int, *, writer: bool) -> tuple[dict[str, Any], ...]:
    key = (frame, first_seq, writer)
    cached = _FRAMES.get(key)
    if cached is None and not writer:
        cached = _FRAMES.get((frame, first_seq, True))
    if cached is not None:
        return cached  # type: ignore[no-any-return]  # (a writer's frame reads the same for a reader: see _read)
    out = []
    for index, line in enumerate(_lines_of(_frame_plaintext(frame, start, writer=writer), start)):
        out.append(_record_of_line(line, first_seq + index, start, writer=writer))
    records = tuple(out)
    _FRAMES.put(key, records)
    return records


def _record_of_line(line: bytes, seq: int, where: int, *, writer: bool) -> dict[str, Any]:
    key = (line, seq, writer)
    cached = _LINES.get(key)
    if cached is None and not writer:
        cached = _LINES.get((line, seq, True))
    if cached is not None:
        return cached  # type: ignore[no-any-return]  # (a writer's record reads the same for a reader)
    try:
        parsed = strict_json(line)
    except ValueError as err:
        raise SpecViolation(f"record {seq} is not strict JSON ({err})", where) from None
    record = check_record(parsed, seq, writer=writer)
    _LINES.put(key, record)
    return record


def _header_of(line: bytes, where: int) -> dict[str, Any]:
    try:
        record = strict_json(line)
    except ValueError as err:
        raise SpecViolation(f"the header line is not strict JSON ({err})", where) from None
    try:
        return check_header(record)
    except SpecViolation as err:
        raise SpecViolation(str(err), where) from None


# -- whole files -------------------------------------------------------------------------------


def check_written(data: bytes, compression: str) -> SpecLog:
    """Format conformance of a whole file a writer produced (no torn tail allowed)."""
    log = _read(data, compression, writer=True)
    if log.torn_start is not None:
        raise SpecViolation("the file ends inside a frame or record", log.torn_start)
    return log


def read_recoverable(data: bytes, compression: str) -> SpecLog:
    """What a reader must recover from ``data``; :class:`SpecViolation` means refuse."""
    return _read(data, compression, writer=False)


def _read(data: bytes, compression: str, *, writer: bool) -> SpecLog:
    """Remembered per whole log: several judges read the same crash image after a recovery,
    and walking every frame of a long log for each of them made exploration quadratic."""
    if compression not in ("zstd", "none"):
        raise ValueError(f"unknown compression {compression!r}")
    key = (compression == "zstd", writer)
    known = _LOGS.get(data, key)
    if known is None and not writer:
        # a writer's rules are a reader's plus more (checksums, canonical ranges, no empty
        # batch), and nothing else depends on ``writer``: bytes that read as a writer's read
        # the same for a reader (every acknowledged log is read both ways)
        as_written = _LOGS.get(data, (key[0], True))
        if as_written is not None and not isinstance(as_written, SpecViolation):
            return as_written  # type: ignore[no-any-return]
    if isinstance(known, SpecViolation):
        raise copy.copy(known)  # a fresh exception (message, offset): a re-raised one would grow its traceback
    if known is not None:
        return known  # type: ignore[no-any-return]
    try:
        log = _read_zstd(data, writer=writer) if compression == "zstd" else _read_raw(data, writer=writer)
    except SpecViolation as err:
        _LOGS.put(data, key, copy.copy(err))
        raise
    _LOGS.put(data, key, log)
    return log


def _read_zstd(data: bytes, *, writer: bool) -> SpecLog:
    prefix = log_prefixes.longest(data, writer)
    frames: list[tuple[int, int]] = list(prefix.frames) if prefix is not None else []
    o = len(prefix.data) if prefix is not None else 0
    torn: int | None = None
    while o < len(data):
        end = _frame_end(data, o)
        if end is None:
            torn = o
            break
        frames.append((o, end))
        o = end
    if not frames:
        raise SpecViolation("no complete header frame")
    records: list[dict[str, Any]] = []
    counts: list[int] = []
    if prefix is not None:
        header = prefix.header
        records.extend(prefix.records)
        counts.extend(prefix.counts)
        body = frames[len(prefix.frames) :]
    else:
        head_start, head_end = frames[0]
        head = _frame_plaintext(data[head_start:head_end], head_start, writer=writer)
        if not head.endswith(b"\n") or head.count(b"\n") != 1:
            raise SpecViolation("the first frame is not exactly one header line", 0)
        header = _header_of(head[:-1], 0)
        body = frames[1:]
    for start, end in body:
        batch = _records_of_frame(data[start:end], start, len(records), writer=writer)
        if writer and not batch:
            raise SpecViolation("an empty batch frame", start)
        records.extend(batch)
        counts.append(len(batch))
    recovered = 0
    if torn is not None:
        for record in _torn_records(data[torn:], len(records)):
            records.append(record)
            recovered += 1
    complete_end = frames[-1][1]
    log = SpecLog(header, tuple(records), tuple(frames), tuple(counts), complete_end, torn, recovered)
    log_prefixes.remember(data, writer, complete_end, header, log.records[: len(log.records) - recovered], log.frames, log.counts)
    return log


def _torn_records(fragment: bytes, first_seq: int) -> list[dict[str, Any]]:
    """§3.7 step 4: the complete, newline-terminated records a torn frame's partial plaintext
    holds are kept (a decoder error keeps none); they must continue the seqs."""
    try:
        plain = _decompressor().decompressobj().decompress(fragment)
    except zstandard.ZstdError:
        return []
    out: list[dict[str, Any]] = []
    for line in plain[: plain.rfind(b"\n") + 1].split(b"\n")[:-1]:
        try:  # (a complete line of a torn frame is a line a reader may have read before: remembered)
            out.append(_record_of_line(line, first_seq + len(out), 0, writer=False))
        except ValueError:  # (a SpecViolation is one)
            break
    return out


def _read_raw(data: bytes, *, writer: bool) -> SpecLog:
    """§3.7 raw scanner: only newline-terminated records count; an unparsable or seq-gapped
    line starts a tolerated crash tail unless a later record is a turn/end (then refuse).

    The scan starts after the committed lines of the longest raw log already read that
    ``data`` starts with: there, every line before was a clean record and no issue was found,
    which is all the scan carries on from (a growing log is not scanned again from its start)."""
    prefix = log_prefixes.longest(data, writer, raw=True)
    records: list[dict[str, Any]]
    if prefix is not None:
        header, records = prefix.header, list(prefix.records)
        committed = pos = len(prefix.data)
    else:
        nl = data.find(b"\n")
        if nl < 0:
            raise SpecViolation("no complete header line")
        header, records = _header_of(data[:nl], 0), []
        committed = pos = nl + 1
    issue: str | None = None
    while True:
        nl = data.find(b"\n", pos)
        if nl < 0:
            break
        line, where, pos = data[pos:nl], pos, nl + 1
        if issue is None:
            try:
                record = _record_of_line(line, len(records), where, writer=writer)
            except SpecViolation as err:
                if writer:
                    raise
                issue = str(err)
                if _is_turn_end(line):  # §8.5: a turn/end at a gapped seq is committed damage itself
                    raise SpecViolation(f"damage inside the committed region: {issue}", where) from None
                continue
            records.append(record)
            committed = pos
        elif _is_turn_end(line):
            raise SpecViolation(f"damage inside the committed region: {issue}", where)
    torn = committed if committed < len(data) else None
    log = SpecLog(header, tuple(records), (), (), committed, torn, 0)
    log_prefixes.remember(data, writer, committed, header, log.records, (), (), raw=True)
    return log


def _is_turn_end(line: bytes) -> bool:
    try:
        record = strict_json(line)
    except ValueError:
        return False
    return type(record) is dict and record.get("type") == "turn/end"
