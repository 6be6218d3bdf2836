"""The simulated user who answers approval questions, from the scenario's script.

Answers are consumed in order; ``"hang"`` never answers (the question waits until the call
is cancelled or the process dies), ``"raise"`` is a failing answerer.  With nothing scripted
the simulated user is absent and the question falls through to ``unavailable``.  The user may
take time to answer (the prompt's ``approval_delay``).  Each question it is asked and each
answer it gives is recorded as a :class:`~dsh_sim.adapters.observed.ToolMark` (``asked``,
``answered``) for the route model: what the user said is a fact of its side of the seam.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import trio

from dsh_sim.adapters.observed import ToolMark
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
        self._marks: list[ToolMark] | None = None
        self._lifetime = 0
        self._delay: list[float] = [0.0]
        self._sleep: Callable[[float], Awaitable[None]] | None = None

    def observe(self, marks: list[ToolMark], lifetime: int, delay: list[float], sleep: Callable[[float], Awaitable[None]]) -> None:
        """Record questions and answers in ``marks``; take ``delay[0]`` virtual seconds to answer."""
        self._marks, self._lifetime, self._delay, self._sleep = marks, lifetime, delay, sleep

    def _mark(self, kind: str, call_id: Any, answer: str | None = None, how: str | None = None) -> None:
        if self._marks is not None:
            self._marks.append(ToolMark(kind, self._lifetime, None if call_id is None else str(call_id), answer=answer, how=how))

    def apply(self, ctx: PluginContext) -> None:
        ctx.on("approval/request", self._answer)

    async def _answer(self, request: Any, next: Next) -> Any:
        self.consulted.append(str(request.id))
        self._mark("asked", request.call_id)
        fault = await self._gate("approval.answer", {"tool": request.tool_name, "call_id": request.call_id})
        if fault is not None and fault.action == "answerer_failure":
            self.failures.append(str(request.call_id))
            self._mark("answered", request.call_id, "raise")
            raise AnswererFailure("the simulated answerer failed")
        if not self._answers:
            answer = await next(request)
            self._mark("answered", request.call_id, str(answer))
            return answer
        answer = self._answers.pop(0)
        if answer == "hang":
            await trio.sleep_forever()
        sleep, waited = self._sleep, bool(self._delay[0])
        if waited and sleep is not None:
            await sleep(self._delay[0])
        self._mark("answered", request.call_id, answer, "waited" if waited else None)
        if answer == "raise":
            self.failures.append(str(request.call_id))
            raise AnswererFailure("the simulated answerer raised")
        return answer
