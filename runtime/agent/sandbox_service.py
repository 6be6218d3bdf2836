"""The sandbox as a mountable plugin: the session's mode, and confinement through a provider.

Like the checkpoint policy and approval, the sandbox sits beside the loop, not inside it:
mounted, it provides the ``sandbox`` service the shell tool asks for; not mounted, the shell
tool fails closed with ``SANDBOX_UNAVAILABLE``.  The session's mode is the last
``sandbox/mode`` event (else the configured default).  ``danger-full-access`` is the one
explicit bypass: no provider is asked and the result says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from runtime.agent.hooks import PluginContext
from runtime.agent.sandbox import (
    DEFAULT_SANDBOX_MODE,
    SANDBOX_MODES,
    SandboxPolicy,
    SandboxProvider,
    effective_sandbox_mode,
    sandbox_mode_event_data,
)


@attrs.frozen
class Confinement:
    argv: tuple[str, ...]
    mode: str
    enforcement: str  # "full" | "partial" | "bypassed" (danger-full-access)
    unconfined: tuple[str, ...] = ()  # what the backend says it leaves unconfined


class SandboxService:
    name = "sandbox"

    def __init__(self, provider: SandboxProvider, workspace: str, *, default_mode: str = DEFAULT_SANDBOX_MODE) -> None:
        if default_mode not in SANDBOX_MODES:
            raise ValueError(f"sandbox mode must be one of {', '.join(SANDBOX_MODES)}, got {default_mode!r}")
        self._provider = provider
        self.workspace = workspace
        self.default_mode = default_mode

    def apply(self, ctx: PluginContext) -> None:
        ctx.provide("sandbox", self)

    def mode(self, agent: Any) -> str:
        events = agent.session.events if agent is not None else ()
        return effective_sandbox_mode(events, self.default_mode)  # type: ignore[arg-type]

    def set_mode(self, agent: Any, mode: str) -> None:
        """Record a session sandbox mode change (the last one wins)."""
        agent.session.append("sandbox/mode", sandbox_mode_event_data(mode))  # type: ignore[arg-type]

    def confine(self, argv: Sequence[str], agent: Any) -> Confinement:
        """Enforcing argv for the session's mode, or ``SandboxUnavailableError``; never a silent passthrough."""
        mode = self.mode(agent)
        if mode == "danger-full-access":
            return Confinement(tuple(argv), mode, "bypassed")
        policy = SandboxPolicy(mode=mode, workspace_root=self.workspace, session_id=getattr(agent, "id", None))  # type: ignore[arg-type]
        confined = self._provider.confine(argv, policy)
        return Confinement(tuple(confined.argv), mode, confined.enforcement, confined.unconfined)
