"""Shared fixtures for the agent-side tests: deterministic ports, fake stores, tools, models.

Everything here is test scaffolding; the runtime itself is exercised through its public API.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import trio

from runtime.adapters.os_fs import OsFileSystem
from runtime.agent.runtime import Runtime, RuntimeConfig, open_runtime
from runtime.agent.signal import AbortSignal
from runtime.persistence.backend import JsonlBackend
from runtime.ports import NULL_PROBE, Ports
from runtime.ports.model import (
    Finish,
    ModelRequest,
    StreamPart,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from runtime.session.events import Event
from runtime.session.session import Session
from runtime.tools.registry import ToolExecution, ToolRegistry
from runtime.tools.results import ToolResult

EPOCH_MS = 1_760_000_000_000


class StepClock:
    """Event times: a fixed epoch plus one millisecond per reading (deterministic)."""

    def __init__(self) -> None:
        self.now = EPOCH_MS

    def now_ms(self) -> int:
        self.now += 1
        return self.now


class CountingIds:
    def __init__(self) -> None:
        self.n = 0

    def uuid(self) -> str:
        self.n += 1
        return f"00000000-0000-4000-8000-{self.n:012d}"

    def token_hex(self, nbytes: int) -> str:
        self.n += 1
        return f"{self.n:0{2 * nbytes}x}"[-2 * nbytes :]


def make_ports(probe: Any = NULL_PROBE) -> Ports:
    """Real filesystem, deterministic clock and ids."""
    return Ports(fs=OsFileSystem(), clock=StepClock(), ids=CountingIds(), probe=probe)


# -- stores ------------------------------------------------------------------------------


class FakeStore:
    """The three things the checkpoint policy needs: ``flush``, ``is_live``, ``session_of``.

    ``gate`` (a ``trio.Event``) holds every flush until set; ``fail`` makes flushes raise
    after ``flush:start``.  ``order`` is shared with the test so it can interleave its own
    marks ('adapter', 'tool', ...).
    """

    def __init__(self, order: list[str] | None = None) -> None:
        self.order = order if order is not None else []
        self.sessions: dict[str, Session] = {}
        self.flushed: list[tuple[str, str]] = []
        self.gate: trio.Event | None = None
        self.fail: Exception | None = None
        self.fail_reasons: set[str] | None = None  # None: every flush fails while ``fail`` is set

    def add(self, session: Session) -> Session:
        self.sessions[session.id] = session
        return session

    def is_live(self, session_id: str | None) -> bool:
        return session_id is not None and session_id in self.sessions

    def session_of(self, session_id: str) -> Session:
        return self.sessions[session_id]

    async def flush(self, session: Session, reason: str = "explicit flush") -> None:
        self.order.append("flush:start")
        self.flushed.append((session.id, reason))
        if self.gate is not None:
            await self.gate.wait()
        if self.fail is not None and (self.fail_reasons is None or reason in self.fail_reasons):
            raise self.fail
        self.order.append("flush:end")


class FailingFlushStore:
    """Wraps the real store; flushes with a listed reason fail (durability is still real)."""

    def __init__(self, store: Any, fail: Exception, reasons: set[str]) -> None:
        self._store = store
        self._fail = fail
        self._reasons = reasons
        self.flushed: list[str] = []

    def is_live(self, session_id: str | None) -> bool:
        return self._store.is_live(session_id)

    def session_of(self, session_id: str) -> Session:
        return self._store.session_of(session_id)

    async def flush(self, session: Session, reason: str = "explicit flush") -> None:
        self.flushed.append(reason)
        if reason in self._reasons:
            raise self._fail
        await self._store.flush(session, reason)


# -- agents, tools, models ---------------------------------------------------------------


class FakeAgent:
    """An agent carrier for unit tests: a session, ids and an inbox."""

    def __init__(self, session: Session, ids: Any | None = None) -> None:
        self.session = session
        self.ids = ids or CountingIds()
        self.notices: list[tuple[str, str]] = []

    def queue_notice(self, text: str, *, plugin: str) -> None:
        self.notices.append((text, plugin))


def open_turn_session(session_id: str = "s", *, turn_open: bool = True) -> Session:
    session = Session(session_id, StepClock())
    session.append("turn/start", {"turn": 1})
    session.append(
        "user/message",
        {"id": "u1", "role": "user", "content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}},
        surface_op="append",
    )
    if not turn_open:
        session.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    return session


Body = Callable[[ToolExecution], Awaitable[ToolResult]]


class FnTool:
    """A tool whose body is a test function."""

    def __init__(
        self,
        name: str,
        body: Body | None = None,
        *,
        parallel: bool | Callable[[Any], Any] = False,
        requires_approval: bool = False,
    ) -> None:
        self.name = name
        self.description = f"test tool {name}"
        self.requires_approval = requires_approval
        self.parallel = parallel
        self._body = body
        self.calls: list[str] = []

    def is_concurrency_safe(self, arguments: Any) -> Any:
        return self.parallel(arguments) if callable(self.parallel) else self.parallel

    async def execute(self, ex: ToolExecution) -> ToolResult:
        self.calls.append(ex.call_id)
        if self._body is None:
            return ToolResult.text(f"done-{ex.call_id}")
        return await self._body(ex)


class GatedTool(FnTool):
    """Bodies block until the test releases them by call id (like the reference's gatedTool)."""

    def __init__(self, name: str, *, parallel: bool = True) -> None:
        super().__init__(name, self._gated, parallel=parallel)
        self.started: list[str] = []
        self.gates: dict[str, trio.Event] = {}
        self.running = 0
        self.max_running = 0

    def gate(self, call_id: str) -> trio.Event:
        return self.gates.setdefault(call_id, trio.Event())

    def release(self, *call_ids: str) -> None:
        for call_id in call_ids:
            self.gate(call_id).set()

    async def _gated(self, ex: ToolExecution) -> ToolResult:
        self.started.append(ex.call_id)
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        try:
            await self.gate(ex.call_id).wait()
        finally:
            self.running -= 1
        return ToolResult.text(f"done-{ex.call_id}")


def execution(
    registry: ToolRegistry,
    name: str,
    *,
    call_id: str = "call-1",
    agent: Any = None,
    parent: ToolExecution | None = None,
    signal: AbortSignal | None = None,
    arguments: Any = None,
) -> ToolExecution:
    args = {} if arguments is None else arguments
    return ToolExecution(
        call_id=call_id,
        root_call_id=parent.root_call_id if parent is not None else call_id,
        name=name,
        arguments=args,
        raw_arguments=json.dumps(args),
        signal=signal or AbortSignal(),
        agent=agent,
        parent=parent,
        registry=registry,
    )


def tool_calls_response(calls: Sequence[tuple[str, str, Any]]) -> list[StreamPart]:
    """Stream parts of one assistant message made only of tool calls (id, name, args)."""
    parts: list[StreamPart] = []
    for index, (call_id, name, args) in enumerate(calls):
        raw = args if isinstance(args, str) else json.dumps(args)
        parts.append(ToolCallDelta(index, call_id, name, raw))
    parts.append(Usage(5, 5))
    parts.append(Finish("tool-calls"))
    return parts


def text_response(text: str) -> list[StreamPart]:
    return [TextDelta(0, text), Usage(5, 5), Finish("stop")]


class PartsModel:
    """A model adapter replaying lists of parts; a list may contain ``HANG`` to block there.

    ``reached`` is set when the stream arrives at a ``HANG`` (the test may then cancel).
    """

    HANG = object()

    def __init__(self, responses: Sequence[Sequence[Any]], *, provider: str = "mock", model: str = "mock") -> None:
        self.provider = provider
        self.model = model
        self._responses = [list(r) for r in responses]
        self.requests: list[ModelRequest] = []
        self.reached = trio.Event()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamPart]:
        self.requests.append(request)
        if not self._responses:
            raise RuntimeError("no scripted response left")
        for part in self._responses.pop(0):
            if part is PartsModel.HANG:
                self.reached.set()
                await trio.sleep_forever()
            yield part


def types(events: Sequence[Event]) -> list[str]:
    return [e.type for e in events]


def of_type(events: Sequence[Event], kind: str) -> list[Event]:
    return [e for e in events if e.type == kind]


def result_summary(event: Event) -> dict[str, Any]:
    block = event.data["message"]["content"][0]
    return {
        "callId": event.data["message"]["source"]["callId"],
        "isError": block["isError"],
        "error": event.data.get("error"),
        "text": block["content"][0]["text"] if block["content"] else None,
    }


# -- runtimes over the real JSONL backend -------------------------------------------------


@contextlib.asynccontextmanager
async def runtime(
    root: Any,
    model: Any,
    tools: Sequence[Any] = (),
    *,
    plugins: Sequence[Any] = (),
    ports: Ports | None = None,
    **config: Any,
) -> AsyncIterator[Runtime]:
    """A runtime on ``root`` (a tmp path) with deterministic ports.

    When the block ends normally, every session log on disk is checked against the
    invariants of spec §1.7 (the logs the tests leave behind must all be well formed).
    """
    cfg = RuntimeConfig(root=str(root), **config)
    async with open_runtime(ports or make_ports(), cfg, model, tools, plugins) as rt:
        yield rt
    backend = JsonlBackend(str(root), make_ports(), compression=cfg.compression)
    for stat in await backend.list():
        assert_invariants(await stored_events(root, stat.header.id, compression=cfg.compression))


async def stored_events(root: Any, session_id: str, *, compression: str = "zstd") -> list[Event]:
    """What a fresh backend instance reads from disk (the valid prefix)."""
    backend = JsonlBackend(str(root), make_ports(), compression=compression)
    handle = await backend.open(session_id, "read")
    try:
        return await handle.read()
    finally:
        await handle.close()


def assert_invariants(events: Sequence[Event]) -> None:
    """The invariant companion's rules (spec §1.7) over a whole log."""
    open_turn: int | None = None
    open_step: int | None = None
    next_turn, next_step = 1, 1
    calls_in_step: set[str] = set()
    open_questions: set[str] = set()
    for index, event in enumerate(events):
        kind, data = event.type, event.data
        where = f"{kind} at seq {event.seq}"
        assert event.seq == index, f"{where}: seqs must be dense from 0"
        if kind == "turn/start":
            assert open_turn is None and data["turn"] == next_turn, where
            open_turn, next_turn, next_step = data["turn"], data["turn"] + 1, 1
        elif kind == "turn/end":
            assert open_turn == data["turn"] and open_step is None, where
            assert not open_questions, f"{where}: an approval question is unanswered"
            open_turn = None
        elif kind == "step/start":
            assert open_turn == data["turn"] and open_step is None and data["step"] == next_step, where
            open_step, next_step = data["step"], data["step"] + 1
            calls_in_step = set()
        elif kind in ("step/end", "assistant/message", "tool/call"):
            assert (data["turn"], data["step"]) == (open_turn, open_step), where
            if kind == "step/end":
                open_step = None
            if kind == "tool/call":
                calls_in_step.add(data["callId"])
        elif kind == "tool/result":
            assert (data["turn"], data["step"]) == (open_turn, open_step), where
            not_started = (data.get("error") or {}).get("code") == "TOOL_NOT_STARTED"
            assert not_started or data["message"]["source"]["callId"] in calls_in_step, where
        elif kind in ("request/header", "request/context", "todo/write"):
            assert open_turn is not None, where
        elif kind == "approval/asked":
            assert open_turn is not None and data["toolName"] and data["id"] not in open_questions, where
            open_questions.add(data["id"])
        elif kind == "approval/decided":
            assert open_turn is not None and data["id"] in open_questions, where
            assert data["outcome"] in ("allowed-once", "rejected", "cancelled", "unavailable"), where
            open_questions.discard(data["id"])
