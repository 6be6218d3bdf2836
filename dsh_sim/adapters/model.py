"""The scripted model of a simulation: responses chosen by the scenario.

Each request takes the next scripted response (text and tool calls); when the script is
empty the model answers with plain text, so every turn ends.  Parts are spaced by
``chunk_delay`` seconds of virtual time, and the fault plan may cut the stream at
``model.stream``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

import attrs
import trio

from runtime.adapters.script_model import ScriptedResponse
from runtime.ports.model import ModelRequest, StreamPart
from runtime.tools.results import HarnessError

if TYPE_CHECKING:
    from dsh_sim.adapters.gate import DomainGate


class ModelStreamError(HarnessError):
    name = "ModelStreamError"
    code = "STREAM_CUT"


@attrs.define(eq=False)
class RequestMark:
    """A model request as the model received it — the turn and step it names, the messages and
    tools it carries, how many events the process's log held then (what it was built from) —
    and the model's answer: the parts it delivered, in order, and whether its stream was cut."""

    lifetime: int
    turn: int
    step: int
    messages: tuple[Any, ...]
    tools: tuple[Any, ...]
    events: int
    delivered: list[StreamPart] = attrs.field(factory=list)
    parts: int = 0  # how many parts the scripted response has
    cut: bool = False


class SimModel:
    provider = "sim"
    model = "scripted"

    def __init__(
        self,
        queue: list[ScriptedResponse],
        gate: DomainGate,
        *,
        chunk_delay: float = 0.01,
        sleep: Callable[[float], Awaitable[None]] = trio.sleep,
        shielded: bool = False,
    ) -> None:
        self._queue = queue  # shared with the simulation: survives process lifetimes
        self._gate = gate
        self._chunk_delay = chunk_delay
        self._sleep = sleep  # the process's host-timed sleep (SimProcess.sleep): same schedule, cheaper
        # an adapter that cannot be cancelled (an HTTP client without cancellation support): its
        # waits are shielded, so the loop must notice a cancellation between parts on its own
        self._shielded = shielded
        self._requests: list[RequestMark] | None = None
        self._lifetime = 0
        self._log_length: Callable[[], int] = lambda: 0

    def observe(self, requests: list[RequestMark], lifetime: int, log_length: Callable[[], int]) -> None:
        """Record every request in ``requests``, with the length of the log it was built from."""
        self._requests, self._lifetime, self._log_length = requests, lifetime, log_length

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamPart]:
        response = self._queue.pop(0) if self._queue else ScriptedResponse(text="ok")
        parts = response.parts()
        mark = None
        if self._requests is not None:
            mark = RequestMark(self._lifetime, request.turn, request.step, request.messages, request.tools, self._log_length())
            mark.parts = len(parts)
            self._requests.append(mark)
        return self._emit(request, response, parts, mark)

    async def _emit(
        self, request: ModelRequest, response: ScriptedResponse, parts: list[StreamPart], mark: RequestMark | None
    ) -> AsyncIterator[StreamPart]:
        for index, part in enumerate(parts):
            fault = await self._gate("model.stream", {"turn": request.turn, "step": request.step, "part": index})
            if fault is not None and fault.action == "stream_cut":
                if mark is not None:
                    mark.cut = True
                raise ModelStreamError("the model stream was cut mid-response")
            if self._shielded:
                with trio.CancelScope(shield=True):
                    await self._sleep(response.chunk_delay or self._chunk_delay)
            else:
                await self._sleep(response.chunk_delay or self._chunk_delay)
            if mark is not None:
                mark.delivered.append(part)
            yield part
