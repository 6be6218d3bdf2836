"""The independent reader's count of whole, contiguous records (whole_records.readable_records) is
the plain walk's: count the record lines after the header while their seqs run 0, 1, 2, ..."""

from __future__ import annotations

import json

import pytest
import zstandard

from dsh_sim.evidence.oracles import whole_records
from runtime.persistence.header import SessionHeader
from runtime.persistence.log_format import encode_batch, encode_generation
from runtime.session.events import Event


def _walk(text: bytes) -> int | None:
    lines = text.split(b"\n")[:-1]
    if not lines:
        return None
    count = 0
    for line in lines[1:]:
        try:
            record = json.loads(line)
        except ValueError:
            break
        if not isinstance(record, dict) or record.get("seq") != count:
            break
        count += 1
    return count


def _raw_cases() -> list[bytes]:
    events = [Event("todo/write", i, 10 + i, {"n": i}) for i in range(5)]
    whole = encode_generation(SessionHeader("s", 1), events, "none")
    gapped = whole.replace(b'"seq":3', b'"seq":4', 1)
    junk = whole + b"not json\n" + whole.split(b"\n")[1] + b"\n"
    return [data[:n] for data in (whole, gapped, junk) for n in range(len(data) + 1)]


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_the_count_is_the_plain_walks(compression):
    whole_records.clear_caches()
    for raw in _raw_cases():
        data = raw if compression == "none" else zstandard.ZstdCompressor().compress(raw)
        assert whole_records.readable_records(data, compression) == _walk(raw), raw
    events = [Event("todo/write", i, 10 + i, {"n": i}) for i in range(6)]
    log = encode_generation(SessionHeader("s", 1), events[:2], "zstd") + encode_batch(events[2:], "zstd")
    assert whole_records.readable_records(log, "zstd") == 6  # (frames read across)
    whole_records.clear_caches()


def _streamed(data: bytes) -> bytes | None:
    """The plaintext zstd's streaming reader returns across every frame (``None``: it raised)."""
    import io

    try:
        return zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True).read()
    except zstandard.ZstdError:
        return None


def _growing_logs(compression: str) -> list[bytes]:
    """Images of one log growing batch by batch, cut at every byte, then variants that share
    its leading frames (lines): a gapped seq in a later batch, a flipped byte in one."""
    header = SessionHeader("s", 1)
    events = [Event("todo/write", i, 10 + i, {"n": i}) for i in range(9)]
    log = encode_generation(header, events[:2], compression)
    for at in range(2, 9, 2):
        log += encode_batch(events[at : at + 2], compression)
    gapped = encode_generation(header, events[:2], compression) + encode_batch(
        [events[2], Event("todo/write", 5, 13, {"n": 3})], compression
    )
    flipped = bytearray(log)
    flipped[len(log) - 9] ^= 0x20
    variants = [log, gapped, bytes(flipped), log]
    if compression == "zstd":  # frames that end inside a line (no writer's, but a reader's to count)
        text = encode_generation(header, events, "none")
        variants += [b"".join(zstandard.ZstdCompressor().compress(text[a:b]) for a, b in ((0, 50), (50, 111), (111, len(text))))]
    return [data[:n] for data in variants for n in range(len(data) + 1)]


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_a_growing_log_read_from_its_remembered_prefixes_counts_as_read_whole(compression):
    """The count is remembered by leading frames (lines) and the rest read from there: every
    image of a growing log, and of logs that part from it, counts what a whole read counts."""
    whole_records.clear_caches()
    for data in _growing_logs(compression):
        plain = data if compression == "none" else _streamed(data)
        expected = None if plain is None else _walk(plain)
        assert whole_records.readable_records(data, compression) == expected, (len(data), data[-12:])
    whole_records.clear_caches()
