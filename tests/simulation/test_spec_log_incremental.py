"""The spec reader reads a growing log on from its last clean reading, with the same result.

Every acknowledgement has ``check_written`` read the whole log; a writer's log only grows, so
the reader walks on from the previous reading when the new bytes extend it.  These tests hold
that shortcut to the reading from scratch, including the refusals found in the new bytes.
"""

from __future__ import annotations

import pytest
import zstandard

from dsh_sim.evidence.oracles import spec_log
from dsh_sim.evidence.oracles.spec_log import check_written, read_recoverable
from dsh_sim.evidence.oracles.spec_records import SpecViolation
from runtime.persistence.header import SessionHeader
from runtime.persistence.log_format import encode_batch, encode_generation
from runtime.session.events import Event


def _events(n: int) -> list[Event]:
    return [Event(type="todo/write", seq=i, time=i, data={"n": i}) for i in range(n)]


def _growing(compression: str, sizes: list[int]) -> list[bytes]:
    """The log after each batch (the header alone first)."""
    events = _events(sum(sizes))
    data = encode_generation(SessionHeader("s", 1), [], compression)
    out, used = [data], 0
    for size in sizes:
        data += encode_batch(events[used : used + size], compression)
        used += size
        out.append(data)
    return out


def _fresh(read, data: bytes, compression: str):
    spec_log.clear_memos()
    try:
        return read(data, compression)
    finally:
        spec_log.clear_memos()


@pytest.mark.parametrize("compression", ["zstd", "none"])
@pytest.mark.parametrize("read", [check_written, read_recoverable])
def test_a_growing_log_reads_the_same_on_from_its_prefix_as_from_scratch(compression, read):
    spec_log.clear_memos()
    for data in _growing(compression, [1, 3, 2, 1]):
        assert read(data, compression) == _fresh(read, data, compression)
    spec_log.clear_memos()


@pytest.mark.parametrize("compression", ["zstd", "none"])
def test_a_torn_tail_after_a_clean_prefix_reads_as_from_scratch(compression):
    logs = _growing(compression, [2, 2])
    spec_log.clear_memos()
    read_recoverable(logs[1], compression)
    cut = logs[2][:-3]
    assert read_recoverable(cut, compression) == _fresh(read_recoverable, cut, compression)
    spec_log.clear_memos()


def test_damage_written_after_a_clean_prefix_is_refused():
    """The shortcut must still judge every new byte: a batch frame without its checksum, or a
    raw line with a seq gap, appended after a prefix already read, is refused as from scratch."""
    logs = _growing("zstd", [2])
    spec_log.clear_memos()
    check_written(logs[1], "zstd")
    bad = logs[1] + zstandard.ZstdCompressor(write_checksum=False).compress(b'{"type":"todo/write","seq":2,"time":1,"data":1}\n')
    with pytest.raises(SpecViolation, match="content checksum") as err:
        check_written(bad, "zstd")
    with pytest.raises(SpecViolation, match="content checksum") as fresh:
        _fresh(check_written, bad, "zstd")
    assert err.value.offset == fresh.value.offset == len(logs[1])

    raw = _growing("none", [2])
    check_written(raw[1], "none")
    with pytest.raises(SpecViolation, match="seq 3 where 2"):
        check_written(raw[1] + b'{"type":"todo/write","seq":3,"time":1,"data":1}\n', "none")
    spec_log.clear_memos()
