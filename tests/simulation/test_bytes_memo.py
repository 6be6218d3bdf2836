"""The whole-log memo finds entries by length and last bytes, but answers only for equal bytes."""

from __future__ import annotations

import pytest

from dsh_sim.evidence.oracles import spec_log
from dsh_sim.evidence.oracles.bytes_memo import TAIL, BytesMemo
from dsh_sim.evidence.oracles.spec_log import check_written, read_recoverable
from dsh_sim.evidence.oracles.spec_records import SpecViolation
from runtime.persistence.header import SessionHeader
from runtime.persistence.log_format import encode_batch, encode_generation
from runtime.session.events import Event


def test_an_answer_is_given_only_for_equal_bytes_and_the_same_extra():
    memo = BytesMemo(4)
    data = bytes(range(40)) * 3
    memo.put(data, "x", 1)
    assert memo.get(bytes(bytearray(data)), "x") == 1  # equal bytes, another object
    assert memo.get(data, "y") is None  # another extra
    changed = bytearray(data)
    changed[0] ^= 1  # same length, same last bytes: found, and refused byte for byte
    assert bytes(changed)[-TAIL:] == data[-TAIL:]
    assert memo.get(bytes(changed), "x") is None
    memo.put(bytes(changed), "x", 2)  # (it takes the slot of the same length and tail)
    assert memo.get(bytes(changed), "x") == 2 and memo.get(data, "x") is None
    assert memo.get(data[:-1], "x") is None and memo.get(data + b"\0", "x") is None


def test_the_oldest_entry_goes_first():
    memo = BytesMemo(2)
    memo.put(b"a", 0, 1)
    memo.put(b"bb", 0, 2)
    assert memo.get(b"a", 0) == 1  # (used: now the newest)
    memo.put(b"ccc", 0, 3)
    assert memo.get(b"bb", 0) is None and memo.get(b"a", 0) == 1 and memo.get(b"ccc", 0) == 3
    memo.clear()
    assert memo.get(b"a", 0) is None


def _outcome(read, data: bytes, compression: str) -> object:
    try:
        return read(data, compression)
    except SpecViolation as err:
        return ("refused", str(err), err.offset)


@pytest.mark.parametrize("compression", ["zstd", "none"])
def test_a_log_that_differs_from_a_remembered_one_only_before_its_tail_is_read_anew(compression):
    """Every byte of a log of the same length and ending matters (spec_log's whole-log memo)."""
    events = [Event("todo/write", i, 10 + i, {"n": i, "pad": "x" * 30}) for i in range(6)]
    data = encode_generation(SessionHeader("s", 1), events[:3], compression) + encode_batch(events[3:], compression)
    damaged = bytearray(data)
    damaged[len(data) // 3] ^= 0x20
    variants = [bytes(damaged), data]
    for read in (check_written, read_recoverable):
        fresh = []
        for variant in variants:
            spec_log.clear_memos()
            fresh.append(_outcome(read, variant, compression))
        assert fresh[0] != fresh[1]
        spec_log.clear_memos()
        assert [_outcome(read, v, compression) for v in variants] == fresh
        assert [_outcome(read, v, compression) for v in reversed(variants)] == fresh[::-1]
    spec_log.clear_memos()
