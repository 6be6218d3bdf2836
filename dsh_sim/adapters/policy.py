"""The simulated deployment's policy plugin: a ``tools/pre-execute`` gate and a monotonic guard.

Real deployments decide calls before they run: a permission gate in the ``tools/pre-execute``
waterfall (allow, deny, ask), and guards that may only narrow an allow (spec §5.2).  A gate or
guard can also fail or answer late, and the route must then still decide right: fail closed,
never treat a raise as an allow, let a cancellation that came meanwhile win.  This plugin
answers every call as the scenario scripts it (``ToolCall.gate``/``guard``, their delays):

* gate ``pass`` hands the call on (the default decision follows: ask for a tool that needs
  approval, else allow); ``allow``, ``deny`` and ``ask`` answer without handing on; ``raise``
  fails the hook; ``invalid`` answers with no decision at all (``None``);
* guard ``pass`` has no objection; ``deny`` objects; ``raise`` fails the guard; a second guard
  (an audit guard, mounted after it) never objects — a deny must stop the waterfall before it;
* post-execute ``accept`` lets the result through; ``block`` blocks it with feedback; ``raise``
  fails the hook;
* a delay is virtual time the answer takes (a cancellation can arrive meanwhile).

Each answer is announced at a named point — ``policy.gate`` before the gate answers,
``policy.guard`` before the guard does, ``policy.post`` in ``tools/post-execute`` — where the
fault plan can cancel the turn, delay or crash, and each is recorded as a
:class:`~dsh_sim.adapters.observed.ToolMark` (``gate``/``guard`` with the answer given) for
the route model.  Nested calls and calls with no script are handed on unanswered.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from dsh_sim.adapters.gate import DomainGate
from dsh_sim.adapters.observed import ToolMark
from runtime.agent.hooks import Next, PluginContext
from runtime.tools.registry import Allow, Ask, Block, Deny, ToolExecution

GATE_ANSWERS = ("pass", "allow", "deny", "ask", "raise", "invalid")
GUARD_ANSWERS = ("pass", "deny", "raise")
POST_ANSWERS = ("accept", "block", "raise")
GATE_DENIAL = "denied by the deployment's policy gate"
GATE_ASKS = "the deployment's policy gate asks"
GUARD_DENIAL = "denied by the deployment's guard"
GATE_FAILURE = "the deployment's policy gate failed"
GUARD_FAILURE = "the deployment's guard failed"
POST_FEEDBACK = "blocked by the deployment's post-execute review"
POST_FAILURE = "the deployment's post-execute review failed"


class PolicyFailure(RuntimeError):
    """What a scripted ``raise`` raises in the gate or the guard (a plain exception, no code)."""


@attrs.frozen
class CallPolicy:
    """How the deployment answers one call (what its :class:`~dsh_sim.scenario.args.ToolCall` scripts)."""

    gate: str = "pass"
    gate_delay: float = 0.0
    guard: str = "pass"
    guard_delay: float = 0.0
    post: str = "accept"


class SimPolicy:
    """The gate (a ``tools/pre-execute`` handler), the guard (for the registry's ``guards``)
    and a ``tools/post-execute`` point; ``scripts`` maps a call id to its :class:`CallPolicy`
    and is shared with the simulation (it outlives processes, as the model's script does)."""

    name = "sim-policy"

    def __init__(
        self,
        scripts: Mapping[str, CallPolicy],
        gate: DomainGate,
        marks: list[ToolMark],
        lifetime: int,
        sleep: Callable[[float], Any],
    ) -> None:
        self._scripts = scripts
        self._gate = gate
        self._marks = marks
        self._lifetime = lifetime
        self._sleep = sleep

    def apply(self, ctx: PluginContext) -> None:
        ctx.on("tools/pre-execute", self._pre_execute)
        ctx.on("tools/post-execute", self._post_execute)

    def _script(self, ex: ToolExecution) -> CallPolicy | None:
        return None if ex.parent is not None else self._scripts.get(ex.call_id)

    async def _pre_execute(self, ex: ToolExecution, next: Next) -> Any:
        script = self._script(ex)
        if script is None:
            return await next(ex)
        await self._gate("policy.gate", {"call_id": ex.call_id, "tool": ex.name, "answer": script.gate})
        if script.gate_delay:
            await self._sleep(script.gate_delay)
        self._marks.append(ToolMark("gate", self._lifetime, ex.call_id, answer=script.gate))
        if script.gate == "allow":
            return Allow()
        if script.gate == "deny":
            return Deny(GATE_DENIAL)
        if script.gate == "ask":
            return Ask(GATE_ASKS)
        if script.gate == "raise":
            raise PolicyFailure(GATE_FAILURE)
        if script.gate == "invalid":
            return None
        return await next(ex)

    async def guard(self, ex: ToolExecution) -> str | None:
        """The monotonic guard: ``None`` lets the allow stand, a string denies."""
        script = self._script(ex)
        if script is None:
            return None
        await self._gate("policy.guard", {"call_id": ex.call_id, "tool": ex.name, "answer": script.guard})
        if script.guard_delay:
            await self._sleep(script.guard_delay)
        self._marks.append(ToolMark("guard", self._lifetime, ex.call_id, answer=script.guard))
        if script.guard == "deny":
            return GUARD_DENIAL
        if script.guard == "raise":
            raise PolicyFailure(GUARD_FAILURE)
        return None

    async def audit_guard(self, ex: ToolExecution) -> str | None:
        """The second guard: it never objects, it only records that the waterfall reached it."""
        if self._script(ex) is not None:
            self._marks.append(ToolMark("guard2", self._lifetime, ex.call_id))
        return None

    async def _post_execute(self, value: tuple[ToolExecution, Any], next: Next) -> Any:
        ex = value[0]
        script = self._script(ex)
        if script is None:
            return await next(value)
        await self._gate("policy.post", {"call_id": ex.call_id, "tool": ex.name, "answer": script.post})
        if script.post == "block":
            return Block(POST_FEEDBACK)
        if script.post == "raise":
            raise PolicyFailure(POST_FAILURE)
        return await next(value)
