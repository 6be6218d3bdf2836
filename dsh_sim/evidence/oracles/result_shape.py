"""Tool results, exactly as the spec writes them (§1.5, §4, §5.2).

* Every ``tool/result`` is ``{turn, step, message, error?, meta?}`` with ``message`` the
  ToolResultMessage ``{id, role:'user', source:{kind:'tool', callId}, content:[{type:
  'tool-result', toolCallId, isError, content:[blocks]}]}``; every block the pipeline and the
  simulated tools produce is ``{type:'text', text}``; ``error``, when present, is exactly
  ``{name, code}``.
* A tool body that threw gives a final error result: the text ``Error: <message>`` and, for a
  ``HarnessError``, ``error = {name, code}`` (no ``error`` otherwise).  What the body threw is
  the simulator's record (:class:`~dsh_sim.adapters.observed.ToolMark`), not the runtime's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from dsh_sim.adapters.observed import ToolMark

_DATA_KEYS = frozenset({"turn", "step", "message", "error", "meta"})


@attrs.frozen
class Problem:
    call_id: str
    message: str


def shape_problems(data: dict[str, Any]) -> list[str]:
    """How one ``tool/result``'s data departs from the spec's shape."""
    extra = sorted(set(data) - _DATA_KEYS)
    if extra:
        return [f"the result carries keys {extra} the spec does not know"]
    message = data.get("message")
    if type(message) is not dict or set(message) != {"id", "role", "source", "content"}:
        return [
            f"the message is not a ToolResultMessage {{id, role, source, content}}: {sorted(message) if type(message) is dict else message!r}"
        ]
    out = []
    source = message["source"]
    call_id = source.get("callId") if type(source) is dict else None
    if type(message["id"]) is not str or not message["id"]:
        out.append(f"the message id is {message['id']!r}")
    if message["role"] != "user":
        out.append(f"the message role is {message['role']!r}, not 'user'")
    if type(source) is not dict or set(source) != {"kind", "callId"} or source["kind"] != "tool" or type(call_id) is not str:
        out.append(f"the message source is {source!r}, not {{kind:'tool', callId}}")
    content = message["content"]
    block = content[0] if type(content) is list and len(content) == 1 else None
    if type(block) is not dict or set(block) != {"type", "toolCallId", "isError", "content"}:
        return [*out, f"the message content is not one tool-result block: {content!r}"[:200]]
    if block["type"] != "tool-result" or block["toolCallId"] != call_id or type(block["isError"]) is not bool:
        out.append(f"the tool-result block reads type {block['type']!r}, toolCallId {block['toolCallId']!r}, isError {block['isError']!r}")
    blocks = block["content"]
    if type(blocks) is not list or not all(
        type(b) is dict and set(b) == {"type", "text"} and b["type"] == "text" and type(b["text"]) is str for b in blocks
    ):
        out.append(f"the result's blocks are not text blocks {{type:'text', text}}: {blocks!r}"[:200])
    error = data.get("error")
    if "error" in data and (type(error) is not dict or set(error) != {"name", "code"} or not all(type(v) is str for v in error.values())):
        out.append(f"the result's error is {error!r}, not {{name, code}}")
    return out


def _thrown(marks: Sequence[ToolMark], lifetime: int) -> dict[str, tuple[str, str | None, str | None] | None]:
    """Per call id of process ``lifetime``: what its latest body threw (None: it did not throw)."""
    out: dict[str, tuple[str, str | None, str | None] | None] = {}
    for mark in marks:
        if mark.lifetime == lifetime and mark.call_id is not None:
            if mark.kind == "body":
                out[mark.call_id] = None
            elif mark.kind == "raised":
                out[mark.call_id] = mark.error
    return out


def expected_failure(error: tuple[str, str | None, str | None]) -> tuple[str, dict[str, str] | None]:
    """The text and the logged ``error`` of the result for a body that threw (§5.2)."""
    message, name, code = error
    return f"Error: {message}", ({"name": name, "code": code} if name is not None and code is not None else None)


def judge(events: Iterable[Any], marks: Sequence[ToolMark], lifetime: int) -> list[Problem]:
    results = [e for e in events if e.type == "tool/result"]
    if not results:
        return []
    thrown = _thrown(marks, lifetime)
    out: list[Problem] = []
    for event in results:
        data = event.data
        problems = shape_problems(data)
        call_id = str(data.get("message", {}).get("source", {}).get("callId"))
        error = thrown.get(call_id)
        if not problems and error is not None:
            text, info = expected_failure(error)
            block = data["message"]["content"][0]
            got = ([b["text"] for b in block["content"]], block["isError"], data.get("error"))
            if got != ([text], True, info):
                problems.append(
                    f"the body threw {error[0]!r}: the result must read {text!r} with error {info!r}, not {got[0]!r} with error {got[2]!r}"[
                        :300
                    ]
                )
        out.extend(Problem(call_id, p) for p in problems)
    return out
