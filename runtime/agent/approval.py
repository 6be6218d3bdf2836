"""User approval: a one-shot, audited, fail-closed question (spec §6).

``request`` records ``approval/asked`` and ``approval/decided`` with one id around every
decision.  Policy ``never`` is decided inside the service before any answerer is consulted;
a missing or failing answerer, an answer outside the vocabulary and cancellation all fail
closed; a late answer after cancellation is discarded.  There is no built-in answerer and
no "allow always": answerers are handlers on the ``approval/request`` hook.
"""

from __future__ import annotations

from typing import Any

import attrs
import trio

from runtime.agent.hooks import PluginContext
from runtime.agent.signal import AbortSignal
from runtime.tools.registry import (
    Allow,
    Ask,
    Decision,
    Deny,
    ToolExecution,
    ToolRegistry,
)

APPROVAL_OUTCOMES = ("allowed-once", "rejected", "cancelled", "unavailable")
APPROVAL_POLICIES = ("ask", "never")

NEVER_CONTEXT = (
    "Approval prompts are disabled in this session: actions that require approval are rejected automatically "
    "— do not request sandbox escalation (do not set `sandbox_permissions`)."
)
ASK_CONTEXT = (
    "Approval policy: ask. Operations that require approval may ask through the configured answerers; "
    "without an available answerer, the request fails closed."
)


OUTSIDE_TURN_MESSAGE = (
    "approval.request() outside an open turn: the approval/asked + approval/decided audit pair must be "
    "turn-enclosed (a bare event between turns is crash-tail garbage on reload). Ask from inside the turn "
    "that needs the decision."
)


class ApprovalOutsideTurnError(RuntimeError):
    """``request`` was called with no open turn; nothing was appended."""


@attrs.frozen
class ApprovalRequest:
    id: str
    tool_name: str
    call_id: str | None
    reason: str | None
    agent: Any


def effective_approval_policy(events: Any, default: str) -> str:
    for event in reversed(events):
        if event.type == "approval/policy":
            return str(event.data["policy"])
    return default


class ApprovalService:
    name = "user-approval"

    def __init__(self, registry: ToolRegistry, *, policy: str = "ask") -> None:
        if policy not in APPROVAL_POLICIES:
            raise TypeError('approval policy must be one of "ask" or "never"')
        self._registry = registry
        self.default_policy = policy
        self._hooks: Any = None

    def apply(self, ctx: PluginContext) -> None:
        self._hooks = ctx.hooks
        self._registry.approval_seam = self._seam

        def detach() -> None:
            self._hooks = None
            if self._registry.approval_seam == self._seam:
                self._registry.approval_seam = None

        ctx.on_dispose(detach)

    def policy(self, agent: Any) -> str:
        return effective_approval_policy(agent.session.events, self.default_policy)

    def context(self, agent: Any) -> str:
        return NEVER_CONTEXT if self.policy(agent) == "never" else ASK_CONTEXT

    def set_policy(self, agent: Any, policy: str) -> None:
        if policy not in APPROVAL_POLICIES:
            raise TypeError('approval policy must be one of "ask" or "never"')
        old = self.policy(agent)
        if old == policy:
            return
        agent.session.append("approval/policy", {"policy": policy})
        agent.queue_notice(f'The approval policy changed from "{old}" to "{policy}" (changed by the user).', plugin=self.name)

    async def request(
        self,
        agent: Any,
        tool_name: str,
        *,
        call_id: str | None = None,
        reason: str | None = None,
        signal: AbortSignal | None = None,
    ) -> str:
        session = agent.session
        if session.open_turn() is None:
            raise ApprovalOutsideTurnError(OUTSIDE_TURN_MESSAGE)
        request_id = agent.ids.uuid()
        asked: dict[str, Any] = {"id": request_id, "toolName": tool_name}
        if call_id is not None:
            asked["callId"] = call_id
        if reason is not None:
            asked["reason"] = reason
        session.append("approval/asked", asked)
        try:
            outcome = await self._decide(ApprovalRequest(request_id, tool_name, call_id, reason, agent), signal)
        except BaseException:
            # torn down from outside while asking: the audit pair is still closed
            session.append("approval/decided", {"id": request_id, "outcome": "cancelled"})
            raise
        session.append("approval/decided", {"id": request_id, "outcome": outcome})
        return outcome

    async def _decide(self, request: ApprovalRequest, signal: AbortSignal | None) -> str:
        if signal is not None and signal.aborted:
            return "cancelled"
        if self.policy(request.agent) == "never":
            return "rejected"
        if self._hooks is None:
            return "unavailable"
        answer: Any = "cancelled"
        scope_signal = signal or AbortSignal()
        with scope_signal.linked_scope():
            try:
                answer = await self._hooks.waterfall("approval/request", request, _unavailable)
            except trio.Cancelled:
                raise
            except Exception:
                answer = "unavailable"
        if scope_signal.aborted:
            return "cancelled"
        return answer if answer in APPROVAL_OUTCOMES else "unavailable"

    async def _seam(self, ex: ToolExecution, ask: Ask) -> Decision:
        outcome = await self.request(ex.agent, ex.name, call_id=ex.call_id, reason=ask.reason, signal=ex.signal)
        if outcome == "allowed-once":
            return Allow()
        if outcome == "rejected":
            return Deny(f'the user rejected tool "{ex.name}"')
        if outcome == "cancelled":
            return Deny(f'approval for tool "{ex.name}" was cancelled', cancelled=True)
        return Deny(f'tool "{ex.name}" requires approval, but no approval channel is available')


async def _unavailable(_: Any) -> str:
    return "unavailable"
