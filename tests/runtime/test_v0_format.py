"""Decoding v0 logs as the reference runtime writes them (spec §3.3–§3.7).

The fixtures are written out by hand, line by line, in the reference writer's exact JSON
(``JSON.stringify`` key order, packed rows for runs of three or more deltas), then framed as
the reference frames them: a header frame and one checksummed frame per durable batch.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from dsh_sim.scenario.v0_writer import encode_v0, pack_records
from runtime.persistence.log_format import LogCorruption, LogVersionUnsupported
from runtime.persistence.v0_format import V0Header, V0Unsupported, decode_v0, v0_header_of
from runtime.persistence.v0_records import V0Event, expand_row
from runtime.persistence.zstd_frames import compress_frame, scan_frames

HEADER = '{"type":"session","version":0,"id":"legacy","createdAt":1000,"cwd":"/work","delegationDepth":0}'
# batch 1: a user turn up to the request; batch 2: the streamed answer with packed rows; batch 3: the end
BATCH_1 = [
    '{"type":"turn/start","seq":0,"time":10,"data":{"turn":1}}',
    '{"type":"step/start","seq":1,"time":11,"data":{"turn":1,"step":1}}',
    '{"type":"user/message","seq":2,"time":12,"data":{"id":"u1","role":"user","content":[{"type":"text","text":"hi"}],"source":{"kind":"user"}},"surfaceOp":"append"}',
    '{"type":"request/header","seq":3,"time":13,"data":{"header":{"config":{"model":"m"},"system":"You are terse."},"reason":"initial"}}',
    '{"type":"request/context","seq":4,"time":13,"data":{"provider":"p","model":"m"}}',
]
BATCH_2 = [
    '{"type":"assistant/chunk","seq":5,"time":20,"data":{"turn":1,"step":1,"chunk":{"type":"block-start","index":0,"blockType":"reasoning"}}}',
    '{"type":"reasoning-chunks","seq0":6,"time0":21,"data":{"turn":1,"step":1,"index":0,"dt":[1,-1],"texts":["thi","nk","ing"]}}',
    '{"type":"assistant/chunk","seq":9,"time":23,"data":{"turn":1,"step":1,"chunk":{"type":"block-start","index":1,"blockType":"text"}}}',
    '{"type":"text-chunks","seq0":10,"time0":24,"data":{"turn":1,"step":1,"index":1,"dt":[0,2,1],"texts":["Hel","lo"," ","there"]}}',
    '{"type":"tool-call-chunks","seq0":14,"time0":30,"data":{"turn":1,"step":1,"index":2,"dt":[1,1],"id":"c1","name":"ls","args":["{\\"p","ath\\":","\\".\\"}"]}}',
    '{"type":"assistant/chunk","seq":17,"time":33,"data":{"turn":1,"step":1,"chunk":{"type":"finish","reason":{"kind":"tool-calls"}}}}',
    '{"type":"assistant/message","seq":18,"time":34,"data":{"turn":1,"step":1,"message":{"id":"a1","role":"assistant","content":[{"type":"reasoning","text":"thinking"},{"type":"text","text":"Hello there"},{"type":"tool-call","id":"c1","name":"ls","arguments":"{\\"path\\":\\".\\"}"}],"source":{"kind":"model","provider":"p","model":"m"}}},"sourceEventSeqs":[5,6,7,8,9,10,11,12,13,14,15,16,17],"surfaceOp":"append"}',
    '{"type":"tool/call","seq":19,"time":35,"data":{"turn":1,"step":1,"callId":"c1","name":"ls","arguments":"{\\"path\\":\\".\\"}"}}',
]
BATCH_3 = [
    '{"type":"tool/result","seq":20,"time":36,"data":{"turn":1,"step":1,"message":{"id":"r1","role":"user","source":{"kind":"tool","callId":"c1"},"content":[{"type":"tool-result","toolCallId":"c1","isError":false,"content":[{"type":"text","text":"a b"}]}]}},"sourceEventSeqs":[19],"surfaceOp":"append"}',
    '{"type":"step/end","seq":21,"time":37,"data":{"turn":1,"step":1}}',
    '{"type":"turn/end","seq":22,"time":38,"data":{"turn":1,"reason":{"kind":"completed"}}}',
]
BATCHES = [BATCH_1, BATCH_2, BATCH_3]


def plain(lines: list[str]) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


def reference_file(compression: str, batches: list[list[str]] = BATCHES, header: str = HEADER) -> bytes:
    """Header frame + one frame per batch (zstd), or the plain JSONL text (raw)."""
    parts = [plain([header])] + [plain(batch) for batch in batches]
    return b"".join(compress_frame(p) for p in parts) if compression == "zstd" else b"".join(parts)


def expected_events() -> list[dict[str, Any]]:
    """The 23 events the fixture stands for, with every packed row expanded by hand."""
    out: list[dict[str, Any]] = []
    for line in BATCH_1 + BATCH_2 + BATCH_3:
        record = json.loads(line)
        if record["type"].endswith("-chunks"):
            out.extend(e.to_record() for e in expand_row(record))
        else:
            out.append(record)
    return out


@pytest.fixture(params=["zstd", "none"])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


def records(data: bytes, mode: str) -> list[dict[str, Any]]:
    return [e.to_record() for e in decode_v0(data, mode).events]


def test_reference_file_decodes_to_the_right_events(mode: str) -> None:
    data = reference_file(mode)
    if mode == "zstd":
        assert len(scan_frames(data).frames) == 4  # header frame + one frame per batch
    log = decode_v0(data, mode)
    assert log.header == V0Header("legacy", 1000, cwd="/work", delegation_depth=0)
    assert log.torn is None
    assert [e.seq for e in log.events] == list(range(23))
    assert [e.to_record() for e in log.events] == expected_events()
    chunks = [e for e in log.events if e.type == "assistant/chunk"]
    assert [c.time for c in chunks] == [20, 21, 22, 21, 23, 24, 24, 26, 27, 30, 31, 32, 33]  # dt gaps, one negative
    assert chunks[1].data["chunk"] == {"type": "reasoning-delta", "index": 0, "text": "thi"}
    assert chunks[9].data["chunk"] == {"type": "tool-call-delta", "index": 2, "id": "c1", "name": "ls", "argumentsDelta": '{"p'}
    assert log.events[3].data["header"]["system"] == "You are terse."


def test_reading_is_layout_blind(mode: str) -> None:
    unpacked = [[json.dumps(r, separators=(",", ":")) for r in expected_events()]]
    assert records(reference_file(mode, unpacked), mode) == records(reference_file(mode), mode)


def test_the_writer_packs_like_the_reference(mode: str) -> None:
    """The simulator's v0 writer (``seed_v0``) reproduces the hand-written reference bytes."""
    events = [
        V0Event(
            r["type"],
            r["seq"],
            r["time"],
            r["data"],
            surface_op=r.get("surfaceOp"),
            source_event_seqs=tuple(r["sourceEventSeqs"]) if "sourceEventSeqs" in r else None,
        )
        for r in expected_events()
    ]
    header = V0Header("legacy", 1000, cwd="/work")
    batches = [events[:5], events[5:20], events[20:]]
    assert encode_v0(header, batches, mode) == reference_file(mode)
    assert [json.dumps(r, separators=(",", ":")) for r in pack_records(events[5:20])] == BATCH_2


def test_tool_call_rows_without_name_and_short_runs_stay_unpacked() -> None:
    deltas = [
        V0Event(
            "assistant/chunk",
            i,
            5,
            {"turn": 1, "step": 1, "chunk": {"type": "tool-call-delta", "index": 0, "id": "c", "argumentsDelta": "x"}},
        )
        for i in range(3)
    ]
    (row,) = pack_records(deltas)
    assert row == {
        "type": "tool-call-chunks",
        "seq0": 0,
        "time0": 5,
        "data": {"turn": 1, "step": 1, "index": 0, "id": "c", "dt": [0, 0], "args": ["x", "x", "x"]},
    }
    assert expand_row(row) == deltas
    assert pack_records(deltas[:2]) == [d.to_record() for d in deltas[:2]]  # below three members: verbatim


def test_raw_torn_final_line_is_a_torn_tail() -> None:
    data = reference_file("none")
    cut = data[: len(data) - 7]
    log = decode_v0(cut, "none")
    assert [e.seq for e in log.events] == list(range(22))
    assert log.torn is not None and log.torn.truncate_to == data.rindex(b"\n", 0, len(data) - 1) + 1
    assert log.torn.torn_bytes == len(cut) - log.torn.truncate_to


def test_zstd_torn_final_frame_keeps_its_complete_records() -> None:
    head = reference_file("zstd", BATCHES[:2])
    last = compress_frame(plain(BATCH_3))
    for keep in (3, len(last) // 2, len(last) - 2):  # inside the magic, a block, the checksum
        log = decode_v0(head + last[:keep], "zstd")
        assert log.torn is not None and log.torn.truncate_to == len(head)
        assert [e.seq for e in log.events] == list(range(20 + log.torn.recovered))
    assert decode_v0(head + last[: len(last) - 2], "zstd").torn.recovered == 3  # type: ignore[union-attr]


def test_malformed_packed_row_is_a_crash_tail_only_as_the_last_record(mode: str) -> None:
    broken = BATCH_2[1].replace('"dt":[1,-1]', '"dt":[1]')
    last = [BATCH_1, [BATCH_2[0], broken]]
    if mode == "zstd":  # inside a complete frame nothing is a crash tail
        with pytest.raises(LogCorruption, match="complete frame contains a torn JSONL record"):
            decode_v0(reference_file(mode, last), mode)
        return
    assert [e.seq for e in decode_v0(reference_file(mode, last), mode).events] == list(range(6))
    with pytest.raises(LogCorruption, match="unparsable committed event"):  # whole records follow it
        decode_v0(reference_file(mode, [BATCH_1, [BATCH_2[0], broken] + BATCH_2[2:]]), mode)
    with pytest.raises(LogCorruption, match="unparsable committed event"):
        decode_v0(reference_file(mode, [BATCH_1, [BATCH_2[0], broken] + BATCH_2[2:], BATCH_3]), mode)


def test_seq_gap_is_a_crash_tail_only_as_the_last_record() -> None:
    gapped = [BATCH_1[:2] + BATCH_1[3:4]]
    assert len(decode_v0(reference_file("none", gapped), "none").events) == 2
    with pytest.raises(LogCorruption, match=r"seq gap in committed region at line 4 \(expected 2, got 3\)"):
        decode_v0(reference_file("none", [BATCH_1[:2] + BATCH_1[3:]]), "none")  # whole records follow the gap
    with pytest.raises(LogCorruption, match=r"seq gap in committed region at line 4 \(expected 2, got 3\)"):
        decode_v0(reference_file("none", [BATCH_1[:2] + BATCH_1[3:]] + [BATCH_3[2:]]), "none")
    with pytest.raises(LogCorruption, match="complete frame contains a torn JSONL record"):
        decode_v0(reference_file("zstd", gapped), "zstd")


def test_corrupt_complete_frame_is_refused() -> None:
    data = bytearray(reference_file("zstd"))
    start, end = scan_frames(bytes(data)).frames[2]
    data[end - 1] ^= 0x40  # its content checksum
    with pytest.raises(LogCorruption, match=f"frame at byte {start} failed validation"):
        decode_v0(bytes(data), "zstd")


@pytest.mark.parametrize(
    "header,error,match",
    [
        ('{"type":"session","version":3,"id":"x","createdAt":1,"isSeeded":false,"delegationDepth":0}', LogVersionUnsupported, "v3"),
        ('{"type":"session","version":7,"id":"x","createdAt":1}', LogVersionUnsupported, "v7"),
        ("not json", LogCorruption, "header line is not valid JSON"),
        ('{"type":"event","version":0}', LogCorruption, "first line is not a session header"),
        ('{"type":"session","version":0,"id":"x","createdAt":-1}', LogCorruption, "createdAt"),
        ('{"type":"session","version":0,"id":"x","createdAt":1,"sandboxMode":"x"}', LogCorruption, "retired policy baseline"),
        ('{"type":"session","version":0,"id":"x","createdAt":1,"future":true}', V0Unsupported, "future"),
        ('{"type":"session","version":0,"id":"x","createdAt":1,"cwd":"rel"}', V0Unsupported, "not absolute"),
    ],
)
def test_header_refusals(mode: str, header: str, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        decode_v0(reference_file(mode, [], header), mode)


def test_legacy_header_without_delegation_depth_and_with_seed_length(mode: str) -> None:
    header = '{"type":"session","version":0,"id":"fork","createdAt":5,"parentSession":"p","seedLength":2}'
    log = decode_v0(reference_file(mode, [BATCH_1], header), mode)
    assert log.header == V0Header("fork", 5, parent_session="p", seed_length=2, delegation_depth=0)
    data = reference_file(mode, [BATCH_1], header)
    assert v0_header_of(data[: len(data) // 2 if mode == "none" else len(data)], mode) == log.header


def test_header_of_a_prefix(mode: str) -> None:
    data = reference_file(mode)
    assert v0_header_of(data[:10], mode) is None
    assert v0_header_of(data, mode) == decode_v0(data, mode).header


def test_empty_file_is_header_less(mode: str) -> None:
    with pytest.raises(LogCorruption, match="empty or header-less"):
        decode_v0(b"", mode)


# -- the message of a message event (DSH's adoptSessionEvent, check for check) -------------------

USER = {"id": "u1", "role": "user", "content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}}
ASSISTANT = {"id": "a1", "role": "assistant", "content": [], "source": {"kind": "model", "provider": "p", "model": "m"}}
BLOCK = {"type": "tool-result", "toolCallId": "c1", "isError": False, "content": []}
RESULT = {"id": "r1", "role": "user", "content": [BLOCK], "source": {"kind": "tool", "callId": "c1"}}


def _with(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**base, **changes}


@pytest.mark.parametrize(
    ("kind", "data", "refusal"),
    [
        ("user/message", USER, None),
        ("user/message", None, "lacks an identified message"),
        ("user/message", _with(USER, id=""), "lacks an identified message"),
        ("user/message", _with(USER, id=1), "lacks an identified message"),
        ("user/message", _with(USER, role="assistant"), 'message must have role "user"'),
        ("user/message", _with(USER, source={"kind": ""}), "message has invalid source"),
        ("user/message", _with(USER, content="hi"), "message has invalid content"),
        ("assistant/message", {"turn": 1, "step": 1, "message": ASSISTANT}, None),
        ("assistant/message", {"turn": 1, "step": 1}, "lacks an identified message"),
        ("assistant/message", {"turn": 1, "step": 1, "message": _with(ASSISTANT, role="user")}, 'message must have role "assistant"'),
        (
            "assistant/message",
            {"turn": 1, "step": 1, "message": _with(ASSISTANT, source={"kind": "model"})},
            "message must have model source",
        ),
        ("tool/result", {"turn": 1, "step": 1, "message": RESULT}, None),
        ("tool/result", {"turn": 1, "step": 1, "message": _with(RESULT, role="tool")}, 'message must have role "user"'),
        ("tool/result", {"turn": 1, "step": 1, "message": _with(RESULT, source={"kind": "tool"})}, "message must have tool source"),
        (
            "tool/result",
            {"turn": 1, "step": 1, "message": _with(RESULT, content=[BLOCK, BLOCK])},
            "message must contain one tool-result block",
        ),
        (
            "tool/result",
            {"turn": 1, "step": 1, "message": _with(RESULT, content=[_with(BLOCK, toolCallId="c2")])},
            "message has mismatched tool call ids",
        ),
    ],
)
def test_the_message_of_a_message_event_is_checked_as_dsh_adopts_it(kind: str, data: Any, refusal: str | None) -> None:
    """Texts and order from DSH 0.1.0-rc.8's ``assertMessageEventShape``: a log whose message is
    missing or malformed is refused, not migrated into a surface without one."""
    record = {"type": kind, "seq": 1, "time": 2, "data": data, "surfaceOp": "append"}
    data_bytes = "\n".join([HEADER, '{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}', json.dumps(record), ""]).encode()
    if refusal is None:
        assert decode_v0(data_bytes, "none").events[1].data == data
    else:
        with pytest.raises(LogCorruption, match=f"session event at seq 1 {refusal}"):
            decode_v0(data_bytes, "none")


def test_v0_source_seqs_are_plain_seqs() -> None:
    """``[start, end]`` ranges are the v2+ storage form (spec §10.1); DSH refuses them in v0."""
    cite = '{"type":"user/message","seq":1,"time":2,"data":%s,"surfaceOp":"append","sourceEventSeqs":%s}'
    for seqs, ok in (("[0]", True), ("[0.0]", True), ("[[0,0]]", False), ('["0"]', False)):
        data = "\n".join([HEADER, '{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}', cite % (json.dumps(USER), seqs), ""]).encode()
        if ok:
            assert decode_v0(data, "none").events[1].source_event_seqs == (0,)
        else:
            with pytest.raises(LogCorruption, match="sourceEventSeqs must densely contain non-negative safe integers"):
                decode_v0(data, "none")
