"""Codec-aware torn-write classes: which cut lengths of an unsynced write are worth a state.

A power cut may keep any byte prefix of an unsynced append.  Byte-granular enumeration is
exact but mostly redundant; the interesting cuts are the ones that land on a different
structural element of the format.  For zstd frames: inside the magic, the frame header, a
block header, a block payload, the checksum, and exactly on a frame boundary; for JSONL:
inside a line and exactly on a line boundary.  Each cut is labelled with its class.
"""

from __future__ import annotations

from collections.abc import Sequence

from dsh_sim.adapters.simfs.disk import WriteOp
from dsh_sim.adapters.simfs.frames import MAGIC, FrameStructureError, layouts


def zstd_cuts(data: bytes) -> dict[int, str]:
    """Each element of a frame cut one byte short of its end — where a reader's length check
    that is off by one is the only thing that tells a tear from a whole element — the frame
    header also right after the magic, the checksum also before its first byte (a frame whose
    content is whole), and the frame on its boundary."""
    cuts: dict[int, str] = {}
    for layout in layouts(data):
        s = layout.start
        cuts.setdefault(s + 3, "magic")
        cuts.setdefault(s + 4, "frame-header")
        cuts.setdefault(layout.header_end - 1, "frame-header")
        for block_start, payload_end in layout.blocks:
            cuts.setdefault(block_start + 2, "block-header")
            if payload_end > block_start + 3:
                cuts.setdefault(payload_end - 1, "block")
        if layout.checksum_start is not None:
            cuts.setdefault(layout.checksum_start, "checksum")
            cuts.setdefault(layout.checksum_start + 3, "checksum")
        cuts.setdefault(layout.end, "frame-boundary")
    return cuts


def jsonl_cuts(data: bytes) -> dict[int, str]:
    cuts: dict[int, str] = {}
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end + 1
        if end - start > 1:
            cuts.setdefault(start + 1, "mid-line")
            cuts.setdefault(start + (end - start) // 2, "mid-line")
        cuts.setdefault(end - 1, "before-newline")
        cuts.setdefault(end, "line-boundary")
        start = end
    return cuts


def classify(data: bytes) -> dict[int, str]:
    """Cut length → class for the bytes of one write."""
    if data.startswith(MAGIC):
        try:
            return zstd_cuts(data)
        except FrameStructureError:
            pass
    return jsonl_cuts(data)


def codec_cut_points(op: WriteOp) -> Sequence[int]:
    return sorted(c for c in classify(op.data) if 0 < c < len(op.data))


def torn_class(data: bytes, cut: int) -> str:
    return classify(data).get(cut, "byte")
