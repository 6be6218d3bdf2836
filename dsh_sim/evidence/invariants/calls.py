"""Checks of the calls in a recovered log: each has one result, the verdicts repair wrote are
honest, approvals are audited, and refused calls fail closed.

Judged at every boot that opened the session (fail_closed at a clean stop too); their memos
are emptied with the recovery checks' (:func:`forget`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dsh_sim.evidence.invariants.base import Invariant, Judge, fail
from dsh_sim.evidence.invariants.moments import Shutdown, accepted
from dsh_sim.evidence.oracles.event_records import data_of, kind_of, last_index_of, of_kinds
from dsh_sim.evidence.oracles.identity_memo import IdentityMemo
from dsh_sim.evidence.oracles.shared_prefix import Findings, Prefixed
from runtime.session.events import Event
from runtime.session.repair import TOOL_NOT_STARTED, TOOL_OUTCOME_UNKNOWN


def forget() -> None:
    """Empty the memos of :func:`_result_problems`, :func:`_refused` and :func:`_calls_of`
    (they keep the events they hold alive until cleared)."""
    _RESULTS.clear()
    _REFUSED.clear()
    _CALLS.clear()
    _REFUSED_RESULTS.clear()
    _APPROVALS.clear()


_CALL_KINDS = frozenset({"assistant/message", "tool/result", "step/end"})


def check_one_result_per_call(obs: Judge, events: Sequence[Any], *, repaired: bool = True) -> None:
    """Every call has exactly one result (``repaired=False``, a storage process, which does not
    repair: at most one — an interrupted historical call may stay open there)."""
    obs.count("one_result_per_call")
    for call_id, count in _result_problems(tuple(events), repaired):
        fail(obs, "one_result_per_call", f"the call has {count} tool/result events", call_id)


_RESULTS: IdentityMemo[list[tuple[str, int]]] = IdentityMemo(1024)


def _result_problems(events: tuple[Any, ...], repaired: bool) -> list[tuple[str, int]]:
    """Each call of ``events`` without exactly one result (at most one: not ``repaired``),
    with its count of results.

    Remembered per sequence of events: a recovery's log is often one an earlier recovery
    left (the same crash image, the same repair), read back as the very same records (the
    spec reader's memo).  The answer depends on the events and ``repaired`` alone (records
    and events are never changed in place)."""
    return _RESULTS.remember(events, repaired, _find_result_problems, events, repaired)


def _find_result_problems(events: tuple[Any, ...], repaired: bool) -> list[tuple[str, int]]:
    blocks: list[str] = []
    results: dict[str, int] = {}
    step: list[str] = []  # the calls of the step in progress
    left: set[str] = set()  # calls whose step ended before any result came (see below)
    for event in of_kinds(events, _CALL_KINDS):
        kind, data = kind_of(event), data_of(event)
        if kind == "assistant/message":
            calls = [b["id"] for b in data["message"]["content"] if b.get("type") == "tool-call"]
            blocks += calls
            step += calls
        elif kind == "tool/result":
            call_id = data["message"]["source"]["callId"]
            results[call_id] = results.get(call_id, 0) + 1
        else:  # step/end: a scheduler failure ends a step without fabricating results (spec §5.3), and repair
            left.update(c for c in step if not results.get(c))  # clears what a step left pending (§2.1): none is owed
            step = []
    problems = [
        (call_id, results.get(call_id, 0))
        for call_id in blocks
        if results.get(call_id, 0) > 1 or (repaired and results.get(call_id, 0) != 1 and call_id not in left)
    ]
    return problems


_TOOL_CALL = frozenset({"tool/call"})
_TOOL_RESULT = frozenset({"tool/result"})


def check_verdicts(obs: Judge, stored: Sequence[Event], closers: Sequence[Event]) -> None:
    obs.count("verdict_soundness")
    world = obs.sim.world
    started, answered = _calls_of(tuple(stored))
    for event in closers:
        if event.type != "tool/result":
            continue
        call_id = event.data["message"]["source"]["callId"]
        code = (event.data.get("error") or {}).get("code")
        applied = bool(world.applied_for(call_id))
        obs.verdict_counts[(str(code), applied)] = obs.verdict_counts.get((str(code), applied), 0) + 1
        if code == TOOL_NOT_STARTED and applied:
            effects = [f"{e.service}.{e.op} at t={e.time:.3f} (lifetime {e.lifetime})" for e in world.applied_for(call_id)]
            fail(obs, "verdict_soundness", "repair said TOOL_NOT_STARTED but the side effect happened", call_id, *effects)
        if call_id in started and call_id not in answered and code != TOOL_OUTCOME_UNKNOWN:
            fail(obs, "verdict_soundness", f"a durable tool/call without result was classified {code}", call_id)


_CALLS: IdentityMemo[tuple[set[str], set[str]]] = IdentityMemo(1024)


def _calls_of(stored: tuple[Event, ...]) -> tuple[set[str], set[str]]:
    """The call ids of ``stored``'s tool/call events and of its tool/result events.

    Remembered per sequence of events (events are never changed in place): every recovery
    from one crash image recovers the very same decoded events, and the sets are a function
    of them alone.  The sets are only read."""
    return _CALLS.remember(stored, None, _find_calls, stored)


def _find_calls(stored: tuple[Event, ...]) -> tuple[set[str], set[str]]:
    started = {e.data["callId"] for e in of_kinds(stored, _TOOL_CALL)}
    answered = {e.data["message"]["source"]["callId"] for e in of_kinds(stored, _TOOL_RESULT)}
    return started, answered


_TURN_START = frozenset({"turn/start"})
_APPROVAL_KINDS = frozenset({"turn/start", "approval/asked", "approval/decided", "turn/end"})


def check_approval_audit(obs: Judge, events: Sequence[Event]) -> None:
    obs.count("approval_audit")
    last_turn = last_index_of(events, _TURN_START)  # (each turn/start resets the walk: what came before is judged once)
    for message, details in (*_APPROVALS.of(events, last_turn), *_approval_problems(events[last_turn:])):
        fail(obs, "approval_audit", message, None, *details)


def _approval_problems(events: Sequence[Event]) -> list[tuple[str, tuple[str, ...]]]:
    problems: list[tuple[str, tuple[str, ...]]] = []
    open_asks: dict[str, int] = {}
    turn = None
    for event in of_kinds(events, _APPROVAL_KINDS):
        if event.type == "turn/start":
            turn, open_asks = event.data["turn"], {}
        elif event.type == "approval/asked":
            open_asks[event.data["id"]] = event.seq
        elif event.type == "approval/decided":
            if open_asks.pop(event.data["id"], None) is None:
                problems.append((f"approval/decided {event.data['id']} has no open approval/asked", (f"seq {event.seq}",)))
        elif event.type == "turn/end":
            if open_asks and event.data["reason"]["kind"] != "interrupted":
                problems.append((f"turn {turn} ended with unanswered approval/asked {sorted(open_asks)}", ()))
            open_asks = {}
    return problems


_APPROVALS: Prefixed[list[tuple[str, tuple[str, ...]]]] = Prefixed(_approval_problems)


_REFUSALS = ("ABORTED_BEFORE_DISPATCH", "SANDBOX_UNAVAILABLE")
_DENIAL_TEXTS = ("requires approval", "the user rejected", "was cancelled")


def check_fail_closed(obs: Judge, events: Sequence[Event]) -> None:
    obs.count("fail_closed")
    for _, (call_id, what) in _REFUSED_RESULTS.of(events):
        effects = obs.sim.world.applied_for(call_id)
        if effects:
            fail(
                obs, "fail_closed", f"a refused call ({what}) has effects in the world", call_id, *[f"{e.service}.{e.op}" for e in effects]
            )


_REFUSED: IdentityMemo[tuple[str, str] | None] = IdentityMemo(1 << 16)


def _refused(event: Event) -> tuple[str, str] | None:
    """The call id and the code (or the text's start) of a tool/result that says its call was
    refused, else ``None``.

    Remembered per event: the answer is a function of the event alone (frozen, its data never
    changed in place), and every boot and shutdown asks it of every result of the whole log,
    most of them the very events an earlier recovery had."""
    return _REFUSED.remember((event,), None, _find_refused, event)


def _refused_result(event: Event) -> tuple[str, str] | None:
    return _refused(event) if event.type == "tool/result" else None


_REFUSED_RESULTS: Findings[tuple[str, str]] = Findings(_refused_result)  # (walked past the log judged last)


def _find_refused(event: Event) -> tuple[str, str] | None:
    code = (event.data.get("error") or {}).get("code")
    block = event.data["message"]["content"][0]
    text = block["content"][0].get("text", "") if block.get("content") else ""
    if code in _REFUSALS or (block.get("isError") and any(t in text for t in _DENIAL_TEXTS)):
        return (event.data["message"]["source"]["callId"], code or text[:60])
    return None


def _fail_closed_at_shutdown(obs: Judge, end: Shutdown) -> None:
    if end.primary and end.life.session is not None:
        check_fail_closed(obs, end.life.session.events)


ONE_RESULT_PER_CALL = Invariant(
    "one_result_per_call",
    (
        "every tool-call block ends with exactly one tool/result after repair (none is owed for a call "
        "whose step ended without its result: a scheduler failure fabricates none, spec §5.3, and repair "
        "clears what an ended step left, §2.1), never two"
    ),
    checks={"boot": accepted(lambda obs, boot: check_one_result_per_call(obs, boot.after_repair, repaired=obs.sim.kind == "agent"))},
)
VERDICT_SOUNDNESS = Invariant(
    "verdict_soundness",
    ("never TOOL_NOT_STARTED for a call whose effect was applied; a durable tool/call without result is TOOL_OUTCOME_UNKNOWN"),
    checks={"boot": accepted(lambda obs, boot: check_verdicts(obs, boot.stored, boot.closers))},
)
APPROVAL_AUDIT = Invariant(
    "approval_audit",
    ("approval/asked and approval/decided pair up by id in every turn that was not interrupted"),
    checks={"boot": accepted(lambda obs, boot: check_approval_audit(obs, boot.full))},
)
FAIL_CLOSED = Invariant(
    "fail_closed",
    ("a call refused for cancellation, approval or an unavailable sandbox has no effect in the world"),
    checks={"boot": accepted(lambda obs, boot: check_fail_closed(obs, boot.live)), "shutdown": _fail_closed_at_shutdown},
)
