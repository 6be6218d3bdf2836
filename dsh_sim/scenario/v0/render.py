"""A plan as the v0 file the reference writer leaves on disk (spec §3.3–§3.4), torn or damaged.

Each durable batch becomes its storage records — runs of three or more same-block deltas
packed into one row (:func:`~dsh_sim.scenario.v0_writer.pack_records`) — written as raw JSONL
lines or as one checksummed zstd frame after the header frame.  Then the final batch may be:

* **torn** where the crash of the old runtime cut it (``tear``): ``half`` — the middle of its
  bytes (the first writer's cut); ``row`` — inside its last packed row (raw: the middle of
  that line; zstd: the last block boundary inside the row's plaintext, so the complete
  blocks before it are recoverable — without such a boundary, the middle of the block that
  holds the row); ``tail`` — its very end (raw: the final newline; zstd: inside the frame's
  checksum, every block complete);
* **damaged**: one byte flipped, as a failing disk would (zstd: inside the payload of the
  frame's last block, so the frame's structure stands and only its content is wrong — or,
  when that flip lands in bits the decoder never uses, in the content checksum; raw: the
  first byte of the record before the batch's last ``turn/end``, or of its last record).

The frame walk is the harness's own (:mod:`dsh_sim.adapters.simfs.frames`); plaintext lengths
of block prefixes come from the ``zstandard`` library, never from the runtime.
"""

from __future__ import annotations

from typing import Any

import attrs
import zstandard

from dsh_sim.adapters.simfs.frames import Layout, layout_at
from dsh_sim.scenario.v0.plan import Plan
from dsh_sim.scenario.v0_writer import pack_records
from runtime.persistence.v0_records import V0Event
from runtime.persistence.zstd_frames import compress_frame
from runtime.session.lossless import dumps, encode_utf8

_CITING = ("assistant/message", "tool/result")  # their cites are v0 sourceEventSeqs


@attrs.frozen
class Source:
    """The v0 file of a plan as the disk holds it, and where its final batch lies."""

    plan: Plan
    compression: str
    data: bytes
    records: tuple[tuple[dict[str, Any], ...], ...]  # the storage records (lines) of each batch
    tail_start: int  # where the final batch begins
    cut: int | None = None  # torn: the file ends here
    damage: int | None = None  # damaged: the offset of the flipped byte


def events(plan: Plan, start: int, end: int) -> list[V0Event]:
    out = []
    for seq in range(start, end):
        item = plan.items[seq]
        cites = item.cites if item.type in _CITING or item.replaces else None
        op: Any = None
        if item.surface:
            op = "append" if item.replaces is None else {"op": "replace", "start": item.replaces[0], "end": item.replaces[1]}
        out.append(V0Event(item.type, seq, item.time, item.data, surface_op=op, source_event_seqs=cites))
    return out


def lines(records: tuple[dict[str, Any], ...]) -> bytes:
    return encode_utf8("".join(dumps(r) + "\n" for r in records))


def members(record: dict[str, Any]) -> int:
    """How many events a storage record stands for (a packed row: one per member)."""
    if record["type"].endswith("-chunks"):
        return len(record["data"]["args" if record["type"] == "tool-call-chunks" else "texts"])
    return 1


def render(plan: Plan, compression: str) -> Source:
    records = tuple(tuple(pack_records(events(plan, a, b))) for a, b in plan.batches)
    parts = [encode_utf8(dumps(plan.header_record()) + "\n")] + [lines(r) for r in records]
    if compression == "zstd":
        parts = [compress_frame(p) for p in parts]
    data = b"".join(parts)
    source = Source(plan, compression, data, records, len(data) - len(parts[-1]))
    session = plan.session
    if session.tear is not None and records:
        cut = _cut(source, session.tear)
        return attrs.evolve(source, data=data[:cut], cut=cut)
    if session.damaged and records:
        offset = _damage_offset(source)
        return attrs.evolve(source, data=flip(data, offset), damage=offset)
    return source


def _final_frame(source: Source) -> Layout:
    layout = layout_at(source.data, source.tail_start)
    assert layout is not None, "the final batch is a complete frame before it is torn or damaged"
    return layout


def _line_starts(source: Source) -> list[int]:
    starts = [source.tail_start]
    for record in source.records[-1]:
        starts.append(starts[-1] + len(encode_utf8(dumps(record))) + 1)
    return starts


def _cut(source: Source, tear: str) -> int:
    data, tail = source.data, source.tail_start
    if tear == "half":  # the first writer's cut, kept byte for byte
        cut = tail + (len(data) - tail) // 2
        return cut - 1 if data[:cut].endswith(b"\n") else cut
    if source.compression == "none":
        if tear == "tail":
            return len(data) - 1
        starts = _line_starts(source)
        i = _last_row(source.records[-1])
        return starts[i] + max(1, (starts[i + 1] - 1 - starts[i]) // 2)
    frame = _final_frame(source)
    if tear == "tail":
        return (frame.checksum_start + 2) if frame.checksum_start is not None else frame.end - 1
    return _row_cut(source, frame)


def _last_row(records: tuple[dict[str, Any], ...]) -> int:
    """The index of the batch's last packed row (no row: its last record)."""
    rows = [i for i, r in enumerate(records) if r["type"].endswith("-chunks")]
    return rows[-1] if rows else len(records) - 1


def _row_cut(source: Source, frame: Layout) -> int:
    """zstd ``row``: a cut at a block boundary inside the last row's plaintext, else the middle
    of the block that holds the row's start."""
    offsets = [s - source.tail_start for s in _line_starts(source)]
    i = _last_row(source.records[-1])
    row_start, row_end = offsets[i], offsets[i + 1]
    covered = []  # plaintext bytes the complete blocks before each block boundary decode to
    for _, block_end in frame.blocks[:-1]:
        covered.append((block_end, len(zstandard.ZstdDecompressor().decompressobj().decompress(source.data[frame.start : block_end]))))
    inside = [end for end, plain in covered if row_start < plain < row_end]
    if inside:
        return inside[-1]
    before = [p for _, p in covered if p <= row_start]
    j = len(before)  # the block holding the row's start
    block_start, block_end = frame.blocks[j]
    return block_start + 3 + max(1, (block_end - block_start - 3) // 2)


def _damage_offset(source: Source) -> int:
    if source.compression == "zstd":
        frame = _final_frame(source)
        block_start, block_end = frame.blocks[-1]
        offset = block_start + 3 + (block_end - block_start - 3) // 2
        if frame_fails(flip(source.data, offset)[frame.start : frame.end]) or frame.checksum_start is None:
            return offset
        return frame.checksum_start  # that flip happened to decode to the same content (unused bits): hit the checksum
    return _line_starts(source)[damaged_line(source.records[-1])]


def flip(data: bytes, offset: int) -> bytes:
    return data[:offset] + bytes([data[offset] ^ 0x40]) + data[offset + 1 :]


def frame_fails(frame: bytes) -> bool:
    """A complete frame fails decoding or its content checksum (the ``zstandard`` library)."""
    try:
        zstandard.ZstdDecompressor().decompressobj().decompress(frame)
    except zstandard.ZstdError:
        return True
    return False


def damaged_line(records: tuple[dict[str, Any], ...]) -> int:
    """raw: which line of the final batch a damage makes unparsable — the one before its last
    ``turn/end`` (damage the reader must refuse, a committed record follows), else its last
    (damage indistinguishable from a torn tail)."""
    ends = [i for i, r in enumerate(records) if r["type"] == "turn/end"]
    return ends[-1] - 1 if ends and ends[-1] > 0 else len(records) - 1
