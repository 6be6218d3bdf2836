"""A deterministic model adapter that replays a script of responses.

One response per request, in order.  A script is JSON so the CLI can run demos from a
file::

    {"provider": "script", "model": "demo",
     "responses": [
       {"text": "Writing the file.",
        "tool_calls": [{"id": "call-1", "name": "write_file",
                        "arguments": {"path": "notes.txt", "content": "hi"}}]},
       {"text": "Done."}]}

``chunk_delay`` (seconds, default 0) spaces the parts out in trio time.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import attrs
import trio

from runtime.ports.model import (
    Finish,
    ModelRequest,
    StreamPart,
    TextDelta,
    ToolCallDelta,
    Usage,
)


class ScriptExhaustedError(RuntimeError):
    pass


@attrs.frozen
class ScriptedToolCall:
    id: str
    name: str
    arguments: str  # the raw JSON string the model emits


@attrs.frozen
class ScriptedResponse:
    text: str = ""
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    chunk_delay: float = 0.0
    finish: str | None = None  # how the stream ends (None: "tool-calls" with calls, else "stop"; e.g. "max-tokens")

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> ScriptedResponse:
        calls = []
        for call in obj.get("tool_calls", ()):
            args = call.get("arguments", {})
            raw = args if isinstance(args, str) else json.dumps(args, separators=(",", ":"), sort_keys=True)
            calls.append(ScriptedToolCall(call["id"], call["name"], raw))
        return cls(obj.get("text", ""), tuple(calls), float(obj.get("chunk_delay", 0.0)), obj.get("finish"))

    def parts(self) -> list[StreamPart]:
        out: list[StreamPart] = []
        index = 0
        if self.text:
            words = self.text.split(" ")
            for i, word in enumerate(words):
                out.append(TextDelta(index, word if i == len(words) - 1 else word + " "))
            index += 1
        for call in self.tool_calls:
            first, second = _halves(call.arguments)
            out.append(ToolCallDelta(index, call.id, call.name, first))
            out.append(ToolCallDelta(index, call.id, None, second))
            index += 1
        out.append(Usage(input_tokens=10, output_tokens=max(1, len(self.text) // 4)))
        out.append(Finish(self.finish or ("tool-calls" if self.tool_calls else "stop")))
        return out


def _halves(text: str) -> tuple[str, str]:
    """``text`` cut in two at the middle of its UTF-16 code units, as a provider counting them
    cuts a stream: an astral character there is split into its two surrogates (the runtime
    joins them back as JavaScript does)."""
    if text.isascii():  # one code unit per character: the common case, cut without encoding
        half = len(text) // 2
        return text[:half], text[half:]
    units = text.encode("utf-16-le", "surrogatepass")
    half = len(units) // 4 * 2
    return units[:half].decode("utf-16-le", "surrogatepass"), units[half:].decode("utf-16-le", "surrogatepass")


class ScriptModel:
    def __init__(self, responses: list[ScriptedResponse], *, provider: str = "script", model: str = "demo") -> None:
        self.provider = provider
        self.model = model
        self._responses = list(responses)
        self.requests: list[ModelRequest] = []

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> ScriptModel:
        responses = [ScriptedResponse.from_json(r) for r in obj.get("responses", ())]
        return cls(responses, provider=obj.get("provider", "script"), model=obj.get("model", "demo"))

    def push(self, response: ScriptedResponse) -> None:
        self._responses.append(response)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamPart]:
        if not self._responses:
            raise ScriptExhaustedError("the model script has no response left for this request")
        self.requests.append(request)
        response = self._responses.pop(0)
        for part in response.parts():
            if response.chunk_delay:
                await trio.sleep(response.chunk_delay)
            yield part
