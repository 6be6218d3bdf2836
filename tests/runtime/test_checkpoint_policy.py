"""The semantic checkpoint policy (spec §4; reference tests §8.6, adapted).

Flushes are observed through a fake store whose flush can be gated or made to fail; the
loop-level cases run the real runtime over the JSONL backend with the policy mounted on a
store wrapper.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
import trio.testing

from dsh_sim.mutants import catalogue as mutants
from runtime.agent.checkpoint import CheckpointPolicy
from runtime.agent.hooks import Hooks, mount
from runtime.agent.loop import PreStep, _continue
from runtime.persistence import context
from runtime.persistence.errors import SessionPersistenceNotFoundError
from runtime.ports import NULL_PROBE
from runtime.ports.model import Finish, ModelRequest, StreamPart
from runtime.session.session import Session
from runtime.tools import results as R
from runtime.tools.registry import ToolRegistry
from runtime.tools.results import ToolResult
from tests.support.agent import (
    FailingFlushStore,
    FakeAgent,
    FakeStore,
    FnTool,
    PartsModel,
    StepClock,
    execution,
    of_type,
    runtime,
    stored_events,
    text_response,
    tool_calls_response,
    types,
)

MOCK = trio.testing.MockClock


class RecordingAdapter:
    provider = "mock"
    model = "mock"

    def __init__(self, order: list[str]) -> None:
        self.order = order

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamPart]:
        self.order.append("adapter")
        yield Finish("stop")


def setup(order: list[str] | None = None) -> tuple[Hooks, FakeStore, ToolRegistry, Any]:
    hooks = Hooks()
    store = FakeStore(order)
    registry = ToolRegistry(hooks, NULL_PROBE, [])
    ctx = mount(hooks, CheckpointPolicy(store))  # type: ignore[arg-type]
    return hooks, store, registry, ctx


def request(session_id: str | None) -> ModelRequest:
    return ModelRequest(session_id, 1, 1, (), (), "mock", "mock")


async def drain(hooks: Hooks, req: ModelRequest, adapter: RecordingAdapter) -> None:
    async def final(r: ModelRequest) -> AsyncIterator[StreamPart]:
        return adapter.stream(r)

    stream = await hooks.waterfall("llm/stream", req, final)
    async for _ in stream:
        pass


def live_session(store: FakeStore, session_id: str) -> Session:
    session = store.add(Session(session_id, StepClock()))
    session.append("turn/start", {"turn": 1})
    return session


# ----------------------------------------------------------------- request boundary (B)


def test_awaits_the_checkpoint_before_constructing_the_downstream_stream() -> None:
    async def main() -> None:
        order: list[str] = []
        hooks, store, _, _ = setup(order)
        live_session(store, "request-checkpoint")
        store.gate = trio.Event()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(drain, hooks, request("request-checkpoint"), RecordingAdapter(order))
            await trio.testing.wait_all_tasks_blocked()
            assert order == ["flush:start"]
            store.gate.set()
        assert order == ["flush:start", "flush:end", "adapter"]
        assert store.flushed == [("request-checkpoint", context.LLM_STREAM)]

    trio.run(main)


def test_a_request_without_a_session_id_is_not_checkpointed() -> None:
    async def main() -> None:
        order: list[str] = []
        hooks, store, _, _ = setup(order)
        await drain(hooks, request(None), RecordingAdapter(order))
        assert order == ["adapter"]

    trio.run(main)


def test_a_request_for_a_detached_session_id_is_not_checkpointed() -> None:
    async def main() -> None:
        order: list[str] = []
        hooks, store, _, _ = setup(order)
        await drain(hooks, request("detached"), RecordingAdapter(order))
        assert order == ["adapter"]

    trio.run(main)


def test_does_not_dispatch_the_adapter_when_the_checkpoint_rejects() -> None:
    async def main() -> None:
        order: list[str] = []
        hooks, store, _, _ = setup(order)
        live_session(store, "request-failure")
        store.fail = OSError("disk unavailable")
        with pytest.raises(OSError, match="disk unavailable"):
            await drain(hooks, request("request-failure"), RecordingAdapter(order))
        assert "adapter" not in order

    trio.run(main)


# ----------------------------------------------------------------- tool boundary (C)


def _write_tool(order: list[str], ran: list[bool] | None = None) -> FnTool:
    async def body(ex: Any) -> ToolResult:
        order.append("tool")
        if ran is not None:
            ran.append(True)
        return ToolResult.text("written")

    return FnTool("write", body)


def test_awaits_the_checkpoint_before_a_top_level_tool_body() -> None:
    async def main() -> None:
        order: list[str] = []
        hooks, store, registry, _ = setup(order)
        registry.add(_write_tool(order))
        agent = FakeAgent(live_session(store, "tool-checkpoint"))
        store.gate = trio.Event()
        results: list[ToolResult] = []

        async def run() -> None:
            results.append(await registry.run(execution(registry, "write", call_id="write-1", agent=agent)))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            await trio.testing.wait_all_tasks_blocked()
            assert order == ["flush:start"]
            store.gate.set()
        assert results[0].is_error is False
        assert order == ["flush:start", "flush:end", "tool"]
        assert store.flushed == [("tool-checkpoint", context.TOOLS_EXECUTE)]

    trio.run(main)


def test_does_not_dispatch_when_cancellation_lands_during_the_tool_checkpoint() -> None:
    async def main() -> None:
        order: list[str] = []
        hooks, store, registry, _ = setup(order)
        registry.add(_write_tool(order))
        agent = FakeAgent(live_session(store, "tool-checkpoint-cancel"))
        store.gate = trio.Event()
        ex = execution(registry, "write", call_id="write-cancelled", agent=agent)
        results: list[ToolResult] = []

        async def run() -> None:
            results.append(await registry.run(ex))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            await trio.testing.wait_all_tasks_blocked()
            assert order == ["flush:start"]
            ex.signal.abort("cancelled during checkpoint")
            store.gate.set()
        result = results[0]
        assert result == R.aborted_before_dispatch()
        assert result.content == ({"type": "text", "text": "Error: tool call aborted before dispatch"},)
        assert result.is_error is True
        assert result.error is not None and result.error.message == "tool call aborted before dispatch"
        assert result.error.info() == {"name": "AbortError", "code": "ABORTED_BEFORE_DISPATCH"}
        assert order == ["flush:start", "flush:end"]

    trio.run(main)


def test_a_rejected_tool_checkpoint_becomes_an_error_result_without_running_the_body() -> None:
    async def main() -> None:
        order: list[str] = []
        ran: list[bool] = []
        hooks, store, registry, _ = setup(order)
        registry.add(_write_tool(order, ran))
        post: list[str] = []
        hooks.on("tools/post-execute", lambda pair, next: post.append("post") or next(pair))
        agent = FakeAgent(live_session(store, "tool-failure"))
        store.fail = OSError("disk unavailable")
        result = await registry.run(execution(registry, "write", call_id="write-2", agent=agent))
        assert result.is_error is True
        assert result.content == ({"type": "text", "text": "Error: disk unavailable"},)
        assert ran == [] and "tool" not in order
        assert post == []  # a pipeline failure is final: no post-execute

    trio.run(main)


def test_a_nested_dispatch_reuses_the_outer_checkpoint() -> None:
    async def main() -> None:
        hooks, store, registry, _ = setup()
        registry.add(FnTool("nested"))
        agent = FakeAgent(live_session(store, "nested-tool"))
        outer = execution(registry, "outer", call_id="outer-1", agent=agent)
        result = await registry.run(execution(registry, "nested", call_id="nested-1", agent=agent, parent=outer))
        assert result.is_error is False
        assert store.flushed == []

    trio.run(main)


def test_a_bare_dispatch_without_an_agent_is_not_checkpointed() -> None:
    async def main() -> None:
        hooks, store, registry, _ = setup()
        registry.add(FnTool("bare"))
        assert (await registry.run(execution(registry, "bare"))).is_error is False
        assert store.flushed == []

    trio.run(main)


# ----------------------------------------------------------------- pre-step (A), lifecycle


def test_checkpoints_during_pre_step_processing() -> None:
    async def main() -> None:
        hooks, store, _, _ = setup()
        agent = FakeAgent(live_session(store, "post-step"))
        assert await hooks.waterfall("agent/pre-step", PreStep(agent, 1, 1), _continue) == "continue"  # type: ignore[arg-type]
        assert store.flushed == [("post-step", context.PRE_STEP)]

    trio.run(main)


def test_removes_its_wrappers_when_disposed() -> None:
    async def main() -> None:
        order: list[str] = []
        hooks, store, registry, ctx = setup(order)
        registry.add(FnTool("t"))
        agent = FakeAgent(live_session(store, "disposed-policy"))
        await drain(hooks, request("disposed-policy"), RecordingAdapter(order))
        assert len(store.flushed) == 1
        ctx.dispose()
        assert [hooks.count(n) for n in ("agent/pre-step", "llm/stream", "tools/execute")] == [0, 0, 0]
        await drain(hooks, request("disposed-policy"), RecordingAdapter(order))
        await registry.run(execution(registry, "t", agent=agent))
        await hooks.waterfall("agent/pre-step", PreStep(agent, 1, 1), _continue)  # type: ignore[arg-type]
        assert len(store.flushed) == 1

    trio.run(main)


def test_plugin_shape() -> None:
    assert CheckpointPolicy.name == "session-checkpoint-policy"
    assert list(CheckpointPolicy.inject) == ["llm", "sessionPersistence", "sessions", "tools"]
    assert callable(CheckpointPolicy.apply)


# ----------------------------------------------------------------- in the loop, real store


class RecordingStore(FailingFlushStore):
    """Real durability, plus what the log ended with at every barrier."""

    def __init__(self, store: Any) -> None:
        super().__init__(store, RuntimeError("unused"), set())
        self.at_barrier: list[tuple[str, str]] = []

    async def flush(self, session: Session, reason: str = context.EXPLICIT_FLUSH) -> None:
        self.at_barrier.append((reason, session.events[-1].type))
        await super().flush(session, reason)


def test_barriers_sit_where_the_spec_puts_them_and_make_the_prefix_durable(tmp_path: Any) -> None:
    async def main() -> None:
        seen_on_disk: list[list[str]] = []

        async def body(ex: Any) -> ToolResult:
            seen_on_disk.append(types(await stored_events(tmp_path, "barriers")))
            return ToolResult.text("ok")

        model = PartsModel([tool_calls_response([("c1", "side_effect", {})]), text_response("done")])
        async with runtime(tmp_path, model, [FnTool("side_effect", body)], checkpoint_policy=False) as rt:
            recording = RecordingStore(rt.store)
            rt.mount(CheckpointPolicy(recording))  # type: ignore[arg-type]
            agent = await rt.create_agent("barriers")
            outcome = await agent.run_turn("go")
            assert outcome.reason == {"kind": "completed"}
            assert recording.at_barrier == [
                (context.PRE_STEP, "turn/start"),
                (context.LLM_STREAM, "request/context"),
                (context.TOOLS_EXECUTE, "tool/call"),
                (context.PRE_STEP, "step/end"),  # step 1's assistant message + results, closed
                (context.LLM_STREAM, "step/start"),
            ]
            # the tool body ran only after its tool/call was on disk
            assert seen_on_disk[0][-2:] == ["assistant/message", "tool/call"]

    trio.run(main)


def test_a_rejected_request_checkpoint_closes_step_and_turn_with_an_error(tmp_path: Any) -> None:
    async def main() -> None:
        model = PartsModel([text_response("never sent")])
        async with runtime(tmp_path, model, checkpoint_policy=False) as rt:
            failing = FailingFlushStore(rt.store, OSError("disk unavailable"), {context.LLM_STREAM})
            rt.mount(CheckpointPolicy(failing))  # type: ignore[arg-type]
            agent = await rt.create_agent("request-failure", cwd=str(tmp_path))
            outcome = await agent.run_turn("hello")
            events = agent.session.events
            assert model.requests == []  # the adapter was never called
            assert types(events) == [
                "turn/start",
                "step/start",
                "user/message",
                "request/header",
                "request/context",
                "step/end",
                "turn/end",
            ]
            assert events[-1].data == {
                "turn": 1,
                "reason": {"kind": "error", "error": {"message": "disk unavailable", "code": "UNKNOWN"}},
            }
            assert outcome.reason["kind"] == "error"

    trio.run(main)


def test_a_rejected_pre_step_checkpoint_fails_the_turn_before_any_step(tmp_path: Any) -> None:
    async def main() -> None:
        model = PartsModel([text_response("never sent")])
        async with runtime(tmp_path, model, checkpoint_policy=False) as rt:
            failing = FailingFlushStore(rt.store, OSError("disk unavailable"), {context.PRE_STEP})
            rt.mount(CheckpointPolicy(failing))  # type: ignore[arg-type]
            agent = await rt.create_agent("pre-step-failure")
            await agent.run_turn("hello")
            assert types(agent.session.events) == ["turn/start", "turn/end"]
            assert agent.session.events[-1].data["reason"]["error"]["message"] == "disk unavailable"
            assert model.requests == []

    trio.run(main)


def test_without_the_policy_the_loop_works_and_durability_comes_from_window_or_flush(tmp_path: Any) -> None:
    async def main() -> None:
        model = PartsModel([tool_calls_response([("c1", "t", {})]), text_response("done")])
        async with runtime(tmp_path, model, [FnTool("t")], checkpoint_policy=False) as rt:
            assert "session-checkpoint-policy" not in rt.plugins
            assert [rt.hooks.count(n) for n in ("agent/pre-step", "llm/stream", "tools/execute")] == [0, 0, 0]
            agent = await rt.create_agent("no-policy")
            outcome = await agent.run_turn("go")
            assert outcome.reason == {"kind": "completed"} and outcome.steps == 2
            with pytest.raises(SessionPersistenceNotFoundError):  # nothing was published: no barrier, window not elapsed
                await stored_events(tmp_path, "no-policy")
            clock.jump(0.2)  # the fixed 200 ms write-behind window elapses
            binding = rt.store.binding(agent.session)
            while binding.write_behind.has_work:
                await trio.sleep(0)
            on_disk = await stored_events(tmp_path, "no-policy")
            assert [e.seq for e in on_disk] == list(range(len(agent.session)))
            await agent.run_turn(None)  # an empty turn: no steps
            await rt.store.flush(agent.session)  # an explicit flush is the other way
            assert types(await stored_events(tmp_path, "no-policy"))[-2:] == ["turn/start", "turn/end"]

    clock = MOCK()  # rate 0, no autojump: the window only elapses when the test jumps the clock
    trio.run(main, clock=clock)


# ----------------------------------------------------------------- the checks catch seeded bugs


async def _tool_then_request_order() -> list[str]:
    order: list[str] = []
    hooks, store, registry, _ = setup(order)
    registry.add(_write_tool(order))
    agent = FakeAgent(live_session(store, "seeded"))
    await registry.run(execution(registry, "write", agent=agent))
    await drain(hooks, request("seeded"), RecordingAdapter(order))
    return order


@pytest.mark.parametrize(
    "mutant",
    ["checkpoint.no_flush_before_tool_body", "checkpoint.flush_after_tool_body", "checkpoint.no_lazy_flush_before_request"],
)
def test_the_barrier_order_checks_detect_misplaced_flushes(mutant: str) -> None:
    expected = ["flush:start", "flush:end", "tool", "flush:start", "flush:end", "adapter"]
    assert trio.run(_tool_then_request_order) == expected
    with mutants.enabled([mutant]):
        assert trio.run(_tool_then_request_order) != expected


def test_concurrent_tool_checkpoints_share_the_barrier_without_duplicating_seqs(tmp_path: Any) -> None:
    async def main() -> None:
        durable_at_body: dict[str, list[str]] = {}

        async def body(ex: Any) -> ToolResult:
            on_disk = await stored_events(tmp_path, "parallel")
            durable_at_body[ex.call_id] = [e.data["callId"] for e in of_type(on_disk, "tool/call")]
            await trio.sleep(1)
            return ToolResult.text(ex.call_id)

        calls = [(f"c{n}", "p", {}) for n in (1, 2, 3)]
        model = PartsModel([tool_calls_response(calls), text_response("done")])
        async with runtime(tmp_path, model, [FnTool("p", body, parallel=True)]) as rt:
            agent = await rt.create_agent("parallel")
            await agent.run_turn("go")
            live = [e.to_record() for e in agent.session.events]
        assert all(call_id in seen for call_id, seen in durable_at_body.items())
        stored = await stored_events(tmp_path, "parallel")
        assert [e.to_record() for e in stored] == live
        assert [e.seq for e in stored] == list(range(len(stored)))

    trio.run(main, clock=MOCK(autojump_threshold=0))
