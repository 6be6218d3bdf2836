"""The harness's own walk over Zstandard frame structure (RFC 8878), independent of the runtime.

The crash model places torn writes inside frames (magic, header, block header, block, checksum)
and the judges find where complete frames end.  Both need the frame structure, and neither may
borrow it from ``runtime.persistence.zstd_frames``: a bug there would then move the crash model
and the oracle with the code under test, and hide itself.  This walker is written from the
format's specification alone; only :func:`damage_detectable` decompresses, with the
zstandard library itself.
"""

from __future__ import annotations

import attrs
import zstandard

MAGIC = b"\x28\xb5\x2f\xfd"


class FrameStructureError(ValueError):
    """Bytes that cannot be the start of a frame (``offset``: where)."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(f"{message} (at byte {offset})")
        self.offset = offset


@attrs.frozen
class Layout:
    start: int
    header_end: int  # first byte after magic + frame header
    blocks: tuple[tuple[int, int], ...]  # (block header start, payload end)
    checksum_start: int | None
    end: int


def layout_at(data: bytes, start: int) -> Layout | None:
    """The frame starting at ``start``; ``None`` when the bytes end inside it (a torn frame)."""
    n, o = len(data), start
    if n - o < 4:
        return None
    if data[o : o + 4] != MAGIC:
        raise FrameStructureError("not a zstd frame magic", o)
    o += 4
    if o >= n:
        return None
    descriptor = data[o]
    if descriptor & 0x18:
        raise FrameStructureError("reserved frame-header bits set", o)
    fcs_code, single = descriptor >> 6, bool(descriptor & 0x20)
    fcs_size = (1 if single else 0) if fcs_code == 0 else (2, 4, 8)[fcs_code - 1]
    o += 1 + (0 if single else 1) + (0, 1, 2, 4)[descriptor & 0x03] + fcs_size
    if o > n:
        return None
    header_end = o
    blocks: list[tuple[int, int]] = []
    while True:
        if n - o < 3:
            return None
        block = data[o] | data[o + 1] << 8 | data[o + 2] << 16
        kind, size = (block >> 1) & 3, block >> 3
        if kind == 3:
            raise FrameStructureError("reserved block type", o)
        end = o + 3 + (1 if kind == 1 else size)
        if end > n:
            return None
        blocks.append((o, end))
        o = end
        if block & 1:
            break
    checksum_start = None
    if descriptor & 0x04:
        if n - o < 4:
            return None
        checksum_start, o = o, o + 4
    return Layout(start, header_end, tuple(blocks), checksum_start, o)


def layouts(data: bytes) -> list[Layout]:
    """Every complete frame from the start of ``data`` (stops at a torn one)."""
    out: list[Layout] = []
    o = 0
    while o < len(data):
        layout = layout_at(data, o)
        if layout is None:
            break
        out.append(layout)
        o = layout.end
    return out


def complete_end(data: bytes) -> int:
    """Where the last complete frame ends (0 when there is none or the bytes are not frames)."""
    try:
        found = layouts(data)
    except FrameStructureError:
        return 0
    return found[-1].end if found else 0


def _decoded(frame: bytes) -> bytes | None:
    try:
        return zstandard.ZstdDecompressor().decompressobj().decompress(frame)
    except zstandard.ZstdError:
        return None


def damage_detectable(before: bytes, after: bytes) -> bool:
    """Whether a reader can tell ``after`` (``before`` with bytes flipped in place) is damaged
    rather than torn: the complete frames end where they ended, and one of them no longer
    decodes, or decodes to other content (its checksum then fails).  A flip that makes a
    complete frame claim more bytes than the file holds reads exactly like a torn tail, and a
    flip in bits the decoder never uses changes nothing; neither can be asked to be refused."""
    old = layouts_safe(before)
    try:
        new = layouts(after)
    except FrameStructureError:
        return bool(old)  # no prefix of a valid frame looks like this: damage, not a tear
    if [(f.start, f.end) for f in old] != [(f.start, f.end) for f in new]:
        return False
    for frame in new:
        a, b = before[frame.start : frame.end], after[frame.start : frame.end]
        if a != b and _decoded(b) != _decoded(a):
            return True
    return False


def layouts_safe(data: bytes) -> list[Layout]:
    """:func:`layouts`, or ``[]`` when the bytes are not frames."""
    try:
        return layouts(data)
    except FrameStructureError:
        return []
