"""The step tool scheduler and the per-call pipeline (spec §5; reference tests §8.9, adapted)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import trio
import trio.testing

from dsh_sim.mutants import catalogue as mutants
from runtime.agent.hooks import Hooks
from runtime.agent.loop import derived_history
from runtime.agent.runtime import RuntimeConfig
from runtime.agent.signal import AbortSignal
from runtime.ports import NULL_PROBE
from runtime.session.session import Session
from runtime.tools import results as R
from runtime.tools.registry import (
    Accept,
    Block,
    Deny,
    ToolExecution,
    ToolRegistry,
    parse_arguments,
)
from runtime.tools.results import ToolResult
from runtime.tools.scheduler import StepTools, ToolCallBlock
from tests.support.agent import FnTool, GatedTool, StepClock, of_type, result_summary

MOCK = trio.testing.MockClock

ABORTED_BEFORE_DISPATCH = {"name": "AbortError", "code": "ABORTED_BEFORE_DISPATCH"}


class Harness:
    def __init__(self, *tools: Any, max_parallel: int = 10, signal: AbortSignal | None = None) -> None:
        self.hooks = Hooks()
        self.registry = ToolRegistry(self.hooks, NULL_PROBE, list(tools))
        self.session = Session("sched", StepClock())
        self.session.append("turn/start", {"turn": 1})
        self.session.append("step/start", {"turn": 1, "step": 1})
        self.signal = signal or AbortSignal()
        self.max_parallel = max_parallel
        self.pre: list[str] = []
        self.post: list[str] = []
        self.hooks.on("tools/pre-execute", self._pre)
        self.hooks.on("tools/post-execute", self._post)

    async def _pre(self, ex: ToolExecution, next: Any) -> Any:
        self.pre.append(ex.call_id)
        return await next(ex)

    async def _post(self, pair: Any, next: Any) -> Any:
        self.post.append(pair[0].call_id)
        return await next(pair)

    def step_tools(self) -> StepTools:
        return StepTools(
            session=self.session,
            registry=self.registry,
            probe=NULL_PROBE,
            agent=None,
            turn=1,
            step=1,
            signal=self.signal,
            max_parallel=self.max_parallel,
        )

    async def run(self, *calls: tuple[str, str]) -> list[ToolResult]:
        blocks = [ToolCallBlock(call_id, name, "{}") for call_id, name in calls]
        self.session.append(
            "assistant/message",
            {
                "turn": 1,
                "step": 1,
                "message": {
                    "id": "a1",
                    "role": "assistant",
                    "content": [{"type": "tool-call", "id": b.id, "name": b.name, "arguments": b.arguments} for b in blocks],
                    "source": {"kind": "model", "provider": "mock", "model": "mock"},
                },
            },
            surface_op="append",
        )
        return await self.step_tools().run(blocks)

    def calls(self) -> list[str]:
        return [e.data["callId"] for e in of_type(self.session.events, "tool/call")]

    def results(self) -> list[dict[str, Any]]:
        return [result_summary(e) for e in of_type(self.session.events, "tool/result")]

    def log(self) -> list[str]:
        out = []
        for e in self.session.events:
            if e.type == "tool/call":
                out.append(f"call:{e.data['callId']}")
            elif e.type == "tool/result":
                out.append(f"result:{e.data['message']['source']['callId']}")
        return out


def run(main: Callable[[], Any]) -> None:
    trio.run(main, clock=MOCK(autojump_threshold=0))


# ----------------------------------------------------------------- grouping


def test_parallel_siblings_start_together() -> None:
    async def main() -> None:
        gated = GatedTool("p")
        h = Harness(gated)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(h.run, ("c1", "p"), ("c2", "p"), ("c3", "p"))
            await trio.testing.wait_all_tasks_blocked()
            assert gated.started == ["c1", "c2", "c3"]
            assert h.results() == []
            gated.release("c1", "c2", "c3")
        assert [r["callId"] for r in h.results()] == ["c1", "c2", "c3"]

    run(main)


def test_an_exclusive_call_between_parallel_calls_forms_three_groups() -> None:
    async def main() -> None:
        order: list[str] = []

        async def read(ex: ToolExecution) -> ToolResult:
            order.append(f"r-start-{ex.call_id}")
            await trio.sleep(1)
            order.append(f"r-end-{ex.call_id}")
            return ToolResult.text("r")

        async def write(ex: ToolExecution) -> ToolResult:
            order.append(f"w-{ex.call_id}")
            return ToolResult.text("w")

        h = Harness(FnTool("r", read, parallel=True), FnTool("w", write))
        await h.run(("A1", "r"), ("A2", "w"), ("A3", "r"))
        assert order == ["r-start-A1", "r-end-A1", "w-A2", "r-start-A3", "r-end-A3"]

    run(main)


def test_execution_mode_is_parallel_only_for_an_exact_true() -> None:
    def boom(args: Any) -> bool:
        raise RuntimeError("classifier exploded")

    registry = ToolRegistry(
        Hooks(),
        NULL_PROBE,
        [
            FnTool("yes", parallel=True),
            FnTool("truthy", parallel=lambda a: 1),
            FnTool("boom", parallel=boom),
        ],
    )
    assert registry.execution_mode("yes", {}) == "parallel"
    assert registry.execution_mode("truthy", {}) == "exclusive"
    assert registry.execution_mode("boom", {}) == "exclusive"
    assert registry.execution_mode("unknown", {}) == "exclusive"


def test_arguments_parse_empty_as_object_and_pass_invalid_json_through() -> None:
    assert parse_arguments("") == {}
    assert parse_arguments('{"a":1}') == {"a": 1}
    assert parse_arguments("{not json") == "{not json"


def test_a_call_is_reclassified_when_it_is_about_to_start() -> None:
    async def main() -> None:
        gated = GatedTool("x", parallel=True)
        h = Harness(gated, max_parallel=2)

        async def swap_after_c1(pair: Any, next: Any) -> Any:
            if pair[0].call_id == "c1":
                gated.parallel = False  # like a result observer replacing the tool with an exclusive one
            return await next(pair)

        h.hooks.on("tools/post-execute", swap_after_c1)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(h.run, ("c1", "x"), ("c2", "x"), ("c3", "x"))
            await trio.testing.wait_all_tasks_blocked()
            assert gated.started == ["c1", "c2"]
            gated.release("c1")
            await trio.testing.wait_all_tasks_blocked()
            assert [r["callId"] for r in h.results()] == ["c1"]
            assert gated.started == ["c1", "c2"]  # c3 is exclusive now: it waits for c2
            gated.release("c2")
            await trio.testing.wait_all_tasks_blocked()
            assert gated.started == ["c1", "c2", "c3"] and gated.running == 1
            gated.release("c3")

    run(main)


# ----------------------------------------------------------------- ordering of results and hooks


def test_results_commit_in_model_order_even_when_a_later_call_settles_first() -> None:
    async def main() -> None:
        gated = GatedTool("p")
        h = Harness(gated)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(h.run, ("c1", "p"), ("c2", "p"))
            await trio.testing.wait_all_tasks_blocked()
            gated.release("c2")
            await trio.testing.wait_all_tasks_blocked()
            assert h.results() == []  # c2 settled, but nothing commits before c1
            gated.release("c1")
        assert [r["callId"] for r in h.results()] == ["c1", "c2"]
        history = derived_history(h.session.events)
        paired = [m["content"][0]["toolCallId"] for m in history if m.get("source", {}).get("kind") == "tool"]
        assert paired == ["c1", "c2"]
        results = of_type(h.session.events, "tool/result")
        calls = of_type(h.session.events, "tool/call")
        assert [r.source_event_seqs for r in results] == [(calls[0].seq,), (calls[1].seq,)]
        assert all(r.surface_op == "append" for r in results)

    run(main)


def test_pre_and_post_execute_observe_model_order() -> None:
    async def main() -> None:
        gated = GatedTool("p")
        h = Harness(gated)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(h.run, ("c1", "p"), ("c2", "p"), ("c3", "p"))
            await trio.testing.wait_all_tasks_blocked()
            gated.release("c3")
            await trio.testing.wait_all_tasks_blocked()
            gated.release("c2")
            await trio.testing.wait_all_tasks_blocked()
            gated.release("c1")
        assert h.pre == ["c1", "c2", "c3"]
        assert h.post == ["c1", "c2", "c3"]

    run(main)


def test_pre_execute_denials_and_errors_are_ordered_and_not_dispatched() -> None:
    async def main() -> None:
        gated = GatedTool("p")
        h = Harness(gated)

        async def policy(ex: ToolExecution, next: Any) -> Any:
            if ex.call_id == "c2":
                return Deny("blocked by policy")
            if ex.call_id == "c3":
                raise RuntimeError("pre exploded")
            return await next(ex)

        h.hooks.on("tools/pre-execute", policy)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(h.run, ("c1", "p"), ("c2", "p"), ("c3", "p"))
            await trio.testing.wait_all_tasks_blocked()
            gated.release("c1")
        assert gated.started == ["c1"]
        assert h.post == ["c1", "c2"]  # a deny goes through post-execute; a pipeline failure does not
        results = h.results()
        assert [r["callId"] for r in results] == ["c1", "c2", "c3"]
        assert results[1]["text"] == "Error: blocked by policy" and results[1]["isError"]
        assert "pre exploded" in results[2]["text"] and results[2]["isError"]

    run(main)


def test_post_execute_may_replace_content_or_block() -> None:
    async def main() -> None:
        h = Harness(FnTool("t"))

        async def post(pair: Any, next: Any) -> Any:
            ex, _ = pair
            if ex.call_id == "c1":
                return Accept(({"type": "text", "text": "replaced"},))
            return Block("not allowed to see this")

        h.hooks.on("tools/post-execute", post)
        await h.run(("c1", "t"), ("c2", "t"))
        assert [(r["text"], r["isError"]) for r in h.results()] == [
            ("replaced", False),
            ("Error: not allowed to see this", True),
        ]

    run(main)


# ----------------------------------------------------------------- the pool


def test_the_pool_never_exceeds_max_parallel_and_replenishes_as_calls_settle() -> None:
    async def main() -> None:
        gated = GatedTool("p")
        h = Harness(gated, max_parallel=2)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(h.run, *[(f"c{n}", "p") for n in (1, 2, 3, 4)])
            await trio.testing.wait_all_tasks_blocked()
            assert gated.started == ["c1", "c2"]
            gated.release("c1")
            await trio.testing.wait_all_tasks_blocked()
            assert gated.started == ["c1", "c2", "c3"]
            assert h.log()[:4] == ["call:c1", "call:c2", "result:c1", "call:c3"]
            gated.release("c2", "c3")
            await trio.testing.wait_all_tasks_blocked()
            gated.release("c4")
        assert gated.max_running == 2
        assert [r["callId"] for r in h.results()] == ["c1", "c2", "c3", "c4"]

    run(main)


def test_max_parallel_one_is_fully_serial() -> None:
    async def main() -> None:
        gated = GatedTool("p")
        h = Harness(gated, max_parallel=1)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(h.run, ("c1", "p"), ("c2", "p"))
            await trio.testing.wait_all_tasks_blocked()
            assert gated.started == ["c1"]
            gated.release("c1")
            await trio.testing.wait_all_tasks_blocked()
            assert gated.started == ["c1", "c2"]
            gated.release("c2")
        assert gated.max_running == 1

    run(main)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_an_invalid_max_parallel_is_refused(bad: Any) -> None:
    with pytest.raises(ValueError, match="maxParallelToolCalls must be a positive integer"):
        Harness(max_parallel=bad).step_tools()
    with pytest.raises(ValueError, match="maxParallelToolCalls must be a positive integer"):
        RuntimeConfig(root="/tmp/x", max_parallel_tool_calls=bad)
    assert RuntimeConfig(root="/tmp/x").max_parallel_tool_calls == 10


# ----------------------------------------------------------------- cancellation


def test_abort_before_a_parallel_group_starts_nothing_but_closes_every_call() -> None:
    async def main() -> None:
        gated = GatedTool("p")
        signal = AbortSignal()
        signal.abort({"kind": "user"})
        h = Harness(gated, signal=signal)
        await h.run(("c1", "p"), ("c2", "p"))
        assert gated.started == [] and h.pre == []
        assert h.calls() == ["c1", "c2"]
        assert [(r["callId"], r["isError"], r["error"]) for r in h.results()] == [
            ("c1", True, ABORTED_BEFORE_DISPATCH),
            ("c2", True, ABORTED_BEFORE_DISPATCH),
        ]
        assert h.results()[0]["text"] == "Error: tool call aborted before dispatch"

    run(main)


def test_abort_during_pre_execute_of_the_first_call_dispatches_nothing() -> None:
    async def main() -> None:
        gated = GatedTool("p")
        h = Harness(gated)

        async def cancel_on_c1(ex: ToolExecution, next: Any) -> Any:
            if ex.call_id == "c1":
                h.signal.abort({"kind": "user"})
            return await next(ex)

        h.hooks.on("tools/pre-execute", cancel_on_c1)
        await h.run(("c1", "p"), ("c2", "p"))
        assert gated.started == []
        assert h.calls() == ["c1", "c2"]
        assert [(r["callId"], r["error"]) for r in h.results()] == [
            ("c1", ABORTED_BEFORE_DISPATCH),
            ("c2", ABORTED_BEFORE_DISPATCH),
        ]

    run(main)


def test_abort_mid_pool_stops_replenishing_and_commits_started_results() -> None:
    async def main() -> None:
        gated = GatedTool("p")
        h = Harness(gated, max_parallel=2)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(h.run, *[(f"c{n}", "p") for n in (1, 2, 3, 4)])
            await trio.testing.wait_all_tasks_blocked()
            h.signal.abort({"kind": "user"})
            gated.release("c1", "c2")
        assert gated.started == ["c1", "c2"]
        assert h.calls() == ["c1", "c2", "c3", "c4"]
        results = h.results()
        assert [r["callId"] for r in results] == ["c1", "c2", "c3", "c4"]
        # started bodies that succeeded after the cancellation are reported ABORTED
        assert [r["error"] for r in results[:2]] == [{"name": "AbortError", "code": "ABORTED"}] * 2
        assert results[0]["text"] == "Error: tool call aborted"
        assert [r["error"] for r in results[2:]] == [ABORTED_BEFORE_DISPATCH] * 2

    run(main)


def test_no_exclusive_barrier_runs_after_a_parallel_group_aborts() -> None:
    async def main() -> None:
        gated = GatedTool("p")
        exclusive = FnTool("x")
        h = Harness(gated, exclusive, max_parallel=2)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(h.run, ("c1", "p"), ("c2", "p"), ("c3", "x"))
            await trio.testing.wait_all_tasks_blocked()
            h.signal.abort({"kind": "user"})
            gated.release("c1", "c2")
        assert exclusive.calls == []
        assert h.calls() == ["c1", "c2", "c3"]
        assert h.results()[-1]["callId"] == "c3" and h.results()[-1]["error"] == ABORTED_BEFORE_DISPATCH

    run(main)


def test_an_error_result_after_cancellation_stays_the_error() -> None:
    async def main() -> None:
        h = Harness()

        async def fails_after_abort(ex: ToolExecution) -> ToolResult:
            h.signal.abort({"kind": "user"})
            raise RuntimeError("remote refused")

        h.registry.add(FnTool("t", fails_after_abort))
        await h.run(("c1", "t"))
        assert h.results()[0]["text"] == "Error: remote refused"

    run(main)


def test_an_internal_failure_drains_started_calls_then_surfaces_without_fabricating() -> None:
    async def main() -> None:
        gated = GatedTool("p")
        h = Harness(gated, max_parallel=2)
        real_execute = h.registry.execute

        async def execute(ex: ToolExecution) -> ToolResult:
            if ex.call_id == "c2":
                raise RuntimeError("scheduler bug")
            return await real_execute(ex)

        h.registry.execute = execute  # type: ignore[method-assign]
        errors: list[BaseException] = []

        async def runner() -> None:
            try:
                await h.run(("c1", "p"), ("c2", "p"), ("c3", "p"))
            except RuntimeError as err:
                errors.append(err)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(runner)
            await trio.testing.wait_all_tasks_blocked()
            assert gated.started == ["c1"] and errors == []  # c1 still runs: it is drained, not cancelled
            gated.release("c1")
        assert [str(e) for e in errors] == ["scheduler bug"]
        assert h.calls() == ["c1", "c2"]  # c3 never started
        assert [r["callId"] for r in h.results()] == ["c1"]  # no fabricated result for c2 or c3

    run(main)


# ----------------------------------------------------------------- guards and identity


def test_monotonic_guards_can_deny_after_allow_but_never_reopen_a_deny() -> None:
    async def check() -> None:
        body = FnTool("t")
        h = Harness(body)
        consulted: list[str] = []

        async def guard(ex: ToolExecution) -> str | None:
            consulted.append(ex.call_id)
            return "guard says no" if ex.call_id == "c1" else None

        async def deny_c2(ex: ToolExecution, next: Any) -> Any:
            return Deny("policy says no") if ex.call_id == "c2" else await next(ex)

        h.registry.guards.append(guard)
        h.hooks.on("tools/pre-execute", deny_c2)
        await h.run(("c1", "t"), ("c2", "t"), ("c3", "t"))
        assert [r["text"] for r in h.results()] == ["Error: guard says no", "Error: policy says no", "done-c3"]
        assert body.calls == ["c3"]

    run(check)
    with mutants.enabled(["tools.guard_reopens_denied"]), pytest.raises(AssertionError):
        run(check)


def test_idempotency_key_is_the_call_id_and_nested_dispatch_carries_parent_and_root() -> None:
    async def check() -> None:
        seen: dict[str, ToolExecution] = {}

        async def inner(ex: ToolExecution) -> ToolResult:
            seen["inner"] = ex
            return ToolResult.text("inner")

        async def outer(ex: ToolExecution) -> ToolResult:
            seen["outer"] = ex
            nested = await ex.dispatch("inner", {"x": 1}, index=0)
            return ToolResult.text(f"outer+{nested.content[0]['text']}")

        h = Harness(FnTool("outer", outer), FnTool("inner", inner))
        await h.run(("call-7", "outer"))
        out, nested = seen["outer"], seen["inner"]
        assert out.idempotency_key == "call-7" and out.root_call_id == "call-7" and out.parent is None
        assert nested.parent is out and nested.root_call_id == "call-7"
        assert nested.call_id == "call-7:nested:0" and nested.idempotency_key == nested.call_id
        assert nested.arguments == {"x": 1} and nested.agent is out.agent
        assert h.calls() == ["call-7"]  # a nested dispatch is not a model-visible call
        assert h.results()[0]["text"] == "outer+inner"

    run(check)
    with mutants.enabled(["tools.idempotency_key_not_forwarded"]), pytest.raises(AssertionError):
        run(check)


def test_a_nested_call_is_aborted_with_its_parent() -> None:
    async def main() -> None:
        results: list[ToolResult] = []

        async def outer(ex: ToolExecution) -> ToolResult:
            ex.signal.abort({"kind": "user"})
            results.append(await ex.dispatch("inner", {}, index=0))
            return ToolResult.text("outer")

        inner = FnTool("inner")
        h = Harness(FnTool("outer", outer), inner)
        await h.run(("c1", "outer"))
        assert results == [R.aborted_before_dispatch()] and inner.calls == []

    run(main)
