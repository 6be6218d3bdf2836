"""One scripted agent session on the real filesystem, with production ports.

Here because it is the one operation that runs the runtime for real — the JSONL + zstd
backend, the checkpoint policy, file tools confined to a workspace, the shell tool confined
by the local sandbox chain (bubblewrap, else Landlock) or refused when none works — and it
refuses anything that would let a tool reach the session's own files.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from importlib import resources
from typing import Any

import attrs
import trio

from dsh_sim.errors import InputError
from dsh_sim.inputs import read_json
from dsh_sim.outputs import check_output_dir, ensure_output_dir
from dsh_sim.scenario.args import ModelResponse
from dsh_sim.scenario.codec import structure
from runtime.adapters import production_ports
from runtime.adapters.local_sandbox import LocalSandboxProvider
from runtime.adapters.process import SubprocessRunner
from runtime.adapters.sandbox_host import default_homes, resolve_workspace
from runtime.adapters.script_model import ScriptModel
from runtime.agent.runtime import RuntimeConfig, open_runtime
from runtime.agent.sandbox import SANDBOX_UNAVAILABLE, UnsafeWorkspaceError
from runtime.agent.sandbox_service import SandboxService
from runtime.persistence.errors import SessionAlreadyExistsError, SessionPersistenceError
from runtime.persistence.layout import encode_segment
from runtime.session.events import Event
from runtime.tools.files import ReadFileTool, WriteFileTool
from runtime.tools.registry import Tool
from runtime.tools.shell import ShellTool

__all__ = ["DemoRun", "demo", "shell_lines", "single"]


@attrs.frozen
class DemoRun:
    """The demo session's turn (its number, how it ended, after how many steps), one line per
    shell call (confined how, or refused), and the session directory to inspect."""

    turn: int
    reason: str
    steps: int
    shell: tuple[str, ...]
    session_dir: str


def single(err: BaseException, kind: type[BaseException]) -> BaseException | None:
    """The one ``kind`` error inside ``err`` (trio wraps errors from nurseries in groups)."""
    if isinstance(err, kind):
        return err
    if isinstance(err, BaseExceptionGroup):
        matched: BaseException | None = err.split(kind)[0]
        while isinstance(matched, BaseExceptionGroup) and len(matched.exceptions) == 1:
            matched = matched.exceptions[0]
        return matched if isinstance(matched, kind) else None
    return None


def _script(path: str | None) -> dict[str, Any]:
    """The model script: ``{"responses": [...], "provider"?, "model"?}``, each response as a
    scenario's prompt response (text, tool_calls, chunk_delay); anything else is refused."""
    if path is None:
        script: dict[str, Any] = json.loads(resources.files("dsh_sim.examples").joinpath("demo-script.json").read_text())
        return script
    obj = read_json(path, "model script", 16 * 1024 * 1024)
    if not isinstance(obj, dict) or not isinstance(obj.get("responses"), list) or not obj["responses"]:
        raise InputError(f'{path}: not a model script: expected {{"responses": [...]}} with at least one response')
    extra = sorted(set(obj) - {"responses", "provider", "model"})
    if extra:
        raise InputError(f"{path}: $: unknown key {extra[0]!r} (a model script has responses, provider, model)")
    try:
        structure(obj["responses"], tuple[ModelResponse, ...], "$.responses")
    except ValueError as err:
        raise InputError(f"{path}: {err}") from None
    return obj


def _result_text(data: dict[str, Any]) -> str:
    blocks = data.get("message", {}).get("content", [])
    inner = [part for block in blocks for part in block.get("content", []) if isinstance(block, dict)]
    return " ".join(part.get("text", "") for part in inner if isinstance(part, dict))


def shell_lines(events: Sequence[Event]) -> list[str]:
    """One line per shell call: how it was confined, or that it was refused and nothing ran."""
    shell_calls = {e.data["callId"] for e in events if e.type == "tool/call" and e.data.get("name") == "shell"}
    lines = []
    for event in events:
        if event.type != "tool/result":
            continue
        call_id = event.data["message"]["source"]["callId"]
        if call_id not in shell_calls:
            continue
        error = event.data.get("error") or {}
        meta = event.data.get("meta") or {}
        if error.get("code") == SANDBOX_UNAVAILABLE:
            why = _result_text(event.data).partition("Runner failure: ")[2].strip()
            lines.append(
                f"shell call {call_id} was REFUSED: no sandbox backend (bubblewrap, Landlock) works on this host; nothing ran"
                + (f" ({why})" if why else "")
            )
        elif error:
            lines.append(f"shell call {call_id} was refused: {error.get('code')}")
        elif meta:
            gaps = f"; not confined: {', '.join(meta['unconfined'])}" if meta.get("unconfined") else ""
            lines.append(f"shell call {call_id} ran confined ({meta.get('sandbox')}, enforcement {meta.get('enforcement')}{gaps})")
    return lines


async def _run(root: str, workspace: str, session_id: str, script: dict[str, Any], prompt: str, compression: str) -> DemoRun:
    ports = production_ports()
    model = ScriptModel.from_json(script)
    tools: list[Tool] = [
        ReadFileTool(ports.fs, workspace),
        WriteFileTool(ports.fs, workspace),
        ShellTool(SubprocessRunner(), workspace, ports.probe),
    ]
    sandbox = SandboxService(LocalSandboxProvider(allowed_root=workspace), workspace, default_mode="workspace-write")
    config = RuntimeConfig(root=root, compression=compression, system="You are the dsh-sim demo agent.")
    async with open_runtime(ports, config, model, tools, plugins=[sandbox]) as rt:
        agent = await rt.create_agent(session_id, cwd=workspace)
        outcome = await agent.run_turn(prompt)
        events = list(agent.session.events)
        await rt.close_agent(agent)
        stat = await rt.backend.stat(session_id)
    return DemoRun(outcome.turn, outcome.reason["kind"], outcome.steps, tuple(shell_lines(events)), os.path.dirname(stat.path))


def demo(
    *,
    root: str = "dsh-demo",
    workspace: str | None = None,
    session: str = "demo",
    script: str | None = None,
    prompt: str = "Write a note and read it back.",
    compression: str = "zstd",
) -> DemoRun:
    """Run one scripted agent session on the real filesystem: the session under ``root``,
    the tools in ``workspace`` (default ``ROOT/workspace``; it must not hold the root), the
    model the script adapter reading ``script`` (default: the packaged example)."""
    check_output_dir(root)  # a linked --root (or a link on its relative path) is refused
    root = os.path.abspath(root)
    workspace = os.path.abspath(workspace or os.path.join(root, "workspace"))
    try:
        encode_segment(session)
    except ValueError as err:
        raise InputError(f"--session {session!r}: {err}") from None
    check_output_dir(root, "--root")
    check_output_dir(workspace, "--workspace")
    try:  # the sandbox's own rule, before anything is created: the file tools write there unconfined
        real_workspace = resolve_workspace(workspace, homes=default_homes())
    except UnsafeWorkspaceError as err:
        raise InputError(f"--workspace {workspace}: {err}") from None
    real_root = os.path.realpath(root)
    if real_root == real_workspace or real_root.startswith(real_workspace.rstrip("/") + "/"):
        # a confined shell command could then rewrite the session's own log and lock
        raise InputError(f"--workspace {workspace}: holds the persistence root {root}; the session files must lie outside the workspace")
    loaded = _script(script)
    ensure_output_dir(workspace)
    try:
        return trio.run(_run, root, workspace, session, loaded, prompt, compression)
    except BaseException as err:
        refused = single(err, SessionPersistenceError)
        if refused is None:
            raise
        hint = " (use a fresh --root or another --session)" if isinstance(refused, SessionAlreadyExistsError) else ""
        raise InputError(f"{root}: {refused}{hint}") from None
