"""Zstandard frames: one checksummed frame per durable batch, and a structural scanner.

The scanner (spec §3.4) walks frame boundaries without decompressing, so a torn final frame
is found without trusting the decoder: a cut inside the magic, the frame header, a block
header, a block payload or the checksum all read as "torn at the frame's start".  A complete
frame is then decoded on its own and must reach its end and pass its content checksum.
"""

from __future__ import annotations

import attrs
import zstandard

MAGIC = 0xFD2FB528
MAGIC_BYTES = MAGIC.to_bytes(4, "little")
_COMPRESSOR = zstandard.ZstdCompressor(level=3, write_checksum=True, write_content_size=True)


class FrameFormatError(ValueError):
    """Structural corruption that cannot be a torn write."""


@attrs.frozen
class FrameScan:
    frames: tuple[tuple[int, int], ...]  # (start, end) of every complete frame
    torn_start: int | None  # offset of a structurally incomplete final frame


@attrs.frozen
class FrameLayout:
    """Byte offsets inside one complete frame, for codec-aware torn-write placement."""

    start: int
    header_end: int  # first byte after magic + frame header
    blocks: tuple[tuple[int, int], ...]  # (block header start, payload end)
    checksum_start: int | None
    end: int


def compress_frame(plaintext: bytes) -> bytes:
    """One complete frame with content size and content checksum."""
    return _COMPRESSOR.compress(plaintext)


def _frame_at(data: bytes, o: int) -> FrameLayout | None:
    """Layout of the frame starting at ``o``; ``None`` if it is cut short (torn)."""
    n = len(data)
    start = o
    if n - o < 4:
        return None
    if int.from_bytes(data[o : o + 4], "little") != MAGIC:
        raise FrameFormatError(f"corrupt Zstandard session log: invalid frame magic at byte {o}")
    o += 4
    if o >= n:
        return None
    d = data[o]
    if d & 0x18:
        raise FrameFormatError(f"corrupt Zstandard session log: reserved frame-header bit at byte {o}")
    fcs_flag, single, checksum, dict_flag = d >> 6, d & 0x20, d & 0x04, d & 0x03
    fcs_bytes = (1 if single else 0) if fcs_flag == 0 else 1 << fcs_flag
    rest = (0 if single else 1) + (0, 1, 2, 4)[dict_flag] + fcs_bytes
    o += 1
    if n - o < rest:
        return None
    o += rest
    header_end = o
    blocks: list[tuple[int, int]] = []
    while True:
        if n - o < 3:
            return None
        h = int.from_bytes(data[o : o + 3], "little")
        last, kind, size = h & 1, (h >> 1) & 3, h >> 3
        if kind == 3:
            raise FrameFormatError(f"corrupt Zstandard session log: reserved block type at byte {o}")
        payload = 1 if kind == 1 else size
        block_start = o
        o += 3
        if n - o < payload:
            return None
        o += payload
        blocks.append((block_start, o))
        if last:
            break
    checksum_start = None
    if checksum:
        if n - o < 4:
            return None
        checksum_start = o
        o += 4
    return FrameLayout(start, header_end, tuple(blocks), checksum_start, o)


def first_frame(data: bytes) -> FrameLayout | None:
    """Layout of the frame at byte 0 (``None`` while it is incomplete); later bytes unread."""
    return _frame_at(data, 0) if data else None


def frame_layouts(data: bytes, start: int = 0) -> list[FrameLayout]:
    """Layouts of the complete frames in ``data`` from ``start`` (a frame boundary) on."""
    out: list[FrameLayout] = []
    o = start
    while o < len(data):
        layout = _frame_at(data, o)
        if layout is None:
            break
        out.append(layout)
        o = layout.end
    return out


def scan_frames(data: bytes, start: int = 0) -> FrameScan:
    """Complete frames, and where a structurally incomplete final frame starts (if any);
    ``start``: a frame boundary already known (the frames before it are not reported)."""
    layouts = frame_layouts(data, start)
    end = layouts[-1].end if layouts else start  # the scan stops here: at EOF or a torn frame
    return FrameScan(tuple((layout.start, layout.end) for layout in layouts), end if end < len(data) else None)


def new_decompressor() -> zstandard.ZstdDecompressor:
    """A decompressor for one whole-log decode: creating one per frame costs more than the
    frame.  Never share one between threads (``thread_verifier`` decodes in workers)."""
    return zstandard.ZstdDecompressor()


def _or_new(decompressor: zstandard.ZstdDecompressor | None) -> zstandard.ZstdDecompressor:
    return zstandard.ZstdDecompressor() if decompressor is None else decompressor


def decode_frame(frame: bytes, start: int, decompressor: zstandard.ZstdDecompressor | None = None) -> bytes:
    """Decode one complete frame; anything but a clean, checksummed end is corruption."""
    try:
        decoder = _or_new(decompressor).decompressobj()
        out = decoder.decompress(frame)
        if not decoder.eof or decoder.unused_data:
            raise zstandard.ZstdError("frame did not end where its structure ends")
    except zstandard.ZstdError:
        raise FrameFormatError(f"corrupt Zstandard session log: frame at byte {start} failed validation") from None
    return out


def decode_torn_frame(fragment: bytes, decompressor: zstandard.ZstdDecompressor | None = None) -> bytes:
    """Best-effort plaintext of a torn frame (flush mode: no end or checksum required)."""
    try:
        return _or_new(decompressor).decompressobj().decompress(fragment)
    except zstandard.ZstdError:
        return b""
