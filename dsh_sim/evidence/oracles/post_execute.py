"""``tools/post-execute``: once for every result a body returned, never for a final one (spec §5.2, §8.9).

* Pipeline failures are final and skip post-execute: a cancellation's ``ABORTED`` and
  ``ABORTED_BEFORE_DISPATCH``, a body that threw, an injected tool failure.
* A result the body returned goes through post-execute exactly once before its ``tool/result``
  — unless a cancellation turned it into ``ABORTED`` (that result is final).
* Post-execute (and pre-execute) observe the model's order: the calls of a step pass each hook
  in the order they started.

The facts are the simulator's (:class:`~dsh_sim.adapters.observed.ToolMark`): a witness plugin
records each hook passing by, the tool wrapper each body's end.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from dsh_sim.adapters.observed import ToolMark

FINAL_CODES = frozenset({"ABORTED", "ABORTED_BEFORE_DISPATCH"})


@attrs.frozen
class Problem:
    call_id: str
    message: str


@attrs.define
class _Call:
    order: int  # position of its start among the process's calls
    posts: int = 0
    ended: str | None = None  # the body's (or injected failure's) end: returned | raised


def _calls(marks: Sequence[ToolMark], lifetime: int) -> tuple[dict[str, _Call], list[Problem]]:
    """The process's top-level calls, and every hook that saw them out of order (calls start in
    the model's order and steps one after another, so each hook sees start positions rising)."""
    calls: dict[str, _Call] = {}
    problems: list[Problem] = []
    last: dict[str, int] = {}  # hook -> start position of the last call it saw
    for mark in marks:
        if mark.lifetime != lifetime or mark.call_id is None:
            continue
        if mark.kind == "call":
            calls[mark.call_id] = _Call(len(calls))
            continue
        call = calls.get(mark.call_id)
        if call is None:
            continue  # a nested call: its hooks run inside its parent's body
        if mark.kind in ("returned", "raised"):
            call.ended = mark.kind
        elif mark.kind in ("pre", "post"):
            call.posts += mark.kind == "post"
            if call.order < last.get(mark.kind, -1):
                problems.append(
                    Problem(mark.call_id, f"{mark.kind}-execute ran after a later call's (calls pass each hook in the model's order)")
                )
            last[mark.kind] = call.order
    return calls, problems


def _blocks(data: dict[str, Any]) -> list[Any]:
    """The result's content blocks (the single tool-result part of its message)."""
    parts = data["message"].get("content") or [{}]
    blocks = parts[0].get("content") if isinstance(parts[0], dict) else None
    return blocks if isinstance(blocks, list) else []


def judge(events: Iterable[Any], marks: Sequence[ToolMark], lifetime: int, note: dict[str, Any] | None = None) -> list[Problem]:
    """``note``: the block a content-replacing post-execute plugin appends (config
    ``post_execute_note``) — a result that passed post-execute ends with it, no other has it."""
    results = [e for e in events if e.type == "tool/result"]
    if not results:
        return []
    calls, out = _calls(marks, lifetime)
    for event in results:
        data = event.data
        call_id = data["message"]["source"]["callId"]
        call = calls.get(call_id)
        if call is None:
            continue
        code = (data.get("error") or {}).get("code")
        if call.posts > 1:
            out.append(Problem(call_id, f"post-execute ran {call.posts} times for one call"))
        if call.posts and (code in FINAL_CODES or call.ended == "raised"):
            why = code if code in FINAL_CODES else "a body that threw"
            out.append(Problem(call_id, f"post-execute ran for a final result ({why}): pipeline failures skip it"))
        if not call.posts and call.ended == "returned" and code not in FINAL_CODES:
            out.append(Problem(call_id, "the body returned a result, but it reached the log without post-execute"))
        if note is not None:
            blocks = _blocks(data)
            if call.posts and code not in FINAL_CODES and (not blocks or blocks[-1] != note):
                out.append(Problem(call_id, "post-execute replaced the result's content, but the log holds the content before it"))
            if (not call.posts or code in FINAL_CODES) and note in blocks:
                out.append(Problem(call_id, "a result that did not pass post-execute carries its replacement content"))
    return out
