"""The decode memos return exactly what a fresh decode would, and nothing mutates what they share."""

from __future__ import annotations

import json
import os

import pytest

from dsh_sim.drivers.explore import explore
from dsh_sim.drivers.replay import run_scenario
from dsh_sim.scenario.files import load
from runtime.persistence import log_format, log_records
from runtime.persistence.decode_memo import Memo
from runtime.persistence.header import SessionHeader
from runtime.persistence.log_format import (
    FRAMES,
    HEADERS,
    LOGS,
    LogCorruption,
    decode_log,
    encode_batch,
    encode_header,
)
from runtime.persistence.zstd_frames import decode_frame
from runtime.session.events import Event
from runtime.session.lossless import check_parsed, lossless_copy
from tests.support.paths import ROOT

STARTER = os.path.join(ROOT, "scenarios", "starter")


def _records(events: tuple[Event, ...]) -> list[dict[str, object]]:
    return [e.to_record() for e in events]


def _fresh_frame(frame: bytes, first_seq: int) -> tuple[Event, ...]:
    return tuple(log_records.records_of_frame(decode_frame(frame, 0), 0, first_seq))


def _clear() -> None:
    for memo in (LOGS, FRAMES, HEADERS):
        memo.clear()


@pytest.mark.slow
def test_shared_decodes_stay_equal_to_fresh_ones_after_crashes_recoveries_and_checks():
    """Everything the runtime, the judges and explore did with shared events left them intact."""
    _clear()
    run_scenario(load(os.path.join(STARTER, "boundary-3-4-pay.json")))
    explore(load(os.path.join(STARTER, "torn-zstd-block.json")), cache={})
    assert len(FRAMES) and FRAMES.hits  # the memo was used, so sharing was exercised
    for frame, events in FRAMES.items():
        assert _records(events) == _records(_fresh_frame(frame, events[0].seq))
    for (compression, data), decoded in LOGS.items():
        _clear()
        fresh = decode_log(data, compression)
        assert fresh is not decoded
        assert _records(fresh.events) == _records(decoded.events) and fresh.torn == decoded.torn and fresh.header == decoded.header


def _log(batches: list[list[Event]]) -> bytes:
    return encode_header(SessionHeader("s", 1), "zstd") + b"".join(encode_batch(b, "zstd") for b in batches)


def _event(seq: int) -> Event:
    return Event("todo/write", seq, 1, {"turn": 1, "items": [{"text": f"item {seq}", "done": False}]})


def test_a_remembered_frame_at_the_wrong_seq_is_refused_as_a_fresh_decode_would():
    _clear()
    good = _log([[_event(0), _event(1)], [_event(2)]])
    assert len(decode_log(good, "zstd").events) == 3
    frame = encode_batch([_event(2)], "zstd")
    doubled = good + frame  # the last frame again: a seq gap, whatever the memo holds
    with pytest.raises(LogCorruption, match="seq gap"):
        decode_log(doubled, "zstd")
    _clear()
    with pytest.raises(LogCorruption, match="seq gap"):
        decode_log(doubled, "zstd")


def test_memos_are_bounded_least_recently_used_first():
    memo: Memo[int, str] = Memo(2)
    memo.put(1, "a")
    memo.put(2, "b")
    assert memo.get(1) == "a"
    memo.put(3, "c")
    assert memo.get(2) is None and memo.get(1) == "a" and memo.get(3) == "c"
    assert len(memo) == 2


@pytest.mark.parametrize(
    "text",
    [
        '{"a":[1,2,{"b":9007199254740993}]}',
        '{"a":NaN}',
        '[1,{"x":-0.0}]',
        '{"\\ud800":1}',
        '{"k":["ok","\\udc00"]}',
        '{"a":{"b":[Infinity]}}',
        '{"a":1.5,"b":"é","c":[true,null,{}]}',
        "-9007199254740992",
        '"\\ud800"',
    ],
)
def test_the_validating_walk_refuses_exactly_what_the_copy_refuses(text: str):
    value = json.loads(text)

    def refusal(check) -> str | None:
        try:
            check(value)
        except TypeError as err:
            return str(err)
        return None

    assert refusal(check_parsed) == refusal(lossless_copy)


@pytest.mark.parametrize("compression", ["zstd", "none"])
def test_a_grown_log_decodes_from_its_remembered_prefix_exactly_as_from_scratch(compression: str):
    header = encode_header(SessionHeader("s", 1), compression)
    batches = [encode_batch([_event(2 * i), _event(2 * i + 1)], compression) for i in range(6)]
    cuts = [header + b"".join(batches[:n]) for n in range(1, 7)]
    torn = cuts[-1] + batches[0][:7]  # a torn tail after a remembered prefix
    garbage = cuts[2] + b"\x00garbage\n"
    _clear()
    grown = [decode_log(data, compression) for data in cuts]
    grown_torn = decode_log(torn, compression)
    assert len(log_format.CLEAN)  # the clean prefixes were remembered
    failures = []
    for data in (garbage,):
        try:
            decode_log(data, compression)
        except LogCorruption as err:
            failures.append(str(err))
    _clear()
    fresh = [log_format._decode_zstd(d) if compression == "zstd" else log_format._decode_raw(d) for d in cuts]
    assert [_records(g.events) for g in grown] == [_records(f.events) for f in fresh]
    assert [len(g.events) for g in grown] == [2 * n for n in range(1, 7)]
    _clear()
    assert _records(grown_torn.events) == _records(decode_log(torn, compression).events)
    assert grown_torn.torn == decode_log(torn, compression).torn
    _clear()
    fresh_failures = []
    try:
        decode_log(garbage, compression)
    except LogCorruption as err:
        fresh_failures.append(str(err))
    assert failures == fresh_failures
