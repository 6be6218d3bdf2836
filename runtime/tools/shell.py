"""The built-in shell tool: runs an argv through the mounted sandbox service.

No sandbox mounted, or no backend able to enforce the session's mode: the call fails with
``SANDBOX_UNAVAILABLE`` and nothing runs; an unsafe workspace (``/``, the home directory...)
fails with ``UNSAFE_WORKSPACE``.  The result records the mode and how completely it was
enforced (``full``, ``partial`` with the list of what stayed unconfined, or ``bypassed`` for
danger-full-access).
"""

from __future__ import annotations

from typing import Any

from runtime.agent.sandbox import SANDBOX_UNAVAILABLE, SandboxUnavailableError, UnsafeWorkspaceError
from runtime.ports.probe import Probe
from runtime.ports.process import ProcessRunner
from runtime.tools.arguments import utf8_text
from runtime.tools.registry import ToolExecution
from runtime.tools.results import HarnessError, ToolResult


class ShellTool:
    name = "shell"
    description = "Run a command (argv list) in the workspace under the session's sandbox mode. Arguments: {argv}."
    requires_approval = False

    def __init__(self, runner: ProcessRunner, workspace: str, probe: Probe) -> None:
        self._runner = runner
        self._workspace = workspace
        self._probe = probe

    def is_concurrency_safe(self, arguments: Any) -> bool:
        return False

    async def execute(self, ex: ToolExecution) -> ToolResult:
        argv = ex.arguments.get("argv") if isinstance(ex.arguments, dict) else None
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise HarnessError("argv must be a non-empty list of strings", name="InvalidArguments", code="INVALID_ARGUMENTS")
        for index, arg in enumerate(argv):
            utf8_text(arg, f"argv[{index}]")
        sandbox = ex.registry.service("sandbox") if ex.registry is not None else None
        if sandbox is None:
            raise HarnessError(
                "no sandbox service is mounted; refusing to run the command unconfined",
                name="SandboxUnavailableError",
                code=SANDBOX_UNAVAILABLE,
            )
        mode = sandbox.mode(ex.agent)
        if mode != "danger-full-access":
            await self._probe.at("sandbox.confine", call_id=ex.call_id, mode=mode)
        try:
            confined = sandbox.confine(argv, ex.agent)
        except (SandboxUnavailableError, UnsafeWorkspaceError) as err:
            raise HarnessError(str(err), name=err.name, code=err.code) from None
        done = await self._runner.run(list(confined.argv), cwd=self._workspace, call_id=ex.call_id)
        text = done.stdout + (f"\n[stderr]\n{done.stderr}" if done.stderr else "")
        meta: dict[str, Any] = {"sandbox": confined.mode, "enforcement": confined.enforcement}
        if confined.unconfined:
            meta["unconfined"] = list(confined.unconfined)
        if done.exit_code != 0:
            failed = ToolResult.failure(f"command exited with {done.exit_code}: {text.strip()}")
            return ToolResult(failed.content, True, failed.error, meta)
        return ToolResult.text(text, meta=meta)
