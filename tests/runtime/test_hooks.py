"""Waterfalls and plugin contexts (the mechanism every policy is mounted through)."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest
import trio
import trio.testing

from runtime.agent.hooks import HOOK_NAMES, Hooks, PluginContext, mount
from runtime.agent.signal import AbortSignal


async def _final(value: Any) -> Any:
    return ("final", value)


def test_handlers_run_in_registration_order_and_prepend_goes_first() -> None:
    async def main() -> None:
        hooks = Hooks()
        seen: list[str] = []

        def handler(tag: str) -> Any:
            async def h(value: Any, next: Any) -> Any:
                seen.append(tag)
                return await next(value + [tag])

            return h

        hooks.on("llm/stream", handler("a"))
        hooks.on("llm/stream", handler("b"))
        hooks.on("llm/stream", handler("first"), prepend=True)
        assert await hooks.waterfall("llm/stream", [], _final) == ("final", ["first", "a", "b"])
        assert seen == ["first", "a", "b"]

    trio.run(main)


def test_a_handler_may_answer_without_next_and_sync_handlers_work() -> None:
    async def main() -> None:
        hooks = Hooks()
        later: list[str] = []
        hooks.on("approval/request", lambda req, next: "allowed-once")  # plain function

        async def never(req: Any, next: Any) -> Any:
            later.append("ran")
            return await next(req)

        hooks.on("approval/request", never)
        assert await hooks.waterfall("approval/request", object(), _final) == "allowed-once"
        assert later == []

        def throws(req: Any, next: Any) -> Any:
            raise ValueError("sync boom")

        hooks2 = Hooks()
        hooks2.on("approval/request", throws)
        with pytest.raises(ValueError, match="sync boom"):
            await hooks2.waterfall("approval/request", object(), _final)

    trio.run(main)


def test_dispose_removes_exactly_one_handler_and_a_running_waterfall_uses_a_snapshot() -> None:
    async def main() -> None:
        hooks = Hooks()
        calls: list[str] = []

        async def a(value: Any, next: Any) -> Any:
            calls.append("a")
            dispose_b()  # removing a later handler mid-run does not affect this run
            return await next(value)

        async def b(value: Any, next: Any) -> Any:
            calls.append("b")
            return await next(value)

        hooks.on("tools/execute", a)
        dispose_b = hooks.on("tools/execute", b)
        await hooks.waterfall("tools/execute", 1, _final)
        assert calls == ["a", "b"]
        calls.clear()
        await hooks.waterfall("tools/execute", 1, _final)
        assert calls == ["a"]
        dispose_b()  # idempotent
        assert hooks.count("tools/execute") == 1

    trio.run(main)


def test_a_waterfall_leaves_no_reference_cycle_behind() -> None:
    """What a hook call held (its ``final``, the handlers' values) goes when the call returns,
    by reference counting: a chain that called itself through a closure was a cycle, so every
    hook call left its final and whatever that closed over to the garbage collector."""
    hooks = Hooks()
    hooks.on("llm/stream", lambda value, nxt: nxt(value + 1))
    hooks.on("llm/stream", lambda value, nxt: nxt(value * 2))

    class Held:
        pass

    async def main() -> weakref.ref[Held]:
        held = Held()

        async def final(value: int) -> int:
            return value + (held is not None)

        assert await hooks.waterfall("llm/stream", 1, final) == 5
        return weakref.ref(held)

    gc.collect()
    gc.disable()
    try:
        gone = trio.run(main)
        assert gone() is None, "the waterfall's final outlived the call (a reference cycle holds it)"
    finally:
        gc.enable()


def test_unknown_hook_name_is_refused() -> None:
    with pytest.raises(KeyError, match="unknown hook"):
        Hooks().on("agent/post-step", lambda v, n: None)
    assert "agent/post-step" not in HOOK_NAMES  # there is no post-step barrier (spec §4)


def test_plugin_context_dispose_removes_everything_it_registered() -> None:
    class Plugin:
        name = "p"

        def apply(self, ctx: PluginContext) -> None:
            ctx.on("agent/pre-step", lambda v, n: n(v))
            ctx.on("llm/stream", lambda v, n: n(v))
            ctx.on("tools/execute", lambda v, n: n(v))
            ctx.on_dispose(lambda: disposed.append("callback"))

    disposed: list[str] = []
    hooks = Hooks()
    ctx = mount(hooks, Plugin())
    assert [hooks.count(n) for n in ("agent/pre-step", "llm/stream", "tools/execute")] == [1, 1, 1]
    ctx.dispose()
    assert [hooks.count(n) for n in ("agent/pre-step", "llm/stream", "tools/execute")] == [0, 0, 0]
    assert disposed == ["callback"] and ctx.disposed


def test_abort_signal_propagates_to_children_and_cancels_linked_scopes() -> None:
    async def main() -> None:
        parent = AbortSignal()
        child = parent.child()
        with parent.linked_scope() as scope:
            parent.abort({"kind": "user"})
            await trio.sleep(1)
        assert scope.cancelled_caught
        assert child.aborted and child.reason == {"kind": "user"}
        late = parent.child()
        assert late.aborted
        with late.linked_scope() as s2:
            await trio.sleep(1)
        assert s2.cancelled_caught

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
