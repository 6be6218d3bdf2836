"""``dsh-sim demo``: one scripted agent session on the real filesystem.

The real runtime with production ports: the JSONL + zstd backend under ``--root``, the
checkpoint policy, file tools confined to ``--workspace``, and the shell tool confined by
bubblewrap when it works here (otherwise the call fails closed with SANDBOX_UNAVAILABLE).
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
from dsh_sim.inputs import check_output_dir, read_json
from dsh_sim.scenario.args import ModelResponse
from dsh_sim.scenario.codec import structure
from runtime.adapters import production_ports
from runtime.adapters.bwrap import BubblewrapProvider
from runtime.adapters.process import SubprocessRunner
from runtime.adapters.script_model import ScriptModel
from runtime.agent.runtime import RuntimeConfig, open_runtime
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


async def _run(root: str, workspace: str, session_id: str, script: dict[str, Any], prompt: str, compression: str) -> str:
    ports = production_ports()
    model = ScriptModel.from_json(script)
    tools: list[Tool] = [
        ReadFileTool(ports.fs, workspace),
        WriteFileTool(ports.fs, workspace),
        ShellTool(SubprocessRunner(), workspace, ports.probe),
    ]
    sandbox = SandboxService(BubblewrapProvider(), workspace, default_mode="workspace-write")
    config = RuntimeConfig(root=root, compression=compression, system="You are the dsh-sim demo agent.")
    async with open_runtime(ports, config, model, tools, plugins=[sandbox]) as rt:
        agent = await rt.create_agent(session_id, cwd=workspace)
        outcome = await agent.run_turn(prompt)
        await rt.close_agent(agent)
        stat = await rt.backend.stat(session_id)
    print(f"turn {outcome.turn}: {outcome.reason['kind']} after {outcome.steps} step(s)")
    return os.path.dirname(stat.path)


def main(args: Any) -> int:
    root = os.path.abspath(args.root)
    workspace = os.path.abspath(args.workspace or os.path.join(root, "workspace"))
    try:
        encode_segment(args.session)
    except ValueError as err:
        raise CliError(f"--session {args.session!r}: {err}") from None
    check_output_dir(root, "--root")
    check_output_dir(workspace, "--workspace")
    script = _script(args.script)
    os.makedirs(workspace, exist_ok=True)
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
