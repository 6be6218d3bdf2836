"""A ``tools/execute`` plugin of the kind real deployments mount (tracing, rate limiting).

The checkpoint policy's ``tools/execute`` hook skips nested calls and checks the signal after
its own flush, so in a deployment with only that hook nothing can await between the
registry's last abort check in ``prepare`` and the body of a nested call.  Real deployments
mount more hooks that await there; this one stands in for them.  For every call, top-level
and nested, it announces the named point ``plugin.tools_execute`` (where the fault plan can
cancel the turn, delay or crash) and then hands the call on unchanged.  It is mounted after
the checkpoint policy, so it sits between the barrier and the body (spec §5.2 step 3: the body
still answers an abort that came meanwhile with ABORTED_BEFORE_DISPATCH).
"""

from __future__ import annotations

from typing import Any

from dsh_sim.adapters.gate import DomainGate
from runtime.agent.hooks import Next, PluginContext
from runtime.tools.registry import ToolExecution

POINT = "plugin.tools_execute"


class ExecuteHookPlugin:
    """Awaits the simulation at ``plugin.tools_execute``, then continues the waterfall."""

    name = "sim-execute-hook"

    def __init__(self, gate: DomainGate) -> None:
        self._gate = gate

    def apply(self, ctx: PluginContext) -> None:
        ctx.on("tools/execute", self._execute)

    async def _execute(self, ex: ToolExecution, next: Next) -> Any:
        details = {"call_id": ex.call_id, "root_call_id": ex.root_call_id, "tool": ex.name, "nested": ex.parent is not None}
        await self._gate(POINT, details)  # no domain fault is declared here: only the universal actions
        return await next(ex)
