"""What every read of a log file must return — events, torn tail, or the refusal and its text.

:mod:`.spec_log` says which records a reader recovers; a caller of the runtime sees more: the
refusal's class and message (spec §3.4, §3.7 give the texts of the format's refusals), the
torn tail a write open will truncate, what a header-only listing shows (§3.8), and the
resource bounds the project documents (docs/commands.md, bad input: a zstd frame that could
decompress past 64 MiB is refused before decoding, the bound read from its block headers).
This module derives all of that from the bytes alone, reusing :mod:`.spec_log` and the
harness's own frame walker — never ``runtime.persistence`` — so it can judge the runtime's
readers exactly (:mod:`dsh_sim.drivers.readers`).
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import zstandard

from dsh_sim.adapters.simfs.frames import FrameStructureError, Layout, layout_at, layouts
from dsh_sim.evidence.oracles.spec_log import read_recoverable
from dsh_sim.evidence.oracles.spec_records import SpecViolation, check_header, strict_json

FRAME_LIMIT = 64 * 1024 * 1024  # docs/commands.md: the most one frame may decompress to
BLOCK_MAX = 128 * 1024  # RFC 8878 Block_Maximum_Size: the most one compressed block regenerates
CORRUPT = "corruption"
UNSUPPORTED = "unsupported"
ZSTD_CORRUPT = "corrupt Zstandard session log"
NOT_A_HEADER = "corrupt session log: first line is not a session header"  # §3.4: a header of the wrong shape
VERSION = 3


@attrs.frozen
class ReadOutcome:
    """A read's result: the log, or a refusal (``refusal`` set, ``text`` when documented)."""

    header: dict[str, Any] | None = None
    records: tuple[dict[str, Any], ...] = ()
    torn_start: int | None = None  # where the torn tail a write open truncates starts
    recovered: int = 0  # records kept from inside the torn tail
    refusal: str | None = None  # CORRUPT or UNSUPPORTED
    text: str | None = None  # the refusal's documented inner message (None: class only)


def _refused(text: str | None, kind: str = CORRUPT) -> ReadOutcome:
    return ReadOutcome(refusal=kind, text=text)


# -- documented bounds -------------------------------------------------------------------------


def _header_size(descriptor: int) -> int:
    """Frame-header bytes after the magic (RFC 8878 §3.1.1.1)."""
    single = descriptor & 0x20
    fcs_code = descriptor >> 6
    fcs = (1 if single else 0) if fcs_code == 0 else (2, 4, 8)[fcs_code - 1]
    return 1 + (0 if single else 1) + (0, 1, 2, 4)[descriptor & 0x03] + fcs


def output_bound(data: bytes, start: int) -> int:
    """What the frame at ``start`` (complete or cut short) can decompress to, from its block
    headers: raw and RLE blocks exactly their size, a compressed block at most Block_Maximum_Size;
    a block whose header is whole counts even when its payload is cut."""
    n = len(data)
    if n - start < 5:
        return 0
    o = start + 4 + _header_size(data[start + 4])
    bound = 0
    while n - o >= 3:
        header = data[o] | data[o + 1] << 8 | data[o + 2] << 16
        kind, size = (header >> 1) & 3, header >> 3
        bound += BLOCK_MAX if kind == 2 else size
        o += 3 + (1 if kind == 1 else size)
        if header & 1:
            break
    return bound


def window_size(data: bytes, start: int) -> int:
    """The decoding window a frame declares (its content size when single-segment); 0 when the
    header is not all there."""
    if len(data) - start < 5 or len(data) - start < 4 + _header_size(data[start + 4]):
        return 0
    descriptor = data[start + 4]
    if descriptor & 0x20:
        fcs_at = start + 5 + (0, 1, 2, 4)[descriptor & 0x03]
        width = (1, 2, 4, 8)[descriptor >> 6]
        value = int.from_bytes(data[fcs_at : fcs_at + width], "little")
        return value + 256 if width == 2 else value
    exponent, mantissa = data[start + 5] >> 3, data[start + 5] & 7
    base = 1 << (10 + exponent)
    return base + (base // 8) * mantissa


def bomb_text(start: int, bound: int) -> str:
    return (
        f"Zstandard session log refused: the frame at byte {start} could decompress to {bound} bytes, "
        f"over the {FRAME_LIMIT}-byte limit per frame"
    )


def _over_limit(data: bytes, start: int) -> str | None:
    """The refusal a frame earns before any decoding, if it could exceed the per-frame limit."""
    bound = output_bound(data, start)
    if bound > FRAME_LIMIT:
        return bomb_text(start, bound)
    if window_size(data, start) > FRAME_LIMIT:
        return f"{ZSTD_CORRUPT}: frame at byte {start} failed validation"
    return None


# -- documented refusal texts ------------------------------------------------------------------


def _documented(err: SpecViolation, data: bytes, compression: str) -> ReadOutcome:
    """The spec's text for what :mod:`.spec_log` refused (§3.4, §3.7); class only where the
    spec gives none."""
    message, at = str(err), err.offset
    if "header version" in message:
        return _refused(version_text(_header_version(data, compression)), UNSUPPORTED)
    if message.startswith("first record is not a session header"):
        return _refused(NOT_A_HEADER)
    if compression == "zstd":
        stems = {
            "not a zstd frame magic": f"{ZSTD_CORRUPT}: invalid frame magic at byte {at}",
            "reserved frame-header bits set": f"{ZSTD_CORRUPT}: reserved frame-header bit at byte {at}",
            "reserved block type": f"{ZSTD_CORRUPT}: reserved block type at byte {at}",
            "no complete header frame": "empty or header-less Zstandard session log",
            "a complete frame does not decode": f"{ZSTD_CORRUPT}: frame at byte {at} failed validation",
            "a complete frame does not end where": f"{ZSTD_CORRUPT}: frame at byte {at} failed validation",
            "the first frame is not exactly one header line": f"{ZSTD_CORRUPT}: first frame is not exactly one header line",
            "a complete frame ends inside a record": f"{ZSTD_CORRUPT}: complete frame contains a torn JSONL record",
        }
    else:
        stems = {"no complete header line": "empty or header-less session log"}
        if message.startswith("damage inside the committed region"):
            return _refused(_raw_issue(data))
    for stem, text in stems.items():
        if message.startswith(stem):
            return _refused(text)
    if message.startswith("the header line is not strict JSON") and not _plain_json(_header_line(data, compression)):
        return _refused("corrupt session log: header line is not valid JSON")
    return _refused(None)


def _header_version(data: bytes, compression: str) -> Any:
    try:
        line = _header_line(data, compression)
        return strict_json(line)["version"] if line is not None else None
    except (ValueError, TypeError, KeyError, zstandard.ZstdError, FrameStructureError):
        return None


def version_text(version: Any) -> str | None:
    """§3.9's refusal of a header version this build cannot read, after ``session "<id>" ``
    (the caller names the session and appends the raw log); None for v0, which a current file
    name contradicts (a corruption) and which the spec words differently."""
    if type(version) is not int or version == 0:
        return None
    if version > VERSION:
        return f"uses log format v{version}, but this harness reads only v{VERSION}: the log was written by a newer harness — upgrade the harness to open it"
    return f"uses log format v{version}, older than the supported v{VERSION}, and this build ships no upgrade path for it"


def _raw_issue(data: bytes) -> str | None:
    """§3.7's text for the first committed line the raw scanner cannot take (line numbers
    count the header as line 1); None for a parsable record that fails otherwise."""
    lines = data.split(b"\n")[:-1]
    for number, text in enumerate(lines[1:], start=2):
        try:
            record = json.loads(text)
        except ValueError:
            return f"corrupt session log: unparsable committed event at line {number}"
        expected = number - 2
        if type(record) is dict and record.get("seq") != expected:
            return f"corrupt session log: seq gap in committed region at line {number} (expected {expected}, got {record.get('seq')})"
    return None


def _plain_json(line: bytes | None) -> bool:
    try:
        json.loads(line or b"")
    except ValueError:
        return False
    return True


def _header_line(data: bytes, compression: str) -> bytes | None:
    if compression == "none":
        return data.split(b"\n", 1)[0]
    first = layout_at(data, 0)
    if first is None:
        return None
    return zstandard.ZstdDecompressor().decompressobj().decompress(data[: first.end]).split(b"\n", 1)[0]


# -- whole reads -------------------------------------------------------------------------------


def _spec_read(data: bytes, compression: str) -> ReadOutcome:
    try:
        log = read_recoverable(data, compression)
    except SpecViolation as err:
        return _documented(err, data, compression)
    return ReadOutcome(log.header, log.records, log.torn_start, log.recovered)


def expected_read(data: bytes, compression: str) -> ReadOutcome:
    """What ``stat``, a read open, its reads and a write open must find in ``data``."""
    if compression == "none":
        return _spec_read(data, compression)
    try:
        complete: list[Layout] = layouts(data)
    except FrameStructureError:
        return _spec_read(data, compression)  # the structural refusal, at its byte
    for frame in complete:  # frames are decoded in order: an earlier refusal wins
        refusal = _over_limit(data, frame.start)
        if refusal is not None:
            before = _spec_read(data[: frame.start], compression) if frame.start else ReadOutcome()
            return before if before.refusal is not None else _refused(refusal)
    end = complete[-1].end if complete else 0
    if complete and end < len(data) and _over_limit(data, end) is not None:
        before = _spec_read(data[:end], compression)  # a torn fragment past the bounds recovers nothing
        return before if before.refusal is not None else attrs.evolve(before, torn_start=end, recovered=0)
    return _spec_read(data, compression)


def expected_listing(data: bytes, compression: str) -> ReadOutcome | None:
    """What a header-only listing shows (§3.8): the header, ``None`` (skipped: no complete
    first record, or not a session header), or a refusal (a damaged complete header frame)."""
    if compression == "none":
        if b"\n" not in data:
            return None
        line = data.split(b"\n", 1)[0]
    else:
        try:
            first = layout_at(data, 0) if data else None
        except FrameStructureError:
            return None
        if first is None:
            return None
        if _over_limit(data, 0) is not None:
            return _refused(f"{ZSTD_CORRUPT}: header frame failed validation")
        decoder = zstandard.ZstdDecompressor().decompressobj()
        try:
            plain = decoder.decompress(data[: first.end])
        except zstandard.ZstdError:
            return _refused(f"{ZSTD_CORRUPT}: header frame failed validation")
        if not decoder.eof or decoder.unused_data:
            return _refused(f"{ZSTD_CORRUPT}: header frame failed validation")
        if not plain.endswith(b"\n") or plain.count(b"\n") != 1:
            return _refused(f"{ZSTD_CORRUPT}: first frame is not exactly one header line")
        line = plain[:-1]
    try:
        record = strict_json(line)
    except ValueError:
        return None
    if type(record) is not dict or record.get("type") != "session":
        return None
    try:
        return ReadOutcome(check_header(record))
    except SpecViolation as err:
        if "header version" in str(err):
            return _refused(version_text(record.get("version")), UNSUPPORTED)
        return _refused(NOT_A_HEADER if str(err).startswith("first record is not a session header") else None)
