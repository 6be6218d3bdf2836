"""Tools as the simulator sees them run: when each body begins and when it returns.

The runtime decides what a call's result says (a success, ABORTED, ABORTED_BEFORE_DISPATCH);
whether the body ran, and whether a cancellation came before it returned, is a fact only the
other side of the tool port knows.  Every tool a simulated process mounts is wrapped here, so
the cancellation oracle (:mod:`dsh_sim.evidence.oracles.cancellation`) can hold each result to
those facts.  The wrapper adds no await and no behaviour: it only records.
"""

from __future__ import annotations

from typing import Any

import attrs

from runtime.agent.hooks import Next, PluginContext
from runtime.tools.registry import Tool, ToolExecution
from runtime.tools.results import HarnessError, ToolResult


@attrs.frozen
class ToolMark:
    """One moment of the tool pipeline as the simulator saw it, in the order it happened: a
    ``call`` started (its tool/call appended), its ``pre``-execute and ``post``-execute hooks ran, the
    deployment's policy ``gate`` and ``guard`` answered (``answer``), the simulated user was
    ``asked`` and ``answered`` (``answer``) an approval question, the runtime announced a call's
    ``dispatch`` (``tools.execute.body``: its abort checks are behind it), a tool ``body`` began,
    a body ``returned`` (``result``) or ``raised``, a turn was ``cancel``-led (a cancel step or
    fault: ``how`` "signal"; or a graceful stop of a process whose turn was in flight: "stop")."""

    kind: str  # "call" | "pre" | "gate" | "asked" | "answered" | "guard" | "guard2" | "dispatch" | "body" | "returned" | "raised" | "post" | "cancel" | "turn_end"
    lifetime: int
    call_id: str | None = None
    turn: int | None = None  # cancel: the turn it struck
    tool: str | None = None  # call: the tool it names
    arguments: str | None = None  # call: its arguments as its tool/call records them (the model's text)
    # raised: what the body raised — its message, and the name and code a HarnessError carries
    error: tuple[str, str | None, str | None] | None = None
    answer: str | None = None  # gate, guard, answered: the answer given
    result: Any = None  # returned: the ToolResult the body returned
    how: str | None = None  # cancel: "signal" (a cancel step or fault) or "stop" (a graceful stop); answered: "waited" (the user took time)


class ObservedTool:
    """``tool`` with its body's start and end recorded in ``marks`` (nested calls included)."""

    def __init__(self, tool: Tool, marks: list[ToolMark], lifetime: int) -> None:
        self.name = tool.name
        self.description = tool.description
        self.requires_approval = tool.requires_approval
        self._tool = tool
        self._marks = marks
        self._lifetime = lifetime

    def is_concurrency_safe(self, arguments: Any) -> bool:
        return self._tool.is_concurrency_safe(arguments)

    async def execute(self, ex: ToolExecution) -> ToolResult:
        self._marks.append(ToolMark("body", self._lifetime, ex.call_id))
        try:
            result = await self._tool.execute(ex)
        except Exception as err:  # what the registry turns into a final error result (§5.2)
            error = (str(err), err.name, err.code) if isinstance(err, HarnessError) else (str(err) or type(err).__name__, None, None)
            self._marks.append(ToolMark("raised", self._lifetime, ex.call_id, error=error))
            raise
        except BaseException:  # a cancellation tearing the body down
            self._marks.append(ToolMark("raised", self._lifetime, ex.call_id))
            raise
        self._marks.append(ToolMark("returned", self._lifetime, ex.call_id, result=result))
        return result


def observed(tools: list[Any], marks: list[ToolMark], lifetime: int) -> list[Any]:
    return [ObservedTool(tool, marks, lifetime) for tool in tools]


class PipelineWitness:
    """A plugin that watches the pipeline's hooks pass by (it decides nothing): each call's
    ``tools/pre-execute`` and ``tools/post-execute`` are recorded in ``marks`` and handed on
    unchanged, without an await of its own."""

    name = "sim-pipeline-witness"

    def __init__(self, marks: list[ToolMark], lifetime: int) -> None:
        self._marks = marks
        self._lifetime = lifetime

    def apply(self, ctx: PluginContext) -> None:
        ctx.on("tools/pre-execute", self._pre, prepend=True)
        ctx.on("tools/post-execute", self._post, prepend=True)

    def _pre(self, ex: ToolExecution, next: Next) -> Any:
        self._marks.append(ToolMark("pre", self._lifetime, ex.call_id))
        return next(ex)

    def _post(self, value: tuple[ToolExecution, ToolResult], next: Next) -> Any:
        self._marks.append(ToolMark("post", self._lifetime, value[0].call_id))
        return next(value)
