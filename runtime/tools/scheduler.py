"""Running one assistant step's tool calls (spec §5.1, §5.3).

Calls run in model order.  A concurrency-safe call opens a parallel group over the following
concurrency-safe calls (at most ``max_parallel`` in flight); any other call runs alone.  A
call is (re)classified right before it starts, once a pool slot is free, so a tool swapped by
an earlier call is seen.  ``tool/call`` is appended when a call starts; ``tools/post-execute``
and the ``tool/result`` commit run in model order, each as soon as every earlier call has
settled.  On abort no further call starts; started calls drain; every unstarted call still
gets a ``tool/call`` and an ``ABORTED_BEFORE_DISPATCH`` result, so a cancelled (not crashed)
step never leaves a dangling call.  An internal failure stops new dispatches, lets started
calls drain (they are not cancelled) and is re-raised without fabricating results.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import trio

from runtime.agent.signal import AbortSignal
from runtime.ports.probe import Probe
from runtime.session.events import Event
from runtime.session.session import Session
from runtime.tools import results as R
from runtime.tools.registry import ToolExecution, ToolRegistry, parse_arguments
from runtime.tools.results import ToolResult

DEFAULT_MAX_PARALLEL_TOOL_CALLS = 10


@attrs.frozen
class ToolCallBlock:
    id: str
    name: str
    arguments: str  # raw JSON string


def tool_result_message(call_id: str, result: ToolResult) -> dict[str, Any]:
    return {
        "id": f"tool-result-{call_id}",
        "role": "user",
        "source": {"kind": "tool", "callId": call_id},
        "content": [{"type": "tool-result", "toolCallId": call_id, "isError": result.is_error, "content": list(result.content)}],
    }


class StepTools:
    """The tool calls of one step, and their events in one session."""

    def __init__(
        self,
        *,
        session: Session,
        registry: ToolRegistry,
        probe: Probe,
        agent: Any,
        turn: int,
        step: int,
        signal: AbortSignal,
        max_parallel: int = DEFAULT_MAX_PARALLEL_TOOL_CALLS,
    ) -> None:
        check_max_parallel(max_parallel)
        self._session = session
        self._registry = registry
        self._probe = probe
        self._agent = agent
        self._turn = turn
        self._step = step
        self._signal = signal
        self._max_parallel = max_parallel
        self._call_seqs: dict[str, int] = {}
        self._settled: dict[int, tuple[ToolExecution | None, ToolResult]] = {}
        self._committed = 0
        self._committing = False
        self._failure: Exception | None = None
        self._calls: list[ToolCallBlock] = []
        self._executions: dict[int, ToolExecution] = {}  # per started slot, once it has one
        self._started = 0  # slots whose tool/call is in the log
        self.results: list[ToolResult] = []

    @property
    def _stopped(self) -> bool:
        return self._signal.aborted or self._failure is not None

    def _mode(self, call: ToolCallBlock) -> str:
        return self._registry.execution_mode(call.name, parse_arguments(call.arguments))

    async def run(self, calls: Sequence[ToolCallBlock]) -> list[ToolResult]:
        self._calls = list(calls)
        try:
            return await self._run()
        except Exception:
            raise  # a scheduler failure: started calls stay open, resume repairs them (spec §5.3)
        except BaseException:
            self._close_on_teardown()
            raise

    def abandon(self, calls: Sequence[ToolCallBlock]) -> None:
        """The step is torn down before its calls started: each gets its tool/call and an
        ABORTED_BEFORE_DISPATCH result, as a cancellation gives them (spec §5.3)."""
        self._calls = list(calls)
        self._close_on_teardown()

    def _close_on_teardown(self) -> None:
        """The step is torn down from outside (the agent's owner cancelled it): no await is
        possible any more, but a cancelled — not crashed — turn never leaves a dangling call
        (spec §5.3).  Every started call without a committed result gets one, in model order:
        ABORTED when its body had started (its effect may have happened), else
        ABORTED_BEFORE_DISPATCH."""
        for slot in range(self._committed, self._started):
            settled = self._settled.pop(slot, None)
            ex = self._executions.get(slot)
            if settled is not None and settled[1].final:
                result = settled[1]  # a pipeline's own final result (a refusal, an error) stands
            else:  # post-execute cannot run now: a settled success is reported as aborted too
                result = R.aborted() if ex is not None and ex.dispatched else R.aborted_before_dispatch()
            self._commit(slot, result)
        for slot in range(self._started, len(self._calls)):  # unstarted: a call and its result, as a cancel gives
            self._append_call(slot)
            self._commit(slot, R.aborted_before_dispatch())

    async def _run(self) -> list[ToolResult]:
        index = 0
        while index < len(self._calls) and not self._stopped:
            if self._mode(self._calls[index]) == "exclusive":
                await self._start(index)
                await self._execute(index)
                index += 1
                continue
            index = await self._run_group(index)
        if self._failure is not None:
            raise self._failure
        for skipped in range(index, len(self._calls)):
            await self._start(skipped)
            await self._settle(skipped, None, R.aborted_before_dispatch())
        return self.results

    async def _run_group(self, first: int) -> int:
        limiter = trio.Semaphore(self._max_parallel)
        index = first
        async with trio.open_nursery() as nursery:
            while index < len(self._calls) and not self._stopped:
                await limiter.acquire()
                if self._stopped or (index > first and self._mode(self._calls[index]) != "parallel"):
                    limiter.release()
                    break
                try:
                    await self._start(index)
                except Exception as err:
                    self._fail(err)
                    limiter.release()
                    break
                nursery.start_soon(self._execute_in_pool, index, limiter)
                index += 1
        return index

    def _fail(self, err: Exception) -> None:
        if self._failure is None:
            self._failure = err

    async def _execute_in_pool(self, index: int, limiter: trio.Semaphore) -> None:
        try:
            await self._execute(index)
        except Exception as err:  # contained so that started siblings drain instead of being cancelled
            self._fail(err)
        finally:
            limiter.release()

    async def _start(self, index: int) -> None:
        event = self._append_call(index)
        call = self._calls[index]
        await self._probe.at("tools.call.appended", call_id=call.id, tool=call.name, seq=event.seq)

    def _append_call(self, index: int) -> Event:
        call = self._calls[index]
        event = self._session.append(
            "tool/call",
            {"turn": self._turn, "step": self._step, "callId": call.id, "name": call.name, "arguments": call.arguments},
        )
        self._call_seqs[call.id] = event.seq
        self._started = index + 1
        return event

    async def _execute(self, index: int) -> None:
        call = self._calls[index]
        ex = ToolExecution(
            call_id=call.id,
            root_call_id=call.id,
            name=call.name,
            arguments=parse_arguments(call.arguments),
            raw_arguments=call.arguments,
            signal=self._signal.child(),
            agent=self._agent,
            registry=self._registry,
        )
        self._executions[index] = ex
        result = await self._registry.execute(ex)
        await self._settle(index, ex, result)

    async def _settle(self, index: int, ex: ToolExecution | None, result: ToolResult) -> None:
        """Record a settled call; whoever finds the next slot settled commits, in model order."""
        self._settled[index] = (ex, result)
        if self._committing:
            return  # the active committer picks this slot up when its turn comes
        self._committing = True
        try:
            while self._committed in self._settled:
                slot = self._committed
                settled_ex, raw = self._settled.pop(slot)
                final = raw if settled_ex is None else await self._registry.finalize(settled_ex, raw)
                self._commit(slot, final)
                await self._probe.at("tools.result.appended", call_id=self._calls[slot].id, tool=self._calls[slot].name)
        finally:
            self._committing = False

    def _commit(self, slot: int, result: ToolResult) -> None:
        call = self._calls[slot]
        data: dict[str, Any] = {"turn": self._turn, "step": self._step, "message": tool_result_message(call.id, result)}
        info = result.error.info() if result.error else None
        if info is not None:
            data["error"] = info
        if result.meta is not None:
            data["meta"] = result.meta
        self._session.append("tool/result", data, surface_op="append", source_event_seqs=[self._call_seqs[call.id]])
        self.results.append(result)
        self._committed += 1


def check_max_parallel(value: object) -> None:
    """``maxParallelToolCalls`` must be a positive integer (``bool`` is not one)."""
    if type(value) is not int or value < 1:
        raise ValueError("maxParallelToolCalls must be a positive integer")
