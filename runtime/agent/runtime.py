"""Composition: one runtime = ports + backend + store + hooks + tools + model + plugins.

``open_runtime`` is the structured-concurrency owner of everything with a lifetime: the
session store's write-behind workers live in its nursery, and leaving the block drains and
closes every live session.  Policies are mounted as plugins and can be left out.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence

import attrs

from runtime.agent.approval import ApprovalService
from runtime.agent.checkpoint import CheckpointPolicy
from runtime.agent.hooks import Hooks, Plugin, PluginContext, mount
from runtime.agent.loop import Agent
from runtime.agent.resume import RecoveryReport, repair_and_seed
from runtime.persistence.backend import JsonlBackend
from runtime.persistence.header import SessionHeader
from runtime.persistence.store import SessionStore, open_store
from runtime.ports import Ports
from runtime.ports.model import ModelAdapter
from runtime.session.session import Session
from runtime.tools.registry import Tool, ToolRegistry
from runtime.tools.scheduler import DEFAULT_MAX_PARALLEL_TOOL_CALLS, check_max_parallel

DEFAULT_MAX_STEPS = 16


@attrs.frozen
class RuntimeConfig:
    root: str
    compression: str = "zstd"
    max_parallel_tool_calls: int = attrs.field(default=DEFAULT_MAX_PARALLEL_TOOL_CALLS)
    max_steps: int = DEFAULT_MAX_STEPS  # a turn ends with an error after this many steps with tool calls
    system: str | None = None
    checkpoint_policy: bool = True
    approval_policy: str | None = "ask"  # None: no approval service mounted

    @max_parallel_tool_calls.validator
    def _check_max_parallel(self, _: object, value: object) -> None:
        check_max_parallel(value)  # fail at configuration, not at the first tool call


class Runtime:
    def __init__(self, ports: Ports, config: RuntimeConfig, store: SessionStore, model: ModelAdapter, tools: Sequence[Tool]) -> None:
        self.ports = ports
        self.config = config
        self.store = store
        self.model = model
        self.hooks = Hooks()
        self.backend = JsonlBackend(config.root, ports, compression=config.compression)
        self.tools = ToolRegistry(self.hooks, ports.probe, list(tools))
        self.plugins: dict[str, PluginContext] = {}
        self.approval: ApprovalService | None = None

    def mount(self, plugin: Plugin) -> PluginContext:
        if plugin.name in self.plugins:
            raise ValueError(f"plugin {plugin.name!r} is already mounted")
        ctx = mount(self.hooks, plugin)
        self.plugins[plugin.name] = ctx
        return ctx

    def unmount(self, name: str) -> None:
        self.plugins.pop(name).dispose()

    async def create_agent(self, session_id: str, *, cwd: str | None = None) -> Agent:
        header = SessionHeader(id=session_id, created_at=self.ports.clock.now_ms(), cwd=cwd)
        handle = await self.backend.create(header)
        session = Session(session_id, self.ports.clock)
        try:
            self.store.bind(session, handle)
        except BaseException:
            await handle.close()  # do not leak the claim on the id
            raise
        return Agent(self, session, system=self.config.system)

    async def resume_agent(self, session_id: str) -> tuple[Agent, RecoveryReport]:
        """Open for write, repair the interrupted tail durably, seed and continue (spec §10.7)."""
        handle = await self.backend.open(session_id, "write")
        try:
            report = await repair_and_seed(handle)
            session = Session(session_id, self.ports.clock, report.events + report.closers)
            self.store.bind(session, handle)
        except BaseException:
            await handle.close()
            raise
        return Agent(self, session, system=self.config.system), report

    async def close_agent(self, agent: Agent) -> None:
        await self.store.release(agent.session)


@contextlib.asynccontextmanager
async def open_runtime(
    ports: Ports,
    config: RuntimeConfig,
    model: ModelAdapter,
    tools: Sequence[Tool] = (),
    plugins: Sequence[Plugin] = (),
) -> AsyncIterator[Runtime]:
    async with open_store(ports.probe) as store:
        rt = Runtime(ports, config, store, model, tools)
        if config.checkpoint_policy:
            rt.mount(CheckpointPolicy(store))
        if config.approval_policy is not None:
            rt.approval = ApprovalService(rt.tools, policy=config.approval_policy)
            rt.mount(rt.approval)
        for plugin in plugins:
            rt.mount(plugin)
        yield rt
