"""A historical session as the old runtime logged it: one planned item per v0 event, in meaning.

The order inside a turn is the reference agent loop's (spec §1.6): ``turn/start``; per step
``step/start``, the entering ``user/message``, ``request/header`` (``initial`` for the log's
first, ``resume`` for a turn's first, ``change`` when the prompt changes mid-turn; none when
a later step's prompt is unchanged), ``request/context`` (first request only), the streamed
``assistant/chunk`` events, ``assistant/message`` citing them, ``tool/call`` per call as it
starts, ``tool/result`` per call in model order, ``step/end``; ``turn/end``.

Each :class:`Item` keeps what the event *means* beside its payload — which streamed attempt
a chunk belongs to, which chunks a message closes, which ``tool/call`` a result answers, the
prompt a request carried — so the expectation (:mod:`.expect`) can apply the migration rules
to the meaning rather than re-derive it from bytes.  The v0 seq of an item is its index.
"""

from __future__ import annotations

from typing import Any

import attrs

from dsh_sim.engine.determinism import EPOCH_MS
from dsh_sim.scenario.v0.model import CALL_ENDS, V0Session, V0Step, V0Stream

CONFIG = {"provider": "sim", "model": "sim-v0"}
SOURCE = {"kind": "model", "provider": "sim", "model": "sim-v0"}
CREATED_AT = EPOCH_MS - 120_000
PARENT = "v0-parent-session"


@attrs.frozen
class Item:
    type: str
    time: int
    data: Any
    surface: bool = False  # appended to the model-visible surface (v0 surfaceOp 'append')
    cites: tuple[int, ...] = ()  # message → its chunks; tool/result → its tool/call; title → messages;
    # a replacing summary → the nodes it shadows; compaction/summary → its shadowed range
    replaces: tuple[int, int] | None = None  # a surface replacement: the v0 span [start, end] it replaces
    attempt: int | None = None  # chunks and messages: the streamed attempt they belong to / close
    prompt: str | None = None  # request/header: the system prompt it carried


@attrs.frozen
class Plan:
    session: V0Session
    items: tuple[Item, ...]
    batches: tuple[tuple[int, int], ...]  # durable batches as item ranges [start, end)
    seed_length: int | None  # header seedLength (the inherited cut)

    def header_record(self) -> dict[str, Any]:
        """The v0 header line's record in the reference writer's key order (spec §3.3)."""
        record: dict[str, Any] = {"type": "session", "version": 0, "id": self.session.session_id, "createdAt": CREATED_AT}
        record["cwd"] = self.session.cwd
        if self.seed_length is not None:
            record["parentSession"] = PARENT
            record["seedLength"] = self.seed_length
        if self.session.subagent:
            record["origin"] = "subagent"
        record["delegationDepth"] = 1 if self.session.subagent else 0
        return record


def _time(seq: int, jitter: bool) -> int:
    base = EPOCH_MS - 60_000 + 10 * seq  # the legacy writer's clock: 10 ms per event
    return base + ((seq * 37) % 23 - 11 if jitter else 0)  # ±11 ms: gaps of -12..32 ms


class _Builder:
    def __init__(self, session: V0Session) -> None:
        self.session = session
        self.items: list[Item] = []
        self.attempts = 0
        self.headers = 0  # request headers logged so far
        self.prompt: str | None = None  # the last request header's prompt
        self.marks: dict[str, int] = {}  # where the final turn may stop (item counts)

    def add(self, kind: str, data: Any, **meaning: Any) -> int:
        seq = len(self.items)
        self.items.append(Item(kind, _time(seq, self.session.jitter), data, **meaning))
        return seq

    def turn(self, t: int, steps: tuple[V0Step, ...]) -> None:
        self.turn_start(t)
        for s, step in enumerate(steps, 1):
            self.step(t, s, step)
        self.add("turn/end", {"turn": t, "reason": {"kind": "completed"}})

    def legacy(self, t: int) -> bool:
        return self.session.legacy and t == 1

    def turn_start(self, t: int) -> None:
        """``turn/start``; in a legacy first turn with its retired ``trigger``, then the agent preset
        ``code`` selected (v3: ``ptc``)."""
        if not self.legacy(t):
            self.add("turn/start", {"turn": t})
            return
        self.add("turn/start", {"turn": t, "trigger": {"kind": "user"}})
        self.add("agent-preset/selected", {"agentPreset": "code"})

    def step(self, t: int, s: int, step: V0Step) -> None:
        self.add("step/start", {"turn": t, "step": s})
        if step.user is not None:
            message = {"id": f"v0-user-{t}", "role": "user", "content": [{"type": "text", "text": step.user}], "source": {"kind": "user"}}
            self.add("user/message", message, surface=True)
        if step.user is not None and self.legacy(t):
            self.legacy_step(t)
        if s == 1 or step.system != self.prompt:
            reason = "initial" if not self.headers else "resume" if s == 1 else "change"
            header: dict[str, Any] = {"config": dict(CONFIG)}
            if step.system is not None:
                header["system"] = step.system
            self.add("request/header", {"header": header, "reason": reason}, prompt=step.system)
            self.headers += 1
            self.prompt = step.system
            if self.headers == 1:
                self.add("request/context", dict(CONFIG))
        self.marks["request"] = len(self.items)
        if step.abandoned:
            self.chunks(t, s, V0Stream(text=step.abandoned), complete=False)
            # the spec names llm/retry but not its payload: a log-only event migration carries verbatim
            self.add("llm/retry", {"turn": t, "step": s, "attempt": 1, "error": {"message": "stream interrupted", "code": "UNKNOWN"}})
        chunks = self.chunks(t, s, step.answer, complete=True)
        self.marks["stream"] = chunks[0] + max(1, len(chunks) // 2)
        self.message(t, s, step.answer, chunks)
        calls = []
        for c in step.answer.calls:
            if self.legacy(t):  # the code-mode dispatcher logged each call's dispatch (v3: tool/ptc-dispatch*)
                self.add("tool/code-dispatch-start", {"turn": t, "step": s, "callId": c.id})
            calls.append(self.add("tool/call", {"turn": t, "step": s, "callId": c.id, "name": c.name, "arguments": c.arguments}))
            if self.legacy(t):
                self.add("tool/code-dispatch", {"turn": t, "step": s, "callId": c.id})
        if calls:
            self.marks["call"] = calls[0] + 1
        self.marks["results"] = len(self.items)
        for call, seq in zip(step.answer.calls, calls):
            result = {
                "id": f"v0-result-{call.id}",
                "role": "user",
                "source": {"kind": "tool", "callId": call.id},
                "content": [
                    {"type": "tool-result", "toolCallId": call.id, "isError": False, "content": [{"type": "text", "text": call.result}]}
                ],
            }
            self.add("tool/result", {"turn": t, "step": s, "message": result}, surface=True, cites=(seq,))
        self.marks["step_end"] = len(self.items)
        self.add("step/end", {"turn": t, "step": s})

    def legacy_step(self, t: int) -> None:
        """Retired vocabulary inside a legacy first step: a plugin message of the code-mode tools
        (v3: ``tools-ptc``), spliced from the inbox and appended, and a shell command whose
        ``command/done`` names its ``command/run`` by seq (v3: renumbered)."""
        plugin = {"kind": "plugin", "plugin": "tools-code-mode"}
        spliced = {"id": f"v0-inbox-{t}", "role": "user", "content": [{"type": "text", "text": "from the inbox"}], "source": plugin}
        self.add("agent/inbox/spliced", {"target": "next-step", "start": 0, "inserted": [spliced]})
        note = {"id": f"v0-code-{t}", "role": "user", "content": [{"type": "text", "text": "code mode is on"}], "source": plugin}
        self.add("user/message", note, surface=True)
        run = self.add("command/run", {"command": "ls", "cwd": self.session.cwd})
        self.add("command/done", {"sourceEventSeq": run, "exitCode": 0}, cites=(run,))

    def compaction(self) -> None:
        """A summary replacing every surface node so far (the spec names the compaction events,
        not their payloads: ``shadowedRange`` is the reference the runtime's migration renumbers)."""
        nodes = tuple(i for i, item in enumerate(self.items) if item.surface)
        span = (nodes[0], nodes[-1])
        self.add("compaction/start", {"reason": "manual"})
        if self.session.legacy:  # the older prune record names every node it drops by seq
            self.add("compaction/prune", {"shadowedSeqs": list(nodes)}, cites=nodes)
        summary = {"shadowedRange": {"start": span[0], "end": span[1]}, "summary": "the first turn, in short"}
        self.add("compaction/summary", summary, cites=span)
        message = {"id": "v0-summary-1", "role": "user", "content": [{"type": "text", "text": "Summary of turn 1."}]}
        self.add("user/message", dict(message, source={"kind": "plugin", "plugin": "compaction"}), surface=True, cites=nodes, replaces=span)
        self.add("compaction/end", {})

    def chunks(self, t: int, s: int, stream: V0Stream, *, complete: bool) -> list[int]:
        """The stream's chunk events (an abandoned attempt stops after its deltas)."""
        self.attempts += 1
        attempt = self.attempts
        out: list[int] = []

        def chunk(body: dict[str, Any]) -> None:
            out.append(self.add("assistant/chunk", {"turn": t, "step": s, "chunk": body}, attempt=attempt))

        index = 0
        for kind, pieces in (("reasoning", stream.reasoning), ("text", stream.text)):
            if pieces:
                chunk({"type": "block-start", "index": index, "blockType": kind})
                for piece in pieces:
                    chunk({"type": f"{kind}-delta", "index": index, "text": piece})
                if complete:
                    chunk({"type": "block-end", "index": index, "block": {"type": kind, "text": "".join(pieces)}})
                index += 1
        for call in stream.calls:
            chunk({"type": "block-start", "index": index, "blockType": "tool-call"})
            for k, piece in enumerate(call.pieces):
                named = {"name": call.name} if call.named_deltas or k == 0 else {}
                chunk({"type": "tool-call-delta", "index": index, "id": call.id, **named, "argumentsDelta": piece})
            block = {"type": "tool-call", "id": call.id, "name": call.name, "arguments": call.arguments}
            chunk({"type": "block-end", "index": index, "block": block})
            index += 1
        if complete:
            chunk({"type": "finish", "reason": {"kind": stream.finish}})
        return out

    def message(self, t: int, s: int, stream: V0Stream, chunks: list[int]) -> None:
        content: list[dict[str, Any]] = []
        if stream.reasoning:
            content.append({"type": "reasoning", "text": "".join(stream.reasoning)})
        if stream.text:
            content.append({"type": "text", "text": "".join(stream.text)})
        content += [{"type": "tool-call", "id": c.id, "name": c.name, "arguments": c.arguments} for c in stream.calls]
        message = {
            "id": f"v0-assistant-{t}" if s == 1 else f"v0-assistant-{t}-{s}",
            "role": "assistant",
            "content": content,
            "source": dict(SOURCE),
        }
        attempt = self.items[chunks[0]].attempt
        self.add("assistant/message", {"turn": t, "step": s, "message": message}, surface=True, cites=tuple(chunks), attempt=attempt)


_STOPS = {"open-stream": "stream", "open-call": "call", "open-step": "request", "orphan-call": "call"}


def _stop_step(steps: tuple[V0Step, ...], end: str) -> int:
    """The step the final turn stops in: the last one (the ends of CALL_ENDS: the last with calls)."""
    if end in CALL_ENDS:
        return max(s for s, step in enumerate(steps, 1) if step.answer.calls)
    return len(steps)


def build(session: V0Session) -> Plan:
    """The plan of ``session``: items, durable batches and the header's inherited cut."""
    b = _Builder(session)
    starts = [0]  # the per-turn layout: inherited turns + end-seed, each later turn, the notes
    seed_length = None
    for t, turn in enumerate(session.turns, 1):
        if session.inherited and t == session.inherited + 1:
            seed_length = b.add("session/end-seed", {})  # the fork's constructor appended it (spec §1.2)
        if t > max(1, session.inherited):
            starts.append(len(b.items))
        if t == len(session.turns) and session.end != "balanced":
            b.turn_start(t)
            stop = _stop_step(turn.steps, session.end)
            for s, step in enumerate(turn.steps[:stop], 1):
                b.step(t, s, step)
            if session.end == "ended-step-call":
                # the step's calls were recorded but none got a result, and the step still ended (a
                # scheduler failure: spec §5.3 fabricates no results); the old runtime crashed before turn/end
                del b.items[b.marks["results"] : b.marks["step_end"]]
            else:
                del b.items[b.marks[_STOPS[session.end]] :]  # the old runtime crashed here
            if session.end == "orphan-call":  # a tool/call no assistant block announced (spec §2.1: repair ignores it)
                first = turn.steps[stop - 1].answer.calls[0]
                b.add("tool/call", {"turn": t, "step": stop, "callId": f"orphan-{t}", "name": first.name, "arguments": first.arguments})
        else:
            b.turn(t, turn.steps)
        if t == 1 and session.title:
            users = tuple(i for i, item in enumerate(b.items) if item.type == "user/message")
            if session.legacy:
                b.add("session/title-llm-request", {"messageSeqs": list(users)}, cites=users)
            b.add("session/title", {"title": "A historical session", "messageSeqs": list(users)}, cites=users)
        if t == 1 and session.compact:
            b.compaction()
    if session.notes:
        starts.append(len(b.items))
        for n in range(session.notes):
            b.add("todo/write", {"n": n, "text": "legacy note"})
    n = len(b.items)
    if session.batch:
        starts = list(range(0, n, session.batch))
    starts = sorted({s for s in starts if s < n})
    batches = tuple(zip(starts, starts[1:] + [n]))
    return Plan(session, tuple(b.items), batches, seed_length)
