"""The grammar of a well-formed session log: a state machine fed one event at a time.

Written from the spec's invariant companion (§1.7), the agent loop's order (§1.6) and repair
(§2): seqs dense from 0; turn numbers 1, 2, 3 … and step numbers 1, 2, 3 … within each turn;
a turn contains steps, a step contains the assistant messages, tool calls and results; every
opened step and turn is closed in order; each tool-call block of a step gets exactly one
result before the step closes, after its ``tool/call`` (a synthetic ``TOOL_NOT_STARTED`` result
needs none); calls start and results are committed in the model's order; approval questions and decisions pair up inside their turn;
an assistant message whose recorded stream never finished is marked interrupted, and an interrupted
or token-limited one carries no tool calls.

A log that passes is *well formed*; :attr:`Grammar.closed` also says it ends between turns,
as a repaired log must.  The machine is incremental, so a checker feeds each new event once.
"""

from __future__ import annotations

from typing import Any

NOT_STARTED = "TOOL_NOT_STARTED"
_IN_TURN = frozenset({"request/header", "request/context", "todo/write"})  # §1.7


class GrammarError(ValueError):
    """The log is not well formed; the message names the seq and the rule."""


class Grammar:
    def __init__(self) -> None:
        self._sources: list[int] | None = None  # sourceEventSeqs of the event being fed
        self.count = 0  # events fed (the next seq)
        self.turn: int | None = None
        self.last_turn = 0
        self.step: int | None = None
        self.last_step = 0
        self.blocks: dict[str, int] = {}  # tool-call blocks of the open step -> results seen
        self.called: dict[str, int] = {}  # tool/call recorded in the open step -> its seq
        self.asked: set[str] = set()  # open approval questions of the open turn

    @classmethod
    def after(cls, events: Any) -> tuple[Grammar, int]:
        """A machine positioned at the start of the last turn of ``events`` (the part before it
        was judged when it was live), and that position: judging a resumed log's tail then
        costs the tail, not the session."""
        grammar = cls()
        start = 0
        for index in range(len(events) - 1, -1, -1):
            event = events[index]
            kind = event["type"] if type(event) is dict else event.type
            if kind == "turn/start":
                data = event["data"] if type(event) is dict else event.data
                start = index
                grammar.last_turn = data["turn"] - 1 if type(data.get("turn")) is int else 0
                break
        grammar.count = start
        return grammar, start

    @property
    def closed(self) -> bool:
        """No turn is open: what a repaired log (and a finished turn) must leave."""
        return self.turn is None

    def read(self, events: Any) -> Grammar:
        """Feed events that are not judged (a seeded history): the state they leave counts,
        what they break does not."""
        for event in events:
            try:
                self.feed(event)
            except GrammarError:
                pass
        return self

    def feed_all(self, events: Any) -> Grammar:
        for event in events:
            self.feed(event)
        return self

    def feed(self, event: Any) -> None:
        """One event: a stored record (dict) or a runtime ``Event``."""
        if type(event) is dict:
            kind, seq, data = event["type"], event["seq"], event["data"]
            self._sources = event.get("sourceEventSeqs")
        else:
            kind, seq, data = event.type, event.seq, event.data
            self._sources = list(event.source_event_seqs) if event.source_event_seqs is not None else None
        if seq != self.count:
            self._fail(seq, f"seq {seq} where {self.count} comes next")
        self.count += 1
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, seq, data)
        elif kind in _IN_TURN and self.turn is None:
            self._fail(seq, f"{kind} outside an open turn")

    def _fail(self, seq: int, why: str) -> None:
        raise GrammarError(f"seq {seq}: {why}")

    def _in_step(self, seq: int, kind: str, data: Any) -> None:
        if self.step is None or self.turn is None:
            self._fail(seq, f"{kind} outside an open step")
        if data.get("turn") != self.turn or data.get("step") != self.step:
            self._fail(seq, f"{kind} names turn {data.get('turn')} step {data.get('step')}, but turn {self.turn} step {self.step} is open")

    # -- rules per event type --------------------------------------------------------------

    def _turn_start(self, seq: int, data: Any) -> None:
        if self.turn is not None:
            self._fail(seq, f"turn/start while turn {self.turn} is open")
        if data.get("turn") != self.last_turn + 1:
            self._fail(seq, f"turn/start {data.get('turn')} where turn {self.last_turn + 1} comes next")
        self.turn = self.last_turn = data["turn"]
        self.last_step = 0
        self.asked = set()

    def _turn_end(self, seq: int, data: Any) -> None:
        if self.turn is None or data.get("turn") != self.turn:
            self._fail(seq, f"turn/end {data.get('turn')} but the open turn is {self.turn}")
        if self.step is not None:
            self._fail(seq, f"turn/end while step {self.step} is open")
        if self.asked and data.get("reason", {}).get("kind") != "interrupted":
            self._fail(seq, f"turn {self.turn} ends with unanswered approvals {sorted(self.asked)}")
        self.turn = None

    def _step_start(self, seq: int, data: Any) -> None:
        if self.turn is None or self.step is not None:
            self._fail(seq, "step/start outside an open turn or inside an open step")
        if data.get("turn") != self.turn or data.get("step") != self.last_step + 1:
            self._fail(
                seq,
                f"step/start turn {data.get('turn')} step {data.get('step')} where turn {self.turn} step {self.last_step + 1} comes next",
            )
        self.step = self.last_step = data["step"]
        self.blocks, self.called = {}, {}

    def _step_end(self, seq: int, data: Any) -> None:
        self._in_step(seq, "step/end", data)
        unanswered = sorted(call for call, results in self.blocks.items() if results == 0)
        step, self.step = self.step, None  # closed either way: an unjudged history (read) goes on from here
        if unanswered:
            self._fail(seq, f"step {step} closes with tool calls that have no result: {unanswered}")

    def _assistant(self, seq: int, data: Any) -> None:
        self._in_step(seq, "assistant/message", data)
        calls = [block for block in data["message"]["content"] if block.get("type") == "tool-call"]
        stream = data.get("stream")
        if isinstance(stream, list):  # the parts the loop received, as it recorded them
            finish = next((r["chunk"] for r in stream if isinstance(r, dict) and r.get("chunk", {}).get("type") == "finish"), None)
            if finish is None and data.get("interrupted") is not True:
                self._fail(seq, "an assistant message whose stream never finished is not marked interrupted (spec §1.6 item 7)")
            if finish is not None and finish.get("reason", {}).get("kind") == "max-tokens" and calls:
                self._fail(seq, "an assistant message cut off at the token limit carries tool calls")
        if data.get("interrupted") is True and calls:
            self._fail(seq, "an interrupted assistant message carries tool calls (spec §1.6 item 7: none)")
        for block in data["message"]["content"]:
            if block.get("type") == "tool-call":
                if block["id"] in self.blocks:
                    self._fail(seq, f"tool-call id {block['id']} repeats within the step")
                self.blocks[block["id"]] = 0

    def _tool_call(self, seq: int, data: Any) -> None:
        self._in_step(seq, "tool/call", data)
        call = data.get("callId")
        if call not in self.blocks:
            self._fail(seq, f"tool/call {call} has no tool-call block in this step")
        first = next((c for c in self.blocks if c not in self.called), None)
        if call != first:
            self._fail(seq, f"tool/call {call} starts before {first}: calls start in the model's order")
        if call in self.called:
            self._fail(seq, f"tool/call {call} is recorded twice")
        if self.blocks[call]:
            self._fail(seq, f"tool/call {call} comes after its result")
        self.called[call] = seq

    def _tool_result(self, seq: int, data: Any) -> None:
        self._in_step(seq, "tool/result", data)
        call = data["message"]["source"]["callId"]
        synthetic_not_started = (data.get("error") or {}).get("code") == NOT_STARTED
        if call not in self.blocks:
            self._fail(seq, f"tool/result for {call}, which no assistant message of this step asked for")
        if call not in self.called and not synthetic_not_started:
            self._fail(seq, f"tool/result for {call} without its tool/call")
        if self.blocks[call]:
            self._fail(seq, f"a second tool/result for {call}")
        cites = [self.called[call]] if call in self.called else None
        if self._sources != cites:
            self._fail(seq, f"tool/result for {call} cites {self._sources}, not its tool/call {cites}")
        first = next(c for c, results in self.blocks.items() if not results)
        if call != first:
            self._fail(seq, f"tool/result for {call} before the result for {first}: results follow the model's order")
        self.blocks[call] += 1

    def _asked(self, seq: int, data: Any) -> None:
        if self.turn is None:
            self._fail(seq, "approval/asked outside an open turn")
        if data.get("id") in self.asked:
            self._fail(seq, f"approval/asked {data.get('id')} repeats an open question")
        self.asked.add(data.get("id"))

    def _decided(self, seq: int, data: Any) -> None:
        if self.turn is None or data.get("id") not in self.asked:
            self._fail(seq, f"approval/decided {data.get('id')} answers no open question")
        self.asked.discard(data.get("id"))

    def _end_seed(self, seq: int, data: Any) -> None:
        if self.turn is not None:
            self._fail(seq, "session/end-seed inside an open turn (the seed was not repaired)")


_HANDLERS = {
    "turn/start": Grammar._turn_start,
    "turn/end": Grammar._turn_end,
    "step/start": Grammar._step_start,
    "step/end": Grammar._step_end,
    "assistant/message": Grammar._assistant,
    "tool/call": Grammar._tool_call,
    "tool/result": Grammar._tool_result,
    "approval/asked": Grammar._asked,
    "approval/decided": Grammar._decided,
    "session/end-seed": Grammar._end_seed,
}


def problems(grammar: Grammar, events: Any, *, closed: bool, what: str) -> list[str]:
    """What ``grammar`` finds when fed ``events`` (``closed``: they must end between turns),
    worded as the log-grammar invariant reports it; ``what`` names the log."""
    try:
        grammar.feed_all(events)
    except GrammarError as err:
        return [f"{what} is not well formed: {err}"]
    if closed and not grammar.closed:
        return [f"{what} ends inside turn {grammar.turn}"]
    return []
