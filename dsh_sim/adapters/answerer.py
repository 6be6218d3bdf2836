"""The simulated user who answers approval questions, from the scenario's script.

Answers are consumed in order; ``"hang"`` never answers (the question waits until the call
is cancelled or the process dies), ``"raise"`` is a failing answerer.  With nothing scripted
the simulated user is absent and the question falls through to ``unavailable``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio

from runtime.agent.hooks import Next, PluginContext

if TYPE_CHECKING:
    from dsh_sim.adapters.gate import DomainGate


class AnswererFailure(RuntimeError):
    pass


class SimAnswerer:
    name = "sim-answerer"

    def __init__(self, answers: list[str], gate: DomainGate, failures: list[str] | None = None, consulted: list[str] | None = None) -> None:
        self._answers = answers  # shared with the simulation (survives lifetimes)
        self._gate = gate
        self.failures = failures if failures is not None else []  # calls whose answerer failed (ground truth)
        self.consulted = consulted if consulted is not None else []  # request ids it was asked (ground truth)

    def apply(self, ctx: PluginContext) -> None:
        ctx.on("approval/request", self._answer)

    async def _answer(self, request: Any, next: Next) -> Any:
        self.consulted.append(str(request.id))
        fault = await self._gate("approval.answer", {"tool": request.tool_name, "call_id": request.call_id})
        if fault is not None and fault.action == "answerer_failure":
            self.failures.append(str(request.call_id))
            raise AnswererFailure("the simulated answerer failed")
        if not self._answers:
            return await next(request)
        answer = self._answers.pop(0)
        if answer == "hang":
            await trio.sleep_forever()
        if answer == "raise":
            self.failures.append(str(request.call_id))
            raise AnswererFailure("the simulated answerer raised")
        return answer
