"""The interrupted-turn closers, computed from the spec (§2), not by the runtime's repair.

Given the stored records of a log, the closers a resume must append: one synthetic
``tool/result`` per tool-call block of the open turn that has no result — ``TOOL_OUTCOME_UNKNOWN``
when a ``tool/call`` for it was recorded (with ``sourceEventSeqs`` naming it), else
``TOOL_NOT_STARTED`` — then ``step/end`` when a step is open, then ``turn/end {interrupted}``;
seqs continue from the last record and reuse its time.  Records are plain JSON objects in the
key order the spec gives for synthetic events (``type, seq, time, data, surfaceOp,
sourceEventSeqs``) — compared exactly, texts included.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

NOT_STARTED = "TOOL_NOT_STARTED"
OUTCOME_UNKNOWN = "TOOL_OUTCOME_UNKNOWN"
TEXTS = {
    NOT_STARTED: "The tool call was interrupted before the Harness recorded it as started. Retry it if it is still needed.",
    OUTCOME_UNKNOWN: (
        "The tool call was interrupted after it was recorded, but no result was durably recorded. Its outcome is unknown. "
        "Decide whether to retry from the tool semantics: retry only if the operation is read-only or idempotent; "
        "if it may have side effects, first verify external state or ask the user. Do not retry blindly."
    ),
}
ERROR_NAMES = {NOT_STARTED: "ToolNotStartedError", OUTCOME_UNKNOWN: "ToolOutcomeUnknownError"}


def _last_turn_boundary(records: Sequence[dict[str, Any]]) -> int:
    """The index of the last ``turn/start`` or ``turn/end`` record (0: none).  (This oracle
    imports nothing of the runtime's or the judges': its own scan, not event_records'.)"""
    for index in range(len(records) - 1, -1, -1):
        if records[index]["type"] in ("turn/start", "turn/end"):
            return index
    return 0


def closers(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records a resume appends to ``records`` (empty: the log is balanced).

    The walk starts at the last ``turn/start`` or ``turn/end``: each of them sets the whole
    state below (the turn, no step, nothing pending), so what came before cannot matter —
    and a long log is not walked from its start at every recovery."""
    turn: int | None = None
    step: int | None = None
    pending: dict[str, dict[str, Any]] = {}  # insertion order = transcript order
    for record in records[_last_turn_boundary(records) :]:
        kind, data = record["type"], record["data"]
        if kind in ("turn/start", "turn/end"):
            turn = data["turn"] if kind == "turn/start" else None
            step = None
            pending = {}
        elif kind == "step/start":
            step = data["step"]
        elif kind == "step/end":
            step = None
            pending = {}
        elif kind == "assistant/message":
            for block in data["message"]["content"]:
                if block.get("type") == "tool-call":
                    # registers {step}, overwriting a repeated id's entry in place (JS Map.set)
                    pending[block["id"]] = {"step": data["step"], "call_seq": None}
        elif kind == "tool/call":
            if data["callId"] in pending:
                pending[data["callId"]]["call_seq"] = record["seq"]
        elif kind == "tool/result":
            pending.pop(data["message"]["source"]["callId"], None)
    if turn is None or not records:
        return []
    seq, time = records[-1]["seq"] + 1, records[-1]["time"]
    out: list[dict[str, Any]] = []
    for call_id, entry in pending.items():
        code = OUTCOME_UNKNOWN if entry["call_seq"] is not None else NOT_STARTED
        result: dict[str, Any] = {
            "type": "tool/result",
            "seq": seq,
            "time": time,
            "data": {
                "turn": turn,
                "step": entry["step"],
                "message": {
                    "id": f"interrupted-tool-result-{call_id}-{seq}",
                    "role": "user",
                    "source": {"kind": "tool", "callId": call_id},
                    "content": [
                        {"type": "tool-result", "toolCallId": call_id, "isError": True, "content": [{"type": "text", "text": TEXTS[code]}]}
                    ],
                },
                "error": {"name": ERROR_NAMES[code], "code": code},
            },
            "surfaceOp": "append",
        }
        if code == OUTCOME_UNKNOWN:
            result["sourceEventSeqs"] = [entry["call_seq"]]
        out.append(result)
        seq += 1
    if step is not None:
        out.append({"type": "step/end", "seq": seq, "time": time, "data": {"turn": turn, "step": step}})
        seq += 1
    out.append({"type": "turn/end", "seq": seq, "time": time, "data": {"turn": turn, "reason": {"kind": "interrupted"}}})
    return out


def verdicts(closing: Sequence[dict[str, Any]]) -> dict[str, str]:
    """callId → verdict of each synthetic result."""
    return {r["data"]["message"]["source"]["callId"]: r["data"]["error"]["code"] for r in closing if r["type"] == "tool/result"}
