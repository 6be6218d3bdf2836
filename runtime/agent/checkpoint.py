"""The semantic checkpoint policy: three fail-closed durability barriers (spec §4).

A: ``agent/pre-step`` flushes before the next step (prompt intake, or the previous step's
   assistant message and results, are durable before another request is derived).
B: ``llm/stream`` flushes lazily — after ``request/header`` is appended and before the
   adapter stream is constructed; no flush when the request has no live session.
C: the outermost ``tools/execute`` flushes after pre-execute and guards, before the tool
   body; nested dispatch shares the outer checkpoint.  If the call was aborted while the
   flush was pending, the canonical ``ABORTED_BEFORE_DISPATCH`` result is returned.

A failed flush propagates: no request is sent, the tool body does not run, the turn fails
before another step.  The policy is a plugin beside the loop; the loop works without it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from runtime.agent.hooks import Next, PluginContext
from runtime.persistence import context
from runtime.persistence.store import SessionStore
from runtime.ports.model import ModelRequest, StreamPart
from runtime.tools import results as R
from runtime.tools.registry import ToolExecution
from runtime.tools.results import ToolResult

# what the rest of each hook chain hands back (see runtime.agent.hooks.Next)
_NextStream = Callable[[ModelRequest], Awaitable[AsyncIterator[StreamPart]]]
_NextTool = Callable[[ToolExecution], Awaitable[ToolResult]]


class CheckpointPolicy:
    name = "session-checkpoint-policy"
    inject = ("llm", "sessionPersistence", "sessions", "tools")  # the reference plugin's shape

    def __init__(self, store: SessionStore) -> None:
        self._store = store

    def apply(self, ctx: PluginContext) -> None:
        ctx.on("agent/pre-step", self._pre_step)
        ctx.on("llm/stream", self._llm_stream)
        ctx.on("tools/execute", self._tools_execute)

    async def _pre_step(self, step: Any, next: Next) -> Any:
        await self._store.flush(step.agent.session, context.PRE_STEP)
        return await next(step)

    async def _llm_stream(self, request: ModelRequest, next: _NextStream) -> AsyncIterator[StreamPart]:
        if not self._store.is_live(request.session_id):
            return await next(request)
        store = self._store
        session = store.session_of(request.session_id)

        async def checkpointed() -> AsyncIterator[StreamPart]:
            await store.flush(session, context.LLM_STREAM)
            inner = await next(request)
            try:
                async for part in inner:
                    yield part
            finally:
                closer = getattr(inner, "aclose", None)
                if closer is not None:
                    await closer()

        return checkpointed()

    async def _tools_execute(self, ex: ToolExecution, next: _NextTool) -> ToolResult:
        if ex.agent is None or ex.parent is not None:
            return await next(ex)
        await self._store.flush(ex.agent.session, context.TOOLS_EXECUTE)
        if ex.signal.aborted:
            return R.aborted_before_dispatch()
        return await next(ex)
