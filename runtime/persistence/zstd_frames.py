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

BLOCK_MAX_OUTPUT = 128 * 1024  # a compressed block regenerates at most this (zstd format, Block_Maximum_Size)
FRAME_OUTPUT_LIMIT = 64 * 1024 * 1024  # one durable batch decompresses to at most this
LOG_OUTPUT_LIMIT = 1024 * 1024 * 1024  # one whole-log decode decompresses to at most this


class FrameFormatError(ValueError):
    """Structural corruption that cannot be a torn write."""


class DecompressionLimitExceeded(FrameFormatError):
    """A frame (or a log's frames together) could decompress past the reader's limit: refused
    before decompressing, so a decompression bomb costs no memory."""


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


def frame_at(data: bytes, o: int, origin: int = 0) -> FrameLayout | None:
    """Layout of the frame starting at ``o``; ``None`` if it is cut short (torn).  ``origin``:
    the file offset of ``data[0]`` (a reader that holds a window of the file), for the messages."""
    n = len(data)
    start = o
    if n - o < 4:
        return None
    if int.from_bytes(data[o : o + 4], "little") != MAGIC:
        raise FrameFormatError(f"corrupt Zstandard session log: invalid frame magic at byte {origin + o}")
    o += 4
    if o >= n:
        return None
    d = data[o]
    if d & 0x18:
        raise FrameFormatError(f"corrupt Zstandard session log: reserved frame-header bit at byte {origin + o}")
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
            raise FrameFormatError(f"corrupt Zstandard session log: reserved block type at byte {origin + o}")
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
    return frame_at(data, 0) if data else None


def frame_layouts(data: bytes, start: int = 0) -> list[FrameLayout]:
    """Layouts of the complete frames in ``data`` from ``start`` (a frame boundary) on."""
    out: list[FrameLayout] = []
    o = start
    while o < len(data):
        layout = frame_at(data, o)
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


def output_bound(frame: bytes) -> int:
    """An upper bound of what ``frame`` (complete, or a torn prefix) can decompress to, read
    from its block headers alone; a block cut short counts as if it were whole."""
    n = len(frame)
    if n < 5:
        return 0
    d = frame[4]
    fcs_flag, single, dict_flag = d >> 6, d & 0x20, d & 0x03
    o = 5 + (0 if single else 1) + (0, 1, 2, 4)[dict_flag] + ((1 if single else 0) if fcs_flag == 0 else 1 << fcs_flag)
    bound = 0
    while n - o >= 3:
        h = int.from_bytes(frame[o : o + 3], "little")
        last, kind, size = h & 1, (h >> 1) & 3, h >> 3
        bound += BLOCK_MAX_OUTPUT if kind == 2 else size  # raw and RLE: exactly size; compressed: at most a block
        o += 3 + (1 if kind == 1 else size)
        if last:
            break
    return bound


class LogDecompressor:
    """One whole-log decode: a zstd context (creating one per frame costs more than the
    frame) and the output the log may still produce.  Never share one between threads
    (``thread_verifier`` decodes in workers)."""

    def __init__(self, frame_limit: int = FRAME_OUTPUT_LIMIT, log_limit: int = LOG_OUTPUT_LIMIT) -> None:
        self.context = zstandard.ZstdDecompressor(max_window_size=max(frame_limit, 1 << 10))
        self.frame_limit = frame_limit
        self.remaining = log_limit

    def reserve(self, frame: bytes, start: int) -> None:
        """Refuse ``frame`` (at byte ``start``) if it could overrun a limit; nothing is decoded."""
        bound = output_bound(frame)
        if bound > self.frame_limit:
            raise DecompressionLimitExceeded(
                f"Zstandard session log refused: the frame at byte {start} could decompress to {bound} bytes, "
                f"over the {self.frame_limit}-byte limit per frame"
            )
        if bound > self.remaining:
            raise DecompressionLimitExceeded(
                f"Zstandard session log refused: decompressing the frame at byte {start} could take the log past its "
                "decompressed-size limit"
            )

    def produced(self, size: int) -> None:
        self.remaining -= size


def new_decompressor() -> LogDecompressor:
    """The bounded decompressor for one whole-log decode."""
    return LogDecompressor()


def decode_frame(frame: bytes, start: int, decompressor: LogDecompressor | None = None) -> bytes:
    """Decode one complete frame; anything but a clean, checksummed end is corruption, and a
    frame that could decompress past the limits is refused before decoding."""
    bounded = LogDecompressor() if decompressor is None else decompressor
    bounded.reserve(frame, start)
    try:
        decoder = bounded.context.decompressobj()
        out = decoder.decompress(frame)
        if not decoder.eof or decoder.unused_data:
            raise zstandard.ZstdError("frame did not end where its structure ends")
    except zstandard.ZstdError:
        raise FrameFormatError(f"corrupt Zstandard session log: frame at byte {start} failed validation") from None
    bounded.produced(len(out))
    return out


def decode_torn_frame(fragment: bytes, decompressor: LogDecompressor | None = None) -> bytes:
    """Best-effort plaintext of a torn frame (flush mode: no end or checksum required); a
    fragment that could decompress past the limits recovers nothing."""
    bounded = LogDecompressor() if decompressor is None else decompressor
    try:
        bounded.reserve(fragment, 0)
        out: bytes = bounded.context.decompressobj().decompress(fragment)
    except (zstandard.ZstdError, DecompressionLimitExceeded):
        return b""
    bounded.produced(len(out))
    return out
