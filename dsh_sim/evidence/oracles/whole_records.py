"""An independent reference reader: how many whole records does the medium still hold?

Recovery must keep every complete, contiguous record it can read (spec §3.7: complete
records of a torn final frame are kept).  To check that without trusting the runtime's own
decoder, this reads the bytes through a different path — zstd's streaming reader across
frames, which returns whatever plaintext it can and never raises on a torn tail — and counts
the newline-terminated records whose seqs run 0, 1, 2, ... .  It returns ``None`` when the
bytes are damaged in a way a crash cannot produce (then the check does not apply).
"""

from __future__ import annotations

import functools
import io
import itertools
import json
import operator
from typing import Any

import attrs
import zstandard

from dsh_sim.adapters.simfs.frames import complete_end
from dsh_sim.evidence.oracles.log_prefixes import keep, longest_of


@functools.lru_cache(maxsize=256)
def readable_records(data: bytes, compression: str) -> int | None:
    """(Remembered per content: explore asks again about the same crash image in every state
    of a point.)"""
    if compression != "zstd":
        prefix = _longest_prefix(data, raw=True)
        scan = prefix.scan.extended(data[len(prefix.data) :]) if prefix is not None else _Scan.of(data)
        if scan.partial != data:  # (the complete lines, to read the next image from)
            _remember(_Prefix(data[: len(data) - len(scan.partial)], attrs.evolve(scan, partial=b"")), raw=True)
        return scan.answer()
    # the complete frames after the longest remembered prefix, then the rest: the streaming
    # reader carries nothing across a frame's end, so reading the two apart reads the same
    prefix = _longest_prefix(data, raw=False)
    start = len(prefix.data) if prefix is not None else 0
    end = start + complete_end(data[start:])
    head = _plaintext(data[start:end]) if end > start else b""
    tail = _plaintext(data[end:]) if end < len(data) else b""
    if head is None or tail is None:
        return None
    scan = prefix.scan.extended(head) if prefix is not None else _Scan.of(head)
    if end > start:
        _remember(_Prefix(data[:end], scan), raw=False)
    return scan.extended(tail).answer()


def _plaintext(data: bytes) -> bytes | None:
    """Whatever plaintext zstd's streaming reader returns across the frames of ``data``
    (``None``: it raised)."""
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True)
        plain = bytearray()
        while True:
            try:
                chunk = reader.read(1 << 16)
            except zstandard.ZstdError:
                return None
            if not chunk:
                break
            plain += chunk
    except zstandard.ZstdError:
        return None
    return bytes(plain)


@attrs.frozen
class _Scan:
    """The count of leading records whose seqs run 0, 1, 2, ... in a plaintext read so far:
    ``lines`` complete lines seen (the header is line 0), ``good`` records counted, ``broken``
    once a record's seq was not its position (the count is then final), ``partial`` the bytes
    after the last newline (an unterminated fragment, or the start of the next line)."""

    lines: int
    good: int
    broken: bool
    partial: bytes

    @classmethod
    def of(cls, text: bytes) -> _Scan:
        return cls(0, 0, False, b"").extended(text)

    def extended(self, text: bytes) -> _Scan:
        """The scan of the plaintext read so far followed by ``text``."""
        parts = (self.partial + text).split(b"\n")
        lines = parts[:-1]  # the last element is an unterminated fragment (or empty)
        good, broken = self.good, self.broken
        records = itertools.islice(lines, 1, None) if self.lines == 0 else iter(lines)
        if not broken:
            # the first record whose seq is not its position, found in one C-level pass (each
            # line's seq is remembered): every record before it counts
            seqs = map(_seq_of, records)
            first = next(itertools.compress(itertools.count(), map(operator.ne, seqs, itertools.count(good))), None)
            if first is not None:
                good, broken = good + first, True
            else:
                good += len(lines) - (1 if self.lines == 0 and lines else 0)
        return _Scan(self.lines + len(lines), good, broken, parts[-1])

    def answer(self) -> int | None:
        return self.good if self.lines else None


@attrs.frozen
class _Prefix:
    """A log's leading bytes up to the end of a complete frame (raw: of a line), and the scan of them."""

    data: bytes
    scan: _Scan


_PREFIXES: dict[bool, list[_Prefix]] = {False: [], True: []}  # zstd, raw (True): the newest last
_SLOTS = 8


def _longest_prefix(data: bytes, *, raw: bool) -> _Prefix | None:
    """The longest remembered prefix ``data`` starts with: explore reads thousands of crash
    images of one growing log, and reading each from its first byte made this quadratic."""
    return longest_of(_PREFIXES[raw], data)


def _remember(prefix: _Prefix, *, raw: bool) -> None:
    keep(_PREFIXES[raw], prefix, _SLOTS)


_NOT_A_RECORD = object()


@functools.lru_cache(maxsize=1 << 15)
def _seq_of(line: bytes) -> Any:
    """The ``seq`` member of a record line (``_NOT_A_RECORD`` if the line is none).

    Remembered per line: explore asks about thousands of crash images that share most of
    their records, and parsing each record again was most of this reader's cost.  The value
    is only compared, never changed, so sharing it is safe."""
    try:
        record = json.loads(line)
    except ValueError:
        return _NOT_A_RECORD
    return record.get("seq") if isinstance(record, dict) else _NOT_A_RECORD


def clear_caches() -> None:
    """Forget the remembered crash images and lines (a fuzz example's are never asked again)."""
    readable_records.cache_clear()
    for known in _PREFIXES.values():
        known.clear()
    _seq_of.cache_clear()
