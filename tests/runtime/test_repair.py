"""Crash repair closers: every row of spec §8.1 (reference ``repair.spec.ts``) plus idempotence."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.session.events import Event
from runtime.session.repair import (
    NOT_STARTED_TEXT,
    OUTCOME_UNKNOWN_TEXT,
    TOOL_NOT_STARTED,
    TOOL_OUTCOME_UNKNOWN,
    OpenTurn,
    RepairRefused,
    interrupted_turn_closers,
    verdicts,
)


def ev(type_: str, seq: int, data: Any, time: int | None = None, **kw: Any) -> Event:
    return Event(type_, seq, seq * 10 if time is None else time, data, **kw)


def turn_start(seq: int, turn: int = 1) -> Event:
    return ev("turn/start", seq, {"turn": turn})


def turn_end(seq: int, turn: int = 1) -> Event:
    return ev("turn/end", seq, {"turn": turn, "reason": {"kind": "completed"}})


def step_start(seq: int, turn: int = 1, step: int = 1) -> Event:
    return ev("step/start", seq, {"turn": turn, "step": step})


def step_end(seq: int, turn: int = 1, step: int = 1) -> Event:
    return ev("step/end", seq, {"turn": turn, "step": step})


def assistant(seq: int, call_ids: list[str], turn: int = 1, step: int = 1) -> Event:
    content: list[dict[str, Any]] = [{"type": "text", "text": "working"}]
    content += [{"type": "tool-call", "id": cid, "name": "bash", "arguments": "{}"} for cid in call_ids]
    message = {"id": f"a-{seq}", "role": "assistant", "content": content, "source": {"kind": "model", "provider": "mock", "model": "mock"}}
    return ev("assistant/message", seq, {"turn": turn, "step": step, "message": message}, surface_op="append")


def tool_call(seq: int, call_id: str, turn: int = 1, step: int = 1) -> Event:
    return ev("tool/call", seq, {"turn": turn, "step": step, "callId": call_id, "name": "bash", "arguments": "{}"})


def tool_result(seq: int, call_id: str, source: int, turn: int = 1, step: int = 1) -> Event:
    message = {
        "id": f"r-{seq}",
        "role": "user",
        "source": {"kind": "tool", "callId": call_id},
        "content": [{"type": "tool-result", "toolCallId": call_id, "isError": False, "content": [{"type": "text", "text": "ok"}]}],
    }
    return ev("tool/result", seq, {"turn": turn, "step": step, "message": message}, surface_op="append", source_event_seqs=(source,))


def types(events: list[Event]) -> list[str]:
    return [e.type for e in events]


def check_idempotent(log: list[Event], closers: list[Event]) -> None:
    assert interrupted_turn_closers(log + closers) == []


def test_balanced_log_yields_nothing() -> None:
    assert interrupted_turn_closers([turn_start(0), turn_end(1)]) == []


def test_empty_log_yields_nothing() -> None:
    assert interrupted_turn_closers([]) == []


def test_open_turn_without_step() -> None:
    log = [turn_start(0)]
    closers = interrupted_turn_closers(log)
    assert len(closers) == 1
    end = closers[0]
    assert end.to_record() == {"type": "turn/end", "seq": 1, "time": 0, "data": {"turn": 1, "reason": {"kind": "interrupted"}}}
    assert list(end.to_record()) == ["type", "seq", "time", "data"]
    check_idempotent(log, closers)


def test_open_step_closed_before_turn() -> None:
    log = [turn_start(0), ev("step/start", 1, {"turn": 1, "step": 1}, time=77)]
    closers = interrupted_turn_closers(log)
    assert types(closers) == ["step/end", "turn/end"]
    assert [c.seq for c in closers] == [2, 3]
    assert [c.time for c in closers] == [77, 77]  # last.time is reused
    assert closers[0].data == {"turn": 1, "step": 1}
    check_idempotent(log, closers)


def test_unrecorded_tool_request_is_not_started() -> None:
    log = [turn_start(0, turn=2), step_start(1, turn=2), assistant(2, ["call-1"], turn=2)]
    closers = interrupted_turn_closers(log)
    assert types(closers) == ["tool/result", "step/end", "turn/end"]
    assert [c.seq for c in closers] == [3, 4, 5]
    result = closers[0]
    assert result.data["turn"] == 2 and result.data["step"] == 1
    assert result.data["message"]["source"]["callId"] == "call-1"
    assert result.data["message"]["content"][0]["isError"] is True
    assert result.data["error"] == {"name": "ToolNotStartedError", "code": TOOL_NOT_STARTED}
    assert result.data["message"]["content"][0]["content"] == [
        {
            "type": "text",
            "text": "The tool call was interrupted before the Harness recorded it as started. Retry it if it is still needed.",
        }
    ]
    assert result.data["message"]["content"][0]["content"][0]["text"] == NOT_STARTED_TEXT
    # exact synthetic record, key order included; no sourceEventSeqs when not started
    record = result.to_record()
    assert list(record) == ["type", "seq", "time", "data", "surfaceOp"]
    assert list(record["data"]) == ["turn", "step", "message", "error"]
    assert record["surfaceOp"] == "append"
    assert record["data"]["message"] == {
        "id": "interrupted-tool-result-call-1-3",
        "role": "user",
        "source": {"kind": "tool", "callId": "call-1"},
        "content": [
            {"type": "tool-result", "toolCallId": "call-1", "isError": True, "content": [{"type": "text", "text": NOT_STARTED_TEXT}]}
        ],
    }
    assert closers[1].data == {"turn": 2, "step": 1}
    assert closers[2].data == {"turn": 2, "reason": {"kind": "interrupted"}}
    assert verdicts(closers) == {"call-1": TOOL_NOT_STARTED}
    check_idempotent(log, closers)


def test_answered_tool_call_gets_no_result() -> None:
    log = [turn_start(0), step_start(1), assistant(2, ["call-1"]), tool_result(3, "call-1", 2)]
    closers = interrupted_turn_closers(log)
    assert types(closers) == ["step/end", "turn/end"]
    check_idempotent(log, closers)


def test_no_result_after_owning_step_closed() -> None:
    log = [turn_start(0), step_start(1), assistant(2, ["call-1"]), step_end(3)]
    closers = interrupted_turn_closers(log)
    assert types(closers) == ["turn/end"]
    assert closers[0].seq == 4
    check_idempotent(log, closers)


def test_only_the_open_turn_is_repaired() -> None:
    log = [
        turn_start(0, 1),
        step_start(1, 1),
        assistant(2, ["old-call"], 1),
        tool_result(3, "old-call", 2, 1),
        step_end(4, 1),
        turn_end(5, 1),
        turn_start(6, 2),
        step_start(7, 2),
        assistant(8, ["new-call"], 2),
    ]
    closers = interrupted_turn_closers(log)
    assert types(closers) == ["tool/result", "step/end", "turn/end"]
    assert closers[0].data["message"]["source"]["callId"] == "new-call"
    assert closers[0].data["turn"] == 2
    assert closers[0].data["message"]["id"] == "interrupted-tool-result-new-call-9"
    check_idempotent(log, closers)


def test_one_result_per_unanswered_call_in_log_order() -> None:
    log = [turn_start(0), step_start(1), assistant(2, ["call-a", "call-b"]), tool_result(3, "call-a", 2)]
    closers = interrupted_turn_closers(log)
    assert types(closers) == ["tool/result", "step/end", "turn/end"]
    assert closers[0].data["message"]["source"]["callId"] == "call-b"
    check_idempotent(log, closers)


def test_several_unanswered_calls_keep_transcript_order_and_seqs() -> None:
    log = [turn_start(0), step_start(1), assistant(2, ["c-z", "c-a", "c-m"]), tool_call(3, "c-a")]
    closers = interrupted_turn_closers(log)
    assert [c.data["message"]["source"]["callId"] for c in closers[:3]] == ["c-z", "c-a", "c-m"]
    assert [c.data["message"]["id"] for c in closers[:3]] == [
        "interrupted-tool-result-c-z-4",
        "interrupted-tool-result-c-a-5",
        "interrupted-tool-result-c-m-6",
    ]
    assert verdicts(closers) == {"c-z": TOOL_NOT_STARTED, "c-a": TOOL_OUTCOME_UNKNOWN, "c-m": TOOL_NOT_STARTED}
    assert [c.seq for c in closers] == [4, 5, 6, 7, 8]
    check_idempotent(log, closers)


def test_recorded_call_without_result_is_outcome_unknown() -> None:
    log = [turn_start(0), step_start(1), assistant(2, ["call-1"]), tool_call(3, "call-1")]
    closers = interrupted_turn_closers(log)
    assert types(closers) == ["tool/result", "step/end", "turn/end"]
    result = closers[0]
    assert result.surface_op == "append"
    assert result.source_event_seqs == (3,)
    assert result.data["error"] == {"name": "ToolOutcomeUnknownError", "code": TOOL_OUTCOME_UNKNOWN}
    text = result.data["message"]["content"][0]["content"][0]["text"]
    assert text == OUTCOME_UNKNOWN_TEXT
    assert "retry only if the operation is read-only or idempotent" in text
    assert "first verify external state or ask the user" in text
    assert text.endswith("Do not retry blindly.")
    record = result.to_record()
    assert list(record) == ["type", "seq", "time", "data", "surfaceOp", "sourceEventSeqs"]
    assert record["sourceEventSeqs"] == [3]
    assert record["seq"] == 4 and record["time"] == 30
    check_idempotent(log, closers)


def test_orphan_tool_call_gets_no_result() -> None:
    log = [turn_start(0), step_start(1), tool_call(2, "orphan")]
    closers = interrupted_turn_closers(log)
    assert types(closers) == ["step/end", "turn/end"]
    check_idempotent(log, closers)


def test_repeated_call_id_keeps_first_position_and_resets_the_call() -> None:
    # JS Map.set semantics: an id seen again keeps its slot, but its state is replaced
    log = [turn_start(0), step_start(1), assistant(2, ["x", "y"]), tool_call(3, "x"), assistant(4, ["x"])]
    closers = interrupted_turn_closers(log)
    assert [c.data["message"]["source"]["callId"] for c in closers[:2]] == ["x", "y"]
    assert verdicts(closers) == {"x": TOOL_NOT_STARTED, "y": TOOL_NOT_STARTED}


@pytest.mark.parametrize("upto", range(1, 10))
def test_every_prefix_is_repaired_to_a_balanced_log(upto: int) -> None:
    full = [
        turn_start(0),
        step_start(1),
        assistant(2, ["a", "b"]),
        tool_call(3, "a"),
        tool_result(4, "a", 3),
        tool_call(5, "b"),
        tool_result(6, "b", 5),
        step_end(7),
        turn_end(8),
    ]
    log = full[:upto]
    closers = interrupted_turn_closers(log)
    repaired = log + closers
    assert [e.seq for e in repaired] == list(range(len(repaired)))
    assert (repaired[-1].type == "turn/end") or closers == []
    check_idempotent(log, closers)
    for closer in closers:  # every synthetic event is a valid stored record
        assert Event.from_record(closer.to_record()) == closer


def _folded(events: list[Event]) -> list[Event]:
    fold = OpenTurn()
    for event in events:
        fold.see(event)
    return fold.closers()


TWO_TURNS = [
    turn_start(0),
    step_start(1),
    assistant(2, ["a", "b"]),
    tool_call(3, "a"),
    tool_result(4, "a", 3),
    step_end(5),
    turn_end(6),
    turn_start(7, turn=2),
    step_start(8, turn=2),
    assistant(9, ["c", "d"], turn=2),
    tool_call(10, "c", turn=2),
]


@pytest.mark.parametrize("upto", range(len(TWO_TURNS) + 1))
def test_the_streaming_fold_repairs_every_prefix_as_the_scan_does(upto: int) -> None:
    """``dsh-sim inspect`` folds a log of any length event by event (nothing held)."""
    log = TWO_TURNS[:upto]
    assert _folded(log) == interrupted_turn_closers(log)


BROKEN_START = ev("turn/start", 7, {"turn_number": 2})


def test_an_unreadable_event_of_the_open_turn_is_refused_not_a_crash() -> None:
    """A turn/start without its turn once ended inspect, repair and a resume in a KeyError."""
    log = TWO_TURNS[:7] + [BROKEN_START]
    with pytest.raises(RepairRefused, match=r"^corrupt session log: turn/start at seq 7 has data repair cannot read \(KeyError: 'turn'\)$"):
        interrupted_turn_closers(log)
    with pytest.raises(RepairRefused, match="turn/start at seq 7"):
        _folded(log)


def test_an_unreadable_event_of_a_settled_turn_does_not_matter() -> None:
    broken_call = ev("assistant/message", 2, {"turn": 1, "step": 1, "message": {"content": "not a list"}}, surface_op="append")
    log = [turn_start(0), step_start(1), broken_call, step_end(3), turn_end(4), turn_start(5, turn=2)]
    assert [e.type for e in interrupted_turn_closers(log)] == ["turn/end"]
    assert _folded(log) == interrupted_turn_closers(log)
