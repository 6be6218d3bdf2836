"""Crash repair: the closers that balance an interrupted tail (spec §2).

Pure and deterministic.  It never changes existing events; it returns events to append:
one synthetic ``tool/result`` per unanswered tool-call block of the open turn —
``TOOL_NOT_STARTED`` when no ``tool/call`` was recorded, ``TOOL_OUTCOME_UNKNOWN`` when one
was — then ``step/end`` (if a step is open) and ``turn/end {interrupted}``.  A balanced log
yields ``[]``, so repair is idempotent.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from runtime.session.events import Event

TOOL_NOT_STARTED = "TOOL_NOT_STARTED"
TOOL_OUTCOME_UNKNOWN = "TOOL_OUTCOME_UNKNOWN"

NOT_STARTED_TEXT = "The tool call was interrupted before the Harness recorded it as started. Retry it if it is still needed."
OUTCOME_UNKNOWN_TEXT = (
    "The tool call was interrupted after it was recorded, but no result was durably recorded. "
    "Its outcome is unknown. Decide whether to retry from the tool semantics: retry only if the "
    "operation is read-only or idempotent; if it may have side effects, first verify external "
    "state or ask the user. Do not retry blindly."
)


@attrs.define
class _Pending:
    step: int
    call_seq: int | None = None


def _open_turn_start(events: Sequence[Event]) -> int | None:
    """Index of the last ``turn/start`` or ``turn/end``: every event before it is settled
    (each one resets the state below), so only the events from here on need a look."""
    for index in range(len(events) - 1, -1, -1):
        if events[index].type in ("turn/start", "turn/end"):
            return index
    return None


class RepairRefused(ValueError):
    """An event repair must read holds data of another shape (a ``turn/start`` without its
    turn, a tool-call block without its id): the log cannot be balanced, so it is refused."""


class OpenTurn:
    """The state repair needs, folded one event at a time: the open turn, its open step, the
    unanswered tool-call blocks.  Bounded by the open turn's pending calls, so a reader can
    stream a log of any length through it (``dsh-sim inspect``)."""

    def __init__(self) -> None:
        self.turn: int | None = None
        self.step: int | None = None
        self.pending: dict[str, _Pending] = {}
        self.last: Event | None = None
        self.broken: str | None = None  # the first unreadable event since the last turn boundary

    def see(self, event: Event) -> None:
        try:
            self._see(event)
        except (KeyError, TypeError, AttributeError, IndexError) as err:
            if self.broken is None:
                self.broken = (
                    f"corrupt session log: {event.type} at seq {event.seq} has data repair cannot read ({type(err).__name__}: {err})"
                )
        else:
            if event.type in ("turn/start", "turn/end"):
                self.broken = None  # what came before is settled: its shape no longer matters

    def _see(self, event: Event) -> None:
        self.last = event
        kind = event.type
        if kind == "turn/start":
            self.turn, self.step = event.data["turn"], None
            self.pending.clear()
        elif kind == "turn/end":
            self.turn, self.step = None, None
            self.pending.clear()
        elif kind == "step/start":
            self.step = event.data["step"]
        elif kind == "step/end":
            self.pending.clear()
            self.step = None
        elif kind == "assistant/message":
            for block in event.data["message"]["content"]:
                if block.get("type") == "tool-call":
                    # a repeated id keeps its first position (JS Map.set semantics)
                    self.pending[block["id"]] = _Pending(step=event.data["step"])
        elif kind == "tool/call":
            entry = self.pending.get(event.data["callId"])
            if entry is not None:
                entry.call_seq = event.seq
        elif kind == "tool/result":
            self.pending.pop(event.data["message"]["source"]["callId"], None)

    def closers(self) -> list[Event]:
        """What balances the log seen so far (``[]`` when no turn is open); refused when an
        event of the open turn could not be read."""
        if self.broken is not None:
            raise RepairRefused(self.broken)
        if self.turn is None or self.last is None:
            return []
        return _closers(self.turn, self.step, self.pending, self.last)


def interrupted_turn_closers(events: Sequence[Event]) -> list[Event]:
    start = _open_turn_start(events)
    if start is None:
        return []  # no turn was ever opened: nothing to close
    fold = OpenTurn()
    for event in events[start:]:
        fold.see(event)
    return fold.closers()


def _closers(open_turn: int, open_step: int | None, pending: dict[str, _Pending], last: Event) -> list[Event]:
    seq, time = last.seq + 1, last.time
    closers: list[Event] = []
    for call_id, entry in pending.items():
        started = entry.call_seq is not None
        message = {
            "id": f"interrupted-tool-result-{call_id}-{seq}",
            "role": "user",
            "source": {"kind": "tool", "callId": call_id},
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": call_id,
                    "isError": True,
                    "content": [{"type": "text", "text": OUTCOME_UNKNOWN_TEXT if started else NOT_STARTED_TEXT}],
                }
            ],
        }
        error = (
            {"name": "ToolOutcomeUnknownError", "code": TOOL_OUTCOME_UNKNOWN}
            if started
            else {"name": "ToolNotStartedError", "code": TOOL_NOT_STARTED}
        )
        data = {"turn": open_turn, "step": entry.step, "message": message, "error": error}
        sources = (entry.call_seq,) if started and entry.call_seq is not None else None
        closers.append(Event("tool/result", seq, time, data, False, "append", sources))
        seq += 1
    if open_step is not None:
        closers.append(Event("step/end", seq, time, {"turn": open_turn, "step": open_step}))
        seq += 1
    closers.append(Event("turn/end", seq, time, {"turn": open_turn, "reason": {"kind": "interrupted"}}))
    return closers


def verdicts(closers: Sequence[Event]) -> dict[str, str]:
    """callId → ``TOOL_NOT_STARTED``/``TOOL_OUTCOME_UNKNOWN`` for the synthetic results."""
    out: dict[str, str] = {}
    for event in closers:
        if event.type == "tool/result" and event.data.get("error"):
            code = event.data["error"]["code"]
            if code in (TOOL_NOT_STARTED, TOOL_OUTCOME_UNKNOWN):
                out[event.data["message"]["source"]["callId"]] = code
    return out
