"""The Zstandard frame scanner and codec (spec §3.4, reference ``zstd.spec.ts`` scanner cases)."""

from __future__ import annotations

import os
import random

import pytest
import zstandard

from runtime.persistence.log_format import (
    LogCorruption,
    decode_log,
    encode_batch,
    encode_header,
)
from runtime.persistence.zstd_frames import (
    MAGIC_BYTES,
    FrameFormatError,
    compress_frame,
    decode_frame,
    decode_torn_frame,
    first_frame,
    frame_layouts,
    scan_frames,
)
from tests.support.persistence import meta, one_turn_log, second_turn


def block(kind: int, payload: bytes, last: bool, size: int | None = None) -> bytes:
    n = len(payload) if size is None else size
    return ((n << 3) | (kind << 1) | int(last)).to_bytes(3, "little") + payload


def crafted(descriptor: int, rest: bytes, blocks: bytes, checksum: bytes = b"") -> bytes:
    return MAGIC_BYTES + bytes([descriptor]) + rest + blocks + checksum


def three_frames() -> bytes:
    return compress_frame(b"a\n") + compress_frame(b"b\n" * 100) + compress_frame(os.urandom(500))


def test_scanner_finds_concatenated_checksummed_frames() -> None:
    frames = [compress_frame(f"frame {i}\n".encode() * (i + 1)) for i in range(5)]
    data = b"".join(frames)
    scan = scan_frames(data)
    offsets = [0]
    for frame in frames:
        offsets.append(offsets[-1] + len(frame))
    assert scan.frames == tuple(zip(offsets, offsets[1:]))
    assert scan.torn_start is None
    for layout in frame_layouts(data):
        assert layout.checksum_start == layout.end - 4  # content checksum present
        assert data[layout.start + 4] & 0x04
    assert scan_frames(b"").frames == () and scan_frames(b"").torn_start is None


def _region(layout, cut: int) -> str:  # type: ignore[no-untyped-def]
    rel = cut - layout.start
    if rel < 4:
        return "magic"
    if cut < layout.header_end:
        return "header"
    for start, end in layout.blocks:
        if start <= cut < start + 3:
            return "block header"
        if start + 3 <= cut < end:
            return "payload"
    return "checksum"


@pytest.mark.parametrize("payload", [b"x" * 40 + b"\n", os.urandom(3000), b"z" * 300_000], ids=["small", "raw", "rle-multiblock"])
def test_torn_final_frame_at_every_cut_is_torn_at_its_start(payload: bytes) -> None:
    prefix = three_frames()
    final = compress_frame(payload)
    layout = frame_layouts(final)[0]
    regions: set[str] = set()
    for cut in range(len(final)):
        data = prefix + final[:cut]
        scan = scan_frames(data)
        assert len(scan.frames) == 3
        if cut == 0:
            assert scan.torn_start is None
            continue
        assert scan.torn_start == len(prefix), cut
        regions.add(_region(layout, cut))
    assert {"magic", "header", "block header", "payload", "checksum"} <= regions
    assert scan_frames(prefix + final).torn_start is None


def test_multi_block_frame_over_128_kib() -> None:
    payload = random.Random(7).randbytes(200_000)  # incompressible: raw blocks of 128 KiB
    frame = compress_frame(payload)
    layout = frame_layouts(frame)[0]
    assert len(layout.blocks) >= 2
    kinds = [(int.from_bytes(frame[s : s + 3], "little") >> 1) & 3 for s, _ in layout.blocks]
    assert 0 in kinds  # raw blocks
    assert decode_frame(frame, 0) == payload
    # a cut after the first complete block still yields its plaintext in flush mode
    assert decode_torn_frame(frame[: layout.blocks[0][1]]) == payload[:131072]


def test_rle_block() -> None:
    frame = compress_frame(b"a" * 200_000)
    layout = frame_layouts(frame)[0]
    kinds = [(int.from_bytes(frame[s : s + 3], "little") >> 1) & 3 for s, _ in layout.blocks]
    assert 1 in kinds  # an RLE block: one payload byte
    rle = layout.blocks[kinds.index(1)]
    assert rle[1] - rle[0] == 4
    assert decode_frame(frame, 0) == b"a" * 200_000


@pytest.mark.parametrize(
    "descriptor,rest",
    [
        (0x00, b"\x50"),  # window byte only, no FCS
        (0x20, b"\x07"),  # single segment, FCS 1 byte
        (0x60, b"\x07\x00"),  # single segment, FCS 2 bytes
        (0xA0, b"\x07\x00\x00\x00"),  # single segment, FCS 4 bytes
        (0xE0, b"\x07" + b"\x00" * 7),  # single segment, FCS 8 bytes
        (0x01, b"\x50\x09"),  # window + 1-byte dict id
        (0x02, b"\x50\x09\x00"),  # window + 2-byte dict id
        (0x03, b"\x50\x09\x00\x00\x00"),  # window + 4-byte dict id
        (0x43, b"\x50\x09\x00\x00\x00\x07\x00"),  # dict 4 + FCS 2
    ],
)
def test_header_variants_scan(descriptor: int, rest: bytes) -> None:
    body = block(0, b"payload", True)
    frame = crafted(descriptor, rest, body)
    assert scan_frames(frame).frames == ((0, len(frame)),)
    for cut in range(1, len(frame)):
        assert scan_frames(frame[:cut]).torn_start == 0
    with_checksum = crafted(descriptor | 0x04, rest, body, b"\x01\x02\x03\x04")
    assert scan_frames(with_checksum).frames == ((0, len(with_checksum)),)
    assert scan_frames(with_checksum[:-1]).torn_start == 0


def test_real_encoder_variants_decode() -> None:
    for kwargs in ({"write_checksum": False}, {"write_content_size": False}, {"level": 19, "write_checksum": True}):
        frame = zstandard.ZstdCompressor(**kwargs).compress(b"hello\n" * 1000)
        assert scan_frames(frame).frames == ((0, len(frame)),)
        assert decode_frame(frame, 0) == b"hello\n" * 1000


def test_invalid_magic_is_refused() -> None:
    good = compress_frame(b"a\n")
    with pytest.raises(FrameFormatError, match="invalid frame magic at byte 0"):
        scan_frames(b"\x00" + good)
    with pytest.raises(FrameFormatError, match=f"invalid frame magic at byte {len(good)}"):
        scan_frames(good + b"JUNK")
    skippable = (0x184D2A50).to_bytes(4, "little") + (0).to_bytes(4, "little")
    with pytest.raises(FrameFormatError, match="invalid frame magic"):
        scan_frames(good + skippable)


@pytest.mark.parametrize("bit", [0x08, 0x10])
def test_reserved_descriptor_bits_are_refused(bit: int) -> None:
    frame = crafted(0x00 | bit, b"\x50", block(0, b"x", True))
    with pytest.raises(FrameFormatError, match="reserved frame-header bit at byte 4"):
        scan_frames(frame)


def test_reserved_block_type_is_refused() -> None:
    frame = crafted(0x00, b"\x50", block(3, b"", True, size=0))
    with pytest.raises(FrameFormatError, match="reserved block type at byte 6"):
        scan_frames(frame)


def _zstd_log() -> tuple[bytes, list[int]]:
    parts = [encode_header(meta("s1"), "zstd"), encode_batch(one_turn_log(), "zstd"), encode_batch(second_turn(), "zstd")]
    starts = [0, len(parts[0]), len(parts[0]) + len(parts[1])]
    return b"".join(parts), starts


@pytest.mark.parametrize("frame_index", [1, 2])
@pytest.mark.parametrize("where", ["checksum", "payload"])
def test_flipped_byte_in_a_complete_frame_fails_validation(frame_index: int, where: str) -> None:
    data, starts = _zstd_log()
    layout = frame_layouts(data)[frame_index]
    offset = layout.end - 1 if where == "checksum" else layout.blocks[0][0] + 3 + 2
    corrupt = bytearray(data)
    corrupt[offset] ^= 0x01
    with pytest.raises(FrameFormatError, match=f"frame at byte {starts[frame_index]} failed validation"):
        decode_frame(bytes(corrupt[layout.start : layout.end]), layout.start)
    with pytest.raises(LogCorruption, match=rf"corrupt Zstandard session log: frame at byte {starts[frame_index]} failed validation"):
        decode_log(bytes(corrupt), "zstd")
    assert len(decode_log(data, "zstd").events) == 8


def test_flipped_header_frame_fails_validation_at_byte_zero() -> None:
    data, _ = _zstd_log()
    corrupt = bytearray(data)
    corrupt[frame_layouts(data)[0].end - 1] ^= 0xFF
    with pytest.raises(LogCorruption, match="frame at byte 0 failed validation"):
        decode_log(bytes(corrupt), "zstd")


def test_first_frame_reads_only_the_header_frame() -> None:
    data, starts = _zstd_log()
    assert first_frame(data).end == starts[1]  # type: ignore[union-attr]
    assert first_frame(data[: starts[1] - 1]) is None
    assert first_frame(b"") is None
    assert first_frame(MAGIC_BYTES[:2]) is None


def test_decode_frame_refuses_trailing_bytes_and_truncation() -> None:
    frame = compress_frame(b"abc\n")
    with pytest.raises(FrameFormatError):
        decode_frame(frame + frame, 0)
    with pytest.raises(FrameFormatError):
        decode_frame(frame[:-1], 0)


def test_decode_torn_frame_is_best_effort() -> None:
    frame = compress_frame(b"line one\nline two\n")
    assert decode_torn_frame(frame[:-1]) == b"line one\nline two\n"  # torn only in the checksum
    assert decode_torn_frame(frame[:2]) == b""
    assert decode_torn_frame(b"garbage!") == b""


# -- decompression limits: a bomb is refused before anything is decompressed ----------------


def rle_bomb(blocks: int) -> bytes:
    """A frame of RLE blocks: 4 bytes each on disk, 128 KiB each decompressed."""
    from runtime.persistence.zstd_frames import BLOCK_MAX_OUTPUT

    rle = ((BLOCK_MAX_OUTPUT << 3) | (1 << 1)).to_bytes(3, "little") + b"a"
    last = ((BLOCK_MAX_OUTPUT << 3) | (1 << 1) | 1).to_bytes(3, "little") + b"a"
    return crafted(0x00, bytes([0x70]), rle * (blocks - 1) + last)


def test_a_frame_that_could_expand_past_the_limit_is_refused_before_decoding() -> None:
    import resource

    from runtime.persistence.zstd_frames import DecompressionLimitExceeded, output_bound

    bomb = rle_bomb(16_384)  # 64 KiB on disk, 2 GiB decompressed
    assert output_bound(bomb) == 16_384 * 128 * 1024
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(DecompressionLimitExceeded, match="over the 67108864-byte limit per frame"):
        decode_frame(bomb, 0)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 64 * 1024  # KiB: nothing was inflated
    assert decode_torn_frame(bomb[:-100]) == b""  # a torn bomb recovers nothing


def test_a_log_whose_frames_together_pass_the_limit_is_refused() -> None:
    from runtime.persistence.zstd_frames import DecompressionLimitExceeded, LogDecompressor

    frames = [compress_frame(os.urandom(3000)) for _ in range(4)]
    bounded = LogDecompressor(frame_limit=1 << 20, log_limit=8000)
    decode_frame(frames[0], 0, bounded)
    decode_frame(frames[1], 1, bounded)
    with pytest.raises(DecompressionLimitExceeded, match="past its decompressed-size limit"):
        decode_frame(frames[2], 2, bounded)


def test_a_zstd_bomb_log_is_refused_as_corruption() -> None:
    data = encode_header(meta("bomb"), "zstd") + rle_bomb(1024)
    with pytest.raises(LogCorruption, match="limit per frame"):
        decode_log(data, "zstd")


def test_json_nested_past_the_parser_bound_is_an_unparsable_record() -> None:
    from runtime.persistence.log_format import Unparsable, parse_record

    with pytest.raises(Unparsable):
        parse_record(b"[" * 100_000 + b"]" * 100_000)
