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

import zstandard


@functools.lru_cache(maxsize=256)
def readable_records(data: bytes, compression: str) -> int | None:
    """(Remembered per content: explore asks again about the same crash image in every state
    of a point.)"""
    if compression == "zstd":
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
        text = bytes(plain)
    else:
        text = data
    lines = text.split(b"\n")[:-1]  # the last element is an unterminated fragment (or empty)
    if not lines:
        return None
    # the first record (line 0 is the header) whose seq is not its position, found in one
    # C-level pass (each line's seq is remembered): every record before it counts
    seqs = map(_seq_of, itertools.islice(lines, 1, None))
    return next(itertools.compress(itertools.count(), map(operator.ne, seqs, itertools.count())), len(lines) - 1)


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
    _seq_of.cache_clear()
