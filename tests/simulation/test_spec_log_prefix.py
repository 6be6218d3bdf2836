"""The spec reader walks a log from the longest complete prefix it already read (explore reads
thousands of logs that grow by one batch or were cut after frames an earlier one had), and a
reader's read of bytes already read as a writer's is that read: every read must be exactly
what a reader that remembers nothing returns."""

from __future__ import annotations

import random

import pytest

from dsh_sim.evidence.oracles import log_prefixes, spec_log
from dsh_sim.evidence.oracles.spec_log import check_written, read_recoverable
from dsh_sim.evidence.oracles.spec_records import SpecViolation
from runtime.persistence.header import SessionHeader
from runtime.persistence.log_format import encode_batch, encode_generation
from runtime.session.events import Event


def _log(batches: int, compression: str = "zstd") -> bytes:
    events = [Event("todo/write", i, 10 + i, {"n": i, "pad": "x" * (i % 7)}) for i in range(3 * batches)]
    data = encode_generation(SessionHeader("s", 1), events[:3], compression)
    for b in range(1, batches):
        data += encode_batch(events[3 * b : 3 * b + 3], compression)
    return data


def _outcome(read, data: bytes, compression: str = "zstd") -> object:
    try:
        return read(data, compression)
    except SpecViolation as err:
        return ("refused", str(err), err.offset)


def _fresh(read, data: bytes, compression: str = "zstd") -> object:
    spec_log.clear_memos()
    return _outcome(read, data, compression)


def _cases(compression: str = "zstd") -> list[bytes]:
    whole = _log(6, compression)
    cuts = [whole[:n] for n in range(1, len(whole) + 1)]
    flipped = bytearray(whole)
    flipped[len(whole) // 2] ^= 0x55  # damage inside a middle frame (raw: line), after a prefix already read
    edits = [bytes(flipped), bytes(flipped)[: len(whole) - 2], whole + whole[-40:]]
    if compression == "none":  # a line with a seq gap after a clean prefix, then one more
        lines = whole.split(b"\n")
        gapped = b"\n".join([*lines[:5], lines[6], lines[5], *lines[7:]])
        edits += [gapped, gapped + lines[8] + b"\n", whole.replace(b'"seq":16', b'"seq":17')]
    return cuts + edits


@pytest.mark.slow
@pytest.mark.parametrize("compression", ["zstd", "none"])
@pytest.mark.parametrize("shuffle", [False, True])
def test_a_read_from_a_remembered_prefix_is_a_fresh_read(shuffle, compression):
    cases = [(read, data) for data in _cases(compression) for read in (check_written, read_recoverable)]
    expected = [_fresh(read, data, compression) for read, data in cases]
    order = list(range(len(cases)))
    if shuffle:
        random.Random(3).shuffle(order)
    spec_log.clear_memos()
    for index in order:
        read, data = cases[index]
        assert _outcome(read, data, compression) == expected[index], f"case {index}"


def test_a_writer_read_is_stricter_than_a_reader_read():
    """The reuse above is only sound because a reader accepts whatever a writer's rules accept:
    here a reader accepts what the writer's rules refuse, and each read still says so."""
    import zstandard

    whole = _log(2)
    no_checksum = zstandard.ZstdCompressor(write_checksum=False).compress(b'{"type":"todo/write","seq":6,"time":1,"data":1}\n')
    data = whole + no_checksum
    spec_log.clear_memos()
    with pytest.raises(SpecViolation, match="content checksum"):
        check_written(data, "zstd")
    assert len(read_recoverable(data, "zstd").records) == 7
    with pytest.raises(SpecViolation, match="content checksum"):
        check_written(data, "zstd")


@pytest.mark.parametrize("compression", ["zstd", "none"])
def test_a_prefix_the_log_does_not_start_with_is_never_used(monkeypatch, compression):
    """The comparison above catches a memo that reuses frames (raw: lines) the bytes do not have."""
    cases = _cases(compression)
    expected = [_fresh(read_recoverable, data, compression) for data in cases]
    spec_log.clear_memos()
    kinds = log_prefixes._RAW if compression == "none" else log_prefixes._KNOWN

    def unchecked(data, writer, raw=False):  # the longest remembered, whatever ``data`` starts with
        return max(kinds[writer], key=lambda k: len(k.data), default=None)

    monkeypatch.setattr(log_prefixes, "longest", unchecked)
    outcomes = [_outcome(read_recoverable, data, compression) for data in cases]
    assert outcomes != expected


def test_a_log_that_diverges_inside_a_remembered_one_reuses_only_the_frames_they_share():
    """A crash image of another point: the same frames up to somewhere, then others."""
    one, other = _log(6), _log(4) + encode_batch([Event("todo/write", 12, 1, {"other": True})], "zstd")
    spec_log.clear_memos()
    first = read_recoverable(one, "zstd")
    known = log_prefixes._KNOWN[False][-1]
    shared = log_prefixes._shared_frames(other, known)
    assert shared == 5 and not other.startswith(known.data)  # the header frame and 4 batches
    assert log_prefixes.longest(other, False) == known.cut(5)
    assert read_recoverable(other, "zstd") == _fresh(read_recoverable, other)
    assert first == _fresh(read_recoverable, one)
