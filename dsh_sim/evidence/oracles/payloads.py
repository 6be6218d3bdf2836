"""The spec's core payloads (§1.5, with the v3 changes of §10.1), as an exact schema.

The envelope checker (:mod:`.spec_records`) judges every record's frame; this one judges what
a record's ``data`` holds, for each event type the spec gives a shape: the keys present (no
more, none missing; optional ones only where the table marks them), the types of the values,
and the closed vocabularies (a turn's end reason, a request header's reason, an approval's
outcome and policy, a message's role and source kind, a content block's type).  Written from
the table alone — a runtime that spells one key or one vocabulary word its own way writes a
log no DSH reader understands the same way, and nothing else would notice.

Types the table leaves open (tool results' ``meta``, a header's ``config`` beyond provider
and model) are judged only as far as the table goes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Problem = str | None

_ABORT_REASONS = frozenset({"user", "parent", "disposed", "legacy"})
_END_KINDS = frozenset({"completed", "aborted", "blocked", "error", "max-tokens", "interrupted"})
_OUTCOMES = frozenset({"allowed-once", "rejected", "cancelled", "unavailable"})
_POLICIES = frozenset({"ask", "never"})
_HEADER_REASONS = frozenset({"initial", "resume", "change"})


def _int(value: Any) -> bool:
    return type(value) is int and value >= 0


def _str(value: Any, *, empty: bool = False) -> bool:
    return type(value) is str and (empty or value != "")


def _keys(value: Any, required: set[str], optional: frozenset[str] | set[str] = frozenset()) -> Problem:
    if type(value) is not dict:
        return f"{type(value).__name__} where an object belongs"
    keys = set(value)
    if not required <= keys:
        return f"missing {sorted(required - keys)}"
    extra = keys - required - set(optional)
    if extra:
        return f"keys the spec does not define: {sorted(extra)}"
    return None


def _turn_step(data: Any, optional: frozenset[str] = frozenset(), extra: set[str] | None = None) -> Problem:
    problem = _keys(data, {"turn", "step", *(extra or ())}, optional)
    if problem:
        return problem
    if not (_int(data["turn"]) and data["turn"] >= 1 and _int(data["step"]) and data["step"] >= 1):
        return f"turn/step not positive integers: {data['turn']!r}/{data['step']!r}"
    return None


def end_reason(reason: Any) -> Problem:
    """A ``turn/end`` reason: one of the spec's shapes, exactly."""
    if type(reason) is not dict or reason.get("kind") not in _END_KINDS:
        return f"reason {reason!r} is none of the spec's kinds"
    kind = reason["kind"]
    if kind == "aborted":
        problem = _keys(reason, {"kind", "reason"})
        if problem:
            return f"aborted reason: {problem}"
        inner = reason["reason"]
        if type(inner) is dict and inner.get("kind") == "hook":
            return _keys(inner, {"kind", "reason"}) and f"aborted by a hook: {_keys(inner, {'kind', 'reason'})}"
        if type(inner) is not dict or inner.get("kind") not in _ABORT_REASONS or set(inner) != {"kind"}:
            return f"aborted reason {inner!r} is none of {{kind: user|parent|disposed|legacy}}, {{kind: hook, reason}}"
        return None
    if kind == "error":
        problem = _keys(reason, {"kind", "error"})
        if problem:
            return f"error reason: {problem}"
        error = reason["error"]
        problem = _keys(error, {"message", "code"}, {"status", "providerRetryAfterMs", "requestId"})
        if problem:
            return f"error reason's error: {problem}"
        if not (_str(error["message"]) and _str(error["code"])):
            return f"error reason's message and code must be non-empty strings: {error!r}"
        return None
    return _keys(reason, {"kind"}) and f"{kind} reason: {_keys(reason, {'kind'})}"


def _blocks(content: Any, allowed: frozenset[str]) -> Problem:
    if type(content) is not list:
        return "content is not a list"
    for block in content:
        kind = block.get("type") if type(block) is dict else None
        if kind not in allowed:
            return f"a content block of type {kind!r} (allowed: {sorted(allowed)})"
        if kind == "text":
            problem = _keys(block, {"type", "text"})
            if problem or not _str(block["text"], empty=True):
                return f"text block {block!r}: {problem or 'text is not a string'}"
        elif kind == "tool-call":
            problem = _keys(block, {"type", "id", "name", "arguments"})
            if problem or not (_str(block["id"]) and _str(block["name"]) and _str(block["arguments"], empty=True)):
                return f"tool-call block {block!r}: {problem or 'id and name must be non-empty strings, arguments a string'}"
    return None


def _message(message: Any, role: str, sources: Callable[[Any], Problem], blocks: frozenset[str]) -> Problem:
    problem = _keys(message, {"id", "role", "content", "source"} if role != "system" else {"id", "role", "content"})
    if problem:
        return f"message: {problem}"
    if not _str(message["id"]):
        return f"message id {message['id']!r} is not a non-empty string"
    if message["role"] != role:
        return f"message role {message['role']!r} where {role!r} belongs"
    if role != "system":
        problem = sources(message["source"])
        if problem:
            return f"message source: {problem}"
    return _blocks(message["content"], blocks)


def _user_source(source: Any) -> Problem:
    if type(source) is dict and source.get("kind") == "user":
        return _keys(source, {"kind"})
    if type(source) is dict and source.get("kind") == "plugin":
        problem = _keys(source, {"kind", "plugin"})
        return problem or (None if _str(source["plugin"]) else "plugin is not a non-empty string")
    return f"{source!r} is neither {{kind: user}} nor {{kind: plugin, plugin}}"


def _model_source(source: Any) -> Problem:
    if type(source) is not dict or source.get("kind") != "model":
        return f"{source!r} is not {{kind: model, provider, model}}"
    problem = _keys(source, {"kind", "provider", "model"}, {"replayState"})
    return problem or (None if _str(source["provider"]) and _str(source["model"]) else "provider and model must be strings")


_TEXT = frozenset({"text"})
_ASSISTANT = frozenset({"text", "tool-call", "reasoning"})


def _turn_end(data: Any) -> Problem:
    problem = _keys(data, {"turn", "reason"})
    if problem:
        return problem
    if not (_int(data["turn"]) and data["turn"] >= 1):
        return f"turn {data['turn']!r} is not a positive integer"
    return end_reason(data["reason"])


def _turn_start(data: Any) -> Problem:
    problem = _keys(data, {"turn"})
    return problem or (None if _int(data["turn"]) and data["turn"] >= 1 else f"turn {data['turn']!r} is not a positive integer")


def _assistant(data: Any) -> Problem:
    problem = _turn_step(data, frozenset({"usage", "interrupted", "stream"}), {"message"})
    if problem:
        return problem
    if "interrupted" in data and data["interrupted"] is not True:
        return f"interrupted may only be true, not {data['interrupted']!r}"
    if "usage" in data:
        usage = data["usage"]
        problem = _keys(usage, {"inputTokens", "outputTokens"})
        if problem or not (_int(usage["inputTokens"]) and _int(usage["outputTokens"])):
            return f"usage {usage!r}: {problem or 'token counts must be non-negative integers'}"
    if "stream" in data and type(data["stream"]) is not list:
        return "stream is not a list of stream records"
    return _message(data["message"], "assistant", _model_source, _ASSISTANT)


def _tool_call(data: Any) -> Problem:
    problem = _turn_step(data, extra={"callId", "name", "arguments"})
    if problem:
        return problem
    if not (_str(data["callId"]) and _str(data["name"]) and _str(data["arguments"], empty=True)):
        return "callId and name must be non-empty strings, arguments the raw JSON string"
    return None


def _request_header(data: Any) -> Problem:
    problem = _keys(data, {"header", "reason"})
    if problem:
        return problem
    if data["reason"] not in _HEADER_REASONS:
        return f"reason {data['reason']!r} is none of {sorted(_HEADER_REASONS)}"
    header = data["header"]
    problem = _keys(header, {"config"}, {"adapterDefaults", "tools"})  # (v3: no system in the header)
    if problem:
        return f"header: {problem}"
    config = header["config"]
    if type(config) is not dict or not (_str(config.get("provider")) and _str(config.get("model"))):
        return f"header config {config!r} names no provider and model"
    if "tools" in header and type(header["tools"]) is not list:
        return "header tools is not a list"
    return None


def _request_context(data: Any) -> Problem:
    problem = _keys(data, {"provider", "model"}, {"contextWindow"})
    return problem or (None if _str(data["provider"]) and _str(data["model"]) else "provider and model must be strings")


def _asked(data: Any) -> Problem:
    problem = _keys(data, {"id", "toolName"}, {"callId", "reason"})
    if problem:
        return problem
    if not (_str(data["id"]) and _str(data["toolName"])):
        return "id and toolName must be non-empty strings"
    if "reason" in data and not _str(data["reason"], empty=True):
        return f"reason {data['reason']!r} is not a string"
    return None


def _decided(data: Any) -> Problem:
    problem = _keys(data, {"id", "outcome"})
    return problem or (None if data["outcome"] in _OUTCOMES else f"outcome {data['outcome']!r} is none of {sorted(_OUTCOMES)}")


def _policy(data: Any) -> Problem:
    problem = _keys(data, {"policy"}, {"source"})
    return problem or (None if data["policy"] in _POLICIES else f"policy {data['policy']!r} is none of {sorted(_POLICIES)}")


def _tool_result(data: Any) -> Problem:
    return _turn_step(data, frozenset({"error", "meta"}), {"message"})  # (the message: result_shape's to judge)


SHAPES: dict[str, Callable[[Any], Problem]] = {
    "turn/start": _turn_start,
    "turn/end": _turn_end,
    "step/start": _turn_step,
    "step/end": _turn_step,
    "user/message": lambda data: _message(data, "user", _user_source, _TEXT),
    "system/message": lambda data: _keys(data, {"message"}) or _message(data["message"], "system", _user_source, _TEXT),
    "assistant/message": _assistant,
    "tool/call": _tool_call,
    "tool/result": _tool_result,
    "request/header": _request_header,
    "request/context": _request_context,
    "session/end-seed": lambda data: _keys(data, set(), {"inherited"}),
    "approval/asked": _asked,
    "approval/decided": _decided,
    "approval/policy": _policy,
}


def problem(kind: str, data: Any) -> Problem:
    """What is wrong with ``data`` as the payload of a ``kind`` event (None: nothing, or a type
    whose payload the spec leaves open)."""
    shape = SHAPES.get(kind)
    return shape(data) if shape is not None else None
