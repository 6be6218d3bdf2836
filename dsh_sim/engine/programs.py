"""The programs a simulated process runs: the agent runtime, a storage-only process, a second writer.

Each builds the runtime over the process's ports (its SimFS view, the virtual clock, seeded
ids, the probe), reports what recovery found on its :class:`~dsh_sim.engine.lifetime.Lifetime`, sets
``ready`` and then waits for host commands.  Verification of a migration runs inline: a
worker thread would escape the simulated process's deterministic scheduler.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import attrs
import trio

from dsh_sim.adapters.answerer import SimAnswerer
from dsh_sim.adapters.execute_hook import ExecuteHookPlugin
from dsh_sim.adapters.model import RequestMark, SimModel
from dsh_sim.adapters.observed import PipelineWitness, ToolMark, observed
from dsh_sim.adapters.policy import CallPolicy, SimPolicy
from dsh_sim.adapters.post_execute_note import PostExecuteNote
from dsh_sim.adapters.shell import SimRunner, SimSandboxProvider
from dsh_sim.adapters.world_tools import world_tools
from dsh_sim.engine.gates import Gate
from runtime.agent.hooks import Plugin
from runtime.agent.runtime import RuntimeConfig, open_runtime
from runtime.agent.sandbox_service import SandboxService
from runtime.persistence.backend import JsonlBackend
from runtime.persistence.errors import SessionPersistenceNotFoundError
from runtime.persistence.header import SessionHeader
from runtime.persistence.publication import inline_verifier
from runtime.persistence.store import open_store
from runtime.ports import Ports
from runtime.session.session import Session
from runtime.tools.files import WriteFileTool
from runtime.tools.shell import ShellTool

if TYPE_CHECKING:
    from dsh_sim.adapters.world import World
    from dsh_sim.engine.config import SimConfig
    from dsh_sim.engine.lifetime import Lifetime
    from runtime.adapters.script_model import ScriptedResponse


@attrs.frozen
class StorageRecovery:
    """What a storage process found at open: the valid prefix (no closers at this level)."""

    events: tuple[Any, ...]
    torn: Any
    closers: tuple[Any, ...] = ()
    verdicts: dict[str, str] = attrs.field(factory=dict)


@attrs.frozen
class Surroundings:
    """What the machine hands a simulated process's program: its ports and the shared world.

    The model's script, the approval answers and the failed-answer record are shared lists:
    they outlive the process (a resumed turn continues the same script).
    """

    config: SimConfig
    ports: Ports
    gate: Gate
    world: World
    now: Callable[[], float]
    model_queue: list[ScriptedResponse]
    approval_answers: list[str]
    answerer_failures: list[str]
    tool_marks: list[ToolMark]
    model_requests: list[RequestMark]
    approval_consulted: list[str]
    approval_delay: list[float]
    call_policies: dict[str, CallPolicy]
    admitted: Callable[[Lifetime, Session], None]  # watch a live session's appends (the write-behind's inputs)


def _backend(env: Surroundings) -> JsonlBackend:
    """A persistence backend over the process's ports, verifying inline (no worker threads)."""
    return JsonlBackend(env.config.root, env.ports, compression=env.config.compression, verifier=inline_verifier)


class OpenCancelled(Exception):
    """The application gave up on its session open (a ``cancel`` fault struck the boot)."""


@contextlib.contextmanager
def opening(life: Lifetime) -> Iterator[None]:
    """The session open under a cancel scope the application owns — as one that opens with a
    deadline would — so that a ``cancel`` fault during boot cancels the open midway (the
    runtime's cleanup must still close and remove what the open had made)."""
    with trio.CancelScope() as scope:
        life.opening = scope
        try:
            yield
        finally:
            life.opening = None
    if scope.cancelled_caught:
        raise OpenCancelled("the session open was cancelled")


async def second_writer_main(env: Surroundings, life: Lifetime) -> None:
    """A second writer: opens the stored session for write, appends one event, exits."""
    cfg, ports = env.config, env.ports
    handle = await _backend(env).open(cfg.session_id, "write")
    try:
        stored = await handle.read()
        session = Session(cfg.session_id, ports.clock, stored)
        await handle.append(session.events[len(stored) :])
    finally:
        await handle.close()


async def agent_main(env: Surroundings, life: Lifetime) -> None:
    """The runtime with its agent: resume with repair (or create), then serve commands."""
    cfg, ports, gate = env.config, env.ports, env.gate
    tools = world_tools(env.world, gate.domain, env.now, life.index, approval_tools=cfg.approval_tools)
    tools.append(ShellTool(SimRunner(env.world, gate.domain, env.now, life.index), cfg.workspace, ports.probe))
    if cfg.file_tools:  # the runtime's own tool, on the process's view of the simulated disk
        writer = WriteFileTool(ports.fs, cfg.workspace)
        writer.requires_approval = "write_file" in cfg.approval_tools
        tools.append(writer)
    tools = observed(tools, env.tool_marks, life.index)
    life.tools_mounted = tuple((t.name, t.description) for t in tools)
    model = SimModel(env.model_queue, gate.domain, chunk_delay=cfg.chunk_delay, sleep=life.proc.sleep, shielded=cfg.model_uncancellable)
    model.observe(env.model_requests, life.index, lambda: len(life.agent.session.events) if life.agent is not None else 0)
    runtime_config = RuntimeConfig(
        root=cfg.root,
        compression=cfg.compression,
        max_parallel_tool_calls=cfg.max_parallel_tool_calls,
        max_steps=cfg.max_steps,
        system=cfg.system,
        checkpoint_policy=cfg.checkpoint_policy,
        approval_policy=cfg.approval_policy,
    )
    answerer = SimAnswerer(env.approval_answers, gate.domain, env.answerer_failures, env.approval_consulted)
    answerer.observe(env.tool_marks, life.index, env.approval_delay, life.proc.sleep)
    plugins: list[Plugin] = [
        answerer,
        SandboxService(SimSandboxProvider(), cfg.workspace, default_mode=cfg.sandbox_mode),
        PipelineWitness(env.tool_marks, life.index),
    ]
    if cfg.execute_plugin:
        plugins.append(ExecuteHookPlugin(gate.domain))
    if cfg.post_execute_note:
        plugins.append(PostExecuteNote())
    policy = SimPolicy(env.call_policies, gate.domain, env.tool_marks, life.index, life.proc.sleep) if cfg.policy else None
    if policy is not None:
        plugins.append(policy)
    async with open_runtime(ports, runtime_config, model, tools, plugins) as rt:
        if policy is not None:
            rt.tools.guards.extend((policy.guard, policy.audit_guard))
        life.runtime = rt
        life.store = rt.store
        rt.backend.verifier = inline_verifier  # no worker threads inside a simulated process
        with opening(life):
            try:
                life.agent, life.report = await rt.resume_agent(cfg.session_id)
            except SessionPersistenceNotFoundError:
                life.agent = await rt.create_agent(cfg.session_id, cwd=cfg.workspace)
                life.created = True
        life.session = life.agent.session
        env.admitted(life, life.session)
        life.proc.ready = True
        await trio.sleep_forever()


async def storage_main(env: Surroundings, life: Lifetime) -> None:
    """A persistence-level process: backend + store, no agent (the storage machine).

    Its write open migrates a seeded v0 log; verification runs inline because a worker
    thread would escape the simulated process's deterministic scheduler.
    """
    cfg, ports = env.config, env.ports
    backend = _backend(env)
    async with open_store(ports.probe) as store:
        life.store = store
        with opening(life):
            try:
                handle = await backend.open(cfg.session_id, "write")
                try:
                    life.report = StorageRecovery(tuple(await handle.read()), handle.torn_tail)
                except BaseException:
                    await handle.close()  # the application gives the session up: its lock goes with it
                    raise
                stored = list(life.report.events)
            except SessionPersistenceNotFoundError:
                handle = await backend.create(SessionHeader(cfg.session_id, ports.clock.now_ms(), cwd=cfg.workspace))
                life.created = True
                stored = []
        life.handle = handle
        life.session = Session(cfg.session_id, ports.clock, stored)
        store.bind(life.session, handle)
        env.admitted(life, life.session)
        life.proc.ready = True
        await trio.sleep_forever()
