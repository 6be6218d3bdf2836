"""A simulated sandbox and process runner for the runtime's shell tool.

The provider wraps argv as ``simbox <mode> <workspace> -- argv`` (full enforcement); the
runner executes a tiny command set against the World's workspace service, enforcing the
mode the way a real sandbox would: ``read-only`` refuses every write, ``workspace-write``
refuses writes outside the workspace, unwrapped argv (``danger-full-access``) may write
anywhere.  Commands: ``echo WORDS...`` and ``write PATH TEXT``.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence
from typing import Any

from dsh_sim.adapters.world import World
from runtime.agent.sandbox import ConfinedArgv, SandboxPolicy, check_confinable
from runtime.ports.process import ProcessResult


class SimSandboxProvider:
    def confine(self, argv: Sequence[str], policy: SandboxPolicy) -> ConfinedArgv:
        mode = check_confinable(argv, policy)
        return ConfinedArgv(argv=("simbox", mode, policy.workspace_root, "--", *argv), enforcement="full")


class SimRunner:
    def __init__(self, world: World, gate: Callable[..., Any], now: Callable[[], float], lifetime: int) -> None:
        self._world = world
        self._gate = gate
        self._now = now
        self._lifetime = lifetime

    async def run(self, argv: Sequence[str], *, cwd: str, call_id: str | None = None) -> ProcessResult:
        mode, workspace, command = None, None, list(argv)
        if command and command[0] == "simbox":
            mode, workspace, command = command[1], command[2], command[4:]
        if not command:
            return ProcessResult(127, "", "empty command")
        if command[0] == "echo":
            return ProcessResult(0, " ".join(command[1:]) + "\n", "")
        if command[0] == "write" and len(command) == 3:
            path = posixpath.normpath(posixpath.join(cwd, command[1]))
            if mode == "read-only":
                return ProcessResult(1, "", f"write: {path}: Read-only file system")
            if mode == "workspace-write" and not (path + "/").startswith(str(workspace).rstrip("/") + "/"):
                return ProcessResult(1, "", f"write: {path}: Read-only file system")
            await self._world.call(
                self._gate,
                "workspace",
                "write",
                {"path": path, "text": command[2]},
                call_id=call_id or "?",
                key=None,
                now=self._now(),
                lifetime=self._lifetime,
                root_call_id=call_id or "?",  # the runner port knows no nesting: the shell runs top level
            )
            return ProcessResult(0, "", "")
        return ProcessResult(127, "", f"{command[0]}: command not found")
