"""An independent reference reader: how many whole records does the medium still hold?

Recovery must keep every complete, contiguous record it can read (spec §3.7: complete
records of a torn final frame are kept).  To check that without trusting the runtime's own
decoder, this reads the bytes through a different path — zstd's streaming reader across
frames, which returns whatever plaintext it can and never raises on a torn tail — and counts
the newline-terminated records whose seqs run 0, 1, 2, ... .  It returns ``None`` when the
bytes are damaged in a way a crash cannot produce (then the check does not apply).
"""

from __future__ import annotations

import io
import json

import zstandard


def readable_records(data: bytes, compression: str) -> int | None:
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
    count = 0
    for line in lines[1:]:  # line 0 is the header
        try:
            record = json.loads(line)
        except ValueError:
            break
        if not isinstance(record, dict) or record.get("seq") != count:
            break
        count += 1
    return count
