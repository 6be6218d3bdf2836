"""Decoding whole generation files: raw scanner, zstd reader, header rules (spec §3.3–§3.7, §8.5)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from runtime.persistence.header import SessionHeader
from runtime.persistence.log_format import (
    LogCorruption,
    LogUnknownEventType,
    LogVersionUnsupported,
    decode_log,
    encode_batch,
    encode_header,
    header_line,
    header_of,
)
from runtime.persistence.zstd_frames import MAGIC_BYTES, compress_frame, scan_frames
from runtime.session.events import Event
from tests.support.persistence import (
    big_chunk_line,
    line,
    lines,
    meta,
    one_turn_log,
    open_turn,
    second_turn,
    seqs,
)

HEADER = header_line(meta("s1", "/work"))


def header_dict(**over: Any) -> dict[str, Any]:
    record: dict[str, Any] = {"type": "session", "version": 3, "id": "s1", "createdAt": 1000, "isSeeded": False, "delegationDepth": 0}
    record.update(over)
    return {k: v for k, v in record.items() if v is not _DROP}


_DROP = object()


def raw(header: bytes | dict[str, Any], body: bytes = b"") -> bytes:
    if isinstance(header, dict):
        header = (json.dumps(header) + "\n").encode()
    return header + body


# -- raw scanner --------------------------------------------------------------------------------


def test_header_line_key_order_and_round_trip() -> None:
    header = SessionHeader(
        "s1", 1000, cwd="/w", parent_session="p", is_seeded=True, origin="subagent", delegation_depth=2, agent_preset="x"
    )
    text = header_line(header)
    assert list(json.loads(text)) == [
        "type",
        "version",
        "id",
        "createdAt",
        "cwd",
        "parentSession",
        "isSeeded",
        "origin",
        "delegationDepth",
        "agentPreset",
    ]
    assert decode_log(text, "none").header == header
    assert header_line(meta("s1")) == b'{"type":"session","version":3,"id":"s1","createdAt":1000,"isSeeded":false,"delegationDepth":0}\n'


def test_event_lines_are_compact_utf8_in_record_key_order() -> None:
    event = Event("tool/result", 4, 9, {"t": "é"}, surface_op="append", source_event_seqs=(1, 2, 3))
    assert (
        encode_batch([event], "none")
        == '{"type":"tool/result","seq":4,"time":9,"data":{"t":"é"},"surfaceOp":"append","sourceEventSeqs":[[1,3]]}\n'.encode()
    )
    frame = encode_batch(one_turn_log(), "zstd")
    assert len(scan_frames(frame).frames) == 1


@pytest.mark.parametrize("data", [b"", HEADER[:-1], b"\n"[:0]])
def test_header_must_be_one_newline_terminated_record(data: bytes) -> None:
    with pytest.raises(LogCorruption, match="empty or header-less session log"):
        decode_log(data, "none")


def test_header_only_log() -> None:
    decoded = decode_log(HEADER, "none")
    assert decoded.events == () and decoded.torn is None and decoded.file_size == len(HEADER)


def test_torn_final_fragment_is_ignored() -> None:
    first = line(one_turn_log()[0])
    data = HEADER + first + b'{"type":"user/mess'
    decoded = decode_log(data, "none")
    assert seqs(decoded.events) == [0]
    assert decoded.torn is not None
    assert decoded.torn.truncate_to == len(HEADER) + len(first)
    assert decoded.torn.recovered == () and decoded.torn.torn_bytes == len(b'{"type":"user/mess')


def test_reference_crash_fragment() -> None:
    data = HEADER + lines(one_turn_log() + open_turn()) + b'{"type":"assistant/chunk","seq":8,"ti'
    decoded = decode_log(data, "none")
    assert seqs(decoded.events) == list(range(8))
    assert decoded.torn is not None and decoded.torn.truncate_to == len(data) - 37


def test_corrupt_line_followed_by_non_turn_end_lines_keeps_the_prefix() -> None:
    log = one_turn_log()
    body = lines(log[:2]) + b"{not json\n" + lines(log[2:5])
    decoded = decode_log(HEADER + body, "none")
    assert seqs(decoded.events) == [0, 1]
    assert decoded.torn is not None and decoded.torn.truncate_to == len(HEADER) + len(lines(log[:2]))


def test_corrupt_line_before_a_later_turn_end_is_refused() -> None:
    log = one_turn_log()
    body = lines(log[:2]) + b"{not json\n" + lines(log[2:])
    with pytest.raises(LogCorruption, match="corrupt session log: unparsable committed event at line 4"):
        decode_log(HEADER + body, "none")


def test_turn_end_at_a_gapped_seq_is_refused() -> None:
    log = one_turn_log()
    body = lines(log[:4]) + line(log[5].with_seq(7))
    with pytest.raises(LogCorruption, match=r"seq gap in committed region at line 6 \(expected 4, got 7\)"):
        decode_log(HEADER + body, "none")


def test_turn_end_after_a_gap_is_refused() -> None:
    log = one_turn_log()
    body = lines(log[:2]) + line(log[3]) + line(log[5].with_seq(9))
    with pytest.raises(LogCorruption, match="seq gap in committed region"):
        decode_log(HEADER + body, "none")


def test_gap_after_a_turn_end_drops_the_tail() -> None:
    log = one_turn_log()
    body = lines(log) + line(second_turn()[0].with_seq(8))
    decoded = decode_log(HEADER + body, "none")
    assert seqs(decoded.events) == list(range(6))
    assert decoded.torn is not None and decoded.torn.truncate_to == len(HEADER) + len(lines(log))


def test_valid_json_that_is_not_a_valid_event_is_refused_not_dropped() -> None:
    log = one_turn_log()
    bad = b'{"type":"turn/start","seq":6,"time":1,"data":{"turn":2},"extra":1}\n'
    with pytest.raises(LogCorruption, match="invalid committed event at line 8"):
        decode_log(HEADER + lines(log) + bad + line(second_turn()[0].with_seq(7)), "none")
    retired = b'{"type":"request/header-delta","seq":6,"time":1,"data":{}}\n'
    with pytest.raises(LogCorruption, match="request/header-delta"):
        decode_log(HEADER + lines(log) + retired, "none")


def test_non_object_json_line_is_a_tolerated_tail() -> None:
    decoded = decode_log(HEADER + lines(one_turn_log()) + b"123\n", "none")
    assert len(decoded.events) == 6 and decoded.torn is not None


@pytest.mark.parametrize(
    "header,match",
    [
        (b"{oops\n", "header line is not valid JSON"),
        (b"[]\n", "first line is not a session header"),
        ({"type": "event"}, "first line is not a session header"),
        (header_dict(version="3"), "first line is not a session header"),
        (header_dict(createdAt=1.5), "createdAt"),
        (header_dict(createdAt=-1), "createdAt"),
        (header_dict(createdAt=2**53), "createdAt"),
        (b'{"type":"session","version":3,"id":"s1","createdAt":-0,"isSeeded":false,"delegationDepth":0}\n', "createdAt"),
        (header_dict(delegationDepth=_DROP), "delegationDepth"),
        (header_dict(delegationDepth="0"), "delegationDepth"),
        (header_dict(delegationDepth=0.5), "delegationDepth"),
        (header_dict(delegationDepth=-1), "delegationDepth"),
        (b'{"type":"session","version":3,"id":"s1","createdAt":1,"isSeeded":false,"delegationDepth":-0}\n', "delegationDepth"),
        (header_dict(agentPreset=3), "agentPreset"),
        (header_dict(origin="parent"), "origin"),
        (header_dict(cwd="relative/dir"), "cwd"),
        (header_dict(isSeeded=_DROP), "isSeeded"),
        (header_dict(id=""), "id"),
        (header_dict(extra=1), "unexpected keys"),
        (header_dict(sandboxMode="x"), "retired policy baseline fields"),
    ],
)
def test_header_validation(header: Any, match: str) -> None:
    with pytest.raises(LogCorruption, match="session header|header line|" + match) as err:
        decode_log(raw(header), "none")
    assert match in str(err.value)


@pytest.mark.parametrize("version", [99, 4, 2, 0, -1])
def test_other_header_versions_are_refused_before_shape_checks(version: int) -> None:
    with pytest.raises(LogVersionUnsupported) as err:
        decode_log(raw({"type": "session", "version": version}), "none")
    assert err.value.version == version


def test_unknown_event_type_is_refused_unless_ignorable() -> None:
    future = Event("future/event", 6, 7, {"x": 1})
    with pytest.raises(LogUnknownEventType) as err:
        decode_log(HEADER + lines(one_turn_log() + [future]), "none")
    assert (err.value.kind, err.value.seq) == ("future/event", 6)
    ignorable = Event("future/event", 6, 7, {"x": 1}, ignorable=True)
    decoded = decode_log(HEADER + lines(one_turn_log() + [ignorable]), "none")
    assert decoded.events[-1] == ignorable
    # v0-era names are unknown to the v3 vocabulary
    with pytest.raises(LogUnknownEventType, match="assistant/chunk"):
        decode_log(HEADER + line(Event("assistant/chunk", 0, 1, {})), "none")


# -- zstd reader --------------------------------------------------------------------------------

ZHEADER = encode_header(meta("s1", "/work"), "zstd")


def test_zstd_round_trip_and_frames() -> None:
    data = ZHEADER + encode_batch(one_turn_log(), "zstd") + encode_batch(second_turn(), "zstd")
    decoded = decode_log(data, "zstd")
    assert list(decoded.events) == one_turn_log() + second_turn()
    assert decoded.torn is None and decoded.header == meta("s1", "/work")


@pytest.mark.parametrize("data", [b"", MAGIC_BYTES, ZHEADER[:-1]])
def test_zstd_without_a_complete_frame_is_header_less(data: bytes) -> None:
    with pytest.raises(LogCorruption, match="empty or header-less Zstandard session log"):
        decode_log(data, "zstd")


@pytest.mark.parametrize("plaintext", [b"", HEADER + HEADER, HEADER[:-1], HEADER + lines(one_turn_log())])
def test_zstd_first_frame_must_be_exactly_one_header_line(plaintext: bytes) -> None:
    with pytest.raises(LogCorruption, match="first frame is not exactly one header line"):
        decode_log(compress_frame(plaintext), "zstd")


def test_complete_frame_with_a_torn_record_is_refused() -> None:
    data = ZHEADER + encode_batch(one_turn_log(), "zstd") + compress_frame(b'{"type":"turn/start"')
    with pytest.raises(LogCorruption, match="complete frame contains a torn JSONL record"):
        decode_log(data, "zstd")


def test_complete_frame_with_a_seq_gap_or_bad_record_is_refused() -> None:
    with pytest.raises(LogCorruption, match="seq gap in frame"):
        decode_log(ZHEADER + encode_batch(second_turn(), "zstd"), "zstd")
    with pytest.raises(LogCorruption, match="invalid record in frame"):
        decode_log(ZHEADER + compress_frame(b"{nope}\n"), "zstd")


def test_torn_frame_recovers_its_complete_records() -> None:
    committed = ZHEADER + encode_batch(one_turn_log(), "zstd")
    plaintext = lines(open_turn()) + big_chunk_line(8)
    frame = compress_frame(plaintext)
    torn = frame[: len(frame) // 2]
    decoded = decode_log(committed + torn, "zstd")
    assert seqs(decoded.events) == list(range(8))
    assert decoded.torn is not None
    assert decoded.torn.truncate_to == len(committed)
    assert list(decoded.torn.recovered) == open_turn()
    assert decoded.torn.torn_bytes == len(torn)


@pytest.mark.parametrize("cut", [1, 2, 4, 7])
def test_frame_torn_in_its_header_recovers_nothing(cut: int) -> None:
    committed = ZHEADER + encode_batch(one_turn_log(), "zstd")
    decoded = decode_log(committed + encode_batch(second_turn(), "zstd")[:cut], "zstd")
    assert seqs(decoded.events) == list(range(6))
    assert decoded.torn is not None and decoded.torn.recovered == () and decoded.torn.truncate_to == len(committed)


def test_frame_torn_in_its_checksum_recovers_all_records() -> None:
    committed = ZHEADER + encode_batch(one_turn_log(), "zstd")
    decoded = decode_log(committed + encode_batch(second_turn(), "zstd")[:-1], "zstd")
    assert seqs(decoded.events) == list(range(8))
    assert decoded.torn is not None and list(decoded.torn.recovered) == second_turn()


def test_torn_recovery_stops_at_a_gap_or_garbage() -> None:
    committed = ZHEADER + encode_batch(one_turn_log(), "zstd")
    plaintext = line(open_turn()[0]) + line(second_turn()[1].with_seq(9)) + big_chunk_line(10)
    frame = compress_frame(plaintext)
    decoded = decode_log(committed + frame[: len(frame) // 2], "zstd")
    assert seqs(decoded.events) == list(range(7))


# -- header only (listing) ------------------------------------------------------------------------


def test_header_of() -> None:
    assert header_of(HEADER + b"{garbage", "none") == meta("s1", "/work")
    assert header_of(HEADER[:-1], "none") is None
    assert header_of(b"", "none") is None
    assert header_of(b'{"type":"other"}\n', "none") is None
    data = ZHEADER + encode_batch(one_turn_log(), "zstd")
    assert header_of(data, "zstd") == meta("s1", "/work")
    assert header_of(ZHEADER + b"\x00\x00\x00\x00junk", "zstd") == meta("s1", "/work")  # later frames unread
    assert header_of(MAGIC_BYTES, "zstd") is None
    assert header_of(b"", "zstd") is None
    assert header_of(b"not zstd at all", "zstd") is None
    assert header_of(compress_frame(b'{"type":"other"}\n'), "zstd") is None
    with pytest.raises(LogCorruption, match="first frame is not exactly one header line"):
        header_of(compress_frame(HEADER + HEADER), "zstd")
    corrupt = bytearray(ZHEADER)
    corrupt[-1] ^= 0xFF
    with pytest.raises(LogCorruption, match="header frame failed validation"):
        header_of(bytes(corrupt), "zstd")
