"""The shell tool runs only through a mounted sandbox service, and says how it was confined."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
import trio

from runtime.agent.hooks import Hooks, mount
from runtime.agent.sandbox import ConfinedArgv, SandboxPolicy, UnavailableProvider, UnsafeWorkspaceError
from runtime.agent.sandbox_service import SandboxService
from runtime.agent.signal import AbortSignal
from runtime.ports.probe import NULL_PROBE
from runtime.ports.process import ProcessResult
from runtime.session.session import Session
from runtime.tools.registry import ToolExecution, ToolRegistry
from runtime.tools.results import HarnessError
from runtime.tools.shell import ShellTool


class Clock:
    def now_ms(self) -> int:
        return 0


class Recorder:
    def __init__(self) -> None:
        self.ran: list[list[str]] = []

    async def run(self, argv: Sequence[str], *, cwd: str, call_id: str | None = None) -> ProcessResult:
        self.ran.append(list(argv))
        return ProcessResult(0, "ok\n", "")


class Wrapping:
    def confine(self, argv: Sequence[str], policy: SandboxPolicy) -> ConfinedArgv:
        return ConfinedArgv(argv=("box", policy.mode, "--", *argv), enforcement="partial", unconfined=("network",))


class Agent:
    def __init__(self) -> None:
        self.session = Session("s", Clock())
        self.id = "s"


def execute(tool: ShellTool, registry: ToolRegistry, agent: Agent):
    ex = ToolExecution("c1", "c1", "shell", {"argv": ["ls"]}, '{"argv":["ls"]}', AbortSignal(), agent=agent, registry=registry)
    return trio.run(tool.execute, ex)


def setup(provider=None, mode="workspace-write"):
    hooks = Hooks()
    registry = ToolRegistry(hooks, NULL_PROBE)
    runner = Recorder()
    tool = ShellTool(runner, "/ws", NULL_PROBE)
    ctx = mount(hooks, SandboxService(provider, "/ws", default_mode=mode)) if provider is not None else None
    return tool, registry, runner, ctx


def test_without_a_mounted_sandbox_nothing_runs():
    tool, registry, runner, _ = setup()
    with pytest.raises(HarnessError) as err:
        execute(tool, registry, Agent())
    assert err.value.code == "SANDBOX_UNAVAILABLE" and runner.ran == []


def test_the_provider_confines_and_the_result_says_how():
    tool, registry, runner, _ = setup(Wrapping())
    result = execute(tool, registry, Agent())
    assert runner.ran == [["box", "workspace-write", "--", "ls"]]
    assert result.meta == {"sandbox": "workspace-write", "enforcement": "partial", "unconfined": ["network"]}


def test_danger_full_access_is_an_explicit_bypass_recorded_as_such():
    tool, registry, runner, _ = setup(Wrapping(), mode="danger-full-access")
    result = execute(tool, registry, Agent())
    assert runner.ran == [["ls"]] and result.meta["enforcement"] == "bypassed"


def test_the_last_sandbox_mode_event_wins_over_the_default():
    tool, registry, runner, ctx = setup(Wrapping())
    agent = Agent()
    registry.service("sandbox").set_mode(agent, "read-only")
    execute(tool, registry, agent)
    assert runner.ran == [["box", "read-only", "--", "ls"]]


def test_an_unusable_backend_refuses_instead_of_passing_through():
    tool, registry, runner, _ = setup(UnavailableProvider("no backend here"))
    with pytest.raises(HarnessError) as err:
        execute(tool, registry, Agent())
    assert err.value.code == "SANDBOX_UNAVAILABLE" and "refusing to run the command unconfined" in str(err.value)
    assert runner.ran == []


def test_disposing_the_plugin_withdraws_the_service():
    tool, registry, runner, ctx = setup(Wrapping())
    ctx.dispose()
    assert registry.service("sandbox") is None
    with pytest.raises(HarnessError):
        execute(tool, registry, Agent())


class Unsafe:
    def confine(self, argv: Sequence[str], policy: SandboxPolicy) -> ConfinedArgv:
        raise UnsafeWorkspaceError(policy.workspace_root, "it is the filesystem root")


def test_an_unsafe_workspace_is_refused_and_nothing_runs():
    tool, registry, runner, _ = setup(Unsafe())
    with pytest.raises(HarnessError) as err:
        execute(tool, registry, Agent())
    assert err.value.code == "UNSAFE_WORKSPACE" and "filesystem root" in str(err.value) and runner.ran == []


@pytest.mark.parametrize("argv", [["ls", "a\ud800"], ["x\udc80"]], ids=["lone-surrogate", "surrogateescape-range"])
def test_an_argv_with_no_utf8_is_refused_before_anything_runs(argv):
    """The log holds lone surrogates (spec §1.1); the OS takes no such argv (``\\ud800`` raised
    inside the spawn, ``\\udc80`` went through as a raw byte) while SimFS ran it: refused up front."""
    tool, registry, runner, _ = setup(Wrapping())
    ex = ToolExecution("c1", "c1", "shell", {"argv": argv}, "{}", AbortSignal(), agent=Agent(), registry=registry)
    with pytest.raises(HarnessError, match=r"argv\[\d\] is not UTF-8 text: a lone surrogate") as err:
        trio.run(tool.execute, ex)
    assert err.value.code == "INVALID_ARGUMENTS" and runner.ran == []
