"""The built-in shell tool: runs an argv through the sandbox contract.

The session's sandbox mode (last ``sandbox/mode`` event, else the configured default)
decides how: ``danger-full-access`` runs the argv as given — an explicit bypass, never a
fallback — and the other modes must get an enforcing argv from the provider, or the call
fails with ``SANDBOX_UNAVAILABLE`` and nothing runs.
"""

from __future__ import annotations

from typing import Any

from runtime.agent.sandbox import (
    SandboxPolicy,
    SandboxProvider,
    SandboxUnavailableError,
    effective_sandbox_mode,
    sandbox_mode_event_data,
)
from runtime.ports.probe import Probe
from runtime.ports.process import ProcessRunner
from runtime.tools.registry import ToolExecution
from runtime.tools.results import HarnessError, ToolResult


class ShellTool:
    name = "shell"
    description = "Run a command (argv list) in the workspace under the session's sandbox mode. Arguments: {argv}."
    requires_approval = False

    def __init__(
        self,
        provider: SandboxProvider,
        runner: ProcessRunner,
        workspace: str,
        probe: Probe,
        *,
        default_mode: str = "read-only",
    ) -> None:
        self._provider = provider
        self._runner = runner
        self._workspace = workspace
        self._probe = probe
        self.default_mode = default_mode

    def is_concurrency_safe(self, arguments: Any) -> bool:
        return False

    def mode(self, agent: Any) -> str:
        events = agent.session.events if agent is not None else ()
        return effective_sandbox_mode(events, self.default_mode)  # type: ignore[arg-type]

    @staticmethod
    def set_mode(agent: Any, mode: str) -> None:
        """Record a session sandbox mode change (the last one wins)."""
        agent.session.append("sandbox/mode", sandbox_mode_event_data(mode))  # type: ignore[arg-type]

    async def execute(self, ex: ToolExecution) -> ToolResult:
        argv = ex.arguments.get("argv") if isinstance(ex.arguments, dict) else None
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise HarnessError("argv must be a non-empty list of strings", name="InvalidArguments", code="INVALID_ARGUMENTS")
        mode = self.mode(ex.agent)
        if mode == "danger-full-access":
            wrapped = list(argv)
        else:
            policy = SandboxPolicy(mode=mode, workspace_root=self._workspace, session_id=getattr(ex.agent, "id", None))  # type: ignore[arg-type]
            await self._probe.at("sandbox.confine", call_id=ex.call_id, mode=mode)
            try:
                wrapped = list(self._provider.confine(argv, policy).argv)
            except SandboxUnavailableError as err:
                raise HarnessError(str(err), name=err.name, code=err.code) from None
        done = await self._runner.run(wrapped, cwd=self._workspace, call_id=ex.call_id)
        text = done.stdout + (f"\n[stderr]\n{done.stderr}" if done.stderr else "")
        if done.exit_code != 0:
            return ToolResult.failure(f"command exited with {done.exit_code}: {text.strip()}")
        return ToolResult.text(text)
