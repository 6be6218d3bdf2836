"""Log files for the reader differential: written by the harness, then cut, damaged and bloated.

Every case is bytes a reader may meet: the logs corpus runs left, the same records re-encoded
by the harness's own writer (zstd frames the way the spec's writer makes them, and frames
built by hand from RFC 8878 — single-segment or not, every content-size width, raw, RLE and
compressed blocks, no checksum), then varied: a tear at every byte of the last frame (or
line), junk after the last frame, bit flips inside complete frames, decompression bombs
(frames whose block headers promise more than the documented 64 MiB, with true or lying
content sizes), large records, a header past the 8 KiB first read.  Nothing here reads with
``runtime.persistence``; the cases are judged by :mod:`dsh_sim.evidence.oracles.read_outcome`.
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Iterator, Sequence
from typing import Any

import attrs
import zstandard

from dsh_sim.adapters.simfs.frames import layout_at, layouts_safe

BLOCK_MAX = 128 * 1024


@attrs.frozen
class Case:
    name: str
    compression: str
    data: bytes
    header: dict[str, Any]  # the header the log was written with (where it is placed)
    write_open: bool = False  # also open it for writing (costlier: durable rewrite, lock)


@attrs.frozen
class Source:
    """A log's content: header and records (taken from a corpus run, or synthetic)."""

    name: str
    header: dict[str, Any]
    records: tuple[dict[str, Any], ...]


def line(record: dict[str, Any]) -> bytes:
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def zstd_frame(plain: bytes, *, checksum: bool = True, content_size: bool = True) -> bytes:
    return zstandard.ZstdCompressor(level=3, write_checksum=checksum, write_content_size=content_size).compress(plain)


def frame_header(*, single: bool, fcs_code: int, dict_code: int = 0, content_size: int = 0, dict_id: int = 1) -> bytes:
    """Magic and frame header (RFC 8878 §3.1.1.1), no checksum flag; window 2^17 when not single."""
    out = bytearray(b"\x28\xb5\x2f\xfd")
    out.append(fcs_code << 6 | (0x20 if single else 0) | dict_code)
    if not single:
        out.append((17 - 10) << 3)
    out += dict_id.to_bytes((0, 1, 2, 4)[dict_code], "little") if dict_code else b""
    width = (1 if single else 0) if fcs_code == 0 else (2, 4, 8)[fcs_code - 1]
    value = content_size - 256 if width == 2 else content_size
    out += value.to_bytes(width, "little") if width else b""
    return bytes(out)


def _fits(size: int, single: bool, fcs_code: int) -> bool:
    width = (1 if single else 0) if fcs_code == 0 else (2, 4, 8)[fcs_code - 1]
    return width == 0 or (256 <= size < 65536 + 256 if width == 2 else size < 1 << (8 * width))


def _header_length(descriptor: int) -> int:
    single, fcs_code = descriptor & 0x20, descriptor >> 6
    return 1 + (0 if single else 1) + (0, 1, 2, 4)[descriptor & 3] + ((1 if single else 0) if fcs_code == 0 else (2, 4, 8)[fcs_code - 1])


def block(kind: int, size: int, payload: bytes, last: bool) -> bytes:
    return (int(last) | kind << 1 | size << 3).to_bytes(3, "little") + payload


def raw_frame(plain: bytes, *, single: bool, fcs_code: int, chunk: int = BLOCK_MAX, empty_last: bool = False) -> bytes:
    """A complete frame of raw blocks, without checksum; ``empty_last``: end on an empty raw
    block (the frame then ends exactly on a 3-byte block header)."""
    fcs_code = fcs_code if fcs_code or single else 0
    while not _fits(len(plain), single, fcs_code):
        fcs_code += 1  # the smallest width from the one asked for that holds the size
    parts = [plain[i : i + chunk] for i in range(0, len(plain), chunk)] or [b""]
    body = b"".join(block(0, len(p), p, last=not empty_last and i == len(parts) - 1) for i, p in enumerate(parts))
    if empty_last:
        body += block(0, 0, b"", last=True)
    return frame_header(single=single, fcs_code=fcs_code, content_size=len(plain)) + body


def _compressed_block() -> bytes:
    """One compressed block (type 2) that regenerates a full block, taken from a real frame."""
    pattern = bytes(range(256)) * (BLOCK_MAX // 256)
    frame = zstandard.ZstdCompressor(level=1, write_checksum=False, write_content_size=False).compress(pattern)
    found = layout_at(frame, 0)
    assert found is not None and len(found.blocks) == 1
    start, end = found.blocks[0]
    assert (frame[start] >> 1) & 3 == 2
    return frame[start + 3 : end]


def bomb_frame(*, single: bool, fcs_code: int, dict_code: int, kind: str, declared: int = 100) -> bytes:
    """A frame whose block headers promise past the 64 MiB limit: RLE blocks of 100,000 bytes
    (or, ``kind="compressed"``, copies of a compressed block worth up to 128 KiB each); the
    content size it declares (``declared``) may lie."""
    if kind == "rle":
        count, size, payload, kind_code = 672, 100_000, b"x", 1
    elif kind == "rle-at-limit":  # exactly 64 MiB: allowed, and decoded
        count, size, payload, kind_code = 512, BLOCK_MAX, b"x", 1
    else:
        payload = _compressed_block()
        count, size, kind_code = 513, len(payload), 2
    width = (1 if single else 0) if fcs_code == 0 else (2, 4, 8)[fcs_code - 1]
    declared = max(declared, 256) if width == 2 else min(declared, (1 << (8 * width)) - 1) if width else 0
    head = frame_header(single=single, fcs_code=fcs_code, dict_code=dict_code, content_size=declared)
    return head + b"".join(block(kind_code, size, payload, last=i == count - 1) for i in range(count))


# -- sources -------------------------------------------------------------------------------------


def synthetic_source(seed: int, *, cwd_length: int = 0, big_record: int = 0) -> Source:
    """A header (optionally with a long cwd) and ignorable padding records."""
    rng = random.Random(seed)
    cwd = "/sim/" + "".join(rng.choice(string.ascii_letters) for _ in range(cwd_length)) if cwd_length else "/sim/workspace"
    header = {"type": "session", "version": 3, "id": "sim-session", "createdAt": 1, "cwd": cwd, "isSeeded": False, "delegationDepth": 0}
    records = []
    for seq in range(6):
        size = big_record if seq == 3 and big_record else 20 + seq * 7
        text = "".join(rng.choice(string.ascii_letters) for _ in range(size))
        records.append({"type": "dsh-sim/pad", "seq": seq, "time": 1000 + seq, "data": {"text": text}, "ignorable": True})
    return Source(
        f"synthetic-{seed}" + (f"-cwd{cwd_length}" if cwd_length else "") + (f"-big{big_record}" if big_record else ""),
        header,
        tuple(records),
    )


# -- encodings -----------------------------------------------------------------------------------


def batches(records: Sequence[dict[str, Any]], sizes: Sequence[int]) -> list[list[dict[str, Any]]]:
    out, i = [], 0
    for size in sizes:
        if i >= len(records):
            break
        out.append(list(records[i : i + size]))
        i += size
    if i < len(records):
        out.append(list(records[i:]))
    return out


def encode(source: Source, compression: str, sizes: Sequence[int] = (2, 3), frame: str = "spec") -> bytes:
    """The log as the spec's writer makes it (``frame="spec"``), or with body frames built
    another legal way: ``stream`` (no content size), ``nochecksum``, ``raw-single-<fcs>``,
    ``raw-multi-<fcs>`` (raw blocks, no checksum), ``raw-empty-last``."""
    head = line(source.header)
    groups = batches(source.records, sizes)
    if compression == "none":
        return head + b"".join(line(r) for g in groups for r in g)
    out = zstd_frame(head)
    for group in groups:
        plain = b"".join(line(r) for r in group)
        if frame == "spec":
            out += zstd_frame(plain)
        elif frame == "stream":
            out += zstd_frame(plain, content_size=False)
        elif frame == "nochecksum":
            out += zstd_frame(plain, checksum=False)
        elif frame == "raw-empty-last":
            out += raw_frame(plain, single=False, fcs_code=0, empty_last=True)
        else:
            _, kind, fcs = frame.split("-")
            out += raw_frame(plain, single=kind == "single", fcs_code=int(fcs), chunk=BLOCK_MAX if len(plain) > 64 else 16)
    return out


def next_batch(source: Source, compression: str) -> bytes:
    """One more batch (a padding record with the next seq), as its writer appends it."""
    record = {"type": "dsh-sim/pad", "seq": len(source.records), "time": 9, "data": {}, "ignorable": True}
    return zstd_frame(line(record)) if compression == "zstd" else line(record)


def last_unit(data: bytes, compression: str) -> tuple[int, int]:
    """(start, end) of the last frame (zstd) or line (raw) of a clean log."""
    if compression == "none":
        start = data.rfind(b"\n", 0, len(data) - 1) + 1
        return start, len(data)
    frames = layouts_safe(data)
    return frames[-1].start, frames[-1].end


# -- variants ------------------------------------------------------------------------------------


def tears(
    name: str, source: Source, data: bytes, compression: str, rng: random.Random, limit: int | None, *, structural: bool = True
) -> Iterator[Case]:
    """The log cut at every byte of its last frame or line (or a seeded sample of ``limit``,
    plus, ``structural``, the cuts next to every structural boundary)."""
    start, end = last_unit(data, compression)
    cuts = list(range(start, end))
    if limit is not None and len(cuts) > limit:
        marks = boundaries(data, compression, start, end) if structural else set()
        cuts = sorted(marks.union(rng.sample(cuts, limit)) & set(cuts))
    for cut in cuts:
        yield Case(f"{name}/torn@{cut}", compression, data[:cut], source.header, write_open=cut % 7 == 0)


def boundaries(data: bytes, compression: str, start: int, end: int) -> set[int]:
    """Cuts at and next to every structural boundary of the unit at ``start``: magic, frame
    header, each block header and payload, checksum (a sample always keeps these)."""
    marks = {start, end}
    if compression == "zstd":
        frame = layout_at(data, start)
        assert frame is not None
        marks |= {start + 4, frame.header_end, *(b for pair in frame.blocks for b in pair)}
        if frame.checksum_start is not None:
            marks.add(frame.checksum_start)
    return {m + d for m in marks for d in (-1, 0, 1, 2)}


def flips(name: str, source: Source, data: bytes, compression: str, rng: random.Random, count: int) -> Iterator[Case]:
    """One flipped bit inside a complete frame (zstd only: a flipped raw byte is a legal record
    as often as not)."""
    if compression != "zstd" or not data:
        return
    for _ in range(count):
        at, bit = rng.randrange(len(data)), rng.randrange(8)
        damaged = bytearray(data)
        damaged[at] ^= 1 << bit
        yield Case(f"{name}/flip@{at}.{bit}", compression, bytes(damaged), source.header)


def junk(name: str, source: Source, data: bytes, compression: str) -> Iterator[Case]:
    """Bytes after the last frame that are not a frame's start (fewer than 4: read as torn)."""
    if compression != "zstd":
        return
    for tail in (b"\x00", b"\x28\xb5", b"\x28\xb5\x2f", b"\x00\x00\x00\x00", b"\xab" * 5, b"\x28\xb5\x2f\xfd", b"\x28\xb5\x2f\xfe\x00\x00"):
        yield Case(f"{name}/junk-{tail.hex()}", compression, data + tail, source.header)
    yield Case(f"{name}/reserved-bits", compression, data + b"\x28\xb5\x2f\xfd\x18\x00", source.header)
    yield Case(
        f"{name}/reserved-block-torn", compression, data + raw_frame(b"x", single=True, fcs_code=0)[:6] + b"\x07\x00\x00", source.header
    )
    yield Case(
        f"{name}/reserved-block-complete",
        compression,
        data + raw_frame(b"x", single=True, fcs_code=0)[:6] + b"\x07\x00\x00\x00",
        source.header,
    )


def raw_damage(name: str, source: Source, data: bytes) -> Iterator[Case]:
    """§3.7 raw scanner cases: unparsable or seq-gapped lines with and without a later turn/end."""
    end_record = {"type": "turn/end", "seq": len(source.records) + 1, "time": 5, "data": {"turn": 0, "reason": {"kind": "completed"}}}
    pad = {"type": "dsh-sim/pad", "seq": len(source.records) + 5, "time": 5, "data": {}, "ignorable": True}
    yield Case(f"{name}/unparsable-then-pad", "none", data + b"{not json\n" + line(pad), source.header)
    yield Case(f"{name}/unparsable-then-turn-end", "none", data + b"{not json\n" + line(end_record), source.header)
    yield Case(f"{name}/gap-then-pad", "none", data + line(pad), source.header)
    yield Case(f"{name}/gap-turn-end", "none", data + line(dict(end_record, seq=len(source.records) + 3)), source.header)
    yield Case(f"{name}/no-newline", "none", data.split(b"\n", 1)[0], source.header)
    yield Case(f"{name}/empty", "none", b"", source.header)
    yield Case(f"{name}/header-only", "none", data.split(b"\n", 1)[0] + b"\n", source.header)
    yield Case(f"{name}/header-not-json", "none", b"{header\n" + data.split(b"\n", 1)[1], source.header)


# header records of the wrong shape or another version (§3.3, §3.4, §3.9): a number other than the
# current version is refused as unsupported (newer: upgrade; older: no path), anything else that is
# no session header as corruption
HEADER_SHAPES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("type-other", {"type": "sessions"}),
    ("version-string", {"version": "3"}),
    ("version-missing", {"version": None}),
    ("version-newer", {"version": 99}),
    ("version-older", {"version": 1}),
    ("version-negative", {"version": -1}),
    ("delegation-negative", {"delegationDepth": -1}),
    ("origin-other", {"origin": "parent"}),
)


def header_shapes(name: str, source: Source, compression: str) -> Iterator[Case]:
    """The source with its header record replaced (placed where its original header says)."""
    for tag, change in HEADER_SHAPES:
        header = {k: v for k, v in {**source.header, **change}.items() if v is not None}
        changed = Source(source.name, header, source.records)
        yield Case(f"{name}/header-{tag}", compression, encode(changed, compression), source.header)
    # a session whose id names another session than the directory it is read from (a copied or
    # planted log): every read refuses it (§3.7, "requested id ... does not match header id")
    other = Source(source.name, {**source.header, "id": "another-session"}, source.records)
    yield Case(f"{name}/header-id-of-another-session", compression, encode(other, compression), source.header)
    elsewhere = Source(source.name, {**source.header, "cwd": "/another/project"}, source.records)  # same id, another project
    yield Case(f"{name}/header-cwd-of-another-project", compression, encode(elsewhere, compression), source.header)
    # an id whose directory name is escaped (§3.6: characters outside [A-Za-z0-9._-], one outside
    # the BMP), placed where its own header says
    escaped = Source(source.name, {**source.header, "id": "sim session/é\U0001f600"}, source.records)
    yield Case(f"{name}/header-id-escaped", compression, encode(escaped, compression), escaped.header)


# stored sourceEventSeqs at the edges of the decoder's rules (§12: pairs [start, end] with start <=
# end, strict increase once a pair is present, only earlier events)
SOURCE_SEQS: tuple[tuple[str, Any], ...] = (
    ("pair-of-one", [[2, 2]]),
    ("repeat-after-pair", [[1, 2], 2, 3]),
    ("pair-then-smaller", [[3, 4], 1]),
    ("repeat-without-pair", [1, 1, 0]),
    ("names-itself", "self"),
    ("pair-to-itself", "pair-self"),
)


def source_seqs(name: str, source: Source, compression: str) -> Iterator[Case]:
    """The source with one more record whose ``sourceEventSeqs`` sit at an edge of the rules."""
    seq = len(source.records)
    for tag, seqs in SOURCE_SEQS:
        value = [seq] if seqs == "self" else [[seq - 1, seq]] if seqs == "pair-self" else seqs
        message = {"id": f"sources-{tag}", "role": "user", "content": [{"type": "text", "text": tag}], "source": {"kind": "user"}}
        record = {"type": "user/message", "seq": seq, "time": 2000, "data": message, "surfaceOp": "append", "sourceEventSeqs": value}
        end = {"type": "turn/end", "seq": seq + 1, "time": 2001, "data": {"turn": 0, "reason": {"kind": "completed"}}}  # commits it (§3.7)
        changed = Source(source.name, source.header, (*source.records, record, end))
        yield Case(f"{name}/sources-{tag}", compression, encode(changed, compression), source.header)


# values a JavaScript reader cannot hold exactly (an integer past 2**53, a negative zero), at every
# nesting a payload has: an object's member, an object in an object, an object in an array, an array
# in an array (a reader that checks only some levels lets one through)
UNSAFE_VALUES: tuple[tuple[str, Any], ...] = (("big-integer", 2**60), ("negative-zero", -0.0))
NESTINGS: tuple[tuple[str, Any], ...] = (
    ("member", lambda v: {"v": v}),
    ("object-in-object", lambda v: {"o": {"p": {"v": v}}}),
    ("object-in-array", lambda v: {"a": [1, {"v": v}]}),
    ("array-in-array", lambda v: {"a": [[0, v]]}),
)


def unsafe_values(name: str, source: Source, compression: str) -> Iterator[Case]:
    """The source with one more committed record holding a value no lossless reader may take."""
    seq = len(source.records)
    for value_tag, value in UNSAFE_VALUES:
        for nesting, wrap in NESTINGS:
            record = {"type": "dsh-sim/pad", "seq": seq, "time": 2000, "data": wrap(value), "ignorable": True}
            end = {"type": "turn/end", "seq": seq + 1, "time": 2001, "data": {"turn": 0, "reason": {"kind": "completed"}}}
            changed = Source(source.name, source.header, (*source.records, record, end))
            yield Case(f"{name}/unsafe-{value_tag}-{nesting}", compression, encode(changed, compression), source.header)


# JSON text the format refuses wherever it stands, spelled as a writer other than Python's might
# spell it: the integer -0 (JavaScript's negative zero), non-finite numbers and numbers that
# overflow to them, an integer past 2**53 by its digits, the raw bytes of a lone surrogate (not
# UTF-8: a JavaScript reader would read U+FFFD in their place); the envelope's seq and time also
# negative.  Left out: a raw-mode line whose seq is not a safe integer (both refuse; ours as an
# invalid event, the spec's as a seq gap closed by a later turn/end).
UNSAFE_TEXTS: tuple[tuple[str, bytes], ...] = (
    ("int-negative-zero", b"-0"),
    ("nan", b"NaN"),
    ("infinity", b"Infinity"),
    ("minus-infinity", b"-Infinity"),
    ("overflow", b"1e400"),
    ("long-digits", b"12345678901234567890"),
    ("raw-lone-surrogate", b'"\xed\xa0\x80"'),
)
ENVELOPE_TEXTS: tuple[tuple[str, bytes], ...] = (
    ("int-negative-zero", b"-0"),
    ("negative", b"-1"),
    ("overflow", b"1e400"),
    ("long-digits", b"12345678901234567890"),
)
_SLOT = "@unsafe@"


def unsafe_texts(name: str, source: Source, compression: str) -> Iterator[Case]:
    """The source with one more committed batch whose record holds refused JSON text in its
    payload, or (zstd) as its seq or time: a reader must refuse the log, never read a value back
    changed."""
    seq = len(source.records)
    base = encode(source, compression)
    end = line({"type": "turn/end", "seq": seq + 1, "time": 2001, "data": {"turn": 0, "reason": {"kind": "completed"}}})
    pad = {"type": "dsh-sim/pad", "seq": seq, "time": 2000, "data": {}, "ignorable": True}
    places = [(f"{tag}-data", text, {**pad, "data": {"v": [_SLOT]}}) for tag, text in UNSAFE_TEXTS]
    if compression == "zstd":
        places += [(f"{tag}-{key}", text, {**pad, key: _SLOT}) for tag, text in ENVELOPE_TEXTS for key in ("seq", "time")]
    for where, text, record in places:
        plain = line(record).replace(f'"{_SLOT}"'.encode(), text) + end
        data = base + (zstd_frame(plain) if compression == "zstd" else plain)
        yield Case(f"{name}/unsafe-text-{where}", compression, data, source.header)


def lone_surrogates(name: str, source: Source, compression: str) -> Iterator[Case]:
    """The source with one more committed batch whose record holds lone surrogates, escaped as
    ``JSON.stringify`` writes them (the spec refuses none: every reader hands them back as written),
    in a value, in a key, and a low one before a high one (no pair)."""
    seq = len(source.records)
    data = {"v": ["a\ud800b", "\udbff"], "\udc00": "\udfff\ud800"}
    record = {"type": "dsh-sim/pad", "seq": seq, "time": 2000, "data": data, "ignorable": True}
    end = {"type": "turn/end", "seq": seq + 1, "time": 2001, "data": {"turn": 0, "reason": {"kind": "completed"}}}
    plain = json.dumps(record, separators=(",", ":")).encode() + b"\n" + line(end)
    base = encode(source, compression)
    yield Case(f"{name}/lone-surrogates", compression, base + (zstd_frame(plain) if compression == "zstd" else plain), source.header)


def bombs(source: Source, rng: random.Random, limit: int | None) -> Iterator[Case]:
    """Decompression bombs in every frame-header layout: as a body frame, as the header frame,
    and as a torn final frame whose first block holds whole records."""
    head = zstd_frame(line(source.header))
    body = zstd_frame(b"".join(line(r) for r in source.records[:2]))
    layouts = [(s, f, d, k) for s in (False, True) for f in range(4) for d in range(4) for k in ("rle", "compressed")]
    if limit is not None:
        layouts = rng.sample(layouts, min(limit, len(layouts)))
    for single, fcs, dict_code, kind in layouts:
        bomb = bomb_frame(single=single, fcs_code=fcs, dict_code=dict_code, kind=kind)
        tag = f"bomb-{'single' if single else 'window'}-fcs{fcs}-dict{dict_code}-{kind}"
        yield Case(f"{source.name}/{tag}", "zstd", head + body + bomb, source.header)
        if fcs == dict_code:  # fewer of the costlier placements
            yield Case(f"{source.name}/{tag}-as-header", "zstd", bomb, source.header)
            records = b"".join(line(r) for r in source.records[2:4])
            torn = (
                frame_header(single=False, fcs_code=0) + block(0, len(records), records, last=False) + bomb[4 + _header_length(bomb[4]) :]
            )
            yield Case(f"{source.name}/{tag}-torn", "zstd", head + body + torn[:-1], source.header, write_open=True)
    at_limit = bomb_frame(single=False, fcs_code=0, dict_code=0, kind="rle-at-limit")
    yield Case(f"{source.name}/frame-bound-at-the-limit", "zstd", head + body + at_limit, source.header)
    declared = zstd_frame(b"".join(line(r) for r in source.records[2:4]))
    lying = bytearray(declared)
    lying[4] = (lying[4] & 0x3F) | 0xC0  # claims an 8-byte content size where it had fewer
    yield Case(f"{source.name}/fcs-width-lie", "zstd", head + body + bytes(lying), source.header)
    huge = frame_header(single=True, fcs_code=3, content_size=2 << 40) + block(0, 3, b"x\n\n", last=True)
    yield Case(f"{source.name}/claims-2TiB", "zstd", head + body + huge, source.header)
