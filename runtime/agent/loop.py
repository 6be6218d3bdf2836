"""The agent loop: one turn of steps, each a model request and its tool calls (spec §1.6).

Per turn: ``turn/start``; per step: ``agent/pre-step`` (checkpoint A), ``step/start``, the
system message (first step of a session), entering user messages, ``request/header`` (+
``request/context`` when it changed), the ``llm/stream`` waterfall (checkpoint B), the
``assistant/message`` with its embedded stream, the tool calls; ``step/end`` and ``turn/end``
are always appended.  Cancellation mid-stream keeps the delivered prefix, marked
``interrupted``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import attrs
import trio

from runtime.agent.signal import AbortSignal
from runtime.ports.model import (
    Finish,
    ModelRequest,
    StreamPart,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from runtime.session.events import Event
from runtime.session.lossless import join_text
from runtime.session.session import Session
from runtime.tools.scheduler import StepTools, ToolCallBlock

if TYPE_CHECKING:
    from runtime.agent.hooks import Hooks
    from runtime.ports import Ports
    from runtime.ports.model import ModelAdapter
    from runtime.tools.registry import ToolRegistry


class AgentConfig(Protocol):
    @property
    def max_steps(self) -> int: ...
    @property
    def max_parallel_tool_calls(self) -> int: ...


class Host(Protocol):
    """What an agent uses of the runtime that drives it (:class:`runtime.agent.runtime.Runtime`,
    which makes agents: the dependency points from the runtime to the loop, never back)."""

    ports: Ports
    hooks: Hooks
    tools: ToolRegistry
    model: ModelAdapter

    @property
    def config(self) -> AgentConfig: ...


SURFACE_TYPES = ("system/message", "user/message", "assistant/message", "tool/result")


@attrs.frozen
class PreStep:
    agent: Agent
    turn: int
    step: int


@attrs.frozen
class TurnOutcome:
    turn: int
    reason: dict[str, Any]
    steps: int


class StepRejected(Exception):
    pass


def user_message(message_id: str, text: str, *, plugin: str | None = None) -> dict[str, Any]:
    source: dict[str, Any] = {"kind": "plugin", "plugin": plugin} if plugin else {"kind": "user"}
    return {"id": message_id, "role": "user", "content": [{"type": "text", "text": text}], "source": source}


def derived_history(events: Sequence[Event]) -> tuple[dict[str, Any], ...]:
    """The model-visible history: surface messages in log order."""
    out = []
    for event in events:
        if event.type in SURFACE_TYPES:
            out.append(event.data.get("message", event.data))
    return tuple(out)


class SurfaceHistory:
    """One session's model-visible history, extended as its log grows (a log only grows):
    deriving it again from the whole log at every model request made each step of a long
    session cost more than the one before."""

    def __init__(self) -> None:
        self._seen = 0
        self._messages: list[dict[str, Any]] = []

    def of(self, events: Sequence[Event]) -> tuple[dict[str, Any], ...]:
        """:func:`derived_history` of ``events``, the same session's log as at every call before."""
        self._messages.extend(derived_history(events[self._seen :]))
        self._seen = len(events)
        return tuple(self._messages)


def next_turn_number(events: Sequence[Event]) -> int:
    for event in reversed(events):
        if event.type == "turn/start":
            return int(event.data["turn"]) + 1
    return 1


class _Assembly:
    """Builds the assistant message from stream parts, recording each part with its time."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.records: list[dict[str, Any]] = []
        self.usage: Usage | None = None
        self.finish: str | None = None

    def add(self, part: StreamPart, time: int) -> None:
        self.records.append({"type": "chunk", "time": time, "chunk": part.to_chunk()})
        if isinstance(part, TextDelta):
            block = self.blocks.setdefault(part.index, {"type": "text", "text": ""})
            block["text"] = join_text(block["text"], part.text)
        elif isinstance(part, ToolCallDelta):
            block = self.blocks.setdefault(part.index, {"type": "tool-call", "id": part.id, "name": "", "arguments": ""})
            if part.name:
                block["name"] = part.name
            block["arguments"] = join_text(block["arguments"], part.arguments_delta)
        elif isinstance(part, Usage):
            self.usage = part
        elif isinstance(part, Finish):
            self.finish = part.reason

    def content(self, *, interrupted: bool) -> list[dict[str, Any]]:
        blocks = [self.blocks[i] for i in sorted(self.blocks)]
        if interrupted or self.finish == "max-tokens":  # a cut-off message never owes tool calls
            blocks = [b for b in blocks if b["type"] != "tool-call"]
        return blocks


class Agent:
    """One live session driven by the loop.  Create with :func:`runtime.agent.resume`."""

    def __init__(self, runtime: Host, session: Session, *, system: str | None = None) -> None:
        self.runtime = runtime
        self.session = session
        self.ids = runtime.ports.ids
        self.system = system
        self._signal: AbortSignal | None = None
        self._inbox: list[dict[str, Any]] = []
        self._header_sent: dict[str, Any] | None = None
        self._last_finish: str | None = None
        self._surface = SurfaceHistory()
        self.max_steps = runtime.config.max_steps

    @property
    def id(self) -> str:
        return self.session.id

    def queue_notice(self, text: str, *, plugin: str) -> None:
        self._inbox.append(user_message(self.ids.uuid(), text, plugin=plugin))

    def cancel(self, reason: str = "user") -> None:
        if self._signal is not None:
            self._signal.abort({"kind": reason})

    @property
    def turn_active(self) -> bool:
        return self._signal is not None

    async def run_turn(self, text: str | None) -> TurnOutcome:
        """Run one turn to its end (or to a crash)."""
        if self._signal is not None:
            raise RuntimeError(f'session "{self.id}" already has a turn in progress')
        rt = self.runtime
        session = self.session
        turn = next_turn_number(session.events)
        entering = list(self._inbox)
        if text is not None:
            entering.append(user_message(self.ids.uuid(), text))
        session.append("turn/start", {"turn": turn})  # if this fails, no turn was opened
        self._inbox.clear()
        signal = self._signal = AbortSignal()
        reason: dict[str, Any] = {"kind": "completed"}
        step = 0
        try:
            await rt.ports.probe.at("agent.turn.start", turn=turn)
            while True:
                if signal.aborted:
                    reason = {"kind": "aborted", "reason": signal.reason or {"kind": "user"}}
                    break
                await rt.ports.probe.at("agent.pre_step", turn=turn, step=step + 1)
                decision = await rt.hooks.waterfall("agent/pre-step", PreStep(self, turn, step + 1), _continue)
                if decision == "reject":
                    reason = {"kind": "blocked"}
                    break
                if signal.aborted:  # cancelled during the pre-step barrier: no step is opened
                    reason = {"kind": "aborted", "reason": signal.reason or {"kind": "user"}}
                    break
                if step == 0 and not entering:  # nothing enters the first step: no step at all (§1.6)
                    break
                step += 1
                more = await self._step(turn, step, entering if step == 1 else self._drain_inbox(), signal)
                if signal.aborted:
                    reason = {"kind": "aborted", "reason": signal.reason or {"kind": "user"}}
                    break
                if not more:
                    if self._last_finish == "max-tokens":
                        reason = {"kind": "max-tokens"}
                    break
                if step >= self.max_steps:
                    reason = {"kind": "error", "error": {"message": f"step limit of {self.max_steps} reached", "code": "UNKNOWN"}}
                    break
        except Exception as err:
            reason = {"kind": "error", "error": {"message": str(err) or type(err).__name__, "code": "UNKNOWN"}}
        except BaseException:
            # torn down from outside (trio cancellation of the owner): an abort, never "completed"
            reason = {"kind": "aborted", "reason": {"kind": "disposed"}}
            raise
        finally:
            self._signal = None
            session.append("turn/end", {"turn": turn, "reason": reason})
        await rt.ports.probe.at("agent.turn.end", turn=turn)
        return TurnOutcome(turn, reason, step)

    def _drain_inbox(self) -> list[dict[str, Any]]:
        entering, self._inbox = self._inbox, []
        return entering

    async def _step(self, turn: int, step: int, entering: list[dict[str, Any]], signal: AbortSignal) -> bool:
        """One step; True when its tool results call for another step."""
        rt = self.runtime
        session = self.session
        session.append("step/start", {"turn": turn, "step": step})
        try:
            if self.system is not None and session.last_of("system/message") is None:
                session.append(
                    "system/message",
                    {"message": {"id": self.ids.uuid(), "role": "system", "content": [{"type": "text", "text": self.system}]}},
                    surface_op="append",
                )
            for message in entering:
                session.append("user/message", message, surface_op="append")
            self._append_request_events()
            request = ModelRequest(
                session_id=session.id,
                turn=turn,
                step=step,
                messages=self._surface.of(session.events),
                tools=tuple(rt.tools.specs()),
                provider=rt.model.provider,
                model=rt.model.model,
            )
            appended, calls = await self._stream(request, turn, step, signal)
            # Even when the turn was cancelled right after the assistant message, every call
            # gets its tool/call and an ABORTED_BEFORE_DISPATCH result (no dangling call).
            tools = StepTools(
                session=session,
                registry=rt.tools,
                probe=rt.ports.probe,
                agent=self,
                turn=turn,
                step=step,
                signal=signal,
                max_parallel=rt.config.max_parallel_tool_calls,
            )
            if appended:
                try:
                    await rt.ports.probe.at("agent.assistant.appended", turn=turn, step=step)
                except BaseException:
                    tools.abandon(calls)  # torn down before the calls started: close them all
                    raise
            if not calls:
                return False
            await tools.run(calls)
            return not signal.aborted
        finally:
            session.append("step/end", {"turn": turn, "step": step})

    def _append_request_events(self) -> None:
        rt = self.runtime
        session = self.session
        header = {"config": {"provider": rt.model.provider, "model": rt.model.model}, "tools": rt.tools.specs()}
        previous = session.last_of("request/header")
        if previous is None:
            reason = "initial"
        elif self._header_sent is None:
            reason = "resume"
        elif previous.data["header"] != header:
            reason = "change"
        else:
            reason = None
        if reason is not None:
            session.append("request/header", {"header": header, "reason": reason})
        self._header_sent = header
        ctx = {"provider": rt.model.provider, "model": rt.model.model}
        last = session.last_of("request/context")
        if last is None or last.data != ctx:
            session.append("request/context", ctx)

    async def _stream(self, request: ModelRequest, turn: int, step: int, signal: AbortSignal) -> tuple[bool, list[ToolCallBlock]]:
        """The model's response: whether an assistant message was appended, and its calls
        (none when the stream was interrupted)."""
        rt = self.runtime
        assembly = _Assembly()
        clock = rt.ports.clock
        self._last_finish = None

        async def final(req: ModelRequest) -> AsyncIterator[StreamPart]:
            await rt.ports.probe.at("llm.request", turn=turn, step=step)
            return rt.model.stream(req)

        with signal.linked_scope() as scope:
            stream = await rt.hooks.waterfall("llm/stream", request, final)
            try:
                async for part in stream:
                    if signal.aborted:  # checked per part: an adapter need not be cancellable
                        break
                    assembly.add(part, clock.now_ms())
                    await rt.ports.probe.at("llm.chunk", turn=turn, step=step)
            finally:
                closer = getattr(stream, "aclose", None)
                if closer is not None:
                    with trio.CancelScope(shield=True):
                        await closer()
        # Aborted before the assistant message is appended: whatever was delivered is an
        # interrupted prefix.  An abort after the append closes its calls as not dispatched.
        interrupted = scope.cancelled_caught or signal.aborted
        self._last_finish = None if interrupted else assembly.finish
        content = assembly.content(interrupted=interrupted)
        if interrupted and not content:
            return False, []
        data: dict[str, Any] = {
            "turn": turn,
            "step": step,
            "message": {
                "id": self.ids.uuid(),
                "role": "assistant",
                "content": content,
                "source": {"kind": "model", "provider": rt.model.provider, "model": rt.model.model},
            },
        }
        if assembly.usage is not None:
            data["usage"] = {"inputTokens": assembly.usage.input_tokens, "outputTokens": assembly.usage.output_tokens}
        data["stream"] = assembly.records
        if interrupted:
            data["interrupted"] = True
        self.session.append("assistant/message", data, surface_op="append")
        if interrupted:
            return True, []
        return True, [ToolCallBlock(b["id"], b["name"], b["arguments"]) for b in content if b["type"] == "tool-call"]


async def _continue(_: Any) -> str:
    return "continue"
