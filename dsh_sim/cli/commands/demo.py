"""``dsh-sim demo``: one scripted agent session on the real filesystem.

The real runtime with production ports: the JSONL + zstd backend under ``--root``, the
checkpoint policy, file tools confined to ``--workspace``, and the shell tool confined by the
local sandbox chain — bubblewrap, else Landlock — when one works here; otherwise the call
fails closed with SANDBOX_UNAVAILABLE, and the demo says so rather than leave it to be found
in the log.
The model is the deterministic script adapter, reading ``--script`` (a packaged example by
default).
"""

from __future__ import annotations

import json
import os
from importlib import resources
from typing import Any

import trio

from dsh_sim.cli.commands.common import CliError, single
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
from runtime.persistence.errors import (
    SessionAlreadyExistsError,
    SessionPersistenceError,
)
from runtime.persistence.layout import encode_segment
from runtime.tools.files import ReadFileTool, WriteFileTool
from runtime.tools.registry import Tool
from runtime.tools.shell import ShellTool


def _script(path: str | None) -> dict[str, Any]:
    """The model script: ``{"responses": [...], "provider"?, "model"?}``, each response as a
    scenario's prompt response (text, tool_calls, chunk_delay); anything else is refused."""
    if path is None:
        script: dict[str, Any] = json.loads(resources.files("dsh_sim.examples").joinpath("demo-script.json").read_text())
        return script
    obj = read_json(path, "model script", 16 * 1024 * 1024)
    if not isinstance(obj, dict) or not isinstance(obj.get("responses"), list) or not obj["responses"]:
        raise CliError(f'{path}: not a model script: expected {{"responses": [...]}} with at least one response')
    extra = sorted(set(obj) - {"responses", "provider", "model"})
    if extra:
        raise CliError(f"{path}: $: unknown key {extra[0]!r} (a model script has responses, provider, model)")
    try:
        structure(obj["responses"], tuple[ModelResponse, ...], "$.responses")
    except ValueError as err:
        raise CliError(f"{path}: {err}") from None
    return obj


def _result_text(data: dict[str, Any]) -> str:
    blocks = data.get("message", {}).get("content", [])
    inner = [part for block in blocks for part in block.get("content", []) if isinstance(block, dict)]
    return " ".join(part.get("text", "") for part in inner if isinstance(part, dict))


def shell_lines(events: Any) -> list[str]:
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


async def _run(root: str, workspace: str, session_id: str, script: dict[str, Any], prompt: str, compression: str) -> str:
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
    print(f"turn {outcome.turn}: {outcome.reason['kind']} after {outcome.steps} step(s)")
    for line in shell_lines(events):
        print(line)
    return os.path.dirname(stat.path)


def main(args: Any) -> int:
    check_output_dir(args.root)  # a linked --root (or a link on its relative path) is refused
    root = os.path.abspath(args.root)
    workspace = os.path.abspath(args.workspace or os.path.join(root, "workspace"))
    try:
        encode_segment(args.session)
    except ValueError as err:
        raise CliError(f"--session {args.session!r}: {err}") from None
    check_output_dir(root, "--root")
    check_output_dir(workspace, "--workspace")
    try:  # the sandbox's own rule, before anything is created: the file tools write there unconfined
        real_workspace = resolve_workspace(workspace, homes=default_homes())
    except UnsafeWorkspaceError as err:
        raise CliError(f"--workspace {workspace}: {err}") from None
    real_root = os.path.realpath(root)
    if real_root == real_workspace or real_root.startswith(real_workspace.rstrip("/") + "/"):
        # a confined shell command could then rewrite the session's own log and lock
        raise CliError(f"--workspace {workspace}: holds the persistence root {root}; the session files must lie outside the workspace")
    script = _script(args.script)
    ensure_output_dir(workspace)
    try:
        session_dir = trio.run(_run, root, workspace, args.session, script, args.prompt, args.compression)
    except BaseException as err:
        refused = single(err, SessionPersistenceError)
        if refused is None:
            raise
        hint = " (use a fresh --root or another --session)" if isinstance(refused, SessionAlreadyExistsError) else ""
        raise CliError(f"{root}: {refused}{hint}") from None
    print(f"session log: {session_dir}")
    print(f"read it back with:  dsh-sim inspect {session_dir}")
    return 0
