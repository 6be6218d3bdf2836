"""v0 session shapes, as the reference agent loop logs them, in durable batches.

A shape is a header plus a list of batches (each one ``append`` of the real DSH writer:
one zstd frame or a run of JSONL lines).  The events pass DSH's own load validation
(``Session.fromRestore``: message shapes, surface metadata) and dsh-sim's migration, so a
difference between the readers is about durability, never about an event dsh-sim cannot
express.  Streams are ``assistant/chunk`` deltas (three or more pack into a row) cited by
the ``assistant/message``; tool calls follow the four moments (message, ``tool/call``,
``tool/result``).
"""

from __future__ import annotations

import hashlib
from typing import Any

import attrs

Record = dict[str, Any]
BASE_TIME = 1_767_225_600_000


@attrs.define
class Log:
    """Events in seq order, cut into batches as they are appended."""

    id: str
    cwd: str = "/work/proj"
    events: list[Record] = attrs.field(factory=list)
    batches: list[list[Record]] = attrs.field(factory=list)
    _open: int = 0  # index of the first event of the batch being built
    turn: int = 0
    step: int = 0

    def meta(self) -> Record:
        return {"version": 0, "id": self.id, "createdAt": BASE_TIME - 60_000, "cwd": self.cwd}

    def add(self, kind: str, data: Any, **extra: Any) -> int:
        seq = len(self.events)
        self.events.append({"type": kind, "seq": seq, "time": BASE_TIME + 7 * seq, "data": data, **extra})
        return seq

    def cut(self) -> None:
        """End the current batch (one durable append)."""
        if len(self.events) > self._open:
            self.batches.append(self.events[self._open :])
            self._open = len(self.events)

    # -- the agent loop's events -------------------------------------------------------------

    def start_turn(self, prompt: str) -> None:
        self.turn += 1
        self.step = 0
        self.add("turn/start", {"turn": self.turn})
        self.start_step()
        user = {"id": f"user-{self.turn}", "role": "user", "content": [{"type": "text", "text": prompt}], "source": {"kind": "user"}}
        self.add("user/message", user, surfaceOp="append")
        header = {"config": {"provider": "sim", "model": "sim-model"}, "system": "You are a simulated agent."}
        self.add("request/header", {"header": header, "reason": "initial" if self.turn == 1 else "resume"})
        if self.turn == 1:
            self.add("request/context", {"provider": "sim", "model": "sim-model"})

    def start_step(self) -> None:
        self.step += 1
        self.add("step/start", {"turn": self.turn, "step": self.step})

    def answer(self, text: str, calls: tuple[str, ...] = (), pad: int = 0, deltas: bool = False) -> None:
        """Streamed chunks, then the assistant message citing them (``pad`` bytes of filler text;
        ``deltas``: the text streamed as ``text-delta`` chunks of three characters, which DSH packs
        into a ``text-chunks`` row)."""
        t, s = self.turn, self.step
        cited = [self.add("assistant/chunk", {"turn": t, "step": s, "chunk": {"type": "block-start", "index": 0, "blockType": "text"}})]
        pieces = [text[i : i + 3] for i in range(0, len(text), 3)] or [""]
        if deltas:
            for piece in pieces:
                chunk = {"type": "text-delta", "index": 0, "text": piece}
                cited.append(self.add("assistant/chunk", {"turn": t, "step": s, "chunk": chunk}))
        if pad:  # filler that does not compress away, so a large batch stays large in zstd too
            pieces.append(" " + filler(f"{self.id}:{t}:{s}", pad))
        full = "".join(pieces)
        content: list[Record] = [{"type": "text", "text": full}]
        content += [{"type": "tool-call", "id": c, "name": "pay", "arguments": '{"amount":7}'} for c in calls]
        message = {
            "id": f"assistant-{t}-{s}",
            "role": "assistant",
            "content": content,
            "source": {"kind": "model", "provider": "sim", "model": "sim-model"},
        }
        self.add("assistant/message", {"turn": t, "step": s, "message": message}, surfaceOp="append", sourceEventSeqs=cited)

    def call(self, call_id: str) -> int:
        return self.add("tool/call", {"turn": self.turn, "step": self.step, "callId": call_id, "name": "pay", "arguments": '{"amount":7}'})

    def result(self, call_id: str, call_seq: int) -> None:
        block = {"type": "tool-result", "toolCallId": call_id, "isError": False, "content": [{"type": "text", "text": "paid"}]}
        message = {"id": f"result-{call_id}", "role": "user", "source": {"kind": "tool", "callId": call_id}, "content": [block]}
        self.add("tool/result", {"turn": self.turn, "step": self.step, "message": message}, surfaceOp="append", sourceEventSeqs=[call_seq])

    def end_step(self) -> None:
        self.add("step/end", {"turn": self.turn, "step": self.step})

    def end_turn(self) -> None:
        self.add("turn/end", {"turn": self.turn, "reason": {"kind": "completed"}})

    def balanced_turn(self, prompt: str, call_id: str | None, pad: int = 0) -> None:
        """A complete turn in the batches a checkpointing agent appends."""
        self.start_turn(prompt)
        self.cut()
        if call_id is None:
            self.answer("done", pad=pad)
        else:
            self.answer("paying", (call_id,), pad=pad)
            self.cut()
            seq = self.call(call_id)
            self.cut()
            self.result(call_id, seq)
            self.end_step()
            self.start_step()
            self.answer("done")
        self.end_step()
        self.end_turn()
        self.cut()


def filler(key: str, size: int) -> str:
    """``size`` characters of hash-chain hex: deterministic, and incompressible beyond 2:1."""
    out, block = [], hashlib.sha256(key.encode()).digest()
    for _ in range(size // 64 + 1):
        block = hashlib.sha256(block).digest()
        out.append(hashlib.sha256(block + b"x").hexdigest())
    return "".join(out)[:size]


def shape(name: str, session_id: str, *, turns: int = 2, pad: int = 0) -> Log:
    """A named shape: balanced, or a last turn interrupted at one of the four moments."""
    log = Log(session_id)
    for turn in range(1, turns + 1):
        log.balanced_turn(f"prompt {turn}", f"c{turn}" if turn % 2 else None, pad=pad if turn == turns else 0)
    if name == "balanced":
        return log
    log.start_turn("interrupted")
    log.cut()
    if name == "interrupted":  # open turn and step, before any answer
        return log
    calls = ("x1", "x2") if name == "mixed" else ("x1",)
    log.answer("calling", calls, pad=pad)
    log.cut()
    if name == "not-started":  # the model asked, no tool/call is durable
        return log
    seq = log.call("x1")
    if name == "mixed":  # x1 has its result, x2 was never started
        log.result("x1", seq)
    log.cut()
    return log


SHAPES = ("balanced", "interrupted", "not-started", "outcome-unknown", "mixed")


def shape_of(steps: list[dict[str, Any]], session_id: str) -> Log:
    """The session shape of a scenario: each ``prompt`` step one turn, each scripted response
    one step (its tool calls each logged message → ``tool/call`` → ``tool/result``), in the
    batches a checkpointing agent appends.  Crashes and faults of the scenario are not part
    of the shape: the DSH explorer puts its own crash at every filesystem operation."""
    log = Log(session_id)
    for step in steps:
        if step.get("op") != "prompt":
            continue
        args = step.get("args", {})
        log.start_turn(str(args.get("text", "")))
        log.cut()
        responses = args.get("responses") or [{"text": ""}]
        for n, response in enumerate(responses):
            if n:
                log.start_step()
            calls = tuple(str(c.get("id", f"c{i}")) for i, c in enumerate(response.get("tool_calls") or []))
            log.answer(str(response.get("text", "")), calls)
            log.cut()
            for call in calls:
                seq = log.call(call)
                log.cut()
                log.result(call, seq)
            log.end_step()
        log.end_turn()
        log.cut()
    return log
