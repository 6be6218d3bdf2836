"""Cancellation: what a cancelled call's result may say, held to what the tools saw happen.

The spec's route (§5.2, §5.3) decides each result of a turn that was cancelled — by the user,
a hook, or a graceful stop that tears the turn down:

* a body that returned after the cancellation is never reported a success: the result is
  replaced by ``ABORTED`` (an error result of the body stands);
* ``ABORTED`` says the body started (its effect may have happened), ``ABORTED_BEFORE_DISPATCH``
  that it never did — and either is only ever the answer to a cancellation of its turn;
* no call starts after the cancellation: every call whose ``tool/call`` comes later gets
  ``ABORTED_BEFORE_DISPATCH``;
* no tool body — of the call or of a call it dispatches nested — begins after the cancellation
  unless the runtime had announced its dispatch (``tools.execute.body``, behind the last abort
  check) before it: §5.2 step 3, the body "already aborted → ABORTED_BEFORE_DISPATCH", and a
  cancellation in a ``tools/execute`` hook (which may await) comes before that check;
* and outside any cancellation, a success is what a tool body returned.

The facts are the simulator's (:class:`~dsh_sim.adapters.observed.ToolMark`, in the order they
happened): when each call started, when its body began and returned, when its turn was
cancelled.  The runtime's own flags (its signal, ``dispatched``) are never consulted.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from dsh_sim.adapters.observed import ToolMark

ABORTED = "ABORTED"
BEFORE_DISPATCH = "ABORTED_BEFORE_DISPATCH"


@attrs.frozen
class Problem:
    call_id: str
    message: str


@attrs.define
class _Facts:
    """Where each of one lifetime's marks sits (indexes into the run's mark list)."""

    call: dict[str, int] = attrs.field(factory=dict)  # latest start of each call id
    body: dict[str, int] = attrs.field(factory=dict)  # first body start after that
    end: dict[str, tuple[int, str]] = attrs.field(factory=dict)  # the body's end: returned | raised
    cancels: dict[Any, int] = attrs.field(factory=dict)  # turn -> its first cancellation
    late: dict[str, list[str]] = attrs.field(factory=dict)  # root call id -> bodies begun after a cancel


def root_of(call_id: str) -> str:
    """The top-level call a nested call id (``<root>:nested:<i>[:nested:<j>...]``) belongs to."""
    return call_id.split(":nested:", 1)[0]


def _facts(marks: Sequence[ToolMark], lifetime: int) -> _Facts:
    facts = _Facts()
    last_cancel = -1
    dispatch: dict[str, int] = {}  # call id (nested too) -> its latest dispatch announcement
    for index, mark in enumerate(marks):
        if mark.lifetime != lifetime:
            continue
        if mark.kind == "cancel":
            facts.cancels.setdefault(mark.turn, index)
            last_cancel = index
        elif mark.call_id is None:
            continue
        elif mark.kind == "call":
            facts.call[mark.call_id] = index
            facts.body.pop(mark.call_id, None)
            facts.end.pop(mark.call_id, None)
            facts.late.pop(mark.call_id, None)
        elif mark.kind == "dispatch":
            dispatch[mark.call_id] = index
        elif mark.kind == "body":
            facts.body.setdefault(mark.call_id, index)
            root = root_of(mark.call_id)
            started = facts.call.get(root)
            # the root call ran throughout, so a cancellation since its start struck its turn
            if started is not None and last_cancel > started and not started < dispatch.get(mark.call_id, -1) < last_cancel:
                facts.late.setdefault(root, []).append(mark.call_id)
        elif mark.call_id in facts.body:
            facts.end.setdefault(mark.call_id, (index, mark.kind))
    return facts


def judge(events: Iterable[Any], marks: Sequence[ToolMark], lifetime: int) -> list[Problem]:
    """Every ``tool/result`` among ``events`` (the live log of process ``lifetime``) that
    contradicts what the simulator saw of its call."""
    results = [e for e in events if e.type == "tool/result"]
    if not results:
        return []
    facts = _facts(marks, lifetime)
    out: list[Problem] = []
    for event in results:
        data = event.data
        call_id = data["message"]["source"]["callId"]
        out.extend(Problem(call_id, m) for m in _judge_one(data, call_id, facts))
    return out


def _judge_one(data: dict[str, Any], call_id: str, facts: _Facts) -> list[str]:
    block = data["message"]["content"][0]
    success = not block.get("isError")
    code = (data.get("error") or {}).get("code")
    cancel = facts.cancels.get(data.get("turn"))
    started = facts.call.get(call_id)
    body = facts.body.get(call_id)
    end = facts.end.get(call_id)
    out: list[str] = []
    if cancel is not None and (started is None or started > cancel) and code != BEFORE_DISPATCH:
        out.append(
            f"the call started after its turn was cancelled, but its result is {code or ('a success' if success else 'an error')}, not {BEFORE_DISPATCH}"
        )
    if success:
        if end is None or end[1] != "returned":
            out.append("a success result, but the tool body never returned one")
        elif cancel is not None and cancel < end[0]:
            out.append(f"the turn was cancelled before the tool body returned, yet the result is a success (spec §5.2: {ABORTED})")
    if code in (ABORTED, BEFORE_DISPATCH) and cancel is None:
        out.append(f"the result is {code}, but its turn was never cancelled")
    if code == ABORTED and body is None:
        out.append(f"the result is {ABORTED} (the body started), but the tool body never ran")
    if code == BEFORE_DISPATCH and body is not None:
        out.append(f"the result is {BEFORE_DISPATCH}, but the tool body ran")
    for late in facts.late.get(call_id, ()):
        which = "the tool body" if late == call_id else f"the body of its nested call {late}"
        out.append(f"{which} began after the turn was cancelled (spec §5.2: a body already aborted gets {BEFORE_DISPATCH} and never runs)")
    return out
