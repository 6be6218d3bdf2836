"""The tool registry and the per-call pipeline (spec §5.2).

For one call: ``tools/pre-execute`` decides allow / deny / ask; ask goes through the
approval seam; after an allow the monotonic guards may only deny; then ``tools/execute``
wraps the body (the checkpoint policy's barrier sits there); ``tools/post-execute`` may
accept or block.  Pipeline failures (a throwing hook, guard or seam included) are final
error results and skip post-execute; nothing a hook throws escapes to the scheduler.

``execute`` (prepare + dispatch) and ``finalize`` (post-execute) are separate so that the
step scheduler can run post-execute in model order even when calls settle out of order.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import attrs

from runtime.agent.hooks import Hooks
from runtime.agent.signal import AbortSignal
from runtime.ports.probe import Probe
from runtime.tools import results as R
from runtime.tools.results import ToolResult


@attrs.frozen
class Allow:
    kind: str = "allow"


@attrs.frozen
class Deny:
    reason: str
    kind: str = "deny"
    cancelled: bool = False  # the approval question was cancelled (not answered "no")


@attrs.frozen
class Ask:
    reason: str | None = None
    kind: str = "ask"


Decision = Allow | Deny | Ask


@attrs.frozen
class Accept:
    content: tuple[dict[str, Any], ...] | None = None


@attrs.frozen
class Block:
    feedback: str


@attrs.define
class CallProgress:
    """How far one call got (the execution's only mutable part): the step that owns it reads
    this when it is torn down and can no longer ask the pipeline."""

    dispatched: bool = False


@attrs.frozen(eq=False)
class ToolExecution:
    """Everything a tool body and the hooks see about one call."""

    call_id: str
    root_call_id: str
    name: str
    arguments: Any  # parsed JSON, or the raw string when it is not JSON
    raw_arguments: str
    signal: AbortSignal
    agent: Any = None  # the Agent that owns the call; None for a bare dispatch
    parent: ToolExecution | None = None  # set on nested dispatch
    registry: ToolRegistry | None = None
    progress: CallProgress = attrs.field(factory=CallProgress)

    @property
    def dispatched(self) -> bool:
        """The tool body started: its effect may have happened."""
        return self.progress.dispatched

    @property
    def idempotency_key(self) -> str:
        """The key a side-effecting tool forwards to services that accept one."""
        return self.call_id

    async def dispatch(self, name: str, arguments: Any, *, index: int) -> ToolResult:
        """Nested dispatch: shares the outer checkpoint (the policy skips calls with a parent)."""
        assert self.registry is not None
        raw = json.dumps(arguments, separators=(",", ":"), sort_keys=True)
        nested = ToolExecution(
            call_id=f"{self.call_id}:nested:{index}",
            root_call_id=self.root_call_id,
            name=name,
            arguments=arguments,
            raw_arguments=raw,
            signal=self.signal.child(),
            agent=self.agent,
            parent=self,
            registry=self.registry,
        )
        return await self.registry.run(nested)


class Tool(Protocol):
    name: str
    description: str
    requires_approval: bool

    def is_concurrency_safe(self, arguments: Any) -> bool: ...

    async def execute(self, ex: ToolExecution) -> ToolResult: ...


Guard = Callable[[ToolExecution], Awaitable[str | None]]
ApprovalSeam = Callable[[ToolExecution, Ask], Awaitable[Decision]]


def parse_arguments(raw: str) -> Any:
    """Empty → ``{}``; invalid JSON passes through as the raw string (spec §5.1)."""
    if raw == "":
        return {}
    try:
        return json.loads(raw)
    except ValueError:
        return raw


class ToolRegistry:
    def __init__(self, hooks: Hooks, probe: Probe, tools: list[Tool] | None = None) -> None:
        self._hooks = hooks
        self._probe = probe
        self._tools: dict[str, Tool] = {}
        self.guards: list[Guard] = []
        self.approval_seam: ApprovalSeam | None = None
        for tool in tools or ():
            self.add(tool)

    def add(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def service(self, name: str) -> Any:
        """A service a mounted plugin provides (``None`` when no such plugin is mounted)."""
        return self._hooks.services.get(name)

    def specs(self) -> list[dict[str, Any]]:
        return [{"name": t.name, "description": t.description} for t in sorted(self._tools.values(), key=lambda t: t.name)]

    def execution_mode(self, name: str, arguments: Any) -> str:
        """``parallel`` only when the tool exists and says exactly ``True``; else ``exclusive``."""
        tool = self._tools.get(name)
        if tool is None:
            return "exclusive"
        try:
            return "parallel" if tool.is_concurrency_safe(arguments) is True else "exclusive"
        except Exception:
            return "exclusive"

    async def run(self, ex: ToolExecution) -> ToolResult:
        """The whole pipeline for one call (nested dispatch and bare calls use this)."""
        return await self.finalize(ex, await self.execute(ex))

    async def execute(self, ex: ToolExecution) -> ToolResult:
        """Prepare and dispatch; the result still owes ``finalize`` unless it is final."""
        try:
            result = await self._prepare(ex)
        except Exception as err:  # a throwing pre-execute hook, guard or approval seam
            return R.from_exception(err, final=True)
        if result is None:
            result = await self._dispatch(ex)
        return result

    async def finalize(self, ex: ToolExecution, result: ToolResult) -> ToolResult:
        """``tools/post-execute``; final (pipeline-failure) results pass through untouched."""
        if result.final:
            return result
        try:
            verdict = await self._hooks.waterfall("tools/post-execute", (ex, result), _accept)
        except Exception as err:
            return R.from_exception(err, final=True)
        if isinstance(verdict, Block):
            return ToolResult.failure(verdict.feedback)
        if isinstance(verdict, Accept) and verdict.content is not None:
            return attrs.evolve(result, content=verdict.content)
        return result

    async def _prepare(self, ex: ToolExecution) -> ToolResult | None:
        if ex.signal.aborted:
            return R.aborted_before_dispatch()
        decision = await self._hooks.waterfall("tools/pre-execute", ex, self._default_decision)
        if isinstance(decision, Ask):
            decision = await self._ask(ex, decision)
            if isinstance(decision, Deny) and decision.cancelled and ex.signal.aborted:
                return R.aborted_before_dispatch()
        if not isinstance(decision, (Allow, Deny)):
            decision = Deny(f"tools/pre-execute returned an invalid decision {decision!r}")
        if isinstance(decision, Allow):
            for guard in tuple(self.guards):  # monotonic: a guard can only deny
                reason = await guard(ex)
                if reason is not None:
                    decision = Deny(reason)
                    break
        if isinstance(decision, Deny):
            return ToolResult.failure(decision.reason)
        if ex.signal.aborted:
            return R.aborted_before_dispatch()
        return None

    async def _default_decision(self, ex: ToolExecution) -> Decision:
        tool = self._tools.get(ex.name)
        if tool is not None and tool.requires_approval:
            return Ask(f'tool "{ex.name}" requires approval')
        return Allow()

    async def _ask(self, ex: ToolExecution, ask: Ask) -> Decision:
        if self.approval_seam is None:
            reason = ask.reason if ask.reason is not None else f'tool "{ex.name}" requires approval (not yet supported)'
            return Deny(reason)
        if ex.agent is None:
            return Deny(f'tool "{ex.name}" requires approval, but the call has no agent to route it through')
        return await self.approval_seam(ex, ask)

    async def _dispatch(self, ex: ToolExecution) -> ToolResult:
        try:
            result: ToolResult = await self._hooks.waterfall("tools/execute", ex, self._body)
            return result
        except Exception as err:
            return R.from_exception(err, final=True)

    async def _body(self, ex: ToolExecution) -> ToolResult:
        if ex.signal.aborted:
            return R.aborted_before_dispatch()
        tool = self._tools.get(ex.name)
        if tool is None:
            return R.ToolResult.failure(f'unknown tool "{ex.name}"', final=True)
        await self._probe.at("tools.execute.body", call_id=ex.call_id, tool=ex.name, nested=ex.parent is not None)
        ex.progress.dispatched = True
        try:
            result = await tool.execute(ex)
        except Exception as err:
            return R.from_exception(err, final=True)
        if ex.signal.aborted and not result.is_error:
            return R.aborted()
        return result


async def _accept(_: Any) -> Accept:
    return Accept()
