"""The model port: an async stream of parts for one request.

A model adapter yields text deltas, tool-call deltas, usage and a finish part.  The agent
assembles the assistant message from them and embeds every received part, with its time,
in the ``assistant/message`` event's ``stream`` records (the v3 format has no chunk events).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol

import attrs


@attrs.frozen
class TextDelta:
    index: int
    text: str

    def to_chunk(self) -> dict[str, Any]:
        return {"type": "text-delta", "index": self.index, "text": self.text}


@attrs.frozen
class ToolCallDelta:
    index: int
    id: str
    name: str | None
    arguments_delta: str

    def to_chunk(self) -> dict[str, Any]:
        chunk: dict[str, Any] = {"type": "tool-call-delta", "index": self.index, "id": self.id}
        if self.name is not None:
            chunk["name"] = self.name
        chunk["argumentsDelta"] = self.arguments_delta
        return chunk


@attrs.frozen
class Usage:
    input_tokens: int
    output_tokens: int

    def to_chunk(self) -> dict[str, Any]:
        return {"type": "usage", "inputTokens": self.input_tokens, "outputTokens": self.output_tokens}


@attrs.frozen
class Finish:
    reason: str  # "stop" | "tool-calls" | "max-tokens" | "error"

    def to_chunk(self) -> dict[str, Any]:
        return {"type": "finish", "reason": {"kind": self.reason}}


StreamPart = TextDelta | ToolCallDelta | Usage | Finish


@attrs.frozen
class ModelRequest:
    session_id: str | None
    turn: int
    step: int
    messages: tuple[dict[str, Any], ...]  # derived model history (surface messages)
    tools: tuple[dict[str, Any], ...]  # tool specs {name, description}
    provider: str
    model: str


class ModelAdapter(Protocol):
    provider: str
    model: str

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamPart]: ...
