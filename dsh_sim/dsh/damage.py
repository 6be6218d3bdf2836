"""Damage a v0 log the way crashes and bad media do, byte for byte.

Every function takes the file's bytes (and, where it matters, the offsets where the real
DSH writer's appends began) and returns new bytes; none knows about DSH or dsh-sim.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from dsh_sim.adapters.simfs.torn import classify
from runtime.persistence.zstd_frames import compress_frame, decode_frame, scan_frames


def torn_cuts(data: bytes, last_start: int) -> dict[str, int]:
    """One cut (absolute length) per torn class of the last append (codec-aware classes)."""
    cuts: dict[str, int] = {}
    for cut, klass in sorted(classify(data[last_start:]).items()):
        if 0 < cut < len(data) - last_start and klass not in ("line-boundary", "frame-boundary"):
            cuts.setdefault(klass, last_start + cut)
    return cuts


def replace_line(data: bytes, index: int, new: bytes | None) -> bytes:
    """Raw JSONL: line ``index`` (0 = header) replaced, or dropped when ``new`` is None."""
    lines = data.split(b"\n")
    lines[index : index + 1] = [] if new is None else [new]
    return b"\n".join(lines)


def rewrite_header(data: bytes, compression: str, **changes: object) -> bytes:
    """The header record with ``changes`` applied (``None`` removes a key)."""

    def apply(record: dict[str, Any]) -> None:
        for key, value in changes.items():
            if value is None:
                record.pop(key, None)
            else:
                record[key] = value

    return edit_header(data, compression, apply)


def edit_header(data: bytes, compression: str, edit: Callable[[dict[str, Any]], None]) -> bytes:
    """The log with its header record edited in place by ``edit``, the bytes after it kept."""
    if compression == "none":
        end = data.index(b"\n")
        header, rest = data[:end], data[end:]
    else:
        first_end = scan_frames(data).frames[0][1]
        header, rest = decode_frame(data[:first_end], 0).rstrip(b"\n"), data[first_end:]
    record = json.loads(header)
    edit(record)
    line = json.dumps(record, separators=(",", ":")).encode()
    return line + rest if compression == "none" else compress_frame(line + b"\n") + rest


def flip_byte(data: bytes, offset: int) -> bytes:
    return data[:offset] + bytes([data[offset] ^ 0x5A]) + data[offset + 1 :]


def frame_plaintexts(data: bytes) -> list[bytes]:
    return [decode_frame(data[s:e], s) for s, e in scan_frames(data).frames]


def rebuild_frames(plaintexts: list[bytes]) -> bytes:
    return b"".join(compress_frame(p) for p in plaintexts)


def edit_last_frame(data: bytes, edit: object) -> bytes:
    """Zstd: the last complete frame's plaintext passed through ``edit`` and recompressed."""
    frames = scan_frames(data).frames
    start, end = frames[-1]
    plain = decode_frame(data[start:end], start)
    assert callable(edit)
    return data[:start] + compress_frame(edit(plain)) + data[end:]
