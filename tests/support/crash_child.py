"""Child process of the SIGKILL crash test (spec §8.7): run one turn up to a failpoint, then hang.

Usage: ``python crash_child.py <request|tool> <persistence-root> <marker> <none|zstd>``.

The runtime runs as in production (real filesystem, JSONL backend, checkpoint policy).  At the
failpoint the child writes the marker's content — ``request-dispatched`` inside the model
stream, ``tool-side-effect`` inside the tool body — and then waits to be killed.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from typing import Any

import trio

from runtime.adapters import production_ports
from runtime.agent.runtime import RuntimeConfig, open_runtime
from runtime.ports.model import Finish, ModelRequest, StreamPart, ToolCallDelta
from runtime.tools.registry import ToolExecution
from runtime.tools.results import ToolResult

SESSION_ID = "semantic-checkpoint-crash"
SYSTEM = "You are the crash child."


def publish(marker: str, text: str) -> None:
    with open(marker, "w", encoding="utf-8") as f:
        f.write(text)


class CrashModel:
    provider = "crash"
    model = "crash"

    def __init__(self, mode: str, marker: str) -> None:
        self._mode = mode
        self._marker = marker

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamPart]:
        if self._mode == "request":
            publish(self._marker, "request-dispatched")
            await trio.sleep_forever()
        yield ToolCallDelta(0, "crash-call", "crash_tool", "{}")
        yield Finish("tool-calls")


class CrashTool:
    name = "crash_tool"
    description = "records an external effect and never returns"
    requires_approval = False

    def __init__(self, marker: str) -> None:
        self._marker = marker

    def is_concurrency_safe(self, arguments: Any) -> bool:
        return False

    async def execute(self, ex: ToolExecution) -> ToolResult:
        publish(self._marker, "tool-side-effect")
        await trio.sleep_forever()
        raise AssertionError("unreachable")


async def main(mode: str, root: str, marker: str, compression: str) -> None:
    config = RuntimeConfig(root=root, compression=compression, system=SYSTEM)
    async with open_runtime(production_ports(), config, CrashModel(mode, marker), [CrashTool(marker)]) as rt:
        agent = await rt.create_agent(SESSION_ID)
        await agent.run_turn("exercise the crash boundary")
        await trio.sleep_forever()


if __name__ == "__main__":
    mode, root, marker, compression = sys.argv[1:5]
    if mode not in ("request", "tool") or compression not in ("none", "zstd"):
        raise SystemExit("usage: crash_child.py <request|tool> <persistence-root> <marker> <none|zstd>")
    trio.run(main, mode, root, marker, compression)
