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
